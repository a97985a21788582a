/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Line lookup in the location table (co_linetable) that CPython 3.11 and later keep
 * per code object. A sample only carries the instruction offset of each frame; this
 * turns it into the line that co_positions() would report, so the profiler never has
 * to run code inside the profiled interpreter. The table is copied out of another
 * process, possibly while it is being freed or rewritten, so the decoder stays
 * inside @len, bounds every varint and checks line arithmetic instead of letting it
 * wrap: a torn or hostile table yields -EINVAL, never a crash or an invented line.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>

#include "cpython/py_linetable.h"

/* Entry kinds, bits 3-6 of an entry's first byte; the layout is unchanged 3.11-3.15. */
enum {
	LT_SHORT_MAX = 9,	/* 0-9: same line, one byte of columns */
	LT_ONE_LINE0 = 10,	/* 10-12: line advances by kind - 10, two column bytes */
	LT_ONE_LINE2 = 12,
	LT_NO_COLUMNS = 13,	/* svarint line delta */
	LT_LONG = 14,		/* svarint line delta, then three varints */
	LT_NONE = 15,		/* no location; the running line is kept */
};

#define LT_ENTRY_START	0x80
#define LT_VARINT_MORE	0x40
#define LT_VARINT_BITS	6
/* Six groups carry 36 bits; anything past that cannot come from a 32-bit value. */
#define LT_VARINT_MAX_SHIFT 30

struct lt_cursor {
	const uint8_t *tab;
	size_t len;
	size_t pos;
};

/*
 * Every byte after an entry's first has the top bit clear, which is what lets a
 * reader find entry boundaries; a set bit here means the entry was cut short.
 */
static int lt_byte(struct lt_cursor *c, uint8_t *out)
{
	uint8_t b;

	if (c->pos >= c->len)
		return -EINVAL;
	b = c->tab[c->pos];
	if (b & LT_ENTRY_START)
		return -EINVAL;
	c->pos++;
	*out = b;
	return 0;
}

static int lt_skip(struct lt_cursor *c, unsigned int n)
{
	uint8_t b;
	int err;

	while (n--) {
		err = lt_byte(c, &b);
		if (err)
			return err;
	}
	return 0;
}

static int lt_varint(struct lt_cursor *c, uint32_t *out)
{
	uint64_t val = 0;
	unsigned int shift = 0;
	uint8_t b;
	int err;

	for (;;) {
		err = lt_byte(c, &b);
		if (err)
			return err;
		val |= (uint64_t)(b & ((1u << LT_VARINT_BITS) - 1)) << shift;
		if (!(b & LT_VARINT_MORE))
			break;
		shift += LT_VARINT_BITS;
		if (shift > LT_VARINT_MAX_SHIFT)
			return -EINVAL;
	}
	if (val > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)val;
	return 0;
}

/* The sign lives in the low bit so that small deltas of either sign stay one byte. */
static int lt_svarint(struct lt_cursor *c, int64_t *out)
{
	uint32_t u;
	int err;

	err = lt_varint(c, &u);
	if (err)
		return err;
	*out = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return 0;
}

/*
 * Decodes the payload of one entry of @kind. Sets *@has_line and, if set, *@delta to
 * the change of the running start line. The whole entry is consumed even where only
 * its line matters, so a truncated entry is reported rather than half-believed.
 */
static int lt_entry(struct lt_cursor *c, unsigned int kind, bool *has_line,
		    int64_t *delta)
{
	uint32_t ignored;
	unsigned int i;
	int err;

	*has_line = true;
	*delta = 0;

	if (kind <= LT_SHORT_MAX)
		return lt_skip(c, 1);
	if (kind <= LT_ONE_LINE2) {
		*delta = kind - LT_ONE_LINE0;
		return lt_skip(c, 2);
	}
	if (kind == LT_NONE) {
		*has_line = false;
		return 0;
	}

	/* LT_NO_COLUMNS or LT_LONG */
	err = lt_svarint(c, delta);
	if (err || kind == LT_NO_COLUMNS)
		return err;
	/* end-line delta, start column + 1, end column + 1 */
	for (i = 0; i < 3; i++) {
		err = lt_varint(c, &ignored);
		if (err)
			return err;
	}
	return 0;
}

int py_linetable__line(const uint8_t *tab, size_t len, int firstlineno, uint32_t instr,
		    int *line)
{
	struct lt_cursor c = { .tab = tab, .len = len, .pos = 0 };
	int64_t cur = firstlineno;	/* wide, so a hostile delta cannot wrap it */
	uint64_t start = 0;		/* first code unit of the current entry */
	unsigned int kind, units;
	bool has_line;
	int64_t delta;
	uint8_t first;
	int err;

	if (!line || (len && !tab))
		return -EINVAL;

	/*
	 * Entries are only delta-coded, so there is no way to jump ahead: every entry
	 * before @instr has to be decoded. Entries after it are not looked at, so
	 * damage past the wanted entry goes unnoticed; that is the price of not
	 * walking the whole table for each sample.
	 */
	while (c.pos < c.len) {
		first = c.tab[c.pos++];
		if (!(first & LT_ENTRY_START))
			return -EINVAL;
		kind = (first >> 3) & 0xf;
		units = (first & 7) + 1;

		err = lt_entry(&c, kind, &has_line, &delta);
		if (err)
			return err;
		if (has_line) {
			cur += delta;
			/* CPython keeps the line in an int; a table that leaves it is not real. */
			if (cur < INT_MIN || cur > INT_MAX)
				return -EINVAL;
		}
		if (instr < start + units) {
			*line = has_line ? (int)cur : -1;
			return 0;
		}
		start += units;
	}
	return -ENOENT;
}
