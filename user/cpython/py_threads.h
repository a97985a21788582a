/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Python threads of one interpreter runtime, read through any memory source:
 * every interpreter's thread list, each thread's state, its current frame and whether
 * it holds the GIL. Used where no BPF program found the thread for us: live-only
 * sampling, dump, core files.
 */
#ifndef PBP_PY_THREADS_H
#define PBP_PY_THREADS_H

#include <stdint.h>

#include "cpython/py_interp.h"
#include "mem/mem.h"

#define PYTHREADS_TS_MAX PBP_TSTATE_COPY_MAX	/* bytes of a thread state kept */

enum py_thread_gil {
	PY_THREAD_GIL_UNKNOWN = -1,	/* this version's GIL state is not known to us */
	PY_THREAD_GIL_NO = 0,
	PY_THREAD_GIL_HELD = 1,
};

struct py_thread {
	uint64_t interp;
	uint64_t tstate;
	uint32_t tid;			/* kernel thread id (native_thread_id) */
	uint64_t current_frame;		/* 0: the thread runs no Python code */
	uint64_t chunk, top, limit;	/* current data-stack chunk, its top and end */
	uint64_t ts_cframe;		/* 3.11/3.12: tstate->cframe; else 0 */
	uint64_t anchor, anchor_seq;	/* 3.15+: last_profiled_frame(_seq); else 0 */
	enum py_thread_gil gil;
	const uint8_t *ts_bytes;	/* the thread state as read, ts_len bytes */
	uint32_t ts_len;
};

/* Called per thread; a non-zero return stops the walk and is returned. */
typedef int (*py_thread_fn)(const struct py_thread *t, void *arg);

/*
 * Walks every thread of every interpreter of @in through @m. Bounded by
 * PBP_INTERPS_MAX interpreters and PBP_THREADS_MAX threads each, so a corrupt or
 * cyclic list ends the walk. Returns 0, the callback's value, or -EFAULT if the
 * runtime itself cannot be read.
 */
int py_threads__walk(struct mem_source *m, const struct py_interp *in, py_thread_fn fn,
		    void *arg);

/* Reads @t's thread state again and updates its stack fields (not the GIL state);
 * -ESRCH if it now belongs to another thread. */
int py_threads__refresh(struct mem_source *m, const struct py_interp *in, struct py_thread *t);

/* Address of the GIL's state of the first interpreter in the list (the newest one);
 * -ENOTSUP where this version's layout is unknown. From 3.12 on a subinterpreter may
 * have a GIL of its own: py_threads__walk() reads each interpreter's, and so does
 * the BPF program, which only needs to know here that the GIL can be read. */
int py_threads__gil(struct mem_source *m, const struct py_interp *in, uint64_t *addr);

#endif
