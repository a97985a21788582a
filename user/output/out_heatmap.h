/* SPDX-License-Identifier: GPL-2.0-only */
/* The source heatmap (-f heatmap, .heatmap.html); see out_heatmap.c. */
#ifndef PBP_OUT_HEATMAP_H
#define PBP_OUT_HEATMAP_H

#include <stdio.h>

#include "profile/profile.h"

/* One self-contained HTML page of every sampled source file, each line shaded by its
 * share. 0, -ENOMEM or -EIO. */
int out_heatmap__write(FILE *f, const struct profile *p);

#endif
