// SPDX-License-Identifier: GPL-2.0-only
/*
 * Collapsed stacks. A Python frame is "QUALNAME (FILENAME:LINE)", a native one
 * "FUNCTION+0xOFFSET (OBJECT)", or "FUNCTION (SOURCE:LINE)" with DWARF line info (the
 * source's base name); ';' separates frames, so it is replaced in names (a
 * file name may hold one) to keep lines parseable.
 * Counts are samples, or microseconds in wall and off-CPU profiles.
 */
#include <errno.h>
#include <stdlib.h>

#include "output/out_collapsed.h"
#include "base/text_safe.h"

/* Names come from the target: ';' and newlines would break the line format, and other
 * control characters could drive a terminal reading `-o -`. */
static void put_name(FILE *f, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		int ok;
		size_t len = text_safe__next(u, &ok);

		for (size_t i = 0; i < len; i++, u++) {
			if (*u == ';' || *u == '\n')
				fputc('_', f);
			else if (ok)
				fputc(*u, f);
			else
				fprintf(f, "\\x%02x", *u);
		}
	}
}

/* "QUALNAME (FILE:LINE)", a native frame "FUNCTION+0xOFF (OBJECT)" or
 * "FUNCTION (SOURCE:LINE)". */
static void put_frame(FILE *f, const struct agg_frame *fr, const struct profile *p)
{
	const char *src = profile__source(p, fr);

	put_name(f, profile__name(p, fr));
	if (fr->kind != AGG_PYTHON && fr->kind != AGG_NATIVE)
		return;
	if (fr->kind == AGG_NATIVE && !src && fr->line >= 0)
		fprintf(f, "+0x%x", (unsigned)fr->line);
	fputs(" (", f);
	put_name(f, src ? profile__base_name(src) : strtab__get(p->strs, fr->file));
	if ((fr->kind == AGG_PYTHON || src) && fr->line >= 0)
		fprintf(f, ":%d", fr->line);
	fputc(')', f);
}

static int by_count_desc(const void *a, const void *b)
{
	const struct agg_stack *x = *(const struct agg_stack *const *)a;
	const struct agg_stack *y = *(const struct agg_stack *const *)b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x < y ? -1 : x > y;	/* first seen first: the same output every time */
}

/* The same frames from two threads are one line: merge on frames alone. */
static struct aggregate *merge_threads(const struct aggregate *a)
{
	struct aggregate *m = aggregate__new();

	for (size_t i = 0; m && i < aggregate__count(a); i++) {
		const struct agg_stack *s = aggregate__stack(a, i);

		if (aggregate__add(m, 0, 0, s->frames, s->depth, s->count, NULL)) {
			aggregate__free(m);
			return NULL;
		}
	}
	return m;
}

int out_collapsed__write(FILE *f, const struct profile *p)
{
	struct aggregate *a = merge_threads(p->agg);
	size_t n = a ? aggregate__count(a) : 0;
	const struct agg_stack **order = malloc((n ? n : 1) * sizeof(*order));
	int err = -ENOMEM;

	if (!a || !order)
		goto out;
	for (size_t i = 0; i < n; i++)
		order[i] = aggregate__stack(a, i);
	qsort(order, n, sizeof(*order), by_count_desc);
	for (size_t i = 0; i < n; i++) {
		/* Time is written in microseconds: nanoseconds would make every line's
		 * count a ten-digit number for a tool that only compares them. */
		uint64_t count = p->unit == PROFILE_NS ? (order[i]->count + 500) / 1000
						       : order[i]->count;

		if (!count)
			continue;
		for (uint32_t k = 0; k < order[i]->depth; k++) {
			if (k)
				fputc(';', f);
			put_frame(f, &order[i]->frames[k], p);
		}
		fprintf(f, " %llu\n", (unsigned long long)count);
	}
	err = ferror(f) ? -EIO : 0;
out:
	free(order);
	aggregate__free(a);
	return err;
}
