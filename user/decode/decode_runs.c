// SPDX-License-Identifier: GPL-2.0-only
/*
 * Runs of Python frames per activation of the eval loop.
 *
 * Since 3.11 a Python-to-Python call stays inside one activation of
 * _PyEval_EvalFrameDefault; only a call through C (sorted() calling a key, a C
 * extension calling back, a generator resumed by C) starts another. Each activation
 * runs a run of frames, innermost first, that ends at the frame it was entered with.
 * How an activation is marked differs by version (Python/ceval.c of each):
 *
 *   3.12, 3.13  `_PyInterpreterFrame entry_frame;`, a local of _PyEval_EvalFrameDefault,
 *               pushed below the frame it runs, owner FRAME_OWNED_BY_CSTACK (3).
 *   3.14        `_PyEntryFrame entry;` (the frame plus a little stack), a local too,
 *               owner FRAME_OWNED_BY_INTERPRETER (3); FRAME_OWNED_BY_CSTACK (4) is
 *               assigned nowhere.
 *   3.15        the same local entry frame, owner FRAME_OWNED_BY_INTERPRETER (3), the
 *               CSTACK owner gone; but the thread's base frame (tstate->base_frame,
 *               embedded in _PyThreadStateImpl on the heap) has that owner too. It is
 *               always the chain's last frame (test_offsets' live walk checks it), and
 *               every entry frame has at least it below, so the one with no previous
 *               is the base frame, not an activation.
 *   3.11        no shim frames: the frame an activation was entered with has is_entry
 *               set, and the activation's `_PyCFrame cframe;` local is chained from
 *               tstate->cframe through cframe.previous, innermost first, down to the
 *               thread's root_cframe (in the thread state: no activation). The
 *               chain's k-th cframe belongs to the k-th run, and its current_frame is
 *               that run's innermost frame, which is checked.
 *
 * So on 3.12+ the entry frame's address is on the C stack, inside its activation's
 * native frame: it is the run's c_addr as walked, read from nowhere else. On 3.11 the
 * cframes are read from the sample's own copy of the native stack only, never from
 * live memory (the activations may have returned since); the first pointer that
 * leaves the copy, or a cframe that does not name its run's frame, ends the chain and
 * every run from there on has c_addr 0.
 */
#include <string.h>

#include "decode/decode_runs.h"
#include "base/structbuf.h"

struct runs_walk {
	const struct py_offsets *o;
	const struct thread_sample *t;
	uint64_t cframe; /* 3.11: the next activation's _PyCFrame; 0 once lost */
	uint64_t root;	 /* 3.11: &tstate->root_cframe */

	struct py_run run; /* the run being gathered */
	uint64_t run_top;  /* the address of its innermost frame */
	uint32_t ndec;	   /* decoded frames seen so far */
	int ended;	   /* in the last slot: an activation ended it, more may follow */
	int merged;	   /* in the last slot: it holds more than one activation */
};

/* A u64 of the native stack copy; -ERANGE outside it (an address of the live process
 * the copy does not hold is never read). */
static int cstack_u64(const struct thread_sample *t, uint64_t addr, uint64_t *v)
{
	struct structbuf b = structbuf__of(t->cstack, t->cstack_len);

	if (!t->cstack || addr < t->cstack_addr || structbuf__u64(&b, addr - t->cstack_addr, v))
		return -ERANGE;
	return 0;
}

static void walk_init(struct runs_walk *w, const struct py_offsets *o,
		      const struct thread_sample *t)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	w->t = t;
	if (o->fr_is_entry == PBP_OFF_NONE || !t->cstack || o->ts_cframe == PBP_OFF_NONE ||
	    o->cframe_previous == PBP_OFF_NONE || o->ts_root_cframe == PBP_OFF_NONE)
		return;
	/* The thread state is the sample's (a record copies it): where the chain
	 * starts. A wrong value is caught by the current_frame check. */
	if (mem__read_u64(t->mem, t->tstate + o->ts_cframe, &w->cframe))
		w->cframe = 0;
	w->root = t->tstate + o->ts_root_cframe;
}

/* 3.11: the _PyCFrame of the activation whose run starts at @top, and the chain moved
 * on to the next; 0 (and the chain lost) if it cannot be read from the copy or does
 * not name @top. */
static uint64_t next_cframe(struct runs_walk *w, uint64_t top)
{
	uint64_t cf = w->cframe, current, previous;

	w->cframe = 0;
	if (!cf || cf == w->root || cstack_u64(w->t, cf + w->o->cframe_current_frame, &current) ||
	    cstack_u64(w->t, cf + w->o->cframe_previous, &previous) || current != top)
		return 0;
	w->cframe = previous;
	return cf;
}

/* A frame on the C stack that marks an activation (3.12+): a shim, but not 3.15's
 * base frame, nor a frame of the interpreter's own code that the decoder hides (it
 * has no code in the chain either, but the thread owns it: 3.13+'s __init__ cleanup,
 * in the data stack). */
static int is_activation(const struct runs_walk *w, const struct raw_frame *r)
{
	if (r->code || w->o->version_hex < 0x030c0000 || !py_offsets__shim_owner(w->o, r->owner))
		return 0;
	return w->o->ts_base_frame == PBP_OFF_NONE || r->previous != 0;
}

static void push(struct stack *st, const struct py_run *run)
{
	st->runs[st->nruns++] = *run;
}

/* The run gathered so far ends at an activation at @c_addr. In the last slot it stays
 * open: later frames join it, and then no one activation is its own. */
static void end_run(struct runs_walk *w, struct stack *st, uint64_t c_addr)
{
	if (st->nruns < DECODE_MAX_RUNS - 1) {
		w->run.c_addr = c_addr;
		push(st, &w->run);
		w->run = (struct py_run){ .first = w->ndec };
		return;
	}
	w->ended = 1;
	w->run.c_addr = w->merged ? 0 : c_addr;
}

static void add_frame(struct runs_walk *w, const struct raw_frame *r)
{
	if (w->ended)
		w->merged = 1;
	w->ended = 0;
	if (!w->run.n)
		w->run_top = r->addr;
	w->run.n++;
	w->ndec++;
}

/* What is left open at the end: an activation whose end was not walked (c_addr 0),
 * or the last slot. Decoded frames the chain did not show (none, as the decoder
 * names them from it) would join it, so that the runs always cover the stack. */
static void flush(struct runs_walk *w, struct stack *st)
{
	if (w->ndec < st->depth) {
		w->run.n += st->depth - w->ndec;
		w->ended = 0;
	}
	if (!w->ended)
		w->run.c_addr = 0;
	if (w->run.n || w->ended)
		push(st, &w->run);
}

void decode_runs__find(const struct py_offsets *o, const struct thread_sample *t,
		       const struct raw_frame *raw, uint32_t nraw, struct stack *st)
{
	struct runs_walk w;

	st->nruns = 0;
	walk_init(&w, o, t);
	for (uint32_t i = 0; i < nraw; i++) {
		const struct raw_frame *r = &raw[i];
		int past = w.ndec == st->depth;

		/* Past the decoded frames only the end of the open run is of use (in the
		 * last slot, its first end: an activation without frames after it has
		 * nothing of the run). */
		if (past && (!w.run.n || w.ended))
			break;
		if (r->code && !past)
			add_frame(&w, r);
		if (r->code ? r->is_entry : is_activation(&w, r))
			end_run(&w, st, r->code ? next_cframe(&w, w.run_top) : r->addr);
	}
	flush(&w, st);
}
