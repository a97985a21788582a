/* SPDX-License-Identifier: GPL-2.0-only */
/* `pybpfprof record`: profile one process, or a command, into a file. */
#ifndef PBP_RECORD_H
#define PBP_RECORD_H

#include "session/session.h"
#include "output/writers.h"

struct record_opts {
	struct session_opts session;	/* what to sample, and how */
	double duration_s;	/* 0: until the target exits or a signal */
	const char *output;	/* NULL: a name made from the target and the time */
	const struct writer *writer;
	const char *stats_file;
};

/* Runs the whole session; returns the process exit status (exitcodes.h). */
int record__run(const struct record_opts *o);

#endif
