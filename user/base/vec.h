/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Growable arrays: the one place that doubles a capacity and reallocates, with the
 * size arithmetic checked, for arrays the caller keeps as (items, n, cap).
 */
#ifndef PBP_VEC_H
#define PBP_VEC_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Makes room for @need elements of @elem_size bytes in *@items, whose capacity is
 * *@cap: doubles the capacity (from @first when there is none) until it holds @need.
 * 0, or -ENOMEM with *@items and *@cap as they were.
 */
static inline int vec__reserve(void **items, size_t *cap, size_t need, size_t elem_size,
			       size_t first)
{
	size_t n = *cap ? *cap : first ? first : 1;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (elem_size && n > SIZE_MAX / elem_size)
		return -ENOMEM;
	p = realloc(*items, n * elem_size);
	if (!p)
		return -ENOMEM;
	*items = p;
	*cap = n;
	return 0;
}

#endif
