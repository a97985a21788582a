/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `pybpfprof diff`'s outputs (profile_diff.h): the table of the functions that grew or
 * shrank the most, and NEW's flame graph with each node coloured only when its change
 * is beyond sampling noise: red grew, blue shrank, deeper the larger the change.
 */
#ifndef PBP_OUT_DIFF_H
#define PBP_OUT_DIFF_H

#include <stddef.h>
#include <stdio.h>

#include "profile/profile_diff.h"

/* The first @limit functions (0: all) by the size of their change: 0, -ENOMEM or -EIO. */
int out_diff__write_table(FILE *f, const struct profile_diff *d, size_t limit);
/* NEW's flame graph, painted; an HTML page if @html. 0 or a negative errno. */
int out_diff__write_svg(FILE *f, const struct profile_diff *d, int html);

#endif
