/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which activation of CPython's evaluation loop ran which of a decoded stack's Python
 * frames, and where on the C stack that activation is: what lets --native put Python
 * frames in the place of the eval-loop frames among native ones (native_merge.h).
 */
#ifndef PBP_DECODE_RUNS_H
#define PBP_DECODE_RUNS_H

#include <stdint.h>

#include "decode/decoder.h"
#include "cpython/py_offsets.h"

/*
 * Fills st->runs / st->nruns from the chain the walk saw, raw[0, nraw) innermost first
 * (shim frames included), of which st->frames[0, st->depth) are the Python frames
 * decoded, in order. The runs cover exactly those decoded frames; an activation whose
 * end was not walked (an incomplete stack) has c_addr 0. On 3.11, c_addr comes from
 * the _PyCFrame chain read only from @t's copy of the native stack (t->cstack; none:
 * every c_addr is 0), plus the chain's start in the thread state through t->mem.
 */
void decode_runs__find(const struct py_offsets *o, const struct thread_sample *t,
		       const struct raw_frame *raw, uint32_t nraw, struct stack *st);

#endif
