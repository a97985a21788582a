/* SPDX-License-Identifier: GPL-2.0-only */
/* `pybpfprof record`: profile one process, or a command, into a file. */
#ifndef PBP_RECORD_H
#define PBP_RECORD_H

#include "cmd/outputs.h"
#include "output/out_report.h"
#include "session/session.h"

struct record_opts {
	struct session_opts session;	/* what to sample, and how */
	double duration_s;	/* 0: until the target exits or a signal */
	/* -o files; one without a path gets a name made from the target and the time */
	struct outputs outputs;
	const char *stats_file;
	int report;		/* --report: the table, after the profile is written */
	struct report_opts report_opts;
};

/* Runs the whole session; returns the process exit status (exitcodes.h). */
int record__run(const struct record_opts *o);

#endif
