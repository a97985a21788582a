/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Python threads of one interpreter runtime, read through any memory source:
 * every interpreter's thread list, each thread's state, its current frame and whether
 * it holds the GIL. Used where no BPF program found the thread for us: live-only
 * sampling, dump, core files.
 */
#ifndef PBP_PYTHREADS_H
#define PBP_PYTHREADS_H

#include <stdint.h>

#include "interp.h"
#include "mem.h"

#define PYTHREADS_TS_MAX PBP_TSTATE_COPY_MAX	/* bytes of a thread state kept */

enum pythread_gil {
	PYTHREAD_GIL_UNKNOWN = -1,	/* this version's GIL state is not known to us */
	PYTHREAD_GIL_NO = 0,
	PYTHREAD_GIL_HELD = 1,
};

struct pythread {
	uint64_t interp;
	uint64_t tstate;
	uint32_t tid;			/* kernel thread id (native_thread_id) */
	uint64_t current_frame;		/* 0: the thread runs no Python code */
	uint64_t chunk, top, limit;	/* current data-stack chunk, its top and end */
	uint64_t ts_cframe;		/* 3.11/3.12: tstate->cframe; else 0 */
	uint64_t anchor, anchor_seq;	/* 3.15+: last_profiled_frame(_seq); else 0 */
	enum pythread_gil gil;
	const uint8_t *ts_bytes;	/* the thread state as read, ts_len bytes */
	uint32_t ts_len;
};

/* Called per thread; a non-zero return stops the walk and is returned. */
typedef int (*pythread_fn)(const struct pythread *t, void *arg);

/*
 * Walks every thread of every interpreter of @in through @m. Bounded by
 * PBP_INTERPS_MAX interpreters and PBP_THREADS_MAX threads each, so a corrupt or
 * cyclic list ends the walk. Returns 0, the callback's value, or -EFAULT if the
 * runtime itself cannot be read.
 */
int pythreads__walk(struct mem_source *m, const struct py_interp *in, pythread_fn fn,
		    void *arg);

/* Reads @t's thread state again and updates its stack fields (not the GIL state);
 * -ESRCH if it now belongs to another thread. */
int pythreads__refresh(struct mem_source *m, const struct py_interp *in, struct pythread *t);

/* Address of the GIL's state of the first interpreter in the list (the newest one);
 * -ENOTSUP where this version's layout is unknown. From 3.12 on a subinterpreter may
 * have a GIL of its own: pythreads__walk() reads each interpreter's, and so does
 * the BPF program, which only needs to know here that the GIL can be read. */
int pythreads__gil(struct mem_source *m, const struct py_interp *in, uint64_t *addr);

#endif
