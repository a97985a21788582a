/* SPDX-License-Identifier: GPL-2.0-only */
/* A word of the command line or a config file looked up in a table of names, whose
 * index is the value it names (an enum's, in declaration order). */
#ifndef PBP_NAMES_H
#define PBP_NAMES_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define NAMES_N(names) (sizeof(names) / sizeof((names)[0]))

/* @s's index in @names (@n of them), or -EINVAL when it is none of them. */
static inline int names__index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && !strcmp(s, names[i]))
			return (int)i;
	return -EINVAL;
}

#endif
