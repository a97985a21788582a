/* SPDX-License-Identifier: GPL-2.0-only */
/* The SVG flame graph writer: one self-contained, interactive file, SVG or HTML. */
#ifndef PBP_OUT_SVG_H
#define PBP_OUT_SVG_H

#include <stdint.h>
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

/* How a frame is drawn when someone else colours the graph (a differential one). */
struct svg_mark {
	char fill[8];		/* "#rrggbb" */
	char mark[16];		/* its data-mark attribute, for scripts and tests; "" none */
	char note[160];		/* one more line of its tooltip; "" none */
};

/*
 * The mark of the frame reached by @path[0..@depth) (depth 0: the "all" root, @path
 * NULL), @n counts wide: 0, or a negative errno that ends the writing.
 */
typedef int (*svg_paint_fn)(void *ctx, const struct agg_frame *path, uint32_t depth,
			    uint64_t n, struct svg_mark *m);

struct svg_legend_item {
	const char *fill, *label;
};

struct svg_painter {
	svg_paint_fn paint;
	void *ctx;
	const char *subtitle;	/* instead of duration, rate and total */
	const char *note;	/* a line under it, "" none */
	const struct svg_legend_item *legend;	/* instead of the frame classes' */
	size_t nlegend;
};

/* The flame graph of @p with each frame as @pt paints it; an HTML page if @html. */
int out_svg__write_painted(FILE *f, const struct profile *p, const struct svg_painter *pt,
			   int html);

#endif
