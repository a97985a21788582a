// SPDX-License-Identifier: GPL-2.0-only
/*
 * The frame walk. Frames inside the record's copied chunks are read from the record;
 * generator frames, shim frames on the C stack and chunks beyond the copy cap come
 * from live memory. Every pointer is checked before it is followed, every loop is
 * bounded, and a walk that does not end at the bottom of the thread's stack is marked
 * incomplete rather than passed off as a whole stack.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode/decode_runs.h"
#include "decode/decoder.h"

#include "base/clock.h"
#include "decode/frame_cache.h"
#include "base/hash.h"
#include "mem/mem_snapshot.h"
#include "cpython/py_thread_name.h"
#include "base/structbuf.h"

/* Every frame header field is read out of a copy the BPF program could also make. */
_Static_assert(PBP_FRAME_COPY_MAX <= PBP_FRAME_HDR_MAX, "frame copy larger than BPF's");
_Static_assert(1 + PBP_SEGMENTS_MAX + PBP_FRAMES_MAX + PBP_CODES_MAX * PBP_CODE_SPANS <=
		       MEM_SNAPSHOT_SPANS,
	       "every copy in a record is a span of the snapshot");

struct decoder {
	struct decoder_cfg cfg;
	const struct py_offsets *off;
	struct code_cache *codes;
	struct mem_snapshot snap;
	struct decode_stats stats;
	struct decode_scratch *scratch, *own_scratch;
	uint32_t nwalked;		/* scratch->raw behind the last stack decoded */
};

int decoder__new(const struct decoder_cfg *cfg, struct decoder **out)
{
	struct code_cache_cfg cc = {
		.off = &cfg->interp->off,
		.code_type = cfg->interp->code_type,
		.live = cfg->live,
		.strs = cfg->strs,
		.max_entries = cfg->code_cache_entries ? cfg->code_cache_entries : 16384,
		.budget = cfg->code_budget,
		.known = cfg->code_known,
		.ctx = cfg->ctx,
	};
	struct decoder *d = calloc(1, sizeof(*d));
	int err;

	if (!d)
		return -ENOMEM;
	d->cfg = *cfg;
	d->off = &cfg->interp->off;
	d->scratch = cfg->scratch;
	if (!d->scratch)
		d->scratch = d->own_scratch = malloc(sizeof(*d->scratch));
	err = d->scratch ? code_cache__new(&cc, &d->codes) : -ENOMEM;
	if (err) {
		free(d->own_scratch);
		free(d);
		return err;
	}
	mem_snapshot__init(&d->snap, cfg->live);
	*out = d;
	return 0;
}

void decoder__free(struct decoder *d)
{
	if (!d)
		return;
	code_cache__free(d->codes);
	free(d->own_scratch);
	free(d);
}

/* The fields of one frame header that the walk uses. */
struct frame_hdr {
	uint8_t owner, is_entry;
	uint64_t previous, code, instr;
};

/*
 * Reads the frame header at @frame through @m and takes its fields out of the copy.
 * The offsets came from the target: one outside the copied fr_size bytes is a broken
 * table, -EINVAL, and never a read past the buffer; -EFAULT if unreadable.
 */
static int read_frame(struct mem_source *m, const struct py_offsets *o, uint64_t frame,
		      struct frame_hdr *f)
{
	uint8_t hdr[PBP_FRAME_COPY_MAX];
	struct structbuf b;

	if (o->fr_size > sizeof(hdr))
		return -EINVAL;
	if (mem__read(m, frame, hdr, o->fr_size))
		return -EFAULT;
	b = structbuf__of(hdr, o->fr_size);
	if (structbuf__u8(&b, o->fr_owner, &f->owner) ||
	    structbuf__u64(&b, o->fr_previous, &f->previous) ||
	    structbuf__u64(&b, o->fr_code, &f->code) || structbuf__u64(&b, o->fr_instr, &f->instr))
		return -EINVAL;
	f->is_entry = 0;
	if (o->fr_is_entry != PBP_OFF_NONE && structbuf__u8(&b, o->fr_is_entry, &f->is_entry))
		return -EINVAL;
	if (o->executable_tagged)
		f->code &= ~(uint64_t)7;
	return 0;
}

static int is_owner(const struct py_offsets *o, uint8_t owner)
{
	return owner == o->owner_thread || owner == o->owner_generator ||
	       owner == o->owner_frame_object || owner == o->owner_cstack ||
	       owner == o->owner_interpreter;
}

/*
 * The first frame of a thread: on 3.11 a Python frame the thread owns; from 3.12 on a
 * shim (C stack / interpreter entry) frame. A chain that stops anywhere else (say at a
 * suspended generator, whose previous pointer is cleared) is not a whole stack.
 */
static int is_bottom(const struct py_offsets *o, uint8_t owner)
{
	if (o->version_hex < 0x030c0000)
		return owner == o->owner_thread;
	return py_offsets__shim_owner(o, owner);
}

/*
 * Whether a frame-pointer walk's @nfp records hold what BPF promises: each 8-aligned,
 * the first at or above @sp, each 16 bytes or more above the last, no return address
 * 0. Anything else was not written by our program.
 */
static int fp_records_sound(const struct pbp_native_fp *r, uint32_t nfp, uint64_t sp)
{
	uint64_t lo = sp;

	for (uint32_t i = 0; i < nfp; i++) {
		if (r[i].fp % 8 || r[i].fp < lo || r[i].fp > UINT64_MAX - 16 || !r[i].ret)
			return 0;
		lo = r[i].fp + 16;
	}
	return 1;
}

/*
 * The native block of @s, whose Python payload ends @payload_end bytes in, with its
 * stack bytes in *@stack and its frame-pointer walk's records in *@fp (NULL without
 * one); NULL if there is none. The record is foreign bytes: the block must lie within
 * it, after the payload, aligned, and say exactly what this ABI writes (reserved fields
 * 0, the records right after the header and the stack bytes right after them), or it
 * is counted invalid and ignored.
 */
static const struct pbp_native *native_block(struct decoder *d, const struct pbp_sample *s,
					     size_t payload_end, const uint8_t **stack,
					     const struct pbp_native_fp **fp)
{
	uint64_t end = (uint64_t)s->native_off + s->native_len, after_hdr, after_fp;
	const struct pbp_native *n;
	uint32_t ends;

	*stack = NULL;
	*fp = NULL;
	if (!(s->flags & PBP_SF_NATIVE) && !s->native_off && !s->native_len)
		return NULL;
	if (!(s->flags & PBP_SF_NATIVE) || s->native_off % 8 || s->native_off < payload_end ||
	    end > s->len || s->native_len < sizeof(*n))
		goto invalid;
	n = (const void *)((const uint8_t *)s + s->native_off);
	/* Ring-buffer records are 8-aligned; a copy elsewhere might not be. */
	if ((uintptr_t)n % _Alignof(struct pbp_native))
		goto invalid;
	if (n->hdr_len != sizeof(*n) || (n->flags & ~PBP_NF_KNOWN) ||
	    (n->regs_mask & ~((1u << PBP_NATIVE_REGS) - 1)) || n->kstack_id || n->reserved)
		goto invalid;
	after_hdr = (uint64_t)s->native_off + n->hdr_len;
	after_fp = after_hdr;
	ends = n->flags & PBP_NF_FP_ENDS;
	if (n->flags & PBP_NF_FP_WALK) {
		/* One end, exactly. */
		if (!ends || (ends & (ends - 1)) || n->fp_off != after_hdr ||
		    n->nfp > PBP_NATIVE_FP_MAX)
			goto invalid;
		after_fp += (uint64_t)n->nfp * sizeof(struct pbp_native_fp);
		if (after_fp > end)
			goto invalid;
	} else if (ends || n->nfp || n->fp_off) {
		goto invalid;
	}
	if (n->stack_off % 8 || n->stack_off < after_fp ||
	    n->stack_len > PBP_NATIVE_STACK_MAX || (uint64_t)n->stack_off + n->stack_len > end)
		goto invalid;
	if (n->flags & PBP_NF_FP_WALK) {
		const struct pbp_native_fp *r = (const void *)((const uint8_t *)s + n->fp_off);

		if (!fp_records_sound(r, n->nfp, n->regs[7]))
			goto invalid;
		*fp = r;
	}
	d->stats.native_blocks++;
	*stack = (const uint8_t *)s + n->stack_off;
	return n;
invalid:
	d->stats.native_invalid++;
	*fp = NULL;
	return NULL;
}

/* Maps the record's copies (thread state, chunks, frames outside the chunks) into the
 * snapshot memory source; checks every length. Sets @payload_end to where they end. */
static int load_record(struct decoder *d, const struct pbp_sample *s, size_t len,
		       size_t *payload_end)
{
	const uint8_t *p = (const uint8_t *)s + s->hdr_len;
	size_t left;

	if (len < sizeof(*s) || s->abi != PBP_ABI_VERSION || s->hdr_len != sizeof(*s) ||
	    s->len > len || s->len < s->hdr_len || s->nsegs > PBP_SEGMENTS_MAX ||
	    s->nfps > PBP_FPS_MAX || s->nframes > PBP_FRAMES_MAX ||
	    s->frame_len > PBP_FRAME_HDR_MAX || s->nspans > PBP_CODES_MAX * PBP_CODE_SPANS)
		return -EINVAL;
	left = s->len - s->hdr_len;
	mem_snapshot__clear(&d->snap);
	if (s->tstate_len > left)
		return -EINVAL;
	if (s->tstate_len)
		mem_snapshot__add(&d->snap, s->tstate, p, s->tstate_len);
	p += s->tstate_len;
	left -= s->tstate_len;
	for (uint32_t i = 0; i < s->nsegs; i++) {
		if (s->seg[i].len > left)
			return -EINVAL;
		mem_snapshot__add(&d->snap, s->seg[i].addr, p, s->seg[i].len);
		p += s->seg[i].len;
		left -= s->seg[i].len;
	}
	for (uint32_t i = 0; i < s->nframes; i++) {
		uint64_t addr;

		if (8 + (size_t)s->frame_len > left)
			return -EINVAL;
		memcpy(&addr, p, 8);
		mem_snapshot__add(&d->snap, addr, p + 8, s->frame_len);
		p += 8 + s->frame_len;
		left -= 8 + s->frame_len;
	}
	if (s->nspans) {
		size_t at = (size_t)(p - (const uint8_t *)s);

		if (s->spans_off < at || s->spans_off > s->len)
			return -EINVAL;
		left = s->len - s->spans_off;
		p = (const uint8_t *)s + s->spans_off;
	}
	for (uint32_t i = 0; i < s->nspans; i++) {
		struct pbp_span h;
		size_t step;

		if (sizeof(h) > left)
			return -EINVAL;
		memcpy(&h, p, sizeof(h));
		step = sizeof(h) + (((size_t)h.len + 7) & ~(size_t)7);
		if (step > left)
			return -EINVAL;
		mem_snapshot__add(&d->snap, h.addr, p + sizeof(h), h.len);
		p += step;
		left -= step;
	}
	*payload_end = (size_t)(p - (const uint8_t *)s);
	return 0;
}

/* Walks previous pointers from the sampled frame, recording every frame, down to the
 * bottom or, when @stop is set, down to and including the frame at @stop. */
static enum decode_gap walk(struct decoder *d, const struct thread_sample *t, uint64_t stop,
			    uint32_t *n)
{
	const struct py_offsets *o = d->off;
	uint64_t frame = t->current_frame;
	uint32_t depth = 0;
	uint8_t owner = 0xff;

	*n = 0;
	while (frame) {
		uint64_t before = d->cfg.live->stats.reads;
		struct raw_frame *r = &d->scratch->raw[depth];
		struct frame_hdr f;
		int err;

		if (frame & 7)
			return GAP_BAD_FRAME;
		/* Bounded even when every frame is a shim: a cycle ends here too. */
		if (depth == DECODE_MAX_DEPTH)
			return GAP_TOO_DEEP;
		err = read_frame(t->mem, o, frame, &f);
		if (err)
			return err == -EFAULT ? GAP_UNREADABLE : GAP_BAD_RECORD;
		owner = f.owner;
		/* Read live while the target runs, a frame outside the copy may belong to
		 * a later stack than the copy, or be no frame by now: it is reported for
		 * the next reading to copy, before it is judged (but not when it cannot
		 * be read at all, for that reading would fail, nor when it claims to be
		 * the thread's own, which only a copied chunk can hold). */
		if (t->copy && owner != o->owner_thread &&
		    !mem_snapshot__covers(t->copy, frame, o->fr_size) && t->outside &&
		    *t->noutside < t->outside_cap)
			t->outside[(*t->noutside)++] = frame;
		if (!is_owner(o, owner))
			return GAP_BAD_FRAME;
		/* Only the copy counts for a thread's own frame, and only its chunks: a
		 * frame copied outside them that claims to be the thread's is none (the
		 * slot of an entry frame on the C stack, say, reused since). */
		if (t->copy && owner == o->owner_thread &&
		    !mem_snapshot__covers_first(t->copy, t->copy_chunks, frame, o->fr_size))
			return GAP_TORN;
		if (d->cfg.live->stats.reads != before)
			d->stats.frames_read_live++;
		else
			d->stats.frames_from_snapshot++;
		r->addr = frame;
		r->owner = owner;
		r->previous = f.previous;
		r->code = 0;
		r->instr = 0;
		r->is_entry = !!f.is_entry;
		if (!py_offsets__shim_owner(o, owner)) {
			r->code = f.code;
			r->instr = f.instr;
			if (!r->code || (r->code & 7))
				return GAP_BAD_FRAME;
		}
		*n = ++depth;
		if (frame == stop)
			return GAP_NONE;
		frame = r->previous;
	}
	/* A walk that passed the anchor's place without meeting it saw another chain. */
	if (stop)
		return GAP_CACHE_LOST;
	if (!is_bottom(o, owner))
		return GAP_NO_BOTTOM;
	/* 3.15 gives its entry frames on the C stack and the thread's base frame one
	 * owner: only the base frame, whose address the thread state holds, is the
	 * bottom; an entry frame read with no link yet is a chain cut short. */
	if (o->ts_base_frame != PBP_OFF_NONE && depth) {
		uint64_t base;

		if (!mem__read_u64(t->mem, t->tstate + o->ts_base_frame, &base) && base &&
		    base != d->scratch->raw[depth - 1].addr)
			return GAP_NO_BOTTOM;
	}
	return GAP_NONE;
}

/*
 * Must frame @i of a live reading have been on the stack at both ends of the reading?
 * Every caller must: a slot above the stack's top at either end may have been dead in
 * both copies with the bytes of an activation that had returned. The innermost frame
 * was current at the instant, read then, unless its caller is an entry frame on the C
 * stack: that frame is live only while the frame above it is, and its slot is reused
 * by any C code once it is not, so its copies prove nothing on their own.
 */
static int bounded(const struct decoder *d, const struct thread_sample *t, uint32_t i,
		   uint32_t n)
{
	const struct raw_frame *r = &d->scratch->raw[i];

	if (!t->live_hi || r->addr < t->live_lo || r->addr >= t->live_hi)
		return 0;
	return i || (n > 1 && py_offsets__shim_owner(d->off, d->scratch->raw[1].owner));
}

/*
 * May the innermost frame's header differ between the copies? Its caller, compared in
 * both and stopped at the same instruction in both, made it: only a caller that loops
 * back to the same call within the reading could have made another in its place
 * after the instant (the case docs/live-sampling.md leaves aside), so the later copy
 * holds the header the frame had at the instant. An entry frame has no instruction.
 */
static int innermost_free(const struct decoder *d, const struct thread_sample *t, uint32_t n)
{
	const struct raw_frame *p = &d->scratch->raw[1];

	return t->live_hi && n > 1 && t->verify_copy && !py_offsets__shim_owner(d->off, p->owner) &&
	       mem_snapshot__covers(t->verify_copy, p->addr, d->off->fr_size);
}

/*
 * Live memory read while the target runs can tear: a frame copied before the thread
 * returned and one copied after it called again describe no stack that ever existed.
 * @t->verify is a reading taken entirely before the current frame of @t->mem was read,
 * and @t->mem's frames were copied after it. A slot whose header (code, link, owner
 * and, below the innermost frame, instruction) is the same in both held it at that
 * instant too, unless it was replaced twice in between and the second time restored
 * every byte compared; so the chain walked is the thread's stack at that instant.
 * docs/live-sampling.md has the whole argument and its limits.
 */
static enum decode_gap verify(struct decoder *d, const struct thread_sample *t, uint32_t n)
{
	const struct py_offsets *o = d->off;

	for (uint32_t i = 0; i < n; i++) {
		const struct raw_frame *r = &d->scratch->raw[i];
		struct frame_hdr f;
		int shim;

		/* A frame the earlier reading did not copy would be read now, after the
		 * instant, in both readings, and bracket nothing: a coroutine may have
		 * moved on since, and an entry frame's slot on the C stack may hold
		 * another call's bytes. The walk reported it, for the next reading to
		 * copy. */
		if (t->verify_copy && !mem_snapshot__covers(t->verify_copy, r->addr, o->fr_size))
			return GAP_TORN;
		if (read_frame(t->verify, o, r->addr, &f))
			return GAP_TORN;
		if (bounded(d, t, i, n) && r->addr >= t->live_below)
			return GAP_TORN;
		if (!i && innermost_free(d, t, n))
			continue;
		shim = py_offsets__shim_owner(o, r->owner);
		if (f.owner != r->owner || f.previous != r->previous ||
		    (!shim && f.code != r->code) || (!shim && i && f.instr != r->instr))
			return GAP_TORN;
	}
	return GAP_NONE;
}

/*
 * The fingerprint that identifies @code for this sample: the one BPF read while the
 * thread was stopped if any recorded frame ran this code, else that of the copy BPF
 * made of the object, else the live one. Within
 * one sample an address names one object, so one recorded fingerprint serves every
 * frame of a recursion.
 */
static int sample_fp(struct decoder *d, const struct thread_sample *t, uint64_t code,
		     uint64_t *fp)
{
	for (uint32_t i = 0; i < t->nfps; i++) {
		if (t->fps[i].code == code && t->fps[i].fp) {
			*fp = t->fps[i].fp;
			return 0;
		}
	}
	if (t->copies && !code_cache__fp(d->codes, t->copies, code, fp))
		return 0;
	return code_cache__fp(d->codes, d->cfg.live, code, fp);
}

/* @f: a frame of @code (@ci) at instruction @instr. */
static void name_frame(const struct py_offsets *o, const struct code_info *ci, uint64_t code,
		       uint64_t instr, struct decoded_frame *f)
{
	uint64_t start = code + o->co_code_adaptive;

	f->qualname = ci->qualname;
	f->filename = ci->filename;
	f->first_line = ci->firstlineno;
	f->code_fp = ci->fp;
	/* An instruction pointer outside the code's bytecode means the frame and code
	 * disagree: name it but give no line rather than a wrong one. One unit before
	 * the start is a frame that has not run yet (3.11/3.12 start prev_instr there),
	 * which CPython reports on its first line. */
	if (instr >= start && instr < start + 2ull * ci->ncodeunits)
		f->line = code_cache__line(ci, (uint32_t)((instr - start) / 2));
	else if (instr == start - 2)
		f->line = ci->firstlineno;
	else
		f->line = -1;
}

/* Names the Python frames of raw[0..n) into st->frames; shims are skipped. */
static enum decode_gap name_frames(struct decoder *d, const struct thread_sample *t,
				   uint32_t n, struct stack *st)
{
	const struct py_offsets *o = d->off;
	uint64_t last_code = 0;
	const struct code_info *ci = NULL;

	st->depth = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct raw_frame *r = &d->scratch->raw[i];
		struct decoded_frame *f = &st->frames[st->depth];
		uint64_t fp;
		int err;

		if (!r->code)
			continue;
		/* Consecutive frames of one code (recursion) resolve once. */
		if (r->code != last_code) {
			err = sample_fp(d, t, r->code, &fp);
			if (!err)
				err = code_cache__get(d->codes, t->copies, r->code, fp, &ci);
			if (err)
				return err == -ESTALE ? GAP_STALE_CODE
				       : err == -EFAULT ? GAP_UNREADABLE : GAP_BAD_CODE;
			last_code = r->code;
		}
		/* Dropped as a shim is, in the raw chain too: the frame cache pairs each
		 * raw frame that has code with one named frame. */
		if (ci->hidden) {
			r->code = 0;
			continue;
		}
		name_frame(o, ci, r->code, r->instr, f);
		st->depth++;
	}
	return GAP_NONE;
}

void decoder__count(struct decoder *d, const struct stack *st)
{
	d->stats.samples++;
	d->stats.gaps[st->gap]++;
	if (st->gap == GAP_NONE)
		d->stats.complete++;
	else
		d->stats.incomplete++;
	d->stats.frames += st->depth;
}

static void account(struct decoder *d, const struct stack *st, uint64_t t0)
{
	decoder__count(d, st);
	d->stats.ns += clock__thread_ns() - t0;
}

/* The anchor's sequence only grows: the same (anchor, seq) in both readings means it
 * held throughout, at the instant the frames stand for too. */
static int torn(const struct thread_sample *t)
{
	return t->torn || (t->verify && t->from_anchor &&
			   (t->verify_anchor != t->anchor || t->verify_seq != t->anchor_seq));
}

/* A sample copied down to the anchor: the walk ends there and the cache supplies the
 * parents. *@nwalked: the raw frames of the chain in the scratch space. */
static enum decode_gap decode_anchored(struct decoder *d, const struct thread_sample *t,
				       struct stack *st, uint32_t *nwalked)
{
	uint64_t stop = d->cfg.fcache ? frame_cache__stop(d->cfg.fcache, t) : 0;
	uint32_t n = 0, nraw, ndec;
	enum decode_gap gap;

	*nwalked = 0;
	if (!stop)
		return GAP_CACHE_LOST;
	gap = walk(d, t, stop, &n);
	*nwalked = n;
	if (gap == GAP_NONE && t->verify)
		gap = verify(d, t, n);
	if (gap == GAP_TORN)
		return gap;
	if (n) {
		enum decode_gap g = name_frames(d, t, n, st);

		if (gap == GAP_NONE)
			gap = g;
	}
	if (gap != GAP_NONE)
		return gap;
	if (frame_cache__splice(d->cfg.fcache, t, stop, d->scratch->raw + n,
				DECODE_MAX_DEPTH - n, &nraw,
				st->frames + st->depth, DECODE_MAX_DEPTH - st->depth, &ndec))
		return GAP_CACHE_LOST;
	*nwalked = n + nraw;
	st->depth += ndec;
	d->stats.frames_from_cache += ndec;
	frame_cache__after_hit(d->cfg.fcache, t, d->scratch->raw, n);
	return GAP_NONE;
}

/* *@nwalked as for decode_anchored(). */
static enum decode_gap decode_full(struct decoder *d, const struct thread_sample *t,
				   struct stack *st, uint32_t *nwalked)
{
	uint32_t n = 0, m = 0, nreused = 0;
	enum decode_gap gap = walk(d, t, 0, &n);

	*nwalked = n;
	if (t->verify && n && verify(d, t, n) == GAP_TORN)
		return GAP_TORN;
	if (!n)
		return gap;
	/* The outermost frames identical to the last chain keep their names. */
	if (d->cfg.fcache && gap == GAP_NONE)
		m = frame_cache__reuse(d->cfg.fcache, t, d->scratch->raw, n, d->scratch->reused,
				       &nreused);
	/* Name what was walked even when the walk broke off: the partial stack is still
	 * reported, marked incomplete. */
	{
		enum decode_gap g = name_frames(d, t, n - m, st);

		if (g != GAP_NONE)
			return g;
	}
	memcpy(st->frames + st->depth, d->scratch->reused,
	       nreused * sizeof(*d->scratch->reused));
	st->depth += nreused;
	d->stats.frames_from_cache += nreused;
	if (gap == GAP_NONE && d->cfg.fcache)
		frame_cache__store(d->cfg.fcache, t, d->scratch->raw, n, st->frames, st->depth);
	return gap;
}

/* A stack before a decode fills it: no frames, no runs, no task, no native parts. Both
 * ways in (a record, a live reading) start here, so a stack reused from the last sample
 * keeps nothing of it. */
static void clear_stack(struct stack *st)
{
	st->depth = 0;
	st->nruns = 0;
	st->task = st->task_fp = 0;
	st->task_mem = NULL;
	st->task_copy = NULL;
	st->native = NULL;
	st->native_stack = NULL;
	st->native_fp = NULL;
}

static void decode_thread(struct decoder *d, const struct thread_sample *t, struct stack *st)
{
	uint32_t nwalked = 0;

	st->pid = t->pid;
	st->tid = t->tid;
	st->ts_ns = t->ts_ns;
	st->flags = t->flags;
	clear_stack(st);
	if (torn(t))
		st->gap = GAP_TORN;
	else if (t->from_anchor)
		st->gap = decode_anchored(d, t, st, &nwalked);
	else
		st->gap = decode_full(d, t, st, &nwalked);
	/* A torn stack's frames were dropped: no runs of what is not there. */
	d->nwalked = st->depth ? nwalked : 0;
	if (st->depth)
		decode_runs__find(d->off, t, d->scratch->raw, nwalked, st);
}

uint32_t decoder__frame_addrs(const struct decoder *d, uint32_t first, uint32_t n,
			      uint64_t *addr, uint8_t *owner)
{
	uint32_t got = 0, i = 0;

	/* Each raw frame with code is one named frame, in order (see name_frames()). */
	for (uint32_t k = 0; k < d->nwalked && got < n; k++) {
		const struct raw_frame *r = &d->scratch->raw[k];

		if (!r->code || i++ < first)
			continue;
		addr[got] = r->addr;
		owner[got++] = r->owner;
	}
	return got;
}

uint32_t decoder__frames_kind(const struct decoder *d, const struct stack *st, uint32_t first,
			      uint32_t n, uint8_t *kind)
{
	const struct py_offsets *o = &d->cfg.interp->off;
	const struct code_info *ci;
	uint32_t got = 0, i = 0;

	for (uint32_t k = 0; k < d->nwalked && got < n && i < st->depth; k++) {
		const struct raw_frame *r = &d->scratch->raw[k];

		if (!r->code || i++ < first)
			continue;
		kind[got] = o->owner_cstack != 0xff && k + 1 < d->nwalked &&
			    d->scratch->raw[k + 1].owner == o->owner_cstack ? DECODER_FROM_C : 0;
		ci = code_cache__held(d->codes, r->code, st->frames[i - 1].code_fp);
		kind[got++] |= !ci ? DECODER_CODE_GONE : ci->coroutine ? DECODER_COROUTINE : 0;
	}
	return got;
}

int decoder__thread_name(const struct decoder *d, const struct stack *st, char *out,
			 size_t cap)
{
	const struct py_offsets *o = &d->cfg.interp->off;
	const char *qualname, *file;
	uint64_t addr;
	uint8_t owner;

	for (uint32_t i = st->depth; i-- > 0 && st->depth - i <= PY_THREAD_NAME_DEPTH;) {
		qualname = strtab__get(d->cfg.strs, st->frames[i].qualname);
		if (!qualname || strcmp(qualname, PY_THREAD_NAME_FRAME))
			continue;
		file = strtab__get(d->cfg.strs, st->frames[i].filename);
		if (file && strrchr(file, '/'))
			file = strrchr(file, '/') + 1;
		if (!file || strcmp(file, PY_THREAD_NAME_FILE) ||
		    decoder__frame_addrs(d, i, 1, &addr, &owner) != 1 || owner != o->owner_thread)
			return -ENOENT;
		return py_thread_name__of_frame(d->cfg.live, o, addr, out, cap);
	}
	return -ENOENT;
}

int decoder__decode_thread(struct decoder *d, const struct thread_sample *t, struct stack *st)
{
	uint64_t t0 = clock__thread_ns();

	decode_thread(d, t, st);
	if (t->attempt)
		d->stats.ns += clock__thread_ns() - t0;
	else
		account(d, st, t0);
	return 0;
}

int decoder__decode(struct decoder *d, const void *rec, size_t len, struct stack *st)
{
	const struct pbp_sample *s = rec;
	struct thread_sample t = { 0 };
	const struct pbp_native *native;
	const struct pbp_native_fp *native_fp;
	const uint8_t *native_stack;
	uint64_t t0 = clock__thread_ns();
	size_t payload_end;

	d->nwalked = 0;
	clear_stack(st);
	if (load_record(d, s, len, &payload_end)) {
		st->gap = GAP_BAD_RECORD;
		account(d, st, t0);
		return -EINVAL;
	}
	t.pid = s->pid;
	t.tid = s->tid;
	t.ts_ns = s->ts_ns;
	t.flags = s->ts_flags;
	t.tstate = s->tstate;
	/* The thread's id in its own PID namespace, as the copied thread state says:
	 * what a later write into that state checks the state still holds. */
	if (d->off->ts_native_thread_id != PBP_OFF_NONE &&
	    d->off->ts_native_thread_id + sizeof(uint32_t) <= s->tstate_len)
		memcpy(&t.ns_tid, (const uint8_t *)s + s->hdr_len + d->off->ts_native_thread_id,
		       sizeof(t.ns_tid));
	t.current_frame = s->current_frame;
	t.fps = s->fps;
	t.nfps = s->nfps;
	t.anchor = s->anchor;
	t.anchor_seq = s->anchor_seq;
	t.from_anchor = !!(s->flags & PBP_SF_FROM_ANCHOR);
	t.cache_gen = s->cache_gen;
	t.cache_depth = s->cache_depth;
	t.mem = &d->snap.base;
	t.copies = mem_snapshot__copies(&d->snap);
	d->stats.frames_outside += s->nframes;
	d->stats.walks_cut += !!(s->flags & PBP_SF_WALK_ENDS);
	d->stats.codes_cut += !!(s->flags & PBP_SF_CODES_CUT);
	native = native_block(d, s, payload_end, &native_stack, &native_fp);
	if (native) {
		/* 3.11 finds its activations' _PyCFrames in the C stack copy. */
		t.cstack = native_stack;
		t.cstack_addr = native->regs[7];	/* RSP, in DWARF numbering */
		t.cstack_len = native->stack_len;
	}
	/* A stack BPF could not copy would be read from live memory, which has moved on
	 * since the sample: a wrong stack is worse than a missing one. A thread outside
	 * Python code has none to read. */
	if (s->flags & (PBP_SF_STACK_FAULT | PBP_SF_STACK_MOVING | PBP_SF_NO_PYTHON)) {
		st->pid = t.pid;
		st->tid = t.tid;
		st->flags = t.flags;
		st->gap = s->flags & PBP_SF_NO_PYTHON ? GAP_NONE :
			  s->flags & PBP_SF_STACK_MOVING ? GAP_MOVING : GAP_NOT_COPIED;
		st->native = native;
		st->native_stack = native_stack;
		st->native_fp = native_fp;
		account(d, st, t0);
		return 0;
	}
	decode_thread(d, &t, st);
	/* What BPF had to leave out was read live, too late: say so. */
	if ((s->flags & PBP_SF_WALK_ENDS) && st->gap != GAP_NONE && st->gap != GAP_TOO_DEEP &&
	    st->gap != GAP_CACHE_LOST)
		st->gap = GAP_WALK_CUT;
	else if ((s->flags & PBP_SF_CODES_CUT) &&
		 (st->gap == GAP_STALE_CODE || st->gap == GAP_BAD_CODE ||
		  st->gap == GAP_UNREADABLE))
		st->gap = GAP_CODES_CUT;
	st->task = s->task;
	st->task_fp = s->task_fp;
	st->task_mem = s->flags & PBP_SF_TASK_COPIED ? &d->snap.base : NULL;
	st->task_copy = s->flags & PBP_SF_TASK_COPIED ? mem_snapshot__copies(&d->snap) : NULL;
	st->native = native;
	st->native_stack = native_stack;
	st->native_fp = native_fp;
	account(d, st, t0);
	return 0;
}

int decoder__name_frame(struct decoder *d, struct mem_source *m, uint64_t frame,
			struct decoded_frame *f)
{
	const struct code_info *ci;
	struct frame_hdr h;
	uint64_t fp;
	int err;

	err = read_frame(m, d->off, frame, &h);
	if (err)
		return err;
	if (!h.code)
		return -EINVAL;
	err = code_cache__fp(d->codes, d->cfg.live, h.code, &fp);
	if (!err)
		err = code_cache__get(d->codes, NULL, h.code, fp, &ci);
	if (err)
		return err;
	name_frame(d->off, ci, h.code, h.instr, f);
	return 0;
}

const struct decode_stats *decoder__stats(const struct decoder *d)
{
	return &d->stats;
}

const struct code_cache_stats *decoder__code_stats(const struct decoder *d)
{
	return code_cache__stats(d->codes);
}

const struct mem_stats *decoder__mem_stats(const struct decoder *d)
{
	return &d->cfg.live->stats;
}

void decoder__remap_strings(struct decoder *d, struct strtab_remap *map)
{
	code_cache__remap_strings(d->codes, map);
}
