// SPDX-License-Identifier: GPL-2.0-only
/*
 * The live-memory sampler. Each thread's current chunk is read twice, and the decoder
 * compares every frame header it used across the two readings (decode.c: verify), so
 * a stack torn by the running thread is read again instead of being reported.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "proc.h"
#include "pythreads.h"
#include "sampler_live.h"

#define TORN_RETRIES 3

struct live_sampler {
	struct live_sampler_cfg cfg;
	struct live_sampler_stats stats;
	uint64_t period_ns, next_ns;
	struct mem_snapshot first, second;
	uint8_t *buf[2];
	struct stack *stack;
	int err;		/* the callback's failure, ends the walk */
};

int live_sampler__new(const struct live_sampler_cfg *cfg, struct live_sampler **out)
{
	struct live_sampler *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return -ENOMEM;
	ls->cfg = *cfg;
	ls->buf[0] = malloc(cfg->stack_cap);
	ls->buf[1] = malloc(cfg->stack_cap);
	ls->stack = malloc(sizeof(*ls->stack));
	if (!ls->buf[0] || !ls->buf[1] || !ls->stack) {
		live_sampler__free(ls);
		return -ENOMEM;
	}
	ls->period_ns = 1000000000ull / (cfg->rate_hz ? cfg->rate_hz : 100);
	mem_snapshot__init(&ls->first, &cfg->live->base);
	mem_snapshot__init(&ls->second, &cfg->live->base);
	ls->next_ns = clock__mono_ns();
	*out = ls;
	return 0;
}

void live_sampler__free(struct live_sampler *ls)
{
	if (!ls)
		return;
	free(ls->buf[0]);
	free(ls->buf[1]);
	free(ls->stack);
	free(ls);
}

#define LIVE_SPANS 16	/* chunks read per sample, newest first */

/* Where a reading copies from: the live parts of the newest chunks. */
struct spans {
	unsigned int n;
	uint64_t addr[LIVE_SPANS];
	uint32_t len[LIVE_SPANS];
};

/*
 * The live part of the current chunk and of the older ones below it, newest bytes
 * first, within the cap; the copy stops at the frame cache's anchor (@stop), below
 * which the cache holds the frames. An older chunk's header is frozen while a newer
 * chunk is in use, and the two readings catch one that changed in between.
 */
static void chunk_ranges(const struct live_sampler *ls, const struct pythread *t,
			 uint64_t stop, struct spans *sp)
{
	const struct py_offsets *o = &ls->cfg.interp->off;
	struct mem_source *m = &ls->cfg.live->base;
	uint64_t chunk = t->chunk, top = t->top, left = ls->cfg.stack_cap, prev = 0, hdr[3];
	int have_prev = 0;

	sp->n = 0;
	while (chunk && left && sp->n < LIVE_SPANS) {
		uint64_t data = chunk + o->chunk_data, start;

		if (top <= data || top - data > (1ull << 30))
			return;
		start = top - data > left ? top - left : data;
		if (stop >= start && stop < top)
			start = stop;
		sp->addr[sp->n] = start;
		sp->len[sp->n] = (uint32_t)(top - start);
		left -= top - start;
		sp->n++;
		if (start != data || (!have_prev && mem__read_u64(m, chunk + o->chunk_previous, &prev)))
			return;
		chunk = prev;
		/* The older chunk's previous, size and saved top (in slots), in one read. */
		if (!chunk || mem__read(m, chunk + o->chunk_previous, hdr, sizeof(hdr)))
			return;
		prev = hdr[0];
		have_prev = 1;
		top = chunk + o->chunk_data + hdr[2] * 8;
	}
}

/* What a reading takes from the thread state, besides the chunk. */
struct ts_words {
	uint64_t frame;		/* current frame (3.11/3.12: through the C frame) */
	uint64_t cframe;	/* 3.11/3.12: tstate->cframe, must not have changed */
	uint64_t anchor, seq;	/* 3.15+ */
};

/*
 * One reading: the thread state's words and then the chunk, in one system call, so
 * the current frame and the frames below it are taken microseconds apart, not across
 * the whole sample. The walk starts at the frame this reading saw.
 */
static int read_once(struct live_sampler *ls, const struct pythread *t, int which,
		     const struct spans *sp, struct ts_words *w)
{
	const struct py_offsets *o = &ls->cfg.interp->off;
	struct mem_snapshot *snap = which ? &ls->second : &ls->first;
	uint64_t addr[4 + LIVE_SPANS];
	void *dst[4 + LIVE_SPANS];
	size_t lens[4 + LIVE_SPANS], off = 0;
	unsigned int n = 0;

	memset(w, 0, sizeof(*w));
	if (o->ts_current_frame != PBP_OFF_NONE) {
		addr[n] = t->tstate + o->ts_current_frame, dst[n] = &w->frame, lens[n++] = 8;
	} else {
		if (!t->ts_cframe)
			return -EFAULT;
		addr[n] = t->tstate + o->ts_cframe, dst[n] = &w->cframe, lens[n++] = 8;
		addr[n] = t->ts_cframe + o->cframe_current_frame, dst[n] = &w->frame, lens[n++] = 8;
	}
	if (o->ts_last_profiled_frame != PBP_OFF_NONE) {
		addr[n] = t->tstate + o->ts_last_profiled_frame, dst[n] = &w->anchor, lens[n++] = 8;
		addr[n] = t->tstate + o->ts_last_profiled_frame_seq, dst[n] = &w->seq, lens[n++] = 8;
	}
	for (unsigned int i = 0; i < sp->n; i++) {
		addr[n] = sp->addr[i], dst[n] = ls->buf[which] + off, lens[n++] = sp->len[i];
		off += sp->len[i];
	}
	if (mem_live__readv(ls->cfg.live, n, addr, dst, lens))
		return -EFAULT;
	if (o->ts_current_frame == PBP_OFF_NONE && w->cframe != t->ts_cframe)
		return -EAGAIN;
	mem_snapshot__clear(snap);
	for (unsigned int i = 0, at = 0; i < sp->n; at += sp->len[i], i++)
		mem_snapshot__add(snap, sp->addr[i], ls->buf[which] + at, sp->len[i]);
	return 0;
}

/* One sample of @t: two readings, decoded from the first and checked against the
 * second (decode.c: verify); GAP_TORN in the stack when they disagree. */
static void sample_once(struct live_sampler *ls, const struct pythread *t, uint32_t flags)
{
	struct thread_sample s = {
		.pid = (uint32_t)ls->cfg.interp->pid,
		.tid = t->tid,
		.flags = flags,
		.tstate = t->tstate,
		.mem = &ls->first.base,
		.copy = &ls->first,
		.verify = &ls->second.base,
	};
	struct ts_words w1, w2;
	struct spans sp;

	if (ls->cfg.fcache &&
	    frame_cache__anchor_hit(ls->cfg.fcache, t->tid, t->tstate, t->anchor, t->anchor_seq,
				    &s.cache_gen, &s.cache_depth))
		s.from_anchor = 1;
	chunk_ranges(ls, t, s.from_anchor ? t->anchor : 0, &sp);
	if (read_once(ls, t, 0, &sp, &w1) || read_once(ls, t, 1, &sp, &w2)) {
		ls->stack->gap = GAP_TORN;
		ls->stack->depth = 0;
		ls->stack->pid = s.pid;
		ls->stack->tid = t->tid;
		ls->stack->flags = flags;
		return;
	}
	s.ts_ns = clock__mono_ns();
	s.current_frame = w1.frame;
	s.anchor = w1.anchor;
	s.anchor_seq = w1.seq;
	s.verify_frame = w2.frame;
	s.verify_anchor = w2.anchor;
	s.verify_seq = w2.seq;
	/* The copy was cut at the anchor the thread list showed: the readings must
	 * show the same one, or the cut proves nothing. And a current frame in the
	 * chunk but above the copy means the stack grew since the list was read: its
	 * frames would come from page reads of other moments. */
	if ((s.from_anchor && (w1.anchor != t->anchor || w1.seq != t->anchor_seq)) ||
	    (w1.frame >= t->chunk && w1.frame < t->limit &&
	     !mem_snapshot__covers(&ls->first, w1.frame, 8)))
		s.verify_frame = ~w1.frame;
	decoder__decode_thread(ls->cfg.dec, &s, ls->stack);
}

static int sample_thread(const struct pythread *t, void *arg)
{
	struct live_sampler *ls = arg;
	struct pythread cur = *t;
	uint32_t flags = 0;
	char state;
	int running;

	if (proc__thread_state(ls->cfg.interp->pid, (pid_t)t->tid, &state))
		return 0;	/* the thread ended since the list was read */
	running = state == 'R';
	if (running)
		flags |= PBP_TS_ON_CPU;
	if (t->gil != PYTHREAD_GIL_UNKNOWN)
		flags |= PBP_TS_GIL_KNOWN | (t->gil == PYTHREAD_GIL_HELD ? PBP_TS_GIL : 0);
	if (!running && !ls->cfg.want_idle) {
		ls->stats.threads_idle_skipped++;
		return 0;
	}
	for (int i = 0; i <= TORN_RETRIES; i++) {
		if (i) {
			/* Read it again from the thread state: the stack has moved. */
			ls->stats.torn_retries++;
			if (pythreads__refresh(&ls->cfg.live->base, ls->cfg.interp, &cur))
				break;
		}
		sample_once(ls, &cur, flags);
		if (ls->stack->gap != GAP_TORN)
			break;
	}
	ls->stats.threads_sampled++;
	ls->err = ls->cfg.on_stack(ls->cfg.ctx, ls->stack);
	return ls->err;
}

static int tick(struct live_sampler *ls)
{
	int err;

	ls->stats.ticks++;
	err = pythreads__walk(&ls->cfg.live->base, ls->cfg.interp, sample_thread, ls);
	if (err == -EFAULT) {
		ls->stats.walk_failures++;
		return proc__alive(ls->cfg.interp->pid) ? -ESRCH : 0;
	}
	return ls->err ? ls->err : 0;
}

/* Sleeps until CLOCK_MONOTONIC reaches @ns; -EINTR if a signal came first. */
static int sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ull, .tv_nsec = ns % 1000000000ull };

	return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR ? -EINTR : 0;
}

int live_sampler__poll(struct live_sampler *ls, int timeout_ms)
{
	uint64_t end = clock__mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	int err;

	for (;;) {
		uint64_t now = clock__mono_ns();

		if (now >= ls->next_ns) {
			err = tick(ls);
			if (err)
				return err;
			ls->next_ns += ls->period_ns;
			now = clock__mono_ns();
			/* Behind by more than a tick: skip what was missed rather than burst. */
			if (now > ls->next_ns + ls->period_ns) {
				uint64_t missed = (now - ls->next_ns) / ls->period_ns;

				ls->stats.ticks_missed += missed;
				ls->next_ns += missed * ls->period_ns;
			}
			continue;
		}
		if (now >= end)
			return 0;
		err = sleep_until(ls->next_ns < end ? ls->next_ns : end);
		if (err)
			return err;
	}
}

const struct live_sampler_stats *live_sampler__stats(const struct live_sampler *ls)
{
	return &ls->stats;
}
