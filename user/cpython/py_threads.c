// SPDX-License-Identifier: GPL-2.0-only
/*
 * The thread-list walk in user space. The lists change under us while the target runs:
 * a thread state read here may be freed a moment later, so everything read is treated
 * as a claim to check, and every loop has a fixed bound.
 */
#include <errno.h>

#include "pbp_abi.h"
#include "cpython/py_threads.h"
#include "base/structbuf.h"

/* A field of the copied thread state; 0 for one this version lacks (PBP_OFF_NONE) or
 * that lies outside the copy. */
static uint64_t ts_u64(const uint8_t *ts, uint32_t len, uint64_t off)
{
	const struct structbuf b = structbuf__of(ts, len);
	uint64_t v;

	return structbuf__u64(&b, off, &v) ? 0 : v;
}

/* The state of the GIL of @interp: its lock word and last holder. */
static int read_gil(struct mem_source *m, const struct py_interp *in, uint64_t interp,
		    uint64_t *holder)
{
	const struct py_offsets *o = &in->off;
	uint64_t gil;
	int32_t locked;

	*holder = 0;
	if (o->gil_locked == PBP_OFF_NONE || o->gil_last_holder == PBP_OFF_NONE)
		return -ENOTSUP;
	if (o->runtime_gil != PBP_OFF_NONE)
		gil = in->runtime + o->runtime_gil;
	else if (o->interp_gil_ptr == PBP_OFF_NONE ||
		 mem__read_u64(m, interp + o->interp_gil_ptr, &gil) || !gil)
		return -ENOTSUP;
	if (mem__read(m, gil + o->gil_locked, &locked, sizeof(locked)))
		return -EFAULT;
	if (locked <= 0)	/* -1: not created yet */
		return 0;
	return mem__read_u64(m, gil + o->gil_last_holder, holder);
}

static uint64_t current_frame(struct mem_source *m, const struct py_offsets *o,
			      const uint8_t *ts, uint32_t len)
{
	uint64_t cframe, frame = 0;

	if (o->ts_current_frame != PBP_OFF_NONE)
		return ts_u64(ts, len, o->ts_current_frame);
	cframe = ts_u64(ts, len, o->ts_cframe);
	if (!cframe || mem__read_u64(m, cframe + o->cframe_current_frame, &frame))
		return 0;
	return frame;
}

int py_threads__gil(struct mem_source *m, const struct py_interp *in, uint64_t *addr)
{
	const struct py_offsets *o = &in->off;
	uint64_t interp;

	*addr = 0;
	if (o->gil_locked == PBP_OFF_NONE || o->gil_last_holder == PBP_OFF_NONE)
		return -ENOTSUP;
	if (o->runtime_gil != PBP_OFF_NONE) {
		*addr = in->runtime + o->runtime_gil;
		return 0;
	}
	if (o->interp_gil_ptr == PBP_OFF_NONE ||
	    mem__read_u64(m, in->runtime + o->runtime_interpreters_head, &interp) || !interp ||
	    mem__read_u64(m, interp + o->interp_gil_ptr, addr) || !*addr)
		return -ENOTSUP;
	return 0;
}

/* The fields of @t that describe its stack, from the thread state bytes @ts. */
static void fill(struct mem_source *m, const struct py_offsets *o, const uint8_t *ts,
		 uint32_t len, struct py_thread *t)
{
	t->tid = (uint32_t)ts_u64(ts, len, o->ts_native_thread_id);
	t->chunk = ts_u64(ts, len, o->ts_datastack_chunk);
	t->top = ts_u64(ts, len, o->ts_datastack_top);
	t->limit = ts_u64(ts, len, o->ts_datastack_limit);
	t->ts_cframe = ts_u64(ts, len, o->ts_cframe);
	t->current_frame = current_frame(m, o, ts, len);
	t->anchor = ts_u64(ts, len, o->ts_last_profiled_frame);
	t->anchor_seq = ts_u64(ts, len, o->ts_last_profiled_frame_seq);
}

int py_threads__refresh(struct mem_source *m, const struct py_interp *in, struct py_thread *t)
{
	const struct py_offsets *o = &in->off;
	uint8_t ts[PYTHREADS_TS_MAX];
	uint32_t len = o->ts_size < sizeof(ts) ? (uint32_t)o->ts_size : sizeof(ts);
	uint32_t tid = t->tid;

	if (mem__read(m, t->tstate, ts, len))
		return -EFAULT;
	fill(m, o, ts, len, t);
	t->ts_bytes = NULL;
	t->ts_len = 0;
	/* A thread state freed and reused by another thread is not this thread. */
	return t->tid == tid ? 0 : -ESRCH;
}

static int walk_threads(struct mem_source *m, const struct py_interp *in, uint64_t interp,
			py_thread_fn fn, void *arg)
{
	const struct py_offsets *o = &in->off;
	uint8_t ts[PYTHREADS_TS_MAX];
	uint32_t len = o->ts_size < sizeof(ts) ? (uint32_t)o->ts_size : sizeof(ts);
	uint64_t tstate, holder;
	int gil_err, err;

	gil_err = read_gil(m, in, interp, &holder);
	if (mem__read_u64(m, interp + o->interp_threads_head, &tstate))
		return -EFAULT;
	for (int i = 0; tstate && i < PBP_THREADS_MAX; i++) {
		struct py_thread t = { .interp = interp, .tstate = tstate };

		if ((tstate & 7) || mem__read(m, tstate, ts, len))
			return 0;	/* the list changed under us: what was seen stands */
		fill(m, o, ts, len, &t);
		t.gil = gil_err ? PY_THREAD_GIL_UNKNOWN :
			holder == tstate ? PY_THREAD_GIL_HELD : PY_THREAD_GIL_NO;
		t.ts_bytes = ts;
		t.ts_len = len;
		err = fn(&t, arg);
		if (err)
			return err;
		tstate = ts_u64(ts, len, o->ts_next);
	}
	return 0;
}

int py_threads__walk(struct mem_source *m, const struct py_interp *in, py_thread_fn fn,
		    void *arg)
{
	const struct py_offsets *o = &in->off;
	uint64_t interp;
	int err;

	if (mem__read_u64(m, in->runtime + o->runtime_interpreters_head, &interp))
		return -EFAULT;
	for (int i = 0; interp && i < PBP_INTERPS_MAX; i++) {
		if (interp & 7)
			return 0;
		err = walk_threads(m, in, interp, fn, arg);
		if (err)
			return err;
		if (o->interp_next == PBP_OFF_NONE ||
		    mem__read_u64(m, interp + o->interp_next, &interp))
			return 0;
	}
	return 0;
}
