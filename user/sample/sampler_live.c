// SPDX-License-Identifier: GPL-2.0-only
/*
 * The live-memory sampler. Each reading of a thread copies its chunk, its current
 * frame, and its chunk again, in one system call; the decoder walks the stack from
 * that current frame in the second copy and requires every frame header to be the
 * same in the first (decoder.c: verify). docs/live-sampling.md argues why that proves
 * the stack at the instant the current frame was read, without the thread holding
 * still; a reading that fails it is taken again, and then reported incomplete.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "mem/mem_snapshot.h"
#include "base/proc.h"
#include "cpython/py_threads.h"
#include "sample/sampler_live.h"
#include "sample/thread_hold.h"
#include "decode/tid_map.h"

/* Readings of one thread per sample, at most. */
#define LIVE_READINGS 16
/* Frames outside the chunks (a coroutine's, an entry frame on the C stack) copied with
 * a reading, innermost first. */
#define LIVE_FAR 64
/* 3.11/3.12: C frames (eval-loop activations) whose current frame a reading reads. */
#define LIVE_CFRAMES 8
/* ... each read this many times in a reading on 3.11. 3.12 reads them once: its entry
 * frames on the C stack are copied on either side of these reads, and the longer the
 * reads the likelier a whole call from C into Python fits between the two copies of
 * one (docs/live-sampling.md). */
#define LIVE_CF_PASSES 2
/* Bytes of a task object copied with a sample (--async, 3.14+). */
#define LIVE_TASK_MAX 4096
/* Threads whose frames outside the chunks are remembered from one sample to the next. */
#define FAR_MEMOS 8
/* Bytes above the listed top of the current chunk copied too: a thread that called
 * deeper since the list was read is still in the copy. */
#define GROWTH_SLACK 2048
/*
 * A reading that took more than this many times the usual for its number of pieces is
 * taken again: its duration bounds the window in which a slot of the stack could be
 * rewritten twice and pass the comparison (docs/live-sampling.md), and the readings
 * that a preemption or an interrupt stretches are the ones that leave room for it.
 */
#define SLOW_READING_FACTOR 2
/* The usual cost of one piece, in ns << USUAL_SHIFT, moves 1/16 of the way each time. */
#define USUAL_SHIFT 4

/*
 * What a thread's last readings met outside its chunks: frames (a coroutine's, an
 * entry frame on the C stack), innermost first, and on 3.11/3.12 the C frames of its
 * eval-loop activations, through which the current frame is read.
 */
struct known {
	unsigned int nfar, ncf;
	uint64_t far[LIVE_FAR];
	uint64_t cf[LIVE_CFRAMES];
};

struct sampler_live {
	struct sampler_live_cfg cfg;
	struct sampler_live_stats stats;
	uint64_t period_ns, next_ns;
	struct mem_snapshot snap[2];	/* one reading's copies: before, after */
	uint8_t *buf[2];
	/* The frames outside the chunks, copied before the current frame is read and
	 * after; 3.11/3.12 copy them a third time (pieces_now). */
	uint8_t far_buf[3][LIVE_FAR][PBP_FRAME_COPY_MAX];
	struct far_memo {
		uint32_t tid;
		struct known known;
	} memo[FAR_MEMOS];
	unsigned int memo_next;	/* the slot a thread not remembered takes */
	struct stack *stack;
	int err;		/* the callback's failure, ends the walk */
	pid_t host_tid;		/* of the thread being sampled */
	uint64_t usual_piece;	/* ns per piece of a reading, << USUAL_SHIFT; 0: none yet */
	struct tid_map tids;	/* the target's thread ids as /proc names them */
	/* --async, 3.14+ (sampler_live__task_at): where the running task is named, and
	 * the copy of it taken with each sample that has one */
	uint64_t ts_running_task, task_size;
	uint8_t task_buf[LIVE_TASK_MAX];
	struct mem_snapshot task_snap;
	struct thread_hold hold;	/* cfg.hold: the thread held for a reading */
};

int sampler_live__new(const struct sampler_live_cfg *cfg, struct sampler_live **out)
{
	struct sampler_live *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return -ENOMEM;
	ls->cfg = *cfg;
	ls->buf[0] = malloc(cfg->stack_cap);
	ls->buf[1] = malloc(cfg->stack_cap);
	ls->stack = malloc(sizeof(*ls->stack));
	if (!ls->buf[0] || !ls->buf[1] || !ls->stack) {
		sampler_live__free(ls);
		return -ENOMEM;
	}
	ls->period_ns = 1000000000ull / (cfg->rate_hz ? cfg->rate_hz : 100);
	mem_snapshot__init(&ls->snap[0], &cfg->live->base);
	mem_snapshot__init(&ls->snap[1], &cfg->live->base);
	ls->next_ns = clock__mono_ns();
	ls->ts_running_task = PBP_OFF_NONE;
	mem_snapshot__init(&ls->task_snap, &cfg->live->base);
	tid_map__init(&ls->tids, cfg->interp->pid);
	*out = ls;
	return 0;
}

void sampler_live__task_at(struct sampler_live *ls, uint64_t off, uint64_t task_size)
{
	ls->ts_running_task = off;
	ls->task_size = task_size <= LIVE_TASK_MAX ? task_size : 0;
}

/* Freed with a thread still seized (it was in an uninterruptible wait): it is let go
 * when it stops if that is soon, else when this thread exits. */
#define FREE_LATE_WAIT_MS 100

void sampler_live__free(struct sampler_live *ls)
{
	const struct timespec nap = { .tv_nsec = 1000000 };

	if (!ls)
		return;
	for (int i = 0; i < FREE_LATE_WAIT_MS && sampler_live__let_go_late(ls); i++)
		nanosleep(&nap, NULL);
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
	uint32_t slack;		/* bytes at the end of the first span above the listed top */
	/* Each span's chunk and, but for the first (whose size a reading reads), its end. */
	uint64_t base[LIVE_SPANS], end[LIVE_SPANS];
	struct known known;	/* copied too: frame headers of fr_size bytes, C frames */
};

static int listed(const uint64_t *list, unsigned int n, uint64_t addr)
{
	for (unsigned int k = 0; k < n; k++)
		if (list[k] == addr)
			return 1;
	return 0;
}

/*
 * The frames outside the chunks the next reading copies, so that a stack through a
 * coroutine's frames is compared in both copies as the chunk's frames are: those a
 * walk read outside the copies, innermost first, and unless the walk was @whole, the
 * ones copied before (a torn walk may have stopped short of them).
 */
static void far_learn(struct known *k, const uint64_t *seen, uint32_t n, int whole)
{
	uint64_t old[LIVE_FAR];
	unsigned int nold = whole ? 0 : k->nfar;

	memcpy(old, k->far, sizeof(old));
	k->nfar = 0;
	for (uint32_t i = 0; i < n && k->nfar < LIVE_FAR; i++)
		if (!listed(k->far, k->nfar, seen[i]))
			k->far[k->nfar++] = seen[i];
	for (unsigned int i = 0; i < nold && k->nfar < LIVE_FAR; i++)
		if (!listed(k->far, k->nfar, old[i]))
			k->far[k->nfar++] = old[i];
}

/* 3.11/3.12: adds C frame @cf, the newest first, the oldest dropped when full. */
static void cframe_learn(struct known *k, uint64_t cf)
{
	if (!cf || listed(k->cf, k->ncf, cf))
		return;
	if (k->ncf < LIVE_CFRAMES)
		k->ncf++;
	memmove(k->cf + 1, k->cf, (k->ncf - 1) * sizeof(k->cf[0]));
	k->cf[0] = cf;
}

/*
 * The live part of the current chunk (and a little room above it) and of the older
 * ones below it, newest bytes first, within the cap; the copy stops at the frame
 * cache's anchor (@stop), below which the cache holds the frames. An older chunk's
 * header is frozen while a newer chunk is in use; one that changed since shows as a
 * current frame outside the copy or as copies that disagree.
 */
static void chunk_ranges(const struct sampler_live *ls, const struct py_thread *t,
			 uint64_t stop, struct spans *sp)
{
	const struct py_offsets *o = &ls->cfg.interp->off;
	struct mem_source *m = &ls->cfg.live->base;
	uint64_t chunk = t->chunk, top = t->top, left = ls->cfg.stack_cap, prev = 0, hdr[3] = { 0 };
	uint64_t slack = 0;
	int have_prev = 0;

	sp->n = 0;
	sp->slack = 0;
	/* Room above the top, up to the chunk's end, for a stack that grew since. */
	if (t->limit > top && t->limit - top < (1ull << 30))
		slack = t->limit - top < GROWTH_SLACK ? t->limit - top : GROWTH_SLACK;
	top += slack;
	while (chunk && left && sp->n < LIVE_SPANS) {
		uint64_t data = chunk + o->chunk_data, start;

		if (top <= data || top - data > (1ull << 30))
			return;
		start = top - data > left ? top - left : data;
		if (stop >= start && stop < top)
			start = stop;
		sp->addr[sp->n] = start;
		sp->len[sp->n] = (uint32_t)(top - start);
		sp->base[sp->n] = chunk;
		sp->end[sp->n] = sp->n ? chunk + hdr[1] : 0;
		if (!sp->n)
			sp->slack = (uint32_t)(slack < top - start ? slack : top - start);
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
	uint64_t frame;		/* the current frame, at the instant */
	/* The data stack's chunk and top before the copies and after them, and the size
	 * of the chunk the thread list showed (its limit in the thread state is written
	 * only after the chunk above it is unmapped, so is not read). */
	uint64_t chunk_pre, top_pre, chunk_post, top_post, chunk_size;
	uint64_t anchor, seq;	/* 3.15+ */
	uint64_t task;		/* --async, 3.14+: the running task, just after the frame */
	/* 3.11/3.12: tstate->cframe around the current frame of each known C frame:
	 * cframe[i] just before cf_frame[i] is read, cframe[i + 1] just after. */
	uint64_t cframe[LIVE_CF_PASSES * LIVE_CFRAMES + 1];
	uint64_t cf_frame[LIVE_CF_PASSES * LIVE_CFRAMES];
	/* The copies of the frames outside the chunks (far_buf) taken just before the
	 * current frame was read and just after. */
	unsigned int far_pre, far_post;
};

/* Offset in a copy's buffer of span @i. */
static size_t span_off(const struct spans *sp, unsigned int i)
{
	size_t off = 0;

	for (unsigned int k = 0; k < i; k++)
		off += sp->len[k];
	return off;
}

/* Span @i without the room above the listed top (in span 0 only). */
static size_t span_live(const struct spans *sp, unsigned int i)
{
	return sp->len[i] - (i ? 0 : sp->slack);
}

/*
 * The pieces of the copy before the current frame, in the order they are read: the
 * room above the top first, then the chunks from the oldest up, each bottom up. The
 * copy after it (pieces_after) goes top down. So for a slot at depth d below the top,
 * the two copies are about 2d bytes apart, whatever the depth of the whole stack: the
 * slots a running thread rewrites most often are the ones copied closest together.
 */
static unsigned int pieces_before(const struct spans *sp, uint8_t *buf, uint64_t *addr,
				  void **dst, size_t *lens)
{
	unsigned int n = 0;

	if (sp->n && sp->slack) {
		addr[n] = sp->addr[0] + span_live(sp, 0);
		dst[n] = buf + span_live(sp, 0);
		lens[n++] = sp->slack;
	}
	for (unsigned int i = sp->n; i-- > 0;) {
		if (!span_live(sp, i))
			continue;
		addr[n] = sp->addr[i], dst[n] = buf + span_off(sp, i);
		lens[n++] = span_live(sp, i);
	}
	return n;
}

/* Pieces of @len bytes at @start, top down, cut at multiples of @piece. */
static unsigned int count_down(uint64_t start, size_t len, uint64_t piece)
{
	return len ? (unsigned int)(((start + len - 1) / piece) - start / piece + 1) : 0;
}

static unsigned int pieces_after(const struct spans *sp, uint8_t *buf, unsigned int room,
				 uint64_t *addr, void **dst, size_t *lens)
{
	uint64_t piece = 4096;
	unsigned int n = 0, need;

	/* Whole pages, unless there are too many: then larger pieces. */
	for (;;) {
		need = sp->slack ? 1 : 0;
		for (unsigned int i = 0; i < sp->n; i++)
			need += count_down(sp->addr[i], span_live(sp, i), piece);
		if (need <= room)
			break;
		piece *= 2;
	}
	for (unsigned int i = 0; i < sp->n; i++) {
		uint64_t lo, hi = sp->addr[i] + span_live(sp, i);
		uint8_t *base = buf + span_off(sp, i);

		while (hi > sp->addr[i]) {
			lo = (hi - 1) / piece * piece;
			if (lo < sp->addr[i])
				lo = sp->addr[i];
			addr[n] = lo, dst[n] = base + (lo - sp->addr[i]), lens[n++] = hi - lo;
			hi = lo;
		}
	}
	if (sp->n && sp->slack) {
		addr[n] = sp->addr[0] + span_live(sp, 0);
		dst[n] = buf + span_live(sp, 0);
		lens[n++] = sp->slack;
	}
	return n;
}

/*
 * Did a reading of @n pieces take too long for its copies to be trusted? Each reading
 * moves the usual cost towards its own, by at most a doubling, so that a machine that
 * slows down for good is followed after some tens of readings while a stretched reading
 * barely moves it.
 */
static int slow_reading(struct sampler_live *ls, uint64_t ns, unsigned int n)
{
	uint64_t per = (ns << USUAL_SHIFT) / n, usual = ls->usual_piece;

	if (!usual) {
		ls->usual_piece = per;
		return 0;
	}
	if (per > 2 * usual)
		per = 2 * usual;
	ls->usual_piece = usual - (usual >> USUAL_SHIFT) + (per >> USUAL_SHIFT);
	return (ns << USUAL_SHIFT) > SLOW_READING_FACTOR * usual * n;
}

static unsigned int cf_passes(const struct py_offsets *o)
{
	return o->version_hex < 0x030c0000 ? LIVE_CF_PASSES : 1;
}

/* The frames outside the chunks known to @sp, into far_buf[@k]: the first copy
 * innermost last, the others innermost first, so that the innermost frame is always
 * read next to the current frame. */
static unsigned int pieces_far(struct sampler_live *ls, const struct spans *sp, unsigned int k,
			       uint64_t *addr, void **dst, size_t *lens)
{
	unsigned int n = 0;

	for (unsigned int j = 0; j < sp->known.nfar; j++) {
		unsigned int i = k ? j : sp->known.nfar - 1 - j;

		addr[n] = sp->known.far[i], dst[n] = ls->far_buf[k][i];
		lens[n++] = ls->cfg.interp->off.fr_size;
	}
	return n;
}

/*
 * The current frame, read at the instant between the copies. 3.13+: one word of the
 * thread state. 3.11/3.12: through the C frame of the innermost eval-loop activation,
 * which the thread state names: the current frame of each C frame the thread is known
 * to have used, each read between two reads of the thread state's C frame, so that a
 * frame read was the current one of the activation that was the innermost just before
 * and just after it (unless the thread left and entered one at that very address in
 * between). A thread that enters and leaves activations every microsecond or so (a
 * call from C into Python enters one) is seldom caught within one word; it would be
 * within the reads of all the known C frames. On 3.11 the known C frames are read
 * again, in a second pass, for a second chance at the one the thread is in.
 */
static unsigned int pieces_now(struct sampler_live *ls, const struct py_thread *t,
			       const struct spans *sp, struct ts_words *w, uint64_t *addr,
			       void **dst, size_t *lens)
{
	const struct py_offsets *o = &ls->cfg.interp->off;
	unsigned int n = 0;

	if (o->ts_current_frame != PBP_OFF_NONE) {
		addr[n] = t->tstate + o->ts_current_frame, dst[n] = &w->frame, lens[n++] = 8;
		/* The task is the one the frame runs in unless it switched within the
		 * nanoseconds between the two words. */
		if (ls->ts_running_task != PBP_OFF_NONE)
			addr[n] = t->tstate + ls->ts_running_task, dst[n] = &w->task, lens[n++] = 8;
		return n;
	}
	addr[n] = t->tstate + o->ts_cframe, dst[n] = &w->cframe[0], lens[n++] = 8;
	for (unsigned int i = 0; i < cf_passes(o) * sp->known.ncf; i++) {
		addr[n] = sp->known.cf[i % sp->known.ncf] + o->cframe_current_frame;
		dst[n] = &w->cf_frame[i], lens[n++] = 8;
		addr[n] = t->tstate + o->ts_cframe, dst[n] = &w->cframe[i + 1], lens[n++] = 8;
		/* The C frame the thread was last found in is read first, between two
		 * copies of the frames outside the chunks: a coroutine's frame there moves
		 * on as soon as the function it calls returns, and the fewer reads between
		 * its copies, the likelier they agree. The other C frames are read after,
		 * before a third copy. */
		if (!i)
			n += pieces_far(ls, sp, 1, addr + n, dst + n, lens + n);
	}
	return n;
}

/* 3.11/3.12: the current frame from pieces_now's words; -EAGAIN to read again. */
static int frame_now(const struct sampler_live *ls, struct spans *sp, struct ts_words *w)
{
	uint64_t steady = 0;

	w->far_pre = 0;
	w->far_post = 1;
	if (ls->cfg.interp->off.ts_current_frame != PBP_OFF_NONE)
		return 0;
	for (unsigned int i = 0; i < cf_passes(&ls->cfg.interp->off) * sp->known.ncf; i++) {
		unsigned int k = i % sp->known.ncf;

		if (w->cframe[i] != w->cframe[i + 1])
			continue;
		if (w->cframe[i] == sp->known.cf[k]) {
			w->frame = w->cf_frame[i];
			if (i) {
				w->far_pre = 1;
				w->far_post = 2;
			}
			/* Read first next time (pieces_now). */
			memmove(sp->known.cf + 1, sp->known.cf, k * sizeof(sp->known.cf[0]));
			sp->known.cf[0] = w->cframe[i];
			return 0;
		}
		steady = w->cframe[i];
	}
	/* An activation not met before: the next reading reads through it too. */
	if (!sp->known.ncf)
		steady = w->cframe[0];
	cframe_learn(&sp->known, steady);
	return -EAGAIN;
}

/*
 * One reading, in one system call: the chunk (into snapshot 0), then the current
 * frame, then the chunk again (into snapshot 1), in the orders pieces_before and
 * pieces_after give; the frames outside the chunks met before are copied with them,
 * next to the current frame. process_vm_readv copies its pieces in order, so every
 * byte of the first copy was read before the current frame and every byte of the
 * second after it: a slot equal in both held that value when the current frame was
 * read (docs/live-sampling.md). Nothing else is read between the copies, so that
 * they are as close in time as they can be. The chunk and its top are read before
 * the first copy and after the second (live_bound). On 3.15+ the anchor and its
 * sequence are read after the second copy: the sequence only grows, so if it is still
 * the thread list's it was at the current frame's moment too.
 */
static int read_once(struct sampler_live *ls, const struct py_thread *t, struct spans *sp,
		     struct ts_words *w)
{
	const struct py_offsets *o = &ls->cfg.interp->off;
	uint64_t addr[MEM_READV_MAX], t0;
	void *dst[MEM_READV_MAX];
	size_t lens[MEM_READV_MAX];
	unsigned int n = 0;
	int err;

	memset(w, 0, sizeof(*w));
	addr[n] = t->tstate + o->ts_datastack_chunk, dst[n] = &w->chunk_pre, lens[n++] = 8;
	addr[n] = t->tstate + o->ts_datastack_top, dst[n] = &w->top_pre, lens[n++] = 8;
	/* A thread state being deleted has freed its chunks: no size to read. */
	if (t->chunk)
		addr[n] = t->chunk + o->chunk_size, dst[n] = &w->chunk_size, lens[n++] = 8;
	n += pieces_before(sp, ls->buf[0], addr + n, dst + n, lens + n);
	n += pieces_far(ls, sp, 0, addr + n, dst + n, lens + n);
	n += pieces_now(ls, t, sp, w, addr + n, dst + n, lens + n);
	n += pieces_far(ls, sp, o->ts_current_frame == PBP_OFF_NONE ? 2 : 1, addr + n, dst + n,
			lens + n);
	/* Room is left for the four words read after the copy. */
	n += pieces_after(sp, ls->buf[1], MEM_READV_MAX - n - 4, addr + n, dst + n, lens + n);
	addr[n] = t->tstate + o->ts_datastack_chunk, dst[n] = &w->chunk_post, lens[n++] = 8;
	addr[n] = t->tstate + o->ts_datastack_top, dst[n] = &w->top_post, lens[n++] = 8;
	if (o->ts_last_profiled_frame != PBP_OFF_NONE) {
		addr[n] = t->tstate + o->ts_last_profiled_frame, dst[n] = &w->anchor, lens[n++] = 8;
		addr[n] = t->tstate + o->ts_last_profiled_frame_seq, dst[n] = &w->seq, lens[n++] = 8;
	}
	t0 = clock__mono_ns();
	if (mem_live__readv(ls->cfg.live, n, addr, dst, lens))
		return -EFAULT;
	if (slow_reading(ls, clock__mono_ns() - t0, n))
		return -ETIMEDOUT;
	err = frame_now(ls, sp, w);
	if (err)
		return err;
	for (int k = 0; k < 2; k++) {
		mem_snapshot__clear(&ls->snap[k]);
		for (unsigned int i = 0, at = 0; i < sp->n; at += sp->len[i], i++)
			mem_snapshot__add(&ls->snap[k], sp->addr[i], ls->buf[k] + at, sp->len[i]);
		for (unsigned int i = 0; i < sp->known.nfar; i++)
			mem_snapshot__add(&ls->snap[k], sp->known.far[i],
					  ls->far_buf[k ? w->far_post : w->far_pre][i], o->fr_size);
	}
	return 0;
}

/* @t's sample when no reading was consistent: incomplete, no frames. */
static void set_torn(struct sampler_live *ls, const struct py_thread *t, uint32_t flags)
{
	ls->stack->gap = GAP_TORN;
	ls->stack->depth = 0;
	ls->stack->pid = (uint32_t)ls->cfg.interp->pid;
	ls->stack->tid = t->tid;
	ls->stack->flags = flags;
	ls->stack->task = ls->stack->task_fp = 0;
	ls->stack->task_mem = NULL;
	ls->stack->task_copy = NULL;
	ls->stack->native = NULL;
	ls->stack->native_stack = NULL;
}

/* Where one sample's readings copy from, fixed until the thread is read again. */
struct plan {
	struct spans sp;
	int from_anchor;
	int whole;		/* copy down to the bottom, whatever the cache holds */
	uint32_t cache_gen, cache_depth;
};

static void plan_reading(struct sampler_live *ls, const struct py_thread *t, struct plan *p)
{
	p->from_anchor = 0;
	if (!p->whole && ls->cfg.fcache &&
	    frame_cache__anchor_hit(ls->cfg.fcache, t->tid, t->tstate, t->anchor, t->anchor_seq,
				    &p->cache_gen, &p->cache_depth))
		p->from_anchor = 1;
	chunk_ranges(ls, t, p->from_anchor ? t->anchor : 0, &p->sp);
	if (ls->cfg.interp->off.ts_current_frame == PBP_OFF_NONE)
		cframe_learn(&p->sp.known, t->ts_cframe);
}

/* The span of chunk @chunk, -1 if the plan copies none of it. */
static int plan_chunk(const struct spans *sp, uint64_t chunk)
{
	for (unsigned int i = 0; i < sp->n; i++)
		if (sp->base[i] == chunk)
			return (int)i;
	return -1;
}

/*
 * The current chunk of reading @w, [*lo, *end): the chunk it read before the first
 * copy, which the plan must copy, with the size the reading read for the plan's newest
 * chunk or the header gave for an older one (the thread state's limit is not used: on
 * 3.11/3.12 it is written only after the chunk above it is unmapped). 0 when the chunk
 * is not in the plan or its size is not believable.
 */
static int reading_chunk(const struct spans *sp, const struct ts_words *w, uint64_t *lo,
			 uint64_t *end)
{
	int k = plan_chunk(sp, w->chunk_pre);
	uint64_t size = w->chunk_size;

	if (k < 0)
		return 0;
	if (k)
		size = sp->end[k] - w->chunk_pre;
	if (size > (1ull << 30))
		return 0;
	*lo = w->chunk_pre;
	*end = w->chunk_pre + size;
	return 1;
}

/*
 * Does reading @w fit the plan made from the thread list? The thread must have stayed
 * in one chunk the plan copies, its current frame must be in the copy if it is in that
 * chunk at all (a frame above the copy means the stack grew past it), and a copy cut
 * at the anchor needs that very anchor.
 */
static int fits_plan(const struct sampler_live *ls, const struct py_thread *t,
		     const struct plan *p, const struct ts_words *w)
{
	uint64_t lo, end;

	if (w->frame) {
		if (w->chunk_pre != w->chunk_post || !reading_chunk(&p->sp, w, &lo, &end))
			return 0;
		if (w->frame >= lo && w->frame < end &&
		    !mem_snapshot__covers(&ls->snap[1], w->frame, 8))
			return 0;
	}
	return !p->from_anchor || (w->anchor == t->anchor && w->seq == t->anchor_seq);
}

/*
 * Where the callers of @w's current frame must lie for the reading to be used: below
 * the current chunk's top both when the first copy began and when the second ended
 * (decoder.c: verify checks it against @b), so that each was on the stack at both
 * ends. Without it, a slot that was a dead frame in both copies (popped before the
 * first, pushed and popped again between) would pass the comparison with the header
 * it had before it was reused, and callers that had already returned would be
 * reported as calling. The innermost frame needs no such bound: it was current at the
 * instant, read then (decoder.c: bounded). 0 when a top lies outside the chunk (its
 * words caught mid-change), or when the current frame lies outside the chunk and the
 * copies (a coroutine's met for the first time): the next reading copies it. A thread
 * without a frame has nothing to bound.
 */
struct live_bound {
	uint64_t lo, hi, below;	/* the chunk, the lower of its two tops */
};

static int live_bound(const struct sampler_live *ls, struct spans *sp,
		      const struct ts_words *w, struct live_bound *b)
{
	uint64_t lo, end;

	*b = (struct live_bound){ 0 };
	if (!w->frame)
		return 1;
	if (!reading_chunk(sp, w, &lo, &end) || w->top_pre <= lo || w->top_pre > end ||
	    w->top_post <= lo || w->top_post > end)
		return 0;
	if ((w->frame < lo || w->frame >= end) &&
	    !mem_snapshot__covers(&ls->snap[1], w->frame, ls->cfg.interp->off.fr_size)) {
		far_learn(&sp->known, &w->frame, 1, 0);
		return 0;
	}
	b->lo = lo;
	b->hi = end;
	b->below = w->top_pre < w->top_post ? w->top_pre : w->top_post;
	return 1;
}

/*
 * Did reading @w find thread @t running no Python code (not started yet, or ending:
 * then there is nothing to read, and the sample is whole, as BPF reports such a
 * thread)? Without a current frame: 3.13+ say so in one word, but 3.11/3.12 name an
 * activation before setting its current frame, so a frame read through it may be a
 * stale word of the C stack: there the data stack must be empty (or freed) too (the
 * first chunk keeps its first slot unused, so that popping its first frame never
 * frees it: empty is one word in there). 3.15+
 * point a thread without Python code at its base frame, and free its chunk once it
 * ends.
 */
static int no_python(const struct sampler_live *ls, const struct py_thread *t,
		     const struct ts_words *w)
{
	const struct py_offsets *o = &ls->cfg.interp->off;
	uint64_t empty = w->chunk_pre + o->chunk_data, base;

	if (w->frame)
		return o->ts_base_frame != PBP_OFF_NONE && !w->chunk_pre && !w->chunk_post &&
		       !mem__read_u64(&ls->cfg.live->base, t->tstate + o->ts_base_frame, &base) &&
		       base == w->frame;
	return o->ts_current_frame != PBP_OFF_NONE || !w->chunk_pre ||
	       (w->top_pre == w->top_post && (w->top_pre == empty || w->top_pre == empty + 8));
}

/* The slot that remembers @tid's frames outside the chunks, taken if need be. */
static struct far_memo *far_memo(struct sampler_live *ls, uint32_t tid)
{
	struct far_memo *m;

	for (unsigned int i = 0; i < FAR_MEMOS; i++)
		if (ls->memo[i].tid == tid && (ls->memo[i].known.nfar || ls->memo[i].known.ncf))
			return &ls->memo[i];
	m = &ls->memo[ls->memo_next++ % FAR_MEMOS];
	m->tid = tid;
	m->known.nfar = m->known.ncf = 0;
	return m;
}

/*
 * The task @w names, copied right after the reading (BPF copies it with the sample):
 * the reader takes its name, coroutine and awaiters from the copy, as they were then,
 * and not from a task that may have ended in the meantime. 0 if there is none, or it
 * cannot be read.
 */
static struct mem_source *copy_task(struct sampler_live *ls, const struct ts_words *w)
{
	void *dst = ls->task_buf;
	size_t len = ls->task_size;

	mem_snapshot__clear(&ls->task_snap);
	if (!w->task || !len || mem_live__readv(ls->cfg.live, 1, &w->task, &dst, &len) ||
	    mem_snapshot__add(&ls->task_snap, w->task, ls->task_buf, len))
		return NULL;
	return &ls->task_snap.base;
}

/*
 * Decodes a reading: the frames are walked from its current frame in the copy taken
 * after it, and each must be the same in the copy taken before it (decoder.c:
 * verify). The anchor's sequence only grows, so the anchor, read once, is checked
 * against the thread list's (fits_plan) rather than against itself.
 */
static uint32_t decode_reading(struct sampler_live *ls, const struct py_thread *t,
			       uint32_t flags, struct plan *p, const struct ts_words *w,
			       const struct live_bound *b)
{
	uint64_t outside[LIVE_FAR];
	uint32_t noutside = 0;
	struct thread_sample s = {
		.pid = (uint32_t)ls->cfg.interp->pid,
		.tid = ls->cfg.host_tids ? (uint32_t)ls->host_tid : t->tid,
		.ns_tid = ls->cfg.host_tids ? t->tid : 0,
		.flags = flags,
		.tstate = t->tstate,
		.ts_ns = clock__mono_ns(),
		.current_frame = w->frame,
		.anchor = w->anchor,
		.anchor_seq = w->seq,
		.from_anchor = p->from_anchor,
		.cache_gen = p->cache_gen,
		.cache_depth = p->cache_depth,
		.mem = &ls->snap[1].base,
		.copy = &ls->snap[1],
		.copy_chunks = p->sp.n,
		.verify = &ls->snap[0].base,
		.verify_copy = &ls->snap[0],
		.verify_anchor = w->anchor,
		.verify_seq = w->seq,
		.live_lo = b->lo,
		.live_hi = b->hi,
		.live_below = b->below,
		.outside = outside,
		.outside_cap = LIVE_FAR,
		.noutside = &noutside,
		.attempt = 1,
	};
	struct mem_source *task_mem = copy_task(ls, w);

	decoder__decode_thread(ls->cfg.dec, &s, ls->stack);
	ls->stack->task = w->task;
	ls->stack->task_mem = task_mem;
	ls->stack->task_copy = NULL;
	far_learn(&p->sp.known, outside, noutside, ls->stack->gap == GAP_NONE);
	return noutside;
}

/*
 * A frame's code object that was not one by the time it was decoded, after the
 * reading: its frame had returned and dropped it (a module's body at start-up, code
 * made by exec). The frame held it at the reading, so the thread has moved on: read
 * it again, as for a torn reading.
 */
static int code_gone(enum decode_gap gap)
{
	return gap == GAP_STALE_CODE || gap == GAP_BAD_CODE;
}

static int broken_walk(enum decode_gap gap)
{
	return gap == GAP_BAD_FRAME || gap == GAP_UNREADABLE || gap == GAP_NO_BOTTOM ||
	       gap == GAP_TOO_DEEP;
}

static int copies_differ(const struct sampler_live *ls, const struct spans *sp,
			 const struct ts_words *w)
{
	size_t len = 0;

	for (unsigned int i = 0; i < sp->n; i++)
		len += sp->len[i];
	if (memcmp(ls->buf[0], ls->buf[1], len))
		return 1;
	for (unsigned int i = 0; i < sp->known.nfar; i++)
		if (memcmp(ls->far_buf[w->far_pre][i], ls->far_buf[w->far_post][i],
			   ls->cfg.interp->off.fr_size))
			return 1;
	return 0;
}

/* Up to LIVE_READINGS readings of @t until one is consistent: 1 when one was (or the
 * thread went), 0 when none. */
static int readings(struct sampler_live *ls, const struct py_thread *t, uint32_t flags,
		    struct plan *p, struct py_thread *cur, uint32_t *outside)
{
	struct ts_words w;
	struct live_bound b;

	for (int i = 0; i < LIVE_READINGS; i++) {
		int err;

		if (i)
			ls->stats.torn_retries++;
		err = read_once(ls, cur, &p->sp, &w);
		if (err == -ETIMEDOUT) {
			ls->stats.slow_readings++;
			continue;
		}
		/* 3.11/3.12: caught between two activations, or in one new to the list. */
		if (err == -EAGAIN)
			continue;
		if (!err && no_python(ls, cur, &w)) {
			ls->stack->gap = GAP_NONE;
			return 1;
		}
		/* 3.11/3.12: an activation caught before it set its current frame. */
		if (!err && !w.frame)
			continue;
		if (err || !fits_plan(ls, cur, p, &w)) {
			/* The stack has moved out of the plan: read the thread again. A
			 * remembered frame's memory may be gone with its coroutine. A
			 * thread that pops below its anchor while it is read will do so
			 * again: its stack is copied whole from then on. */
			if (err)
				p->sp.known.nfar = p->sp.known.ncf = 0;
			else if (p->from_anchor &&
				 (w.anchor != cur->anchor || w.seq != cur->anchor_seq))
				p->whole = 1;
			if (py_threads__refresh(&ls->cfg.live->base, ls->cfg.interp, cur))
				return 1;
			plan_reading(ls, cur, p);
			continue;
		}
		if (!live_bound(ls, &p->sp, &w, &b))
			continue;
		*outside = decode_reading(ls, cur, flags, p, &w, &b);
		/* The cache no longer has what lies below the anchor (its entry was
		 * replaced, or the chain at the instant did not pass the anchor): copy
		 * the whole stack. */
		if (ls->stack->gap == GAP_CACHE_LOST && p->from_anchor && !p->whole) {
			p->whole = 1;
			plan_reading(ls, cur, p);
			set_torn(ls, t, flags);
			continue;
		}
		/* A chain that broke off where the copies differ met a frame being
		 * written, one that met frames outside the copies read them after the
		 * reading (the next reading copies them), and one that broke at its
		 * first frame caught it being pushed or popped (a current frame at the
		 * stack's top, cleared as it returns): read again rather than report
		 * it cut. */
		if (ls->stack->gap == GAP_NONE ||
		    (ls->stack->gap != GAP_TORN && !code_gone(ls->stack->gap) &&
		     !(broken_walk(ls->stack->gap) &&
		       (*outside || !ls->stack->depth || copies_differ(ls, &p->sp, &w)))))
			return 1;
		/* Code gone keeps its own reason, should no reading do better. */
		if (!code_gone(ls->stack->gap))
			set_torn(ls, t, flags);
		/* A current frame outside the copy (a new chunk, say) will not be in
		 * the next one either unless the thread is read again. */
		if (!mem_snapshot__covers(&ls->snap[1], w.frame, 8)) {
			if (py_threads__refresh(&ls->cfg.live->base, ls->cfg.interp, cur))
				return 1;
			plan_reading(ls, cur, p);
		}
	}
	return 0;
}

/*
 * Holds the thread being sampled still for a reading: one that ran (a thread off a CPU
 * does not change its stack, and a blocked call would be interrupted) and whose
 * readings all found its stack torn, or its code gone before decoding. A hold that
 * has not stopped its thread within the wait is left seized and let go at a later tick.
 */
static int hold(struct sampler_live *ls, uint32_t flags)
{
	int err;

	if (!ls->cfg.hold || !(flags & PBP_TS_ON_CPU) ||
	    (ls->stack->gap != GAP_TORN && !code_gone(ls->stack->gap)))
		return 0;
	/* host_tid was found among the target's tasks (/proc/PID/task) when this sample
	 * began, a moment ago: a thread id is not reused that soon. */
	err = thread_hold__take(&ls->hold, ls->host_tid, THREAD_HOLD_WAIT_NS);
	if (err == -EPERM || err == -EACCES)
		ls->stats.holds_refused++;
	else if (err == -EINPROGRESS)
		ls->stats.holds_late++;
	if (err)
		return 0;
	ls->stats.holds++;
	return 1;
}

/*
 * One sample of @t: readings until one is consistent, each taken anew; a reading
 * that no longer fits the copy's plan (the stack left the copied range, the anchor
 * moved) has the thread state read again first. When the budget runs out, the thread
 * held still (cfg.hold) and read again; else GAP_TORN.
 */
static void read_stack(struct sampler_live *ls, const struct py_thread *t, uint32_t flags,
		       struct plan *p)
{
	struct py_thread cur = *t;
	uint32_t outside = 0;
	int done;

	set_torn(ls, t, flags);
	plan_reading(ls, &cur, p);
	done = readings(ls, t, flags, p, &cur, &outside);
	if (!done && outside < LIVE_FAR && hold(ls, flags)) {
		done = readings(ls, t, flags, p, &cur, &outside);
		thread_hold__let_go(&ls->hold);
		ls->stats.hold_ns = ls->hold.held_ns;
		ls->stats.hold_wait_ns = ls->hold.wait_ns;
	}
	/* More frames outside the chunks than a reading copies (a recursion through C,
	 * say): the stack is deeper than what is followed, rather than torn. */
	if (!done && outside >= LIVE_FAR)
		ls->stack->gap = GAP_TOO_DEEP;
}

static void sample_stack(struct sampler_live *ls, const struct py_thread *t, uint32_t flags)
{
	struct far_memo *memo = far_memo(ls, t->tid);
	struct plan p;

	p.sp.known = memo->known;
	p.whole = 0;
	read_stack(ls, t, flags, &p);
	memo->known = p.sp.known;
}

static int sample_thread(const struct py_thread *t, void *arg)
{
	struct sampler_live *ls = arg;
	uint32_t flags = 0;
	pid_t host;
	char state;
	int running;

	/* The thread ended since the list was read (or its id is not yet in /proc). */
	if (tid_map__host(&ls->tids, t->tid, &host) ||
	    proc__thread_state(ls->cfg.interp->pid, host, &state))
		return 0;
	running = state == 'R';
	if (running)
		flags |= PBP_TS_ON_CPU;
	if (t->gil != PY_THREAD_GIL_UNKNOWN)
		flags |= PBP_TS_GIL_KNOWN | (t->gil == PY_THREAD_GIL_HELD ? PBP_TS_GIL : 0);
	if (!running && !ls->cfg.want_idle) {
		ls->stats.threads_idle_skipped++;
		return 0;
	}
	ls->host_tid = host;
	sample_stack(ls, t, flags);
	decoder__count(ls->cfg.dec, ls->stack);
	ls->stats.threads_sampled++;
	ls->err = ls->cfg.on_stack(ls->cfg.ctx, ls->stack);
	return ls->err;
}

static int tick(struct sampler_live *ls)
{
	int err;

	sampler_live__let_go_late(ls);
	ls->stats.ticks++;
	err = py_threads__walk(&ls->cfg.live->base, ls->cfg.interp, sample_thread, ls);
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

int sampler_live__poll(struct sampler_live *ls, int timeout_ms)
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

int sampler_live__sample_now(struct sampler_live *ls)
{
	return tick(ls);
}

int sampler_live__let_go_late(struct sampler_live *ls)
{
	return thread_hold__poll(&ls->hold);
}

const struct sampler_live_stats *sampler_live__stats(const struct sampler_live *ls)
{
	return &ls->stats;
}
