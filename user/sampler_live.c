// SPDX-License-Identifier: GPL-2.0-only
/*
 * The live-memory sampler. Each reading of a thread copies its chunk and the chain's
 * frames outside it, its current frame, and those bytes again, in one system call,
 * between two reads of the data stack's top; the decoder walks the stack from that
 * current frame in the second copy and requires every frame header to be the same in
 * the first (decoder.c: verify), and every frame of the chain in the chunk below the
 * top at both ends (live_at_both_ends). docs/live-sampling.md argues why that proves
 * the stack at the instant the current frame was read, without the thread holding
 * still; a reading that fails it is taken again, and then reported incomplete.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "mem_snapshot.h"
#include "proc.h"
#include "py_threads.h"
#include "sampler_live.h"
#include "tid_map.h"

/* Readings of one thread per sample, at most, besides those that LIVE_LEARNING allows. */
#define LIVE_READINGS 8
/*
 * Readings that find the plan lacking rather than the stack torn (a C frame not read
 * through, frames outside the chunks not copied) are not counted against
 * LIVE_READINGS, up to this many: the next reading has what it lacked.
 */
#define LIVE_LEARNING 8
/*
 * Frames of a chain outside the data-stack chunks (generators', coroutines', the eval
 * loop's entry frames on the C stack, 3.15's base frame) copied in both copies, at
 * most: a chain with more of them is reported incomplete, never read live.
 */
#define LIVE_EXTRA 64
/* Frames outside the chunks kept from earlier readings, beside the current chain's. */
#define LIVE_EXTRA_KEPT 32
/* Threads whose frames outside the chunks are remembered from one tick to the next. */
#define LIVE_MEMO 16
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

/* The frames outside the chunks a reading copies too, innermost first. */
struct extras {
	unsigned int n;
	uint64_t addr[LIVE_EXTRA];
};

/* C frames (3.11/3.12) through which a reading reads the current frame, at most. */
#define LIVE_CFRAMES 12

/* The C frames a thread's innermost eval loop has been seen to use. */
struct cframes {
	unsigned int n, next;
	uint64_t addr[LIVE_CFRAMES];
};

/* A thread's frames outside the chunks at its last kept sample: most ticks find the
 * same ones (a server's long-lived coroutines), so the first reading copies them. */
struct extras_memo {
	uint32_t tid;
	struct extras x;
	struct cframes c;
};

struct sampler_live {
	struct sampler_live_cfg cfg;
	struct sampler_live_stats stats;
	uint64_t period_ns, next_ns;
	struct mem_snapshot snap[2];	/* one reading's copies: before, after */
	uint8_t *buf[2];
	uint8_t *xbuf[2];	/* the frames outside the chunks, LIVE_EXTRA slots each */
	struct stack *stack;
	int err;		/* the callback's failure, ends the walk */
	pid_t host_tid;		/* of the thread being sampled */
	uint64_t usual_piece;	/* ns per piece of a reading, << USUAL_SHIFT; 0: none yet */
	struct tid_map tids;	/* the target's thread ids as /proc names them */
	struct extras_memo memo[LIVE_MEMO];
	unsigned int memo_next;	/* the slot a new thread takes */
};

int sampler_live__new(const struct sampler_live_cfg *cfg, struct sampler_live **out)
{
	struct sampler_live *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return -ENOMEM;
	ls->cfg = *cfg;
	ls->buf[0] = malloc(cfg->stack_cap);
	ls->buf[1] = malloc(cfg->stack_cap);
	ls->xbuf[0] = malloc(LIVE_EXTRA * PBP_FRAME_COPY_MAX);
	ls->xbuf[1] = malloc(LIVE_EXTRA * PBP_FRAME_COPY_MAX);
	ls->stack = malloc(sizeof(*ls->stack));
	if (!ls->buf[0] || !ls->buf[1] || !ls->xbuf[0] || !ls->xbuf[1] || !ls->stack) {
		sampler_live__free(ls);
		return -ENOMEM;
	}
	ls->period_ns = 1000000000ull / (cfg->rate_hz ? cfg->rate_hz : 100);
	mem_snapshot__init(&ls->snap[0], &cfg->live->base);
	mem_snapshot__init(&ls->snap[1], &cfg->live->base);
	ls->next_ns = clock__mono_ns();
	tid_map__init(&ls->tids, cfg->interp->pid);
	*out = ls;
	return 0;
}

void sampler_live__free(struct sampler_live *ls)
{
	if (!ls)
		return;
	free(ls->buf[0]);
	free(ls->buf[1]);
	free(ls->xbuf[0]);
	free(ls->xbuf[1]);
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
};

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
	uint64_t chunk = t->chunk, top = t->top, left = ls->cfg.stack_cap, prev = 0, hdr[3];
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
	uint64_t frame;		/* current frame (3.11/3.12: through the C frame) */
	uint64_t top_pre;	/* tstate->datastack_top before the first copy */
	uint64_t top_post;	/* ... after the second copy */
	uint64_t cframe[LIVE_CFRAMES + 1];	/* 3.11/3.12: tstate->cframe around each of: */
	uint64_t through[LIVE_CFRAMES];	/* 3.11/3.12: each C frame's current frame at T */
	uint64_t anchor, seq;	/* 3.15+ */
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

/*
 * One reading, in one system call: the data stack's top, the chunk and the frames
 * outside it (into snapshot 0), then the current frame (the moment T), then the frames
 * and the chunk again (into snapshot 1) and the top again, in the orders pieces_before
 * and pieces_after give. process_vm_readv copies its pieces in order, so every byte of
 * the first copy was read before T and every byte of the second after it: a slot equal
 * in both held that value at T (docs/live-sampling.md). Nothing else is read between
 * the copies, so that they are as close in time as they can be. On 3.11/3.12 the
 * current frame is the one of the C frame tstate->cframe points to; that pointer is
 * read just before and just after reading the current frame through each C frame the
 * thread is known to use (@c), and must be one of them both times (-EAGAIN if not;
 * -ENOENT, with the new one added to @c, if it is the same both times but not yet
 * known). On 3.15+ the anchor and its sequence are read after the second copy: the
 * sequence only grows, so if it is still the thread list's it was at T too.
 */
static int read_once(struct sampler_live *ls, const struct py_thread *t,
		     const struct spans *sp, const struct extras *x, struct cframes *c,
		     struct ts_words *w)
{
	const struct py_offsets *o = &ls->cfg.interp->off;
	uint64_t addr[MEM_READV_MAX], t0, probe = 0;
	void *dst[MEM_READV_MAX];
	size_t lens[MEM_READV_MAX];
	unsigned int n = 0;
	size_t fr = o->fr_size;
	int via_cframe = o->ts_current_frame == PBP_OFF_NONE;

	memset(w, 0, sizeof(*w));
	if (via_cframe && !mem__read_u64(&ls->cfg.live->base, t->tstate + o->ts_cframe, &probe) &&
	    probe) {
		unsigned int i = 0;

		/* The C frame in use now is the likeliest at T: read through it too. */
		while (i < c->n && c->addr[i] != probe)
			i++;
		if (i == c->n)
			c->addr[c->n < LIVE_CFRAMES ? c->n++ : c->next++ % LIVE_CFRAMES] = probe;
	}
	addr[n] = t->tstate + o->ts_datastack_top, dst[n] = &w->top_pre, lens[n++] = 8;
	n += pieces_before(sp, ls->buf[0], addr + n, dst + n, lens + n);
	/* The frames outside the chunks, on both sides of the current frame, outermost
	 * first before it and innermost first after it, like the chunks. */
	for (unsigned int i = x->n; i-- > 0;)
		addr[n] = x->addr[i], dst[n] = ls->xbuf[0] + i * fr, lens[n++] = fr;
	if (via_cframe) {
		/* The C frame pointer between every two: each current frame read
		 * through a C frame has its own bracket, a few words wide. */
		for (unsigned int i = 0; i < c->n; i++) {
			addr[n] = t->tstate + o->ts_cframe, dst[n] = &w->cframe[i], lens[n++] = 8;
			addr[n] = c->addr[i] + o->cframe_current_frame;
			dst[n] = &w->through[i], lens[n++] = 8;
		}
		addr[n] = t->tstate + o->ts_cframe, dst[n] = &w->cframe[c->n], lens[n++] = 8;
	} else {
		addr[n] = t->tstate + o->ts_current_frame, dst[n] = &w->frame, lens[n++] = 8;
	}
	for (unsigned int i = 0; i < x->n; i++)
		addr[n] = x->addr[i], dst[n] = ls->xbuf[1] + i * fr, lens[n++] = fr;
	/* Room is left for the three words read after the copy. */
	n += pieces_after(sp, ls->buf[1], MEM_READV_MAX - n - 3, addr + n, dst + n, lens + n);
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
	if (via_cframe) {
		uint64_t seen = 0;
		unsigned int i = 0;

		while (i < c->n && (w->cframe[i] != c->addr[i] || w->cframe[i + 1] != c->addr[i]))
			i++;
		if (i == c->n) {
			/* A C frame seen twice in a row and not yet known is read through
			 * next time. */
			for (unsigned int k = 0; k < c->n && !seen; k++)
				if (w->cframe[k] == w->cframe[k + 1] && w->cframe[k])
					seen = w->cframe[k];
			if (!seen)
				return -EAGAIN;
			c->addr[c->n < LIVE_CFRAMES ? c->n++ : c->next++ % LIVE_CFRAMES] = seen;
			return -ENOENT;
		}
		w->frame = w->through[i];
	}
	for (int k = 0; k < 2; k++) {
		mem_snapshot__clear(&ls->snap[k]);
		for (unsigned int i = 0, at = 0; i < sp->n; at += sp->len[i], i++)
			mem_snapshot__add(&ls->snap[k], sp->addr[i], ls->buf[k] + at, sp->len[i]);
		for (unsigned int i = 0; i < x->n; i++)
			mem_snapshot__add(&ls->snap[k], x->addr[i], ls->xbuf[k] + i * fr, fr);
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
	ls->stack->native = NULL;
	ls->stack->native_stack = NULL;
}

/* Where one sample's readings copy from, fixed until the thread is read again. */
struct plan {
	struct spans sp;
	struct extras x;
	struct cframes c;
	int from_anchor;
	uint32_t cache_gen, cache_depth;
};

/* @tid's slot of the memo, or NULL. */
static struct extras_memo *memo_find(struct sampler_live *ls, uint32_t tid)
{
	for (unsigned int i = 0; i < LIVE_MEMO; i++)
		if (ls->memo[i].tid == tid && tid)
			return &ls->memo[i];
	return NULL;
}

static void memo_put(struct sampler_live *ls, uint32_t tid, const struct plan *p)
{
	struct extras_memo *e = memo_find(ls, tid);

	if (!e) {
		e = &ls->memo[ls->memo_next];
		ls->memo_next = (ls->memo_next + 1) % LIVE_MEMO;
		e->tid = tid;
	}
	e->x = p->x;
	e->c = p->c;
}

static void plan_reading(struct sampler_live *ls, const struct py_thread *t, struct plan *p)
{
	const struct extras_memo *e = memo_find(ls, t->tid);
	unsigned int i = 0;

	p->x.n = 0;
	p->c.n = p->c.next = 0;
	if (e) {
		p->x = e->x;
		p->c = e->c;
	}
	/* The thread list's C frame is read through first. */
	while (i < p->c.n && p->c.addr[i] != t->ts_cframe)
		i++;
	if (t->ts_cframe && i == p->c.n)
		p->c.addr[p->c.n < LIVE_CFRAMES ? p->c.n++ : p->c.next++ % LIVE_CFRAMES] =
			t->ts_cframe;
	p->from_anchor = 0;
	if (ls->cfg.fcache &&
	    frame_cache__anchor_hit(ls->cfg.fcache, t->tid, t->tstate, t->anchor, t->anchor_seq,
				    &p->cache_gen, &p->cache_depth))
		p->from_anchor = 1;
	chunk_ranges(ls, t, p->from_anchor ? t->anchor : 0, &p->sp);
}

/* Is @top a top of the data stack within @t's current chunk? */
static int top_in_chunk(const struct py_thread *t, uint64_t top)
{
	return top > t->chunk && top <= t->limit;
}

/*
 * Does reading @w fit the plan made from the thread list? The data stack must have
 * stayed in the chunk the plan copies (its top in it at both ends), its current frame
 * must be in the copy if it is in that chunk at all (a frame above the copy means the
 * stack grew past it), and a copy cut at the anchor needs that very anchor.
 */
static int fits_plan(const struct sampler_live *ls, const struct py_thread *t,
		     const struct plan *p, const struct ts_words *w)
{
	/* (3.15: a thread on its base frame alone may have no chunk.) */
	if (t->chunk && (!top_in_chunk(t, w->top_pre) || !top_in_chunk(t, w->top_post)))
		return 0;
	if (w->frame >= t->chunk && w->frame < t->limit &&
	    !mem_snapshot__covers(&ls->snap[1], w->frame, 8))
		return 0;
	return !p->from_anchor || (w->anchor == t->anchor && w->seq == t->anchor_seq);
}

static int in_spans(const struct spans *sp, uint64_t addr, size_t len)
{
	for (unsigned int i = 0; i < sp->n; i++)
		if (addr >= sp->addr[i] && addr + len <= sp->addr[i] + sp->len[i])
			return 1;
	return 0;
}

static int has_extra(const struct extras *x, uint64_t addr)
{
	for (unsigned int i = 0; i < x->n; i++)
		if (x->addr[i] == addr)
			return 1;
	return 0;
}

/*
 * @x with @chain's frames first, then as many of @x's own as still fit: an event loop
 * switches between a few tasks, each with its own frames outside the chunks, and the
 * next reading may find any of them running.
 */
static void extras_merge(struct extras *x, const struct extras *chain)
{
	struct extras out = *chain;

	for (unsigned int i = 0; i < x->n && out.n < LIVE_EXTRA_KEPT; i++)
		if (!has_extra(&out, x->addr[i]))
			out.addr[out.n++] = x->addr[i];
	*x = out;
}

/* What chain_scan found. */
struct chain {
	struct extras x;	/* frames outside the chunks' copy, innermost first */
	uint64_t high;		/* highest thread-owned frame in the current chunk; 0: none */
	int all_copied;		/* every one of x was in the reading's copies */
};

/*
 * The chain from @frame, as far as the reading's copies and live memory show it: the
 * frames that lie outside the chunks' copy and are not the thread's own (generators',
 * coroutines', the eval loop's entry frames), and the highest frame of the thread's
 * own in its current chunk. A frame outside the chunks the reading did not copy was
 * read live here, after the reading, and brackets nothing: the next reading copies it.
 * A thread-owned frame outside the copy ends the scan: the plan is stale, and the
 * decoder refuses such a chain. -E2BIG: more than LIVE_EXTRA frames outside;
 * -EAGAIN: a frame no live chain has.
 */
static int chain_scan(struct sampler_live *ls, const struct py_thread *t, const struct plan *p,
		      uint64_t frame, struct chain *ch)
{
	const struct py_offsets *o = &ls->cfg.interp->off;
	struct mem_source *m = &ls->snap[1].base;

	ch->x.n = 0;
	ch->high = 0;
	ch->all_copied = 1;
	for (unsigned int depth = 0; frame && !(frame & 7) && depth < DECODE_MAX_DEPTH; depth++) {
		uint64_t prev;
		uint8_t owner;

		if (mem__read(m, frame + o->fr_owner, &owner, 1))
			break;
		if (in_spans(&p->sp, frame, o->fr_size)) {
			if (owner == o->owner_thread && frame >= t->chunk && frame < t->limit &&
			    frame > ch->high)
				ch->high = frame;
		} else {
			if (owner == o->owner_thread)
				break;
			/* A frame object owns a frame only after it returned: not one of
			 * a live chain, but C stack bytes left where an entry frame was. */
			if (owner == o->owner_frame_object)
				return -EAGAIN;
			if (ch->x.n == LIVE_EXTRA)
				return -E2BIG;
			ch->x.addr[ch->x.n++] = frame;
			ch->all_copied &= has_extra(&p->x, frame);
		}
		if (mem__read(m, frame + o->fr_previous, &prev, 8))
			break;
		frame = prev;
	}
	return 0;
}

/*
 * Was every frame of the chain on the stack both when the first copy began and when
 * the second ended? The thread's frames in its current chunk are exactly those below
 * the data stack's top, so that holds for them when the highest is below the top read
 * at both ends; the older chunks lie below the current one (fits_plan saw the top in it
 * at both ends). Without it, a slot that was a dead frame in both copies (popped before
 * the first, pushed and popped again between) would pass the comparison with the
 * header it had before it was reused, and callers that had already returned would be
 * reported as calling. A generator's or coroutine's frame needs no such bound: one not
 * running has no previous frame (CPython clears the link when it yields or returns),
 * so a chain through it is refused unless it was running in both copies. An entry
 * frame on the C stack is there as long as the Python frame it called, which is the
 * thread's own and bounded here; one that is itself the current frame is checked by
 * the decoder's comparison like any other.
 */
static int live_at_both_ends(const struct ts_words *w, const struct chain *ch)
{
	return !ch->high || (ch->high < w->top_pre && ch->high < w->top_post);
}

/*
 * Decodes a reading: the frames are walked from its current frame in the copy taken
 * after it, and each must be the same in the copy taken before it (decoder.c:
 * verify). The anchor's sequence only grows, so the anchor, read once, is checked
 * against the thread list's (fits_plan) rather than against itself.
 */
static void decode_reading(struct sampler_live *ls, const struct py_thread *t, uint32_t flags,
			   const struct plan *p, const struct ts_words *w)
{
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
		.verify = &ls->snap[0].base,
		.verify_copy = &ls->snap[0],
		.verify_anchor = w->anchor,
		.verify_seq = w->seq,
		.attempt = 1,
	};

	decoder__decode_thread(ls->cfg.dec, &s, ls->stack);
}

static int broken_walk(enum decode_gap gap)
{
	return gap == GAP_BAD_FRAME || gap == GAP_UNREADABLE || gap == GAP_NO_BOTTOM;
}

static int copies_differ(const struct sampler_live *ls, const struct plan *p)
{
	size_t len = 0;

	for (unsigned int i = 0; i < p->sp.n; i++)
		len += p->sp.len[i];
	return memcmp(ls->buf[0], ls->buf[1], len) != 0 ||
	       memcmp(ls->xbuf[0], ls->xbuf[1], p->x.n * ls->cfg.interp->off.fr_size) != 0;
}

/*
 * One sample of @t: readings until one is consistent, each taken anew; a reading
 * that no longer fits the copy's plan (the stack left the copied range, the anchor
 * moved) has the thread state read again first. GAP_TORN when the budget runs out;
 * -ENOENT when the thread ran no Python frame at the moment read: no sample.
 */
static int sample_stack(struct sampler_live *ls, const struct py_thread *t, uint32_t flags)
{
	struct py_thread cur = *t;
	struct ts_words w;
	struct chain ch;
	struct plan p;

	set_torn(ls, t, flags);
	plan_reading(ls, &cur, &p);
	for (int i = 0, learnt = 0; i < LIVE_READINGS + learnt; i++) {
		int err;

		if (i)
			ls->stats.torn_retries++;
		err = read_once(ls, &cur, &p.sp, &p.x, &p.c, &w);
		if (err == -ETIMEDOUT) {
			ls->stats.slow_readings++;
			continue;
		}
		/* The C frame changed within the reading of the current frame, or is
		 * one the next reading reads through too. */
		if (err == -EAGAIN || err == -ENOENT) {
			memo_put(ls, cur.tid, &p);
			learnt += err == -ENOENT && learnt < LIVE_LEARNING;
			continue;
		}
		if (err || !fits_plan(ls, &cur, &p, &w)) {
			/* The stack has moved out of the plan: read the thread again. A
			 * frame outside the chunks may have been freed: find them anew. */
			if (py_threads__refresh(&ls->cfg.live->base, ls->cfg.interp, &cur))
				return 0;
			plan_reading(ls, &cur, &p);
			if (err)
				p.x.n = 0;
			continue;
		}
		/* No Python frame at T: a thread starting or ending, which BPF does
		 * not sample either. */
		if (!w.frame)
			return -ENOENT;
		err = chain_scan(ls, &cur, &p, w.frame, &ch);
		if (err == -EAGAIN)
			continue;
		if (err || !ch.all_copied) {
			/* Frames outside the chunks the reading did not copy: again, with
			 * the ones this chain has (a chain scanned through live memory may
			 * be no chain at all: -E2BIG is tried again too). */
			ls->stats.extra_rereads++;
			extras_merge(&p.x, &ch.x);
			learnt += !err && learnt < LIVE_LEARNING;
			continue;
		}
		if (!live_at_both_ends(&w, &ch))
			continue;	/* the stack moved up through the reading: again */
		decode_reading(ls, &cur, flags, &p, &w);
		memo_put(ls, cur.tid, &p);
		/* A chain that broke off where the copies differ met a frame being
		 * written (a coroutine that yielded just after T, say): read again
		 * rather than report it cut. So is one that missed the anchor's frame
		 * (3.15): the walk broke off above it, or the cache entry went. */
		if (ls->stack->gap == GAP_NONE ||
		    (ls->stack->gap != GAP_TORN && ls->stack->gap != GAP_CACHE_LOST &&
		     !(broken_walk(ls->stack->gap) && copies_differ(ls, &p))))
			return 0;
		if (ls->stack->gap == GAP_CACHE_LOST) {
			set_torn(ls, t, flags);
			ls->stack->gap = GAP_CACHE_LOST;
			plan_reading(ls, &cur, &p);
			continue;
		}
		set_torn(ls, t, flags);
		/* A current frame outside the copy (a new chunk, say) will not be in
		 * the next one either unless the thread is read again. */
		if (!mem_snapshot__covers(&ls->snap[1], w.frame, 8)) {
			if (py_threads__refresh(&ls->cfg.live->base, ls->cfg.interp, &cur))
				return 0;
			plan_reading(ls, &cur, &p);
		}
	}
	return 0;
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
	if (sample_stack(ls, t, flags)) {
		ls->stats.threads_no_frame++;
		return 0;
	}
	decoder__count(ls->cfg.dec, ls->stack);
	ls->stats.threads_sampled++;
	ls->err = ls->cfg.on_stack(ls->cfg.ctx, ls->stack);
	return ls->err;
}

static int tick(struct sampler_live *ls)
{
	int err;

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

const struct sampler_live_stats *sampler_live__stats(const struct sampler_live *ls)
{
	return &ls->stats;
}
