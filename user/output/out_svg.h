/* SPDX-License-Identifier: GPL-2.0-only */
/* The SVG flame graph writer: one self-contained, interactive file, SVG or HTML. */
#ifndef PBP_OUT_SVG_H
#define PBP_OUT_SVG_H

#include <stdio.h>

#include "profile/profile.h"

/*
 * A flame graph, root at the bottom, widths proportional to samples; hover details,
 * click to zoom and search work offline in any browser. Threads are merged unless
 * the stacks carry thread frames. Returns 0 or a negative errno.
 */
int out_svg__write(FILE *f, const struct profile *p);
/* The same flame graph in an HTML page of its own, as interactive and as offline. */
int out_svg__write_html(FILE *f, const struct profile *p);

#endif
