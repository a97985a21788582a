/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Checks py_linetable__line() against what real interpreters report. The dump, written by
 * tests/tools/dump_positions.py running under the interpreter under test, gives for
 * each code object its co_firstlineno, co_linetable and the start line co_positions()
 * yields for every code unit; every one of them must agree, and the code unit just
 * past the end must give -ENOENT. Built-in cases first cover malformed tables, which
 * no interpreter writes but a torn copy from another process can hold.
 *
 * Usage: test_linetable [DUMPFILE]   (without a dump only the built-in cases run)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpython/py_linetable.h"

#define MAX_REPORTED 10

struct builtin_case {
	const char *what;
	uint8_t tab[24];
	size_t len;
	int firstlineno;
	uint32_t instr;
	int ret;
	int line;		/* checked only when ret == 0 */
};

/* Entry first bytes: top bit, kind in bits 3-6, units - 1 in bits 0-2. */
#define E(kind, units) (uint8_t)(0x80 | (kind) << 3 | ((units) - 1))

static const struct builtin_case builtin[] = {
	{ "empty table", { 0 }, 0, 1, 0, -ENOENT, 0 },
	{ "short form", { E(0, 1), 0x00 }, 2, 7, 0, 0, 7 },
	{ "short form, past end", { E(0, 1), 0x00 }, 2, 7, 1, -ENOENT, 0 },
	{ "eight units", { E(9, 8), 0x7f }, 2, 7, 7, 0, 7 },
	{ "eight units, past end", { E(9, 8), 0x7f }, 2, 7, 8, -ENOENT, 0 },
	{ "instr UINT32_MAX", { E(0, 8), 0x00 }, 2, 7, UINT32_MAX, -ENOENT, 0 },
	{ "one-line +2", { E(0, 1), 0, E(12, 2), 1, 2 }, 5, 10, 2, 0, 12 },
	{ "no location", { E(11, 1), 0, 0, E(15, 3) }, 4, 10, 3, 0, -1 },
	{ "no location keeps the running line",
	  { E(11, 1), 0, 0, E(15, 3), E(11, 1), 0, 0 }, 7, 10, 4, 0, 12 },
	{ "no-column negative delta", { E(13, 1), 0x05 }, 2, 10, 0, 0, 8 },
	{ "no-column two-group delta", { E(13, 1), 0x40 | 0x08, 0x03 }, 3, 1, 0, 0, 101 },
	{ "long form", { E(14, 2), 0x02, 0x01, 0x05, 0x09 }, 5, 3, 1, 0, 4 },
	{ "long form, varint at 32 bits",
	  { E(14, 1), 0x00, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03, 0x00, 0x00 }, 10, 3, 0, 0, 3 },
	{ "most negative svarint", { E(13, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03 }, 7, 0, 0,
	  0, -INT_MAX },

	{ "truncated short form", { E(0, 1) }, 1, 1, 0, -EINVAL, 0 },
	{ "truncated one-line form", { E(11, 1), 0x00 }, 2, 1, 0, -EINVAL, 0 },
	{ "truncated no-column form", { E(13, 1) }, 1, 1, 0, -EINVAL, 0 },
	{ "truncated varint", { E(13, 1), 0x40 }, 2, 1, 0, -EINVAL, 0 },
	{ "truncated long form", { E(14, 1), 0x02, 0x01, 0x05 }, 4, 1, 0, -EINVAL, 0 },
	{ "truncated entry before the wanted one", { E(0, 1), E(0, 1), 0 }, 3, 1, 1,
	  -EINVAL, 0 },
	{ "varint with too many groups",
	  { E(13, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00 }, 9, 1, 0, -EINVAL, 0 },
	{ "varint wider than 32 bits",
	  { E(13, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x04 }, 7, 1, 0, -EINVAL, 0 },
	{ "entry without the top bit", { 0x00, 0x00 }, 2, 1, 0, -EINVAL, 0 },
	{ "payload byte with the top bit", { E(0, 1), 0x80 }, 2, 1, 0, -EINVAL, 0 },
	{ "line above INT_MAX", { E(11, 1), 0, 0 }, 3, INT_MAX, 0, -EINVAL, 0 },
	{ "line below INT_MIN", { E(13, 1), 0x03 }, 2, INT_MIN, 0, -EINVAL, 0 },
	{ "damage after the wanted entry is not looked at", { E(0, 1), 0, 0x00 }, 3, 5, 0,
	  0, 5 },
};

static int run_builtin(void)
{
	size_t i;
	int failed = 0;

	for (i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
		const struct builtin_case *c = &builtin[i];
		/* An exact-size heap copy lets ASan catch a read one byte too far. */
		uint8_t *tab = c->len ? malloc(c->len) : NULL;
		int line = INT_MIN + 1, ret;

		if (c->len && !tab) {
			perror("malloc");
			exit(2);
		}
		if (c->len)
			memcpy(tab, c->tab, c->len);
		ret = py_linetable__line(tab, c->len, c->firstlineno, c->instr, &line);
		if (ret != c->ret || (ret == 0 && line != c->line)) {
			fprintf(stderr, "builtin \"%s\": got ret %d line %d, want ret %d line %d\n",
				c->what, ret, line, c->ret, c->line);
			failed++;
		}
		free(tab);
	}
	return failed;
}

static int check_clean(const uint8_t *tab, size_t len, uint32_t instr)
{
	int line, ret = py_linetable__line(tab, len, 1, instr, &line);

	if (ret == 0 || ret == -ENOENT || ret == -EINVAL)
		return 0;
	fprintf(stderr, "junk table of %zu bytes, instr %u: unexpected ret %d\n", len, instr,
		ret);
	return 1;
}

/*
 * Every table of up to two bytes, then pseudo-random junk up to 24 bytes, at nearby
 * instructions: each must get a clean answer. Tables sit at the very end of an exact
 * heap allocation so that a sanitizer build catches any overread.
 */
static int run_junk(void)
{
	const size_t cap = 24;
	uint8_t *buf = malloc(cap), *t;
	uint64_t state = 0x9e3779b97f4a7c15ull;
	uint32_t instr;
	unsigned long n;
	int failed = 0;
	size_t len, i;

	if (!buf) {
		perror("malloc");
		exit(2);
	}
	for (len = 1; len <= 2; len++) {
		t = buf + cap - len;
		for (n = 0; n < 1ul << (8 * len); n++) {
			memcpy(t, &n, len);
			for (instr = 0; instr < 18; instr++)
				failed += check_clean(t, len, instr);
		}
	}
	for (n = 0; n < 200000; n++) {
		len = n % cap + 1;
		t = buf + cap - len;
		for (i = 0; i < len; i++) {
			/* xorshift64; a quarter of later bytes start an entry, so tables parse a while */
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			t[i] = (uint8_t)state;
			if (i == 0 || (state >> 62) == 0)
				t[i] |= 0x80;
			else
				t[i] &= 0x7f;
		}
		failed += check_clean(t, len, (uint32_t)(state >> 32) % 64);
	}
	free(buf);
	return failed;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int parse_hex(const char *s, uint8_t **out, size_t *len)
{
	size_t n = strlen(s), i;
	uint8_t *buf;

	*out = NULL;
	*len = 0;
	if (!strcmp(s, "-"))
		return 0;
	if (n % 2)
		return -EINVAL;
	buf = malloc(n / 2 ? n / 2 : 1);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(buf);
			return -EINVAL;
		}
		buf[i] = (uint8_t)(hi << 4 | lo);
	}
	*out = buf;
	*len = n / 2;
	return 0;
}

/* Expands "L" / "L*N" items into @lines, which has room for exactly @units. */
static int parse_lines(char *s, int *lines, unsigned long units)
{
	unsigned long filled = 0, count;
	char *item, *save = NULL, *end;
	long v;

	for (item = strtok_r(s, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		errno = 0;
		v = strtol(item, &end, 10);
		if (errno || end == item || v < INT_MIN || v > INT_MAX)
			return -EINVAL;
		count = 1;
		if (*end == '*') {
			char *cend;

			count = strtoul(end + 1, &cend, 10);
			if (cend == end + 1 || *cend)
				return -EINVAL;
		} else if (*end) {
			return -EINVAL;
		}
		if (count > units - filled)
			return -EINVAL;
		while (count--)
			lines[filled++] = (int)v;
	}
	return filled == units ? 0 : -EINVAL;
}

struct totals {
	unsigned long codes, instrs, mismatches;
};

static void mismatch(struct totals *t, const char *name, unsigned long lineno,
		     uint32_t instr, int ret, int got, int want)
{
	if (t->mismatches++ >= MAX_REPORTED)
		return;
	if (want == INT_MIN)
		fprintf(stderr, "%s (dump line %lu): instr %u (past the end): got ret %d line %d, want -ENOENT\n",
			name, lineno, instr, ret, got);
	else
		fprintf(stderr, "%s (dump line %lu): instr %u: got ret %d line %d, want line %d\n",
			name, lineno, instr, ret, got, want);
}

static int check_record(char *rec, unsigned long lineno, struct totals *t)
{
	char *save = NULL, *first_s, *units_s, *hex_s, *lines_s, *name;
	unsigned long units;
	int firstlineno, *lines, line, ret, err;
	uint8_t *tab;
	size_t len;
	uint32_t i;
	long v;

	first_s = strtok_r(rec, " \n", &save);
	units_s = strtok_r(NULL, " \n", &save);
	hex_s = strtok_r(NULL, " \n", &save);
	lines_s = strtok_r(NULL, " \n", &save);
	name = strtok_r(NULL, " \n", &save);
	if (!name)
		return -EINVAL;
	errno = 0;
	v = strtol(first_s, NULL, 10);
	units = strtoul(units_s, NULL, 10);
	if (errno || v < INT_MIN || v > INT_MAX || !units || units > UINT32_MAX)
		return -EINVAL;
	firstlineno = (int)v;

	err = parse_hex(hex_s, &tab, &len);
	if (err)
		return err;
	lines = calloc(units, sizeof(*lines));
	if (!lines) {
		free(tab);
		return -ENOMEM;
	}
	err = parse_lines(lines_s, lines, units);
	if (err)
		goto out;

	for (i = 0; i < units; i++) {
		line = INT_MIN;
		ret = py_linetable__line(tab, len, firstlineno, i, &line);
		if (ret || line != lines[i])
			mismatch(t, name, lineno, i, ret, line, lines[i]);
	}
	ret = py_linetable__line(tab, len, firstlineno, (uint32_t)units, &line);
	if (ret != -ENOENT)
		mismatch(t, name, lineno, (uint32_t)units, ret, line, INT_MIN);
	t->codes++;
	t->instrs += units;
out:
	free(lines);
	free(tab);
	return err;
}

static int run_dump(const char *path)
{
	struct totals t = { 0 };
	char *buf = NULL, version[64] = "?";
	unsigned long lineno = 0;
	size_t cap = 0;
	FILE *f;
	int err;

	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 2;
	}
	while (getline(&buf, &cap, f) > 0) {
		lineno++;
		if (buf[0] == '#') {
			sscanf(buf, "# pybpfprof-positions 1 %63s", version);
			continue;
		}
		err = check_record(buf, lineno, &t);
		if (err) {
			fprintf(stderr, "%s:%lu: malformed record (%s)\n", path, lineno,
				strerror(-err));
			free(buf);
			fclose(f);
			return 2;
		}
	}
	free(buf);
	fclose(f);

	if (!t.codes) {
		fprintf(stderr, "%s: no code objects in the dump\n", path);
		return 2;
	}
	if (t.mismatches) {
		printf("linetable: python %s: %lu mismatches in %lu instructions of %lu code objects%s\n",
		       version, t.mismatches, t.instrs, t.codes,
		       t.mismatches > MAX_REPORTED ? " (first ones above)" : "");
		return 1;
	}
	printf("linetable: python %s: %lu instructions in %lu code objects agree\n", version,
	       t.instrs, t.codes);
	return 0;
}

int main(int argc, char **argv)
{
	int failed;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [DUMPFILE]\n", argv[0]);
		return 2;
	}
	failed = run_builtin() + run_junk();
	if (failed) {
		printf("linetable: %d built-in cases failed\n", failed);
		return 1;
	}
	printf("linetable: %zu built-in cases and junk tables pass\n",
	       sizeof(builtin) / sizeof(builtin[0]));
	return argc == 2 ? run_dump(argv[1]) : 0;
}
