/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The status line of `record`: while profiling, one line on a terminal's stderr,
 * redrawn in place, says how far the run is. Nothing at all when stderr is not a
 * terminal, so logs and pipes stay plain text. Any message printed through log.h
 * first erases the line.
 */
#ifndef PBP_STATUS_LINE_H
#define PBP_STATUS_LINE_H

#include <stdint.h>

#include "session/session.h"

struct status_line {
	int fd;			/* where it is drawn; -1: not a terminal, draw nothing */
	int shown;		/* the line holds text to erase */
	uint64_t drawn_ns;	/* when it was last drawn */
};

/* Starts drawing on @fd if it is a terminal (-1: never), and erasing before log
 * messages. */
void status_line__init(struct status_line *sl, int fd);
/* Whether a redraw is due: the status it draws is worth computing only then. */
int status_line__due(const struct status_line *sl);
/* Redraws the line from @st, at most every 250 ms. */
void status_line__show(struct status_line *sl, const struct session_status *st);
/* Erases the line (it comes back on the next status_line__show()). */
void status_line__clear(struct status_line *sl);
/* Erases the line for good, before the summary and other final messages. */
void status_line__end(struct status_line *sl);

#endif
