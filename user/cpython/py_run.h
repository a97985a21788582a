/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A run of Python frames that one activation of CPython's evaluation loop ran: the
 * decoder finds them (decode_runs.c), the native merger puts each where its activation
 * is on the C stack (native_merge.c). Its own header so that the merger, a pure
 * function, needs nothing of the decoder.
 */
#ifndef PBP_PY_RUN_H
#define PBP_PY_RUN_H

#include <stdint.h>

struct py_run {
	/* stack.frames[first, first + n), innermost first as decoded; n may be 0 for
	 * an activation caught entering or leaving, before or after its frames */
	uint32_t first, n;
	/* An address on the C stack inside that activation's native frame (its entry
	 * frame, or on 3.11 its _PyCFrame); 0 if unknown. */
	uint64_t c_addr;
};

#endif
