/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Python part of a record: which PyThreadState the sampled thread runs (cached per
 * thread, checked at every sample), the live part of its data-stack chunks, the walk of
 * its frame chain through that copy with the frames outside the chunks copied after
 * them, the innermost frames' code fingerprints, the code objects user space does not
 * hold, asyncio's running tasks, the GIL's holder and the 3.15+ frame-cache anchor the
 * copy may stop at. All of it is bounded copying, done while the thread cannot move;
 * what the bytes mean is decided in user space (user/decode/). Called by snapshot() in
 * bpf/sample.bpf.c; uses common.bpf.h.
 */
#ifndef PBP_PYTHON_BPF_H
#define PBP_PYTHON_BPF_H

struct walk_ctx {
	const struct pbp_target *t;
	__u64 interp;
	__u64 ts;
	__u64 found;
	__u32 tid;
	__u32 steps_in_interp;
};

/* The frame @ts is executing; 0 if it runs no Python code now. */
static __always_inline __u64 current_frame(const struct pbp_target *t, __u64 ts)
{
	if (t->ts_cframe != PBP_OFF_ABSENT)
		return read_u64(read_u64(ts + t->ts_cframe) + t->cframe_current_frame);
	return read_u64(ts + t->ts_current_frame);
}

/* One step of the thread-list walk. A callback of bpf_loop() is verified once, where
 * an unrolled nested loop over interpreters and threads would exhaust the verifier. */
static long walk_step(__u32 index, void *arg)
{
	struct walk_ctx *w = arg;
	const struct pbp_target *t = w->t;

	if (!w->ts) {
		if (index) {
			if (t->interp_next == PBP_OFF_ABSENT)
				return 1;
			w->interp = read_u64(w->interp + t->interp_next);
		}
		if (!w->interp)
			return 1;
		w->ts = read_u64(w->interp + t->interp_threads_head);
		w->steps_in_interp = 0;
		return 0;
	}
	if (read_u64(w->ts + t->ts_native_tid) == w->tid) {
		/* A thread has a state in every interpreter it entered (and 3.11/3.12
		 * leave a subinterpreter's behind): the one running code is the one
		 * wanted, an idle one only if there is no other. */
		if (current_frame(t, w->ts)) {
			w->found = w->ts;
			return 1;
		}
		if (!w->found)
			w->found = w->ts;
	}
	w->ts = read_u64(w->ts + t->ts_next);
	/* A cycle in a list that is being modified must not pin us to one interpreter. */
	if (++w->steps_in_interp >= PBP_THREADS_MAX)
		w->ts = 0;
	return 0;
}

/* Walks every interpreter's thread list for the tstate whose native_thread_id is tid. */
static __always_inline __u64 find_tstate(const struct pbp_target *t, __u32 tid)
{
	struct walk_ctx w = { .t = t, .tid = tid };

	count(PBP_C_THREAD_WALKS);
	w.interp = read_u64(t->runtime + t->rt_interp_head);
	if (!w.interp)
		return 0;
	bpf_loop(PBP_INTERPS_MAX * (PBP_THREADS_MAX + 1), walk_step, &w, 0);
	return w.found;
}

/*
 * The thread's id as its own process sees it, which is what CPython stores as
 * native_thread_id: in a container's PID namespace it differs from the host's.
 */
static __always_inline __u32 own_tid(struct task_struct *task, __u32 tid)
{
	struct pid *p = task->thread_pid;
	unsigned int level;
	__u32 nr = tid;

	if (!p)
		return tid;
	level = p->level;
	if (!level)
		return tid;
	if (bpf_probe_read_kernel(&nr, sizeof(nr), &p->numbers[level & 31].nr))
		return tid;
	return nr;
}

/* The cached tstate is checked against the thread id on every sample: a thread can
 * swap its PyThreadState (PyGILState_Ensure from foreign threads), and a tid can be
 * reused after an exit the tracepoint below did not see. One that runs no code may
 * be the thread's state in an interpreter it has left: it is looked for afresh at
 * retry_ns. Sets @frame to the state's current frame. */
static __always_inline __u64 lookup_tstate(const struct pbp_target *t, __u32 tid, __u32 ns_tid,
					   __u64 *frame)
{
	struct pbp_thread *th = bpf_map_lookup_elem(&threads, &tid);
	struct pbp_thread fresh = {};
	__u64 now = bpf_ktime_get_ns();

	*frame = 0;
	if (th) {
		if (th->tstate && read_u64(th->tstate + t->ts_native_tid) == ns_tid) {
			*frame = current_frame(t, th->tstate);
			if (*frame || now < th->retry_ns)
				return th->tstate;
		} else if (!th->tstate && now < th->retry_ns) {
			return 0;
		}
	}
	fresh.tstate = find_tstate(t, ns_tid);
	if (fresh.tstate)
		*frame = current_frame(t, fresh.tstate);
	if (!*frame)
		fresh.retry_ns = now + PBP_THREAD_RETRY_NS;
	bpf_map_update_elem(&threads, &tid, &fresh, BPF_ANY);
	return fresh.tstate;
}

static __always_inline __u64 code_fingerprint(const struct pbp_target *t, __u64 code)
{
	__u32 v32 = 0;

	switch (t->fp_mode) {
	case PBP_FP_U32_HASH: {
		__u64 name;

		if (bpf_probe_read_user(&v32, sizeof(v32), (void *)(code + t->fp_off)))
			return 0;
		name = read_u64(code + t->fp_off2);
		return v32 | (name ? read_u64(name + t->fp_off3) << 32 : 0);
	}
	case PBP_FP_PTR_U64: {
		__u64 p = read_u64(code + t->fp_off), h;

		h = p ? read_u64(p + t->fp_off2) : 0;
		return h ? h ^ read_u64(code + t->fp_off3) : 0;
	}
	default:
		return 0;
	}
}

/* Where the copies of code objects go: after the rest of the record's payload. */
struct span_state {
	__u32 off;		/* the payload's start in sc->buf */
	__u32 used;		/* payload bytes written so far */
	__u32 code_bytes;	/* of them, copied of code objects */
	__u32 n;		/* spans written */
};

/* Code objects met on the walk that user space does not hold, to copy. */
struct code_list {
	__u64 last;		/* the last frame's, noted */
	__u64 frame;		/* the frame being noted */
	__u32 n;
	__u32 cut;
	__u64 code[PBP_CODES_MAX];
};

/* State shared by the bpf_loop() callbacks below; callbacks are verified once, where
 * unrolled loops with inner loops exhaust the verifier's budget. */
struct copy_ctx {
	const struct pbp_target *t;
	struct pbp_sample *s;
	struct scratch *sc;
	__u32 off;		/* where payload bytes go in sc->buf */
	__u32 used;		/* payload bytes written so far */
	__u32 left;		/* stack bytes still allowed */
	__u32 nchunks;
	__u32 hlen;		/* frame header bytes: 0 when the offsets do not fit them */
	__u32 k;		/* the walk's chunk: frames only go on to older ones */
	__u64 chunk;
	__u64 top;
	__u64 frame;
	__u64 stop;		/* the cached anchor: copy no older bytes than this */
	__u32 segoff[PBP_SEGMENTS_MAX];	/* where each chunk's bytes are in sc->buf */
	struct code_list codes;
	struct span_state spans;
};

/*
 * One chunk: copies its live part (data start up to datastack_top for the current
 * chunk, up to the saved top for older ones), newest chunk first, until the cap.
 * When the cap cuts a chunk, its newest bytes are kept: they hold the frames nearest
 * the sampled one.
 */
static long copy_chunk(__u32 i, void *arg)
{
	struct copy_ctx *c = arg;
	const struct pbp_target *t = c->t;
	struct pbp_sample *s = c->s;
	__u64 start, len, top = c->top;

	if (!c->chunk || !c->left)
		return 1;
	start = c->chunk + t->chunk_data;
	if (i > 0)
		top = start + read_u64(c->chunk + t->chunk_top) * 8;
	if (top < start)
		return 1;
	/* Frames below the anchor are in user space's cache: this chunk is the last. */
	if (c->stop >= start && c->stop < top)
		start = c->stop;
	len = top - start;
	if (len > c->left) {
		start = top - c->left;
		len = c->left;
		s->flags |= PBP_SF_STACK_TRUNCATED;
	}
	if (len && read_span(c->sc, c->off + c->used, len, start)) {
		/* The innermost frame's value stack may end on a page it has not written
		 * yet, which cannot be read here; no frame header lies on such a page. */
		__u64 cut = top & ~(__u64)(PAGE_BYTES - 1);

		len = cut - start;
		if (i || cut <= start || read_span(c->sc, c->off + c->used, len, start)) {
			s->flags |= PBP_SF_STACK_FAULT;
			count(PBP_C_STACK_FAULTS);
			return 1;
		}
	}
	s->seg[i & (PBP_SEGMENTS_MAX - 1)].addr = start;
	s->seg[i & (PBP_SEGMENTS_MAX - 1)].len = len;
	c->segoff[i & (PBP_SEGMENTS_MAX - 1)] = c->off + c->used;
	s->nsegs = i + 1;
	c->used += len;
	c->left -= len;
	c->chunk = start == c->stop ? 0 : read_u64(c->chunk + t->chunk_previous);
	if (i == PBP_SEGMENTS_MAX - 1 && c->chunk && c->left)
		s->flags |= PBP_SF_MORE_CHUNKS;
	return 0;
}

/*
 * Where @frame's header was copied with the chunks: its offset in sc->buf, or 0 when
 * it lies outside them. A chain goes from each chunk to the one before, so only the
 * last frame's chunk and the next are looked at; a frame found in neither has its
 * header copied, which costs bytes but is as sound.
 */
static __always_inline __u32 chunk_offset(struct copy_ctx *c, __u64 frame)
{
	const struct pbp_sample *s = c->s;
	__u32 k = c->k;

	for (int next = 0; next < 2; next++, k++) {
		if (k >= c->nchunks || k >= PBP_SEGMENTS_MAX)
			return 0;
		if (frame >= s->seg[k].addr && frame + c->hlen <= s->seg[k].addr + s->seg[k].len) {
			c->k = k;
			return c->segoff[k] + (__u32)(frame - s->seg[k].addr);
		}
	}
	return 0;
}

/* The fingerprint recorded in @s for @code, 0 if none yet. */
static __always_inline __u64 recorded_fp(const struct pbp_sample *s, __u64 code)
{
	__u32 n = s->nfps;

	for (__u32 j = 0; j < PBP_FPS_MAX; j++) {
		if (j >= n)
			break;
		if (s->fps[j].code == code)
			return s->fps[j].fp;
	}
	return 0;
}

/*
 * Notes @code (of the frame at l->frame, target @t) for copying when user space does
 * not hold it (see PBP_CODES_MAX); @fp: its fingerprint, 0 if not read. One held with
 * PBP_CK_CHECK has its fingerprint read, compared and recorded in @s, where decoding
 * finds it once the object is freed; with no room left to record it, it is copied.
 * Global, so that it is verified once, on its own, and its branches do not multiply
 * the walk's.
 */
__noinline int note_code(struct code_list *l, const struct pbp_target *t, struct pbp_sample *s,
			 __u64 code, __u64 fp)
{
	struct pbp_code_known *k;
	__u32 slot, n;

	if (!l || !t || !s || !code)
		return 0;
	slot = pbp_code_slot(s->pid, code);
	k = bpf_map_lookup_elem(&codes_known, &slot);
	if (!k)
		return 0;
	if (k->code == code && k->pid == s->pid && (k->flags & PBP_CK_HELD)) {
		if (!fp && (k->flags & PBP_CK_CHECK)) {
			fp = recorded_fp(s, code);
			if (!fp && s->nfps < PBP_FPS_MAX) {
				fp = code_fingerprint(t, code);
				n = s->nfps;
				if (fp && n < PBP_FPS_MAX) {
					s->fps[n & (PBP_FPS_MAX - 1)].frame = l->frame;
					s->fps[n & (PBP_FPS_MAX - 1)].code = code;
					s->fps[n & (PBP_FPS_MAX - 1)].fp = fp;
					s->nfps = n + 1;
				}
			}
			if (fp && k->fp == fp)
				return 0;
		} else if (!fp || k->fp == fp) {
			return 0;
		}
	}
	n = l->n;
	for (__u32 j = 0; j < PBP_CODES_MAX; j++) {
		if (j >= n)
			break;
		if (l->code[j] == code)
			return 0;
	}
	if (n >= PBP_CODES_MAX) {
		l->cut = 1;
		return 0;
	}
	l->code[n & (PBP_CODES_MAX - 1)] = code;
	l->n = n + 1;
	return 0;
}

/*
 * One frame of the sampled thread's chain, from the innermost down. A frame in the
 * copied chunks is read from the copy; one outside them (an entry frame on the C
 * stack, a generator's frame in its object) has its header copied after the chunks,
 * for it changes as soon as the thread moves on and user space reads too late. The
 * innermost frames' code identity is recorded too (struct pbp_code_fp).
 */
static long walk_frame(__u32 i, void *arg)
{
	struct copy_ctx *c = arg;
	const struct pbp_target *t = c->t;
	struct pbp_sample *s = c->s;
	__u64 frame = c->frame, code, fp, at;
	__u32 hlen = c->hlen, n = s->nframes;
	__u8 owner;

	if (!frame)
		return 1;
	at = chunk_offset(c, frame);
	if (!at) {
		if (n >= PBP_FRAMES_MAX) {
			s->flags |= PBP_SF_FRAMES_CUT;
			return 1;
		}
		at = (__u64)c->off + c->used;
		/* Bounds the verifier can see; the record's layout keeps to them anyway. */
		if (at > PBP_PY_RECORD_MAX - PBP_FRAME_COPY_BYTES || !hlen ||
		    hlen > PBP_FRAME_HDR_MAX)
			return 1;
		barrier_var(at);
		*(__u64 *)(c->sc->buf + at) = frame;
		if (bpf_probe_read_user(c->sc->buf + at + 8, hlen, (void *)frame)) {
			s->flags |= PBP_SF_FRAME_FAULT;
			return 1;
		}
		c->used += 8 + hlen;
		s->nframes = n + 1;
		at += 8;
	}
	if (at > PBP_PY_RECORD_MAX - PBP_FRAME_HDR_MAX)
		return 1;
	/* The anchor is the last frame decoding needs (its parents are cached); it may
	 * lie outside the chunks, a generator's or an entry frame. */
	c->frame = frame == c->stop ? 0
		   : *(__u64 *)(c->sc->buf + at + (t->fr_previous & (PBP_FRAME_HDR_MAX - 8)));
	code = *(__u64 *)(c->sc->buf + at + (t->fr_code & (PBP_FRAME_HDR_MAX - 8))) & t->code_mask;
	owner = *(__u8 *)(c->sc->buf + at + (t->fr_owner & (PBP_FRAME_HDR_MAX - 1)));
	fp = 0;
	if (i < PBP_FP_FRAMES && t->fp_mode != PBP_FP_NONE) {
		fp = code ? code_fingerprint(t, code) : 0;
		n = s->nfps;
		if (!fp)
			s->flags |= PBP_SF_FP_FAULT;
		else if (n < PBP_FPS_MAX) {
			s->fps[n & (PBP_FPS_MAX - 1)].frame = frame;
			s->fps[n & (PBP_FPS_MAX - 1)].code = code;
			s->fps[n & (PBP_FPS_MAX - 1)].fp = fp;
			s->nfps = n + 1;
		}
	}
	/* A recursion's frames after the first have nothing new to tell. */
	if (t->co_copy_len && code != c->codes.last &&
	    !(owner < 32 && ((t->shim_owners >> owner) & 1))) {
		c->codes.last = code;
		c->codes.frame = frame;
		note_code(&c->codes, t, s, code, fp);
	}
	return 0;
}

/*
 * Appends a struct pbp_span with @len bytes at @addr to the record; returns where the
 * bytes start, or 0 when they would pass the code copies' budget or the record, or
 * could not be read. Global, like read_span(): the copies of one code object are a
 * chain of branches that, inlined, pass what the verifier follows in one path.
 */
__noinline __u64 copy_span(struct scratch *sc, struct span_state *st, __u64 addr, __u64 len)
{
	struct pbp_span *h;
	__u64 at;

	if (!sc || !st)
		return 0;
	at = (__u64)st->off + st->used;
	if (!addr || !len || len > PBP_LINETABLE_COPY_MAX ||
	    st->code_bytes + len > PBP_CODE_BYTES_MAX ||
	    at > PBP_PY_RECORD_MAX - sizeof(*h) - PBP_LINETABLE_COPY_MAX - 8)
		return 0;
	barrier_var(at);
	if (read_span(sc, at + sizeof(*h), len, addr))
		return 0;
	h = (struct pbp_span *)(sc->buf + at);
	h->addr = addr;
	h->len = len;
	h->_pad = 0;
	st->used += sizeof(*h) + ((len + 7) & ~7ull);
	st->code_bytes += len;
	st->n++;
	return at + sizeof(*h);
}

/* A str object, header and characters, as far as PBP_STR_COPY_MAX. */
static __always_inline void copy_str(struct scratch *sc, const struct pbp_target *t,
				     struct span_state *st, __u64 str)
{
	__u64 len;

	if (!str)
		return;
	len = t->str_hdr + read_u64(str + t->str_len);
	copy_span(sc, st, str, len < PBP_STR_COPY_MAX ? len : PBP_STR_COPY_MAX);
}

/* A pointer in the copy of a code object at @at, @off bytes in. */
static __always_inline __u64 code_field(struct scratch *sc, __u64 at, __u32 off)
{
	return *(__u64 *)(sc->buf + at + (off & (PBP_CODE_HDR_MAX - 8)));
}

/*
 * One code object noted on the walk, with its names and line table: 0, or -1 when it
 * could not be copied. Its strings and line table are only kept alive by it: once it
 * is freed, they may be too.
 */
__noinline int copy_code(struct scratch *sc, const struct pbp_target *t, struct span_state *st,
			 __u64 code)
{
	__u64 at, p, len;

	if (!sc || !t || !st)
		return -1;
	at = copy_span(sc, st, code, t->co_copy_len <= PBP_CODE_HDR_MAX ? t->co_copy_len : 0);
	if (!at || at > PBP_PY_RECORD_MAX - PBP_CODE_HDR_MAX)
		return -1;
	barrier_var(at);
	copy_str(sc, t, st, code_field(sc, at, t->co_qualname));
	copy_str(sc, t, st, code_field(sc, at, t->co_filename));
	/* Before 3.13 the fingerprint is co_name's hash. */
	if (t->fp_mode == PBP_FP_PTR_U64)
		copy_str(sc, t, st, code_field(sc, at, t->fp_off));
	p = code_field(sc, at, t->co_linetable);
	if (!p)
		return 0;
	len = t->bytes_hdr + read_u64(p + t->bytes_len) + 1;
	copy_span(sc, st, p, len < PBP_LINETABLE_COPY_MAX ? len : PBP_LINETABLE_COPY_MAX);
	return 0;
}

/* --async: the running task object and its name (PBP_SF_TASK_COPIED). */
static __always_inline void copy_task(struct scratch *sc, const struct pbp_target *t,
				      struct span_state *st, struct pbp_sample *s)
{
	__u64 name;

	if (!copy_span(sc, st, s->task, t->task_copy_len <= PBP_TASK_COPY_MAX ? t->task_copy_len : 0))
		return;
	name = read_u64(s->task + t->task_name);
	if (name)
		copy_span(sc, st, name, PBP_TASK_NAME_COPY);
	s->flags |= PBP_SF_TASK_COPIED;
}

static long copy_code_cb(__u32 j, void *arg)
{
	struct copy_ctx *c = arg;

	if (copy_code(c->sc, c->t, &c->spans, c->codes.code[j & (PBP_CODES_MAX - 1)])) {
		c->s->flags |= PBP_SF_CODES_CUT;
		return 1;
	}
	return 0;
}

static __always_inline int top_in_chunk(const struct pbp_target *t, __u64 chunk, __u64 top)
{
	return chunk && top >= chunk + t->chunk_data &&
	       top <= chunk + read_u64(chunk + t->chunk_size);
}

/*
 * Whether @ts holds its interpreter's GIL: PBP_TS_GIL_KNOWN and PBP_TS_GIL, or 0 if
 * unknown. @tsbuf holds the first @tlen bytes of @ts, as copied into the record.
 */
static __always_inline __u32 gil_flags(const struct pbp_target *t, __u64 ts, const __u8 *tsbuf,
				       __u32 tlen, __u64 *gil_out)
{
	__u64 gil = t->gil, interp;
	__s32 locked = 0;

	if (!gil && t->interp_gil != PBP_OFF_ABSENT && t->ts_interp + sizeof(interp) <= tlen) {
		interp = *(const __u64 *)(tsbuf + (t->ts_interp & (PBP_TSTATE_MAX - 1)));
		gil = read_u64(interp + t->interp_gil);
	}
	*gil_out = gil;
	if (!gil || bpf_probe_read_user(&locked, sizeof(locked), (void *)(gil + t->gil_locked)))
		return 0;
	if (locked > 0 && read_u64(gil + t->gil_holder) == ts)
		return PBP_TS_GIL_KNOWN | PBP_TS_GIL;
	return PBP_TS_GIL_KNOWN;
}

/*
 * Where the copy may stop (3.15+): the anchor the interpreter keeps for us, when it is
 * one of the frames whose parents user space holds (see struct pbp_fcache). 0 = copy
 * everything.
 */
static __always_inline __u64 anchor_stop(const struct pbp_target *t, struct pbp_sample *s,
					 __u32 tid, __u64 ts)
{
	struct pbp_fcache *fc;
	__u64 j;

	if (t->ts_anchor == PBP_OFF_ABSENT)
		return 0;
	s->anchor = read_u64(ts + t->ts_anchor);
	s->anchor_seq = read_u64(ts + t->ts_anchor_seq);
	if (!s->anchor)
		return 0;
	fc = bpf_map_lookup_elem(&fcache, &tid);
	if (!fc || fc->tstate != ts || s->anchor_seq < fc->seq)
		return 0;
	j = s->anchor_seq - fc->seq;
	if (j >= fc->npath || j >= PBP_PATH_MAX || fc->path[j & (PBP_PATH_MAX - 1)] != s->anchor)
		return 0;
	s->flags |= PBP_SF_FROM_ANCHOR;
	s->cache_gen = fc->gen;
	s->cache_depth = (__u32)j;
	return s->anchor;
}

/* A dict's keys object (3.11+): its index bytes (log2), its entries, and where the
 * indices start; each entry of a dict whose keys are not all str is hash, key, value. */
#define DK_LOG2_INDEX_BYTES	9
#define DK_NENTRIES		24
#define DK_INDICES		32
#define DK_ENTRY		24
#define DK_ENTRY_VALUE		16

/*
 * --async before 3.14: asyncio's dict of each loop's running task, as it was at the
 * tick, with the tasks it names (PBP_SF_TASK_COPIED, PBP_LOOP_ENTRIES_MAX). A task
 * enters it for each step it takes and leaves it after: a handler's may have ended by
 * the time user space reads the record, and the dict names the next one.
 */
static __always_inline void copy_current_tasks(struct scratch *sc, const struct pbp_target *t,
					       struct span_state *st, struct pbp_sample *s)
{
	__u64 dict = t->current_tasks, keys, n, entries, task, name;
	__u8 log2_index = 0xff;
	__u32 k = 0;

	if (!copy_span(sc, st, dict, t->dict_copy_len <= 64 ? t->dict_copy_len : 0))
		return;
	keys = read_u64(dict + t->dict_keys);
	n = read_u64(keys + DK_NENTRIES);
	if (!keys || bpf_probe_read_user(&log2_index, 1, (void *)(keys + DK_LOG2_INDEX_BYTES)) ||
	    log2_index > 4 || n > PBP_LOOP_ENTRIES_MAX)
		return;
	entries = keys + DK_INDICES + (1ull << log2_index);
	if (!copy_span(sc, st, keys, DK_INDICES + (1ull << log2_index) + n * DK_ENTRY))
		return;
	s->flags |= PBP_SF_TASK_COPIED;
	for (__u32 i = 0; i < PBP_LOOP_ENTRIES_MAX && i < n && k < PBP_LOOP_TASKS_MAX; i++) {
		task = read_u64(entries + i * DK_ENTRY + DK_ENTRY_VALUE);
		if (!task)
			continue;
		k++;
		if (!copy_span(sc, st, task, t->task_copy_len <= PBP_TASK_COPY_MAX ? t->task_copy_len : 0))
			continue;
		name = read_u64(task + t->task_name);
		if (name)
			copy_span(sc, st, name, PBP_TASK_NAME_COPY);
		if ((__u64)t->task_callback0 + 8 <= t->task_copy_len)
			copy_span(sc, st, read_u64(task + t->task_callback0), PBP_CALLBACK_COPY);
	}
}

/*
 * --async: the thread's running task and the fingerprint of its coroutine's code. Three
 * reads; a task caught being switched gives a coroutine whose frame user space then
 * fails to find in the stack, and the sample stays a thread's stack.
 */
static __always_inline void running_task(const struct pbp_target *t, __u64 ts,
					 struct pbp_sample *s)
{
	__u64 task, coro, code;

	if (t->ts_running_task == PBP_OFF_ABSENT)
		return;
	task = read_u64(ts + t->ts_running_task);
	if (!task)
		return;
	s->task = task;
	coro = read_u64(task + t->task_coro);
	if (!coro)
		return;
	code = read_u64(coro + t->gen_iframe + t->fr_code) & t->code_mask;
	if (code)
		s->task_fp = code_fingerprint(t, code);
}

#endif
