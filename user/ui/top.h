/* SPDX-License-Identifier: GPL-2.0-only */
/* `pybpfprof top`: a live view of where a process spends its time, by function. */
#ifndef PBP_TOP_H
#define PBP_TOP_H

#include <stdint.h>
#include <sys/types.h>

#include "session/session.h"

struct top_opts {
	/* What record would take: the target, -r, and how samples are taken. top's own
	 * settings (the buffers, a row per function) are made by top.c. */
	struct session_opts session;
};

/* Runs until q, Ctrl-C, SIGTERM or the target's exit; returns the exit status
 * (exitcodes.h). */
int top__run(const struct top_opts *o);

#endif
