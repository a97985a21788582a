// SPDX-License-Identifier: GPL-2.0-only
/*
 * Collapsed stacks. A Python frame is "QUALNAME (FILENAME:LINE)"; ';' separates frames,
 * so it is replaced in names (a file name may hold one) to keep lines parseable.
 */
#include <errno.h>
#include <stdlib.h>

#include "out_collapsed.h"

static void put_name(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' || *s == '\n' ? '_' : *s, f);
}

static void put_frame(FILE *f, const struct agg_frame *fr, const struct strtab *strs)
{
	put_name(f, strtab__get(strs, fr->name));
	if (fr->kind != AGG_PYTHON)
		return;
	fputs(" (", f);
	put_name(f, strtab__get(strs, fr->file));
	if (fr->line >= 0)
		fprintf(f, ":%d", fr->line);
	fputc(')', f);
}

static int by_count_desc(const void *a, const void *b)
{
	const struct agg_stack *x = *(const struct agg_stack *const *)a;
	const struct agg_stack *y = *(const struct agg_stack *const *)b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

int out_collapsed__write(FILE *f, const struct aggregate *a, const struct strtab *strs)
{
	size_t n = aggregate__count(a);
	const struct agg_stack **order = malloc((n ? n : 1) * sizeof(*order));

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = aggregate__stack(a, i);
	qsort(order, n, sizeof(*order), by_count_desc);
	for (size_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < order[i]->depth; k++) {
			if (k)
				fputc(';', f);
			put_frame(f, &order[i]->frames[k], strs);
		}
		fprintf(f, " %llu\n", (unsigned long long)order[i]->count);
	}
	free(order);
	return ferror(f) ? -EIO : 0;
}
