// SPDX-License-Identifier: GPL-2.0-only
/*
 * The function table of `top` on one fixed profile, for tests/top/test_top_view.py:
 *   test_top_view check                         count invariants (exit 1 on failure)
 *   test_top_view screen own|total W H [ansi]   a W x H screen
 *   test_top_view text own|total N              a plain block of N rows
 *   test_top_view update                        two updates: percentages of the second
 *   test_top_view native-lines                  C frames with line info: FUNCTION (SOURCE)
 *   test_top_view native                        C frames (--native): their rows checked,
 *                                               then a plain block of every row
 * The profile has what the table must get right: recursion (counted once per sample),
 * one qualname in two files, markers, a stack with no Python frame, a long name and a
 * long path, UTF-8, names carrying terminal control sequences, and a thread's row
 * (--threads) that reads as the thread's label.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_spec.h"
#include "profile/profile.h"
#include "ui/top_view.h"

#define MAX_FRAMES 8

struct fixed_stack {
	uint32_t tid;
	uint64_t count;
	const char *frames[MAX_FRAMES];	/* root first: "kind|name|file|line" */
};

#define APP "/srv/app.py"
#define REQ "/srv/venv/lib/python3.11/site-packages/requests/adapters/http_adapter_long.py"

static const struct fixed_stack fixed[] = {
	{ 100, 50, { "Y|<module>|" APP "|40", "Y|main|" APP "|31", "Y|work|" APP "|12" } },
	{ 100, 30, { "Y|<module>|" APP "|40", "Y|main|" APP "|32",
		     "Y|dumps|/usr/lib/python3.11/json/__init__.py|231" } },
	/* --threads: the thread's frame keeps its slot in p.threads (THREADS) in its line. */
	{ 101, 15, { "T|thread 101||0", "Y|Worker.run|" APP "|20", "Y|send|" REQ "|73" } },
	{ 101, 5, { "T|thread 101||0", "M|[incomplete]", "Y|<lambda>|" APP "|-1" } },
	{ 100, 12, { "Y|<module>|" APP "|40", "Y|fib|" APP "|3", "Y|fib|" APP "|4",
		     "Y|fib|" APP "|4" } },
	{ 100, 3, { "Y|<module>|" APP "|40", "Y|helper|/srv/a.py|1" } },
	{ 100, 2, { "Y|<module>|" APP "|40", "Y|helper|/srv/b.py|1" } },
	{ 100, 4, { "M|[no Python frame]" } },
	{ 100, 2, { "Y|<module>|" APP "|40",
		    "Y|VeryLongClassNameForTesting.very_long_method_name_that_will_not_fit|"
		    APP "|9" } },
	{ 100, 1, { "Y|<module>|" APP "|40", "Y|f\xc3\xa9\x1b[2J\xc2\x9b" "31m\xff|<x\ny>|1" } },
};

/* Python calling C calling Python: a C function is a row whatever its offset. */
static const struct fixed_stack native[] = {
	{ 100, 40, { "Y|<module>|" APP "|40", "N|PyObject_Vectorcall|libpython3.11.so.1.0|0x4a",
		     "N|deflate|libz.so.1|0x31c", "N|memcpy|libc.so.6|0x2c" } },
	{ 100, 20, { "Y|<module>|" APP "|40", "N|PyObject_Vectorcall|libpython3.11.so.1.0|0x4a",
		     "N|deflate|libz.so.1|0x400" } },
	{ 100, 10, { "Y|<module>|" APP "|40", "N|list_sort|libpython3.11.so.1.0|-1",
		     "Y|key|" APP "|3", "N|memcpy|libc.so.6|0x31" } },
	{ 100, 5, { "Y|<module>|" APP "|40", "N|libz.so.1+0x3a40|libz.so.1|0x22" } },
};

/* C frames with DWARF line info (FUNCTION#SOURCE): a row reads FUNCTION (SOURCE), the
 * source's base name, as the collapsed format names it without the line. */
static const struct fixed_stack native_lines[] = {
	{ 100, 30, { "Y|<module>|" APP "|40", "N|pbpext_burn#/build/ext/pbpext.c|pbpext.so|-1",
		     "N|pbpext_spin#/build/ext/pbpext.c|pbpext.so|-1" } },
	{ 100, 10, { "Y|<module>|" APP "|40", "N|pbpext_burn#/build/ext/pbpext.c|pbpext.so|-1",
		     "N|memcpy|libc.so.6|-1" } },
};

/* Added before the second update of "update": only these make its percentages. */
static const struct fixed_stack later[] = {
	{ 100, 10, { "Y|<module>|" APP "|40", "Y|main|" APP "|32",
		     "Y|dumps|/usr/lib/python3.11/json/__init__.py|231" } },
	{ 100, 30, { "Y|<module>|" APP "|40", "Y|fib|" APP "|3" } },
};

static void add(struct aggregate *agg, struct strtab *strs, const struct fixed_stack *s,
		size_t n)
{
	struct agg_frame frames[MAX_FRAMES];

	for (size_t i = 0; i < n; i++) {
		uint32_t depth = 0;

		while (depth < MAX_FRAMES && s[i].frames[depth]) {
			spec_parse_frame(strs, s[i].frames[depth], &frames[depth]);
			depth++;
		}
		if (aggregate__add(agg, 100, s[i].tid, frames, depth, s[i].count, NULL))
			exit(1);
	}
}

static const struct top_row *find(const struct top_view *v, const struct profile *p,
				  const char *name, const char *file)
{
	for (size_t i = 0; i < top_view__count(v); i++) {
		const struct top_row *r = top_view__row(v, i);

		if (!strcmp(strtab__get(p->strs, r->name), name) &&
		    !strcmp(strtab__get(p->strs, r->file), file))
			return r;
	}
	return NULL;
}

static int expect(const struct top_view *v, const struct profile *p, const char *name,
		  const char *file, uint64_t own, uint64_t total)
{
	const struct top_row *r = find(v, p, name, file);

	if (r && r->own == own && r->total == total && r->own_now == own &&
	    r->total_now == total)
		return 0;
	fprintf(stderr, "%s (%s): own %llu total %llu, expected %llu %llu\n", name, file,
		r ? (unsigned long long)r->own : 0ull, r ? (unsigned long long)r->total : 0ull,
		(unsigned long long)own, (unsigned long long)total);
	return 1;
}

static int check_native(const struct top_view *v, const struct profile *p)
{
	int bad = 0;

	bad |= expect(v, p, "memcpy", "libc.so.6", 50, 50);	/* two offsets, one row */
	bad |= expect(v, p, "deflate", "libz.so.1", 20, 60);
	bad |= expect(v, p, "PyObject_Vectorcall", "libpython3.11.so.1.0", 0, 60);
	bad |= expect(v, p, "list_sort", "libpython3.11.so.1.0", 0, 10);
	bad |= expect(v, p, "key", APP, 0, 10);
	bad |= expect(v, p, "libz.so.1+0x3a40", "libz.so.1", 5, 5);
	bad |= expect(v, p, "<module>", APP, 0, 75);
	if (top_view__count(v) != 7) {
		fprintf(stderr, "%zu functions, expected 7\n", top_view__count(v));
		bad = 1;
	}
	return bad;
}

/* The row of the thread in slot @slot: it counts every sample of the thread once. */
static int expect_thread(const struct top_view *v, int32_t slot, uint64_t total)
{
	for (size_t i = 0; i < top_view__count(v); i++) {
		const struct top_row *r = top_view__row(v, i);

		if (r->thread == slot && r->file == TOP_NO_FILE && !r->own && r->total == total)
			return 0;
	}
	fprintf(stderr, "no row of thread slot %d with total %llu\n", slot,
		(unsigned long long)total);
	return 1;
}

static int check(const struct top_view *v, const struct profile *p)
{
	int bad = 0;

	bad |= expect(v, p, "fib", APP, 12, 12);	/* three frames, twelve samples */
	bad |= expect(v, p, "<module>", APP, 0, 50 + 30 + 12 + 3 + 2 + 2 + 1);
	bad |= expect(v, p, "main", APP, 0, 80);
	bad |= expect(v, p, "work", APP, 50, 50);
	bad |= expect(v, p, "helper", "/srv/a.py", 3, 3);
	bad |= expect(v, p, "helper", "/srv/b.py", 2, 2);
	bad |= expect(v, p, "<lambda>", APP, 5, 5);
	bad |= expect_thread(v, 0, 15 + 5);
	if (top_view__count(v) != 13) {
		fprintf(stderr, "%zu rows, expected 13\n", top_view__count(v));
		bad = 1;
	}
	if (top_view__window(v) != 124) {
		fprintf(stderr, "window %llu, expected 124\n",
			(unsigned long long)top_view__window(v));
		bad = 1;
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct strtab *strs = strtab__new();
	struct aggregate *agg = aggregate__new();
	struct top_view *v = NULL;
	struct profile_thread thread = {
		.pid = 100, .tid = 101, .name = PROFILE_NO_NAME, .label = PROFILE_NO_NAME,
	};
	struct profile p = {
		.agg = agg,
		.strs = strs,
		.threads = &thread,
		.nthreads = 1,
		.target = "pid 100 (python3 app.py --serve \x1b]0;title\x07)",
		.rate_hz = 100,
		.period_ns = 10000000ull,
	};
	struct top_header h = {
		.target = p.target,
		.rate_hz = 100,
		.elapsed_s = 3723.4,
		.samples = 124,
		.incomplete = 5,
		.drops = 2,
		.threads = 2,
		.processes = 1,
	};
	enum top_sort key = argc > 2 && !strcmp(argv[2], "total") ? TOP_BY_TOTAL : TOP_BY_OWN;
	int err = 1;

	if (!strs || !agg || top_view__new(&v) || argc < 2)
		goto out;
	thread.label = spec_intern(strs, "thread 101 (Worker-1)", 21);
	if (!strcmp(argv[1], "native")) {
		add(agg, strs, native, sizeof(native) / sizeof(native[0]));
		h.samples = 75;
		err = top_view__update(v, &p);
		if (!err)
			err = check_native(v, &p);
		if (!err)
			err = top_view__render_text(v, &p, &h, TOP_BY_OWN, 10, stdout);
		goto out;
	}
	if (!strcmp(argv[1], "native-lines")) {
		add(agg, strs, native_lines, sizeof(native_lines) / sizeof(native_lines[0]));
		h.samples = 40;
		err = top_view__update(v, &p);
		if (!err)
			err = top_view__render_text(v, &p, &h, TOP_BY_OWN, 10, stdout);
		goto out;
	}
	add(agg, strs, fixed, sizeof(fixed) / sizeof(fixed[0]));
	if (top_view__update(v, &p))
		goto out;
	if (!strcmp(argv[1], "check")) {
		err = check(v, &p);
	} else if (!strcmp(argv[1], "screen") && argc >= 5) {
		err = top_view__render_screen(v, &p, &h, key, atoi(argv[3]), atoi(argv[4]),
					      argc > 5 && !strcmp(argv[5], "ansi") ? TOP_ANSI : 0,
					      stdout);
	} else if (!strcmp(argv[1], "text") && argc == 4) {
		h.clock = "2024-05-01 12:00:03";
		err = top_view__render_text(v, &p, &h, key, strtoul(argv[3], NULL, 10), stdout);
	} else if (!strcmp(argv[1], "update")) {
		add(agg, strs, later, sizeof(later) / sizeof(later[0]));
		h.samples += 40;
		h.note = "a note above the table";
		err = top_view__update(v, &p);
		if (!err)
			err = top_view__render_screen(v, &p, &h, key, 80, 24, 0, stdout);
	}
out:
	top_view__free(v);
	aggregate__free(agg);
	strtab__free(strs);
	return err ? 1 : 0;
}
