/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --native: one stack of native and Python frames, from a native walk (native_unwind.h)
 * and the runs of Python frames each eval-loop activation ran (decode_runs.h). A pure
 * function of its input: no allocation, no I/O, bounded by the input's size.
 */
#ifndef PBP_NATIVE_MERGE_H
#define PBP_NATIVE_MERGE_H

#include <stdint.h>

#include "cpython/py_run.h"

/* A native frame as the merge needs it. */
struct native_merge_frame {
	uint64_t sp;	 /* native_frame.sp: its stack area is [sp, the next frame's sp) */
	uint32_t module; /* which object its PC is in, any id the caller likes; 0 unknown */
};

enum native_merge_kind {
	NATIVE_MERGE_NATIVE, /* index into native_merge_in.frames */
	NATIVE_MERGE_PYTHON, /* index into the decoded stack's frames (py_run.first + i) */
};

struct native_merge_item {
	uint32_t kind; /* enum native_merge_kind */
	uint32_t index;
};

enum native_merge_result {
	/* Every run is in its activation's native frame. */
	NATIVE_MERGE_MATCHED,
	/* The native walk ended before some runs' activations (or their place is not
	 * known): those outer runs follow the native frames as Python frames only. */
	NATIVE_MERGE_CUT,
	/* The two do not agree (an activation below the walk, in no frame, two in one
	 * frame, out of order; or native stack pointers that do not rise): only the
	 * Python frames are given, and the caller marks the stack. */
	NATIVE_MERGE_UNMATCHED,
};

struct native_merge_in {
	const struct native_merge_frame *frames; /* innermost first */
	uint32_t nframes;
	int complete;		   /* the walk reached the outermost frame (NATIVE_END_OUTERMOST) */
	const struct py_run *runs; /* innermost first, as stack.runs */
	uint32_t nruns;
	/* Keep every native frame, each run just inside its activation's frame;
	 * otherwise (the default) the interpreter's own plumbing is dropped. */
	int all;
};

/*
 * Interleaves @in into @out, innermost first; *@nout items, *@result how well they
 * matched. Activation k is the native frame whose area holds runs[k].c_addr; runs are
 * matched innermost first, in rising frame order.
 *
 * Default: native frames above the innermost activation are kept (the C code Python
 * is calling now: libc, an extension, list_sort or PyObject_Malloc), each activation
 * frame becomes its run's Python frames, frames between two activations are dropped
 * if they are in the activations' object (vectorcall trampolines, PyObject_Call: the
 * interpreter's plumbing) and kept otherwise (ctypes, libffi, libc's qsort, an
 * extension), and everything below the outermost activation (process or thread
 * start-up) is dropped. With in->all, every native frame is kept and each run's Python
 * frames come just before its activation frame. Without Python frames, every native
 * frame is kept.
 *
 * @cap must hold nframes plus the runs' Python frames. 0; -EINVAL for input that does
 * not hold together (a count without its array, a run past 2^32 frames); -ENOSPC if
 * @cap is too small.
 */
int native_merge__interleave(const struct native_merge_in *in, struct native_merge_item *out,
			     uint32_t cap, uint32_t *nout, enum native_merge_result *result);

/* How many of @in's runs, innermost first, native_merge__interleave() places in the
 * walk; with NATIVE_MERGE_CUT the others' Python frames end its output, so the caller
 * knows where the walk's frames stop. */
uint32_t native_merge__placed(const struct native_merge_in *in);

const char *native_merge__result_name(enum native_merge_result r);

#endif
