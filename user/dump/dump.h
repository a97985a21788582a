/* SPDX-License-Identifier: GPL-2.0-only */
/* `pybpfprof dump`: every Python thread's stack, once, from a process or a core. */
#ifndef PBP_DUMP_H
#define PBP_DUMP_H

#include <sys/types.h>

struct dump_opts {
	pid_t pid;		/* 0 when a core is given */
	const char *core;
	const char *exe;	/* core only: the executable on this host */
	const char *sysroot;	/* core only: where the core's paths are rooted */
	int async_tasks;	/* --async: the asyncio task tree too */
	int native;		/* --native: C frames too (live processes) */
	int native_all;		/* --native-all: the interpreter's own frames too */
};

/* Writes the dump to standard output; returns the process exit status (exitcodes.h). */
int dump__run(const struct dump_opts *o);

#endif
