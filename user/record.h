/* SPDX-License-Identifier: GPL-2.0-only */
/* `pybpfprof record`: profile one process, or a command, into a file. */
#ifndef PBP_RECORD_H
#define PBP_RECORD_H

#include <stdint.h>
#include <sys/types.h>

#include "writers.h"

struct record_opts {
	pid_t pid;		/* 0 when a command is given */
	char **cmd;		/* NULL-terminated argv after "--" */
	uint32_t rate_hz;
	double duration_s;	/* 0: until the target exits or a signal */
	const char *output;	/* NULL: a name made from the target and the time */
	const struct writer *writer;
	int threads;		/* a frame "thread TID" under the root */
	int nolineno;		/* aggregate by function, not by line */
	int function_lines;	/* each frame at its function's first line */
	const char *stats_file;
	uint32_t stack_cap;
	uint32_t ringbuf_mb;
	int no_bpf;		/* sample from user space, never load BPF */
	int idle;		/* keep samples of threads not on a CPU (live mode) */
	int gil;		/* keep only samples of the thread holding the GIL */
	int no_frame_cache;
	int subprocesses;	/* also profile the Python processes the target starts */
};

/* Runs the whole session; returns the process exit status (exitcodes.h). */
int record__run(const struct record_opts *o);

#endif
