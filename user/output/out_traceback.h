/* SPDX-License-Identifier: GPL-2.0-only */
/* Stacks written as Python tracebacks, one block per thread: what `dump` prints. */
#ifndef PBP_OUT_TRACEBACK_H
#define PBP_OUT_TRACEBACK_H

#include <stdint.h>
#include <stdio.h>

#include "decode/decoder.h"
#include "cpython/py_threads.h"
#include "base/strtab.h"

enum tb_cpu {
	TB_CPU_UNKNOWN,		/* e.g. a core: nothing says whether it ran */
	TB_CPU_ON,		/* running or runnable */
	TB_CPU_IDLE,		/* sleeping or waiting */
};

/* dump --native: a line of the stack, a native frame or one of the stack's Python
 * frames. */
struct tb_item {
	uint32_t native;	/* 1: @text names a native frame; 0: st->frames[index] */
	uint32_t index;
	const char *text;	/* from the target's files: escaped when written */
};

struct tb_thread {
	uint32_t tid;
	const char *name;	/* Python's name for it, or NULL */
	enum tb_cpu cpu;
	enum py_thread_gil gil;
	const struct stack *st;	/* NULL: the thread runs no Python code */
	/* dump --native (else NULL): the lines to write instead of st's frames, and a
	 * note on a native stack that is not whole ("[native: NOTE]") or NULL. */
	const struct tb_item *items;
	uint32_t nitems;
	const char *native_note;
};

/*
 * "Thread TID ["NAME" ](STATE[, holds the GIL]):" then one line per Python frame, innermost
 * first, each '  File "FILE", line N, in QUALNAME' ("line ?" when the line is not
 * known), and a last line '  [incomplete: WHY]' when the walk did not reach the
 * thread's first frame. With items, native frames are lines '  native: NAME'.
 * Returns 0 or -EIO if the stream failed.
 */
int out_traceback__thread(FILE *f, const struct strtab *strs, const struct tb_thread *t);

/* One frame's line, '@indent spaces File "FILE", line N, in QUALNAME', names escaped. */
void out_traceback__frame(FILE *f, const struct strtab *strs, const struct decoded_frame *fr,
			  unsigned int indent);

#endif
