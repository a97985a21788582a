/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The function table of `top`, computed from a profile that keeps growing, and drawn
 * as text: a full screen of a given size, or a plain block for a pipe or a file. Pure:
 * it knows no terminal and no session, so a fixed profile gives a fixed rendering.
 *
 * A function is a (qualname, file) pair of Python frames, whatever the line, or a
 * (function, object) pair of native ones (--native), whatever the offset. Its own
 * samples are those where it is the innermost frame; its total samples are those where
 * it is anywhere on the stack, counted once per sample even when it recurses.
 * Percentages are of the samples taken since the previous update (what runs now, as in
 * py-spy top); times count every sample since the start.
 */
#ifndef PBP_TOP_VIEW_H
#define PBP_TOP_VIEW_H

#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

enum top_sort { TOP_BY_OWN, TOP_BY_TOTAL };

struct top_row {
	uint32_t name, file;		/* strtab ids of co_qualname and co_filename, or
					 * of a C function and its object */
	uint32_t native;		/* of a C function: shown with its source file,
					 * if its name has one (profile__source()) */
	int32_t thread;			/* of a thread (--threads): its slot in
					 * p->threads, whose label it shows; else -1 */
	uint64_t own, total;		/* samples since the start */
	uint64_t own_now, total_now;	/* samples of the last update */
};

/* What a row shows beside its name: its file, a C function's source file (base name)
 * or object, NULL for a process. */
const char *top_view__row_file(const struct profile *p, const struct top_row *r);

/* The file of a row that is a whole process ("process PID COMMAND", with -a). */
#define TOP_NO_FILE UINT32_MAX

/* What the lines above the table say. */
struct top_header {
	const char *target;	/* "pid 123 (python3 app.py)" */
	const char *clock;	/* text mode: the time stamp that opens a block; NULL: none */
	const char *note;	/* screen: a line above the table (a warning); NULL: none */
	uint32_t rate_hz;
	double elapsed_s;
	uint64_t samples, incomplete, drops;
	uint32_t threads;
	uint32_t processes;	/* shown when more than one */
};

/* Screen rendering: cursor home, erase to end of line, a highlighted table header. */
#define TOP_ANSI 1u

struct top_view;

int top_view__new(struct top_view **out);
void top_view__free(struct top_view *v);
/*
 * Takes in the samples @p gained since the previous call (all of them the first time,
 * or when @p holds another aggregate). Returns 0 or -ENOMEM.
 */
int top_view__update(struct top_view *v, const struct profile *p);
/* Orders the rows by @key, current share first, then time since the start. */
void top_view__sort(struct top_view *v, enum top_sort key);
size_t top_view__count(const struct top_view *v);
/* The @i-th row in the last sort's order. */
const struct top_row *top_view__row(const struct top_view *v, size_t i);
/* Samples of the last update, the denominator of the percentages. */
uint64_t top_view__window(const struct top_view *v);

/*
 * Draws a whole screen of exactly @height lines, none wider than @width columns, the
 * last without a newline (so that a terminal does not scroll). Names come from the
 * target and are shown with control characters replaced.
 */
int top_view__render_screen(struct top_view *v, const struct profile *p,
			    const struct top_header *h, enum top_sort key, int width, int height,
			    unsigned int flags, FILE *f);
/* A plain block: a stamp line, the table header, the @nrows first rows, a blank line. */
int top_view__render_text(struct top_view *v, const struct profile *p,
			  const struct top_header *h, enum top_sort key, size_t nrows, FILE *f);

#endif
