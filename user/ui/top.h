/* SPDX-License-Identifier: GPL-2.0-only */
/* `pybpfprof top`: a live view of where a process spends its time, by function. */
#ifndef PBP_TOP_H
#define PBP_TOP_H

#include <stdint.h>
#include <sys/types.h>

#include "session/session.h"

struct proc_filter;

struct top_opts {
	pid_t pid;
	int system_wide;	/* -a */
	const struct proc_filter *filter;
	uint32_t max_processes;
	uint32_t rate_hz;
	int no_bpf;		/* sample from user space, never load BPF */
	int no_hold;		/* live: never hold a thread still for a reading */
	int idle;		/* keep samples of threads not on a CPU (live mode) */
	int gil;		/* keep only samples of the thread holding the GIL */
	int async_tasks;	/* --async: asyncio tasks as rows */
	int threads;		/* --threads: threads as rows */
	int native;		/* --native: C frames with the Python ones */
	int native_all;		/* --native-all: the interpreter's own C frames too */
	uint32_t native_stack;	/* ... this many bytes (0: the default) */
	enum session_native_unwind native_unwind;	/* --native-unwind */
	enum sampler_clock clock;	/* --clock */
	enum session_mode mode;	/* wall, off-cpu: shares of time, waits as rows */
	uint32_t min_block_us;
};

/* Runs until q, Ctrl-C, SIGTERM or the target's exit; returns the exit status
 * (exitcodes.h). */
int top__run(const struct top_opts *o);

#endif
