// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sampler. On every tick of the per-CPU software clock, for a thread of a target
 * process, it copies the PyThreadState and the live part of the thread's data-stack
 * chunks into one ring-buffer record, while the thread is interrupted and its frames
 * cannot change. With off-CPU sampling it also follows each target thread through the
 * scheduler: a wait inside a system call is measured across every switch until the
 * call returns, and the record is made then, before the thread runs any user code
 * and so with its stack still where it blocked; a preemption outside any call is
 * recorded as the thread switches out, and its length follows when it is back.
 * Decoding (frame walks, code objects, line tables) is
 * unbounded work and stays in user space.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "pbp_abi.h"

char LICENSE[] SEC("license") = "GPL";

#define PAGE_BYTES 4096
#define PF_EXITING 0x00000004	/* include/linux/sched.h; macros, so not in BTF */
#define PF_KTHREAD 0x00200000

/* Set through the skeleton before load. */
const volatile __u64 wakeup_bytes = 1 << 20;
const volatile bool every_exec = false;	/* system-wide: report every exec */
/* Set when the kernel's run-time statistics cannot be enabled (bpf_enable_stats needs
 * CAP_SYS_ADMIN, which least-privilege deployments do not grant): the program then
 * times itself, so its cost per sample is still known. */
const volatile bool self_timed = false;
/* Off-CPU: intervals shorter than a thread's threshold are kept with probability
 * length / threshold and then stand for the threshold, so that their sum stays
 * unbiased. The threshold starts here and rises for a thread whose waits would take
 * more than PBP_OFF_WINDOW_BUDGET stacks in a window (see draw_threshold()). */
const volatile __u64 min_block_ns = 0;
const volatile __u32 nr_cpus = 1;	/* possible CPUs: the second scratch slots follow */
/* Wall mode: each tick carries the CPU time since the thread's previous one. */
const volatile bool cpu_timed = false;
const volatile __u64 tick_ns = 10000000;
/* --native: some target may have its native stack captured (pbp_target.native_stack,
 * native_fp). Off, the verifier, which takes a constant's branch alone, leaves out the
 * capture: it is more than half of what it walks in the sample (start-up time). */
const volatile bool native_stacks = false;
/*
 * --clock tick: sampling rides the scheduler's own tick, which already interrupts
 * every busy CPU HZ times a second, so the profiler adds no interrupt of its own. Each
 * target thread is sampled at tick_rate of every tick_hz of its ticks (tick_rate <=
 * tick_hz), spread evenly. Set after load, once HZ is measured; 0 leaves the tick
 * alone.
 */
__u32 tick_hz = 0;
__u32 tick_rate = 0;
__u64 tick_fn = 0;		/* the tick timer's function, once learnt */
pbp_u32 learn_cpu = (pbp_u32)-1;	/* where it is being learnt, while it is, */
pbp_u64 learn_period = 0;	/* ... knowing the tick's period */
/* Written by pbp_clock_probe for the loader to measure HZ with. */
struct pbp_clock_reading clock_reading = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);	/* resized by the loader */
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PBP_TARGETS_MAX);
	__type(key, __u32);		/* tgid */
	__type(value, struct pbp_target);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);	/* -a's; fewer for -p or a command (the loader) */
	__type(key, __u32);		/* tid */
	__type(value, struct pbp_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* tid -> frame-cache anchor, written by user space (3.15+ targets only). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);	/* as threads */
	__type(key, __u32);
	__type(value, struct pbp_fcache);
} fcache SEC(".maps");

/* The code objects user space holds (struct pbp_code_known): -p and commands. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PBP_CODES_KNOWN);
	__type(key, __u32);
	__type(value, struct pbp_code_known);
} codes_known SEC(".maps");

/* A target thread's wait, kept with the thread (off-CPU sampling only). */
struct switch_state {
	__u64 out_ns;		/* when it last left the CPU; 0 while it runs */
	__u64 first_ns;		/* when the wait began */
	__u64 off_ns;		/* time off the CPU in this wait, up to the last switch-in */
	__u64 arg;
	__s32 syscall;
	__u32 state;		/* the task state that names the wait; 0: preempted */
	__u32 in_call;		/* a wait inside a system call is open */
	__u32 pending;		/* a preemption's record went out; its length is owed */
	__u64 cpu_ns;		/* its CPU time at its previous tick */
	__u32 cpu_seen;		/* cpu_ns is set */
	__u32 skipped;		/* a preemption left to the draw: its length is counted */
	__u64 preempt_avg_ns;	/* its preemptions' lengths, averaged; 0: none yet */
	__u64 pending_odds;	/* the kept one was drawn with odds this / pending_thr */
	__u64 pending_thr;
	__u64 thr_ns;		/* its draw threshold; 0: min_block_ns */
	__u64 win_ns;		/* when its current window began */
	__u64 win_kept;		/* stacks taken of its waits in that window */
	__u64 in_ns;		/* when it last came back on a CPU */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct switch_state);
} offcpu SEC(".maps");

/*
 * --native: where a thread's stack was found to end (see stack_top()). A stack's top
 * stays put while RSP is in it, so the lookup, which takes the process's mmap_lock and,
 * from an interrupt, defers its release to an irq_work, is made once per thread and
 * stack rather than at every sample (it cost about as much as the rest of a sample).
 */
struct stack_span {
	__u64 lo;		/* the mapping's start when it was looked up */
	__u64 top;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct stack_span);
} stack_spans SEC(".maps");

/* Records are too large for the 512-byte BPF stack and their size is only known after
 * the copy, so they are built here and handed to bpf_ringbuf_output(). Two slots per
 * CPU: the perf-event program and the scheduler's tracepoint (which runs with
 * interrupts off) never nest on one CPU and share the first; the system-call exit
 * runs with interrupts on, where a tick may interrupt it, and has the second. */
struct scratch {
	__u8 buf[PBP_SCRATCH_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* resized to twice the number of possible CPUs */
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PBP_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void add(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

static __always_inline void count(__u32 which)
{
	add(which, 1);
}

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

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
 * Copies @len bytes from @src to @at in the record. The verifier checks the write
 * against the largest @at plus the largest @len, which it tracks apart: lengths are
 * taken in bands, and within a band @at is checked against the room the band's
 * shortest length leaves. A copy then ends at most one band past the largest record
 * in the verifier's eyes, never in fact: chunk bytes stay within PBP_PAYLOAD_OFF_MAX +
 * PBP_STACK_MAX and native stack bytes within PBP_RECORD_MAX. Global, so that it is
 * verified once, on its own, and its bands do not multiply the states of its callers.
 */
__noinline int read_span(struct scratch *sc, __u64 at, __u64 len, __u64 src)
{
	if (!sc)
		return -1;
#pragma unroll
	for (__u32 k = 1; k <= PBP_STACK_BANDS; k++) {
		if (len > k * PBP_STACK_BAND)
			continue;
		if (at > PBP_RECORD_MAX - (k - 1) * PBP_STACK_BAND)
			return -1;
		return bpf_probe_read_user(sc->buf + at, len, (void *)src);
	}
	return -1;
}

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

/* The halvings that find the first unreadable page among the 16 a copy can span. */
#define NATIVE_TRIES 5

/* A user stack copy being cut back to the pages that can be read. */
struct native_copy {
	struct scratch *sc;
	__u64 sp;
	__u32 at;		/* where the byte at sp goes in sc->buf */
	__u32 have;		/* bytes copied: sp's page, then whole pages */
	__u32 hi;		/* a copy of this many bytes meets an unreadable page */
};

/* One halving: copies the lower half of the pages in doubt, after those copied. A copy
 * that faults leaves nothing, and zeroes only its own part. */
static long extend_native(__u32 i, void *arg)
{
	struct native_copy *c = arg;
	__u32 pages, mid;

	if (c->hi <= c->have + PAGE_BYTES)
		return 1;
	pages = (c->hi - c->have + PAGE_BYTES - 1) / PAGE_BYTES;
	mid = c->have + pages / 2 * PAGE_BYTES;
	if (read_span(c->sc, c->at + c->have, mid - c->have, c->sp + c->have))
		c->hi = mid;
	else
		c->have = mid;
	return 0;
}

/*
 * The top of the stack that holds RSP, given the mapping @vma that does. In the main
 * thread's [stack] it is where the process started (mm->start_stack, its first RSP,
 * argc there): _start's frame is the last below it, and above lie argv, the
 * environment, and a gap of random size the kernel leaves untouched, whose pages are
 * not present and fault. Elsewhere, the end of the mapping (a thread's: its TLS and
 * TCB on top).
 */
static long stack_top(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	struct stack_span *span = arg;
	__u64 start = vma->vm_mm->start_stack;

	span->lo = vma->vm_start;
	span->top = start >= vma->vm_start && start < vma->vm_end ? start + 8 : vma->vm_end;
	return 0;
}

/* The top of @task's stack at @sp, from its cache when @sp is in the span found last;
 * 0 if unknown. A span gone stale (a stack unmapped, another mapped there) only cuts a
 * copy short or makes it fault and be cut back. */
static __always_inline __u64 stack_top_of(struct task_struct *task, __u64 sp)
{
	struct stack_span *c, found = {};

	c = bpf_task_storage_get(&stack_spans, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (c && sp >= c->lo && sp < c->top)
		return c->top;
	if (bpf_find_vma(task, sp, stack_top, &found, 0))
		return 0;
	if (c)
		*c = found;
	return found.top;
}

/*
 * Copies @want bytes of the user stack from @sp to @at, or up to the stack's top @end
 * (0: unknown), which is often less than @want above a shallow stack's RSP (see
 * stack_top()). When
 * the top cannot be looked up (mmap_lock is taken only if free), or a page below it
 * cannot be read, the copy, which copies nothing when it faults, is cut back: RSP's
 * own page, then the pages above it by halvings up to the first that cannot be read.
 * Faults are what the lookup saves: each costs microseconds, more in a virtual
 * machine. Returns the bytes copied; sets @flags to say how the copy ended.
 */
static __always_inline __u32 copy_native_stack(__u64 end, struct scratch *sc, __u32 at, __u64 sp,
					       __u32 want, __u16 *flags)
{
	struct native_copy c = { .sc = sc, .sp = sp, .at = at };
	__u32 head = PAGE_BYTES - (sp & (PAGE_BYTES - 1));

	if (end > sp && end - sp < want) {
		want = end - sp;
		*flags |= PBP_NF_STACK_TOP;
	}
	if (!read_span(sc, at, want, sp)) {
		if (!(*flags & PBP_NF_STACK_TOP))
			*flags |= PBP_NF_STACK_CAPPED;
		return want;
	}
	*flags &= ~PBP_NF_STACK_TOP;
	*flags |= PBP_NF_STACK_FAULT;
	if (head >= want || read_span(sc, at, head, sp))
		return 0;
	c.have = head;
	c.hi = want;
	bpf_loop(NATIVE_TRIES, extend_native, &c, 0);
	return c.have;
}

/* A frame-pointer walk under way (--native-unwind fp). */
struct fp_walk {
	struct scratch *sc;
	__u64 fp;		/* the next frame record's address */
	__u64 lo;		/* ... must be at or above this: the last record's end */
	__u64 top;		/* ... and end at or below this: the stack's top */
	__u32 at;		/* where its pbp_native_fp goes in sc->buf */
	__u32 n;
	__u16 end;		/* PBP_NF_FP_* */
};

/*
 * One frame record: RBP's chain, as code built with frame pointers leaves it (push rbp;
 * mov rbp, rsp). Each record must lie above the last, inside the thread's stack, and
 * 8-aligned, or the walk stops: code that uses RBP for something else yields garbage
 * here, which these rules end quickly and user space's check against CFI refuses
 * (user/native/native_fp.c). A callback of bpf_loop(), verified once.
 */
static long fp_step(__u32 i, void *arg)
{
	struct fp_walk *w = arg;
	struct pbp_native_fp *e;
	__u64 rec[2];
	__u32 at = w->at;

	if ((w->fp & 7) || w->fp < w->lo || w->fp > w->top - 16 || w->top < 16 ||
	    at > PBP_SCRATCH_SIZE - sizeof(*e)) {
		w->end = PBP_NF_FP_BROKEN;
		return 1;
	}
	if (bpf_probe_read_user(rec, sizeof(rec), (void *)w->fp)) {
		w->end = PBP_NF_FP_BROKEN;
		return 1;
	}
	if (!rec[1]) {
		w->end = PBP_NF_FP_ZERO;
		return 1;
	}
	e = (struct pbp_native_fp *)(w->sc->buf + at);
	e->fp = w->fp;
	e->ret = rec[1];
	w->at = at + sizeof(*e);
	w->n++;
	if (!rec[0]) {
		w->end = PBP_NF_FP_ZERO;
		return 1;
	}
	w->lo = w->fp + 16;
	w->fp = rec[0];
	return 0;
}

/*
 * Walks the RBP chain from @rbp into pbp_native_fp records at @at, at most @max
 * (<= PBP_NATIVE_FP_MAX), within the stack [@sp, @top) (@top 0: unknown). Returns the
 * records written;
 * sets the walk's end in @flags. Costs one 16-byte read per frame where a copy of the
 * frames' stack costs their every byte (1.4 KiB to _start from a CPython loop, 5-7 KiB
 * more per Python->C->Python re-entry).
 */
static __always_inline __u32 walk_fp(__u64 top, struct scratch *sc, __u32 at, __u64 sp,
				     __u64 rbp, __u32 max, __u16 *flags)
{
	struct fp_walk w = { .sc = sc, .fp = rbp, .lo = sp, .at = at, .end = PBP_NF_FP_LIMIT };

	/* Unknown (the lookup's lock was busy): a read past the top faults and ends it. */
	w.top = top;
	if (!w.top)
		w.top = sp + (8 << 20);
	if (max > PBP_NATIVE_FP_MAX)
		max = PBP_NATIVE_FP_MAX;
	bpf_loop(max, fp_step, &w, 0);
	*flags |= PBP_NF_FP_WALK | w.end;
	return w.n;
}

/*
 * --native: the thread's user registers and stack into a pbp_native block at @off, an
 * 8-byte boundary after the rest of the record. The registers are those the kernel
 * saved when the thread entered it: for a tick that interrupted user code, that
 * code's; in a system call or for an off-CPU record, those of the call (@flags says
 * which). With t->native_fp, a frame-pointer walk's records come first and the stack
 * copy, for the top frames only, after them. Returns the bytes after the header, or -1
 * when no block was written.
 */
static __always_inline int native_capture(const struct pbp_target *t, struct task_struct *task,
					  struct scratch *sc, __u64 off, __u16 *flags, __u32 *nrec)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *r;
	struct pbp_native *n;
	__u32 want = t->native_stack, got, nfp = 0, at;
	__u64 top;

	if ((!want && !t->native_fp) || off > PBP_NATIVE_OFF_MAX || (off & 7))
		return -1;
	r = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!r)
		return -1;
	n = (struct pbp_native *)(sc->buf + off);
	__builtin_memset(n, 0, sizeof(*n));
	n->hdr_len = sizeof(*n);
	n->regs_mask = (1u << PBP_NATIVE_REGS) - 1;
	/* DWARF order; a BTF pointer, read by plain loads. */
	n->regs[0] = r->ax;
	n->regs[1] = r->dx;
	n->regs[2] = r->cx;
	n->regs[3] = r->bx;
	n->regs[4] = r->si;
	n->regs[5] = r->di;
	n->regs[6] = r->bp;
	n->regs[7] = r->sp;
	n->regs[8] = r->r8;
	n->regs[9] = r->r9;
	n->regs[10] = r->r10;
	n->regs[11] = r->r11;
	n->regs[12] = r->r12;
	n->regs[13] = r->r13;
	n->regs[14] = r->r14;
	n->regs[15] = r->r15;
	n->regs[16] = r->ip;
	at = off + sizeof(*n);
	top = stack_top_of(task, r->sp);
	if (t->native_fp) {
		nfp = walk_fp(top, sc, at, r->sp, r->bp, t->native_fp, flags);
		if (nfp > PBP_NATIVE_FP_MAX)
			return -1;	/* cannot be; for the verifier */
		n->fp_off = at;
		n->nfp = nfp;
		at += nfp * sizeof(struct pbp_native_fp);
	}
	if (t->native_fp && (*flags & PBP_NF_REGS_AT_ENTRY) && want < PBP_NATIVE_FP_STACK_ENTRY)
		want = PBP_NATIVE_FP_STACK_ENTRY;
	if (want > PBP_NATIVE_STACK_MAX - nfp * sizeof(struct pbp_native_fp))
		want = PBP_NATIVE_STACK_MAX - nfp * sizeof(struct pbp_native_fp);
	want &= ~7u;
	n->stack_off = at;
	got = want ? copy_native_stack(top, sc, at, r->sp, want, flags) : 0;
	n->stack_len = got;
	n->flags = *flags;
	*nrec = nfp;
	return nfp * sizeof(struct pbp_native_fp) + got;
#else
	return -1;
#endif
}

/* Counts a native block that went out: @got bytes after its header, @nfp of them
 * frame records, the rest stack bytes. */
static __always_inline void count_native(int got, __u16 flags, __u32 nfp)
{
	if (got < 0)
		return;
	count(PBP_C_NATIVE_COPIED);
	add(PBP_C_NATIVE_BYTES, got - nfp * sizeof(struct pbp_native_fp));
	if (flags & PBP_NF_FP_WALK) {
		count(PBP_C_NATIVE_FP_WALKS);
		add(PBP_C_NATIVE_FP_RECORDS, nfp);
		if (flags & PBP_NF_FP_BROKEN)
			count(PBP_C_NATIVE_FP_BROKEN);
	}
	if (flags & PBP_NF_STACK_CAPPED)
		count(PBP_C_NATIVE_CAPPED);
	if (flags & PBP_NF_STACK_FAULT)
		count(PBP_C_NATIVE_FAULTS);
}

/* What a record carries besides the stack: off-CPU and wall-mode fields, all zero for
 * an on-CPU tick but native_flags. */
struct off_cpu {
	__u32 flags;		/* PBP_SF_OFF_CPU, PBP_SF_OFF_PENDING, PBP_SF_CPU_TIMED */
	__u16 slot;		/* scratch slot: 0, or 1 for the system-call exit */
	__u16 native_flags;	/* PBP_NF_REGS_AT_ENTRY: the thread is in the kernel */
	__u64 cpu_ns;		/* PBP_SF_CPU_TIMED */
	__u64 start_ns;
	__u64 weight_ns;
	__u64 real_ns;
	__u64 arg;
	__s32 syscall;
	__u32 state;
};

/* Sends the record of @total bytes at @buf: 0, or -1 when the ring buffer is full. */
static __always_inline int submit(void *buf, __u64 total, const struct off_cpu *off, int native,
				  __u16 nflags, __u32 nrec)
{
	if (bpf_ringbuf_output(&samples, buf, total,
			       bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes
				       ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP)) {
		count(PBP_C_RINGBUF_DROPS);
		return -1;
	}
	count(PBP_C_SUBMITTED);
	count_native(native, nflags, nrec);
	if (off->flags & PBP_SF_OFF_CPU)
		count(PBP_C_OFF_SAMPLED);
	return 0;
}

/*
 * The current thread, of target @t, into one record: 0 once it went out, -1 when none
 * did. Global, like read_span(): the verifier walks it once per program, on its own,
 * with @t and @off as any memory of their size. A static one is walked again for each
 * state its callers reach it in (a tick's thread with switch state or without, a wait
 * timed or not), which doubled the time wall mode took to load.
 */
__noinline int snapshot(const struct pbp_target *t, const struct off_cpu *off)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, cpu;
	struct task_struct *task = bpf_get_current_task_btf();
	struct pbp_sample *s;
	struct copy_ctx cc = {};
	struct scratch *sc;
	__u64 ts, frame, gil = 0;
	__u64 total;
	__u32 tlen, slot;
	__u16 nflags;
	__u32 nrec = 0;
	int native;

	if (!t || !off)
		return -1;
	/* A thread on its way out has passed the exit tracepoint that forgets it: a
	 * lookup now would leave an entry behind that nothing removes. */
	if (off->flags & PBP_SF_NO_PYTHON) {
		ts = frame = 0;
	} else {
		ts = lookup_tstate(t, tid, own_tid(task, tid), &frame);
		if (!ts)
			count(PBP_C_NO_TSTATE);
		else if (!frame)
			count(PBP_C_NO_FRAME);
	}
	/* The CPU time of a thread outside Python code (starting, ending, or one the
	 * interpreter does not run) is the process's too: its tick goes out bare. A wait
	 * has no such time. */
	if ((!ts || !frame) && (off->flags & PBP_SF_OFF_CPU))
		return -1;

	cpu = bpf_get_smp_processor_id();
	slot = off->slot ? cpu + nr_cpus : cpu;
	sc = bpf_map_lookup_elem(&scratch, &slot);
	if (!sc) {
		count(PBP_C_SCRATCH_MISSING);
		return -1;
	}
	s = (struct pbp_sample *)sc->buf;
	/* fps[] past nfps is never read: left as the last record had it. */
	__builtin_memset(s, 0, offsetof(struct pbp_sample, fps));
	s->abi = PBP_ABI_VERSION;
	s->hdr_len = sizeof(*s);
	s->pid = tgid;
	s->tid = tid;
	s->ts_ns = off->flags & PBP_SF_OFF_CPU ? off->start_ns : bpf_ktime_get_ns();
	s->cpu = cpu;
	if (off->flags & PBP_SF_CPU_TIMED) {
		s->flags = PBP_SF_CPU_TIMED;
		s->off_ns = off->cpu_ns;
	} else if (off->flags) {
		s->flags = off->flags;
		s->off_ns = off->weight_ns;
		s->off_real_ns = off->real_ns;
		s->off_arg = off->arg;
		s->off_syscall = off->syscall;
		s->off_state = off->state;
	}
	if (!ts || !frame) {
		s->flags |= PBP_SF_NO_PYTHON;
		s->ts_flags = PBP_TS_ON_CPU;
		s->len = sizeof(*s);
		return submit(sc->buf, sizeof(*s), off, -1, 0, 0);
	}
	s->tstate = ts;
	s->current_frame = frame;

	tlen = t->ts_copy_len;
	if (tlen > PBP_TSTATE_MAX)
		tlen = PBP_TSTATE_MAX;
	if (bpf_probe_read_user(sc->buf + sizeof(*s), tlen, (void *)ts)) {
		s->flags |= PBP_SF_TSTATE_FAULT;
		count(PBP_C_TSTATE_FAULTS);
		tlen = 0;
	}
	s->tstate_len = tlen;
	s->ts_flags = (off->flags & PBP_SF_OFF_CPU ? 0 : PBP_TS_ON_CPU) |
		      gil_flags(t, ts, sc->buf + sizeof(*s), tlen, &gil);
	s->gil = gil;
	running_task(t, ts, s);

	cc.t = t;
	cc.s = s;
	cc.sc = sc;
	cc.off = sizeof(*s) + tlen;
	cc.left = t->stack_cap < PBP_STACK_MAX ? t->stack_cap : PBP_STACK_MAX;
	cc.chunk = read_u64(ts + t->ts_chunk);
	cc.top = read_u64(ts + t->ts_top);
	cc.stop = anchor_stop(t, s, tid, ts);
	/*
	 * The interpreter moves to a new chunk (or back to the previous one) in two
	 * stores, datastack_chunk and datastack_top; a tick between them sees a top
	 * outside the chunk, in the previous one. The stack is then the previous
	 * chunk's. Anything else is not copied: the decoder would have to read the
	 * frames live, after they changed.
	 */
	if (!cc.chunk) {
		/* No chunk: 3.15 runs a thread's start and end on its base frame, on the
		 * heap, before the first chunk is allocated and after the last is freed
		 * (datastack_top is left behind then). The walk copies what frames there
		 * are. */
	} else if (!top_in_chunk(t, cc.chunk, cc.top)) {
		cc.chunk = read_u64(cc.chunk + t->chunk_previous);
		if (!top_in_chunk(t, cc.chunk, cc.top)) {
			s->flags |= PBP_SF_STACK_MOVING;
			count(PBP_C_STACK_FAULTS);
			cc.chunk = 0;
		}
	}
	if (cc.chunk)
		bpf_loop(PBP_SEGMENTS_MAX, copy_chunk, &cc, 0);
	cc.nchunks = s->nsegs;
	/* The links read from a header must lie in it, 8-aligned as CPython has them. */
	cc.hlen = t->fr_hdr_len <= PBP_FRAME_HDR_MAX && !(t->fr_previous & 7) &&
			  !(t->fr_code & 7) && t->fr_previous + 8 <= t->fr_hdr_len &&
			  t->fr_code + 8 <= t->fr_hdr_len && t->fr_owner < t->fr_hdr_len
		  ? t->fr_hdr_len : 0;
	s->frame_len = cc.hlen;
	cc.frame = frame;
	if (cc.hlen && bpf_loop(PBP_WALK_MAX, walk_frame, &cc, 0) == PBP_WALK_MAX && cc.frame)
		s->flags |= PBP_SF_WALK_CUT;
	if (cc.codes.cut)
		s->flags |= PBP_SF_CODES_CUT;
	if (cc.codes.n || (s->task && t->task_copy_len) || t->current_tasks) {
		cc.used = (cc.off + cc.used + 7) / 8 * 8 - cc.off;
		cc.spans.off = cc.off;
		cc.spans.used = cc.used;
		/* The tasks first: a few hundred bytes that place the sample, where
		 * sixteen new code objects' line tables could leave no room. */
		if (s->task && t->task_copy_len)
			copy_task(sc, t, &cc.spans, s);
		else if (t->current_tasks)
			copy_current_tasks(sc, t, &cc.spans, s);
		if (cc.codes.n)
			bpf_loop(cc.codes.n, copy_code_cb, &cc, 0);
		if (cc.spans.n) {
			s->spans_off = cc.off + cc.used;
			s->nspans = cc.spans.n;
			cc.used = cc.spans.used;
		}
	}

	total = sizeof(*s) + (__u64)tlen + cc.used;
	nflags = off->native_flags;
	native = native_stacks ? native_capture(t, task, sc, (total + 7) & ~7ull, &nflags, &nrec)
			       : -1;
	if (native >= 0) {
		s->flags |= PBP_SF_NATIVE;
		s->native_off = (total + 7) & ~7ull;
		s->native_len = sizeof(struct pbp_native) + native;
		total = s->native_off + s->native_len;
	}
	if (total > PBP_RECORD_MAX)
		return -1;
	s->len = total;
	return submit(sc->buf, total, off, native, nflags, nrec);
}

/*
 * Wall mode: the CPU time @task used since its previous tick that went out, and in
 * @so the state to move on once this one has. A thread that already ran before it
 * became a target's is taken to have used one period before its first tick; a
 * newer one, all it used. A tick that finds no stack (a thread not yet bound to its
 * state, a full ring buffer) leaves its time to the next, so none is lost.
 */
static __always_inline __u64 cpu_since_tick(const struct pbp_target *t, struct task_struct *task,
					    struct switch_state **so)
{
	__u64 now = task->se.sum_exec_runtime;
	struct switch_state *st;

	st = bpf_task_storage_get(&offcpu, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	*so = st;
	if (!st)
		return tick_ns;
	if (!st->cpu_seen) {
		st->cpu_seen = 1;
		st->cpu_ns = task->start_time >= t->since_ns ? 0 : now > tick_ns ? now - tick_ns : 0;
	}
	return now > st->cpu_ns ? now - st->cpu_ns : 0;
}

/* A tick on the current thread; @in_kernel: it interrupted a system call or fault. */
static __always_inline int sample_tick(bool in_kernel)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	const struct pbp_target *t = bpf_map_lookup_elem(&targets, &tgid);
	struct task_struct *task = bpf_get_current_task_btf();
	struct switch_state *so = NULL;
	struct off_cpu on = {};

	if (!t)
		return 0;
	count(PBP_C_TARGET_EVENTS);
	if (task->flags & PF_EXITING)
		on.flags = PBP_SF_NO_PYTHON;
	/* A tick in a system call or fault: the user registers are those of its entry. */
	if (in_kernel)
		on.native_flags = PBP_NF_REGS_AT_ENTRY;
	if (cpu_timed) {
		on.flags |= PBP_SF_CPU_TIMED;
		on.cpu_ns = cpu_since_tick(t, task, &so);
	}
	if (snapshot(t, &on))
		return 0;
	if (so)
		so->cpu_ns += on.cpu_ns;
	return 0;
}

static __always_inline int timed_tick(bool in_kernel)
{
	__u64 t0;

	if (!self_timed)
		return sample_tick(in_kernel);
	t0 = bpf_ktime_get_ns();
	sample_tick(in_kernel);
	add(PBP_C_SELF_NS, bpf_ktime_get_ns() - t0);
	count(PBP_C_SELF_RUNS);
	return 0;
}

SEC("perf_event")
int pbp_sample(struct bpf_perf_event_data *ctx)
{
	return timed_tick((long)PT_REGS_IP(&ctx->regs) < 0);
}

/* A target thread's share of its ticks: it is sampled at tick_rate of every tick_hz. */
struct tick_share {
	__u32 acc;
	__u32 started;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tick_share);
} tick_shares SEC(".maps");

/*
 * Whether this tick of the current thread, a target's, is one to sample. Counted per
 * thread, not per CPU: the scheduler switches CPU-bound threads at ticks, so a CPU's
 * ticks go round its threads in turn, and taking every k-th tick of a CPU would take
 * some threads always and others never. Each thread starts at a random place in its
 * count, so that threads started together are not sampled in step. Where its count
 * cannot be had, a tick is taken at random with the same odds.
 */
static __always_inline bool tick_taken(struct task_struct *task, __u32 hz)
{
	struct tick_share *sh = bpf_task_storage_get(&tick_shares, task, 0,
						     BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!sh)
		return ((__u64)bpf_get_prandom_u32() * hz >> 32) < tick_rate;
	if (!sh->started) {
		sh->started = 1;
		sh->acc = ((__u64)bpf_get_prandom_u32() * hz) >> 32;
	}
	sh->acc += tick_rate;
	if (sh->acc < hz)
		return false;
	sh->acc -= hz;
	return true;
}

/*
 * Whether the tick interrupted the current thread in the kernel. The user registers
 * at the top of its kernel stack were saved by the tick's own interrupt when it came
 * from user mode (no system call: orig_ax -1), else by the system call or fault the
 * thread is in.
 */
static __always_inline bool tick_in_kernel(void)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	return r && (long)r->orig_ax >= 0;
#else
	return false;
#endif
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PBP_TICK_LEARN_MAX);
	__type(key, __u64);	/* a timer */
	__type(value, struct pbp_tick_learn);
} tick_learn SEC(".maps");

static __always_inline void learn(const struct hrtimer *timer, __u64 fn)
{
	__u64 key = (__u64)timer, at = timer->_softexpires;
	struct pbp_tick_learn *l = bpf_map_lookup_elem(&tick_learn, &key), first = {};

	if (!l) {
		first.fn = fn;
		first.last = at;
		bpf_map_update_elem(&tick_learn, &key, &first, BPF_NOEXIST);
		return;
	}
	if (at - l->last == learn_period)
		l->on_period++;
	l->last = at;
}

/*
 * Every expiring high-resolution timer, on its CPU; the scheduler's tick is one of
 * them, and then the interrupted thread is current. The tick's function is not
 * looked up by name (kallsyms hides addresses from a least-privileged agent): while
 * the loader keeps CPU learn_cpu busy, it is the function of the timer that expires
 * there every tick period exactly (another timer at that period would be ambiguous,
 * and the loader then takes none). Which ticks are taken is counted in ticks; what a
 * taken one weighs is the CPU time its thread used since its previous one (cpu_timed),
 * so that a thread switched out between ticks is not under-counted.
 */
SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(pbp_tick, struct hrtimer *timer, ktime_t *now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fn = (__u64)timer->function;
	__u32 tgid, hz = tick_hz;

	if (fn != tick_fn) {
		if (learn_period && learn_cpu == bpf_get_smp_processor_id())
			learn(timer, fn);
		return 0;
	}
	tgid = bpf_get_current_pid_tgid() >> 32;
	/* A thread on its way out is not sampled on the tick: the CPU time it used since
	 * its last tick is charged at its exit (session_sink__add_cpu_rest). */
	if (!hz || (task->flags & PF_EXITING) || !bpf_map_lookup_elem(&targets, &tgid) ||
	    !tick_taken(task, hz))
		return 0;
	return timed_tick(tick_in_kernel());
}

/* Run by the loader (BPF_PROG_TEST_RUN), never attached. */
SEC("raw_tp")
int pbp_clock_probe(void *ctx)
{
	clock_reading.jiffies = bpf_jiffies64();
	clock_reading.ns = bpf_ktime_get_ns();
	return 0;
}

/*
 * The system call @task is in, from the user registers saved at its entry: 0 with
 * @so's syscall and arg set, or -1 outside any call (an interrupt or a fault).
 */
static __always_inline int syscall_of(struct task_struct *task, struct switch_state *so)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!regs)
		return -1;
	/* A BTF pointer: plain loads, without a helper call each. */
#if defined(__TARGET_ARCH_x86)
	/* The entry code stores -ENOSYS as the result until the call returns; a fault
	 * leaves the user's own value there and its error code in orig_ax. */
	if ((long)regs->orig_ax < 0 || (long)regs->ax != -38)
		return -1;
	so->syscall = (__s32)regs->orig_ax;
	so->arg = regs->di;
#elif defined(__TARGET_ARCH_arm64)
	if ((int)regs->syscallno < 0)
		return -1;
	so->syscall = (__s32)regs->syscallno;
	so->arg = regs->orig_x0;
#else
	return -1;
#endif
	return 0;
}

/* A uniform draw below @n, wide enough that the modulo's bias is nil for any n. */
static __always_inline __u64 draw_below(__u64 n)
{
	return (((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32()) % n;
}

/*
 * The threshold under which @so's waits are drawn rather than all kept. A thread that
 * waits tens of thousands of times a second would otherwise cost that many stacks
 * whatever min_block_ns is: each window, a thread that took more than its budget of
 * stacks has its threshold raised in proportion for the next, and one well under it
 * has it halved back towards min_block_ns. The threshold is set from past windows
 * only, before any draw it governs, so each draw stays unbiased; waits longer than
 * it are all kept.
 */
static __always_inline __u64 draw_threshold(struct switch_state *so, __u64 now)
{
	__u64 thr = so->thr_ns > min_block_ns ? so->thr_ns : min_block_ns;

	if (!min_block_ns)
		return 0;
	if (now < so->win_ns + PBP_OFF_WINDOW_NS)
		return thr;
	if (so->win_kept > PBP_OFF_WINDOW_BUDGET) {
		thr = thr / PBP_OFF_WINDOW_BUDGET * so->win_kept;
		if (thr > PBP_OFF_THRESHOLD_MAX_NS)
			thr = PBP_OFF_THRESHOLD_MAX_NS;
	} else if (so->win_kept < PBP_OFF_WINDOW_BUDGET / 2) {
		thr /= 2;
		if (thr < min_block_ns)
			thr = min_block_ns;
	}
	so->thr_ns = thr;
	so->win_ns = now;
	so->win_kept = 0;
	return thr;
}

/* @prev, the current task and a target's thread, leaves the CPU. */
static __always_inline void switch_out(struct task_struct *prev, bool preempt,
				       unsigned int prev_state)
{
	struct switch_state call = { .syscall = -1 }, *so;
	struct off_cpu off = {};
	__u32 state = preempt ? 0 : prev_state, tgid = prev->tgid;
	const struct pbp_target *t = NULL;
	__u64 now, odds, thr;

	/* A thread with switch state was a target's when it was made: the targets are
	 * looked up only for a thread seen the first time, and for a copy. */
	so = bpf_task_storage_get(&offcpu, prev, 0, 0);
	if (!so) {
		t = bpf_map_lookup_elem(&targets, &tgid);
		if (!t)
			return;
		so = bpf_task_storage_get(&offcpu, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!so) {
			count(PBP_C_OFF_NO_STORAGE);
			return;
		}
	}
	now = bpf_ktime_get_ns();
	count(PBP_C_SWITCH_OUTS);
	so->out_ns = now;
	if (!syscall_of(prev, &call)) {
		/* The first switch of a call opens its wait; a later one that blocks
		 * names it, if all before were preemptions. */
		if (!so->in_call) {
			so->in_call = 1;
			so->first_ns = now;
			so->off_ns = 0;
		} else if (so->state || !state) {
			return;
		}
		so->syscall = call.syscall;
		so->arg = call.arg;
		so->state = state;
		return;
	}
	/*
	 * Outside any call no exit will come: the stack is taken now, and its length
	 * when the thread is back. How long the wait will be is not known yet, so the
	 * odds go by how long this thread's preemptions have lasted lately: a thread
	 * preempted every few microseconds for a few microseconds is drawn with odds
	 * avg / threshold, and a kept wait counts threshold / avg times its length;
	 * waits of a thread whose preemptions run long are all kept. Odds fixed before
	 * the wait keep the sum unbiased, and odds that follow the waits keep its
	 * spread small. Their floor, min_block_ns / 16 / threshold, falls as the
	 * threshold rises: a floor fixed at 1/16 would take more stacks than the
	 * budget whatever the threshold, and raise it without end.
	 */
	so->in_call = 0;
	so->pending = so->skipped = 0;
	thr = draw_threshold(so, now);
	odds = so->preempt_avg_ns ? so->preempt_avg_ns : thr;
	if (odds < min_block_ns / 16)
		odds = min_block_ns / 16;
	so->pending_odds = odds;
	so->pending_thr = thr;
	if (odds < thr && draw_below(thr) >= odds) {
		so->skipped = 1;
		return;
	}
	if (!t)
		t = bpf_map_lookup_elem(&targets, &tgid);
	if (!t)
		return;		/* no longer a target's */
	so->win_kept++;
	off.flags = PBP_SF_OFF_CPU | PBP_SF_OFF_PENDING;
	off.native_flags = PBP_NF_REGS_AT_ENTRY;
	off.start_ns = now;
	off.syscall = -1;
	off.state = state;
	so->pending = !snapshot(t, &off);
	/* The wait is timed from here: the copy's own microseconds would otherwise
	 * lengthen just the waits that were kept, and bias their sum. */
	so->out_ns = bpf_ktime_get_ns();
}

/*
 * @next, a target's thread with no switch state, comes on a CPU: it was waiting when
 * it became a target. A wait inside a system call is counted from then; a thread
 * preempted outside one cannot be read from here, and its wait is not counted.
 */
static __always_inline void first_switch_in(struct task_struct *next)
{
	struct switch_state call = { .syscall = -1 }, *so;
	__u32 tgid = next->tgid;
	const struct pbp_target *t = bpf_map_lookup_elem(&targets, &tgid);
	__u64 now;

	if (!t || (next->flags & (PF_EXITING | PF_KTHREAD)) || syscall_of(next, &call))
		return;
	so = bpf_task_storage_get(&offcpu, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!so)
		return;
	now = bpf_ktime_get_ns();
	so->in_call = 1;
	so->first_ns = t->since_ns;
	so->off_ns = now > t->since_ns ? now - t->since_ns : 0;
	so->syscall = call.syscall;
	so->arg = call.arg;
	so->state = 1;	/* TASK_INTERRUPTIBLE: the call names the wait */
}

/* @next, a thread that was stamped as it left, is back on a CPU. */
static __always_inline void switch_in(struct task_struct *next)
{
	struct switch_state *so = bpf_task_storage_get(&offcpu, next, 0, 0);
	struct pbp_off_end end = {
		.abi = PBP_ABI_VERSION, .hdr_len = sizeof(end), .len = sizeof(end),
	};
	__u64 now;

	if (!so) {
		first_switch_in(next);
		return;
	}
	if (!so->out_ns)
		return;
	now = bpf_ktime_get_ns();
	end.off_ns = now > so->out_ns ? now - so->out_ns : 0;
	so->out_ns = 0;
	so->in_ns = now;
	if (so->in_call) {
		so->off_ns += end.off_ns;
		return;
	}
	if (!so->pending && !so->skipped)
		return;
	count(PBP_C_OFF_INTERVALS);
	add(PBP_C_OFF_NS, end.off_ns);
	so->preempt_avg_ns = so->preempt_avg_ns ?
			     so->preempt_avg_ns - so->preempt_avg_ns / 8 + end.off_ns / 8 :
			     end.off_ns;
	if (so->skipped) {
		so->skipped = 0;
		count(PBP_C_OFF_SHORT_SKIPPED);
		return;
	}
	so->pending = 0;
	/* Scaled by the odds it was taken with. A preemption is short; one held for
	 * more than 8 s (2^33 ns) counts as that, so that the product, with the
	 * threshold at most 2^30 ns, cannot overflow. */
	if (so->pending_odds < so->pending_thr) {
		if (end.off_ns > 1ull << 33)
			end.off_ns = 1ull << 33;
		end.off_ns = so->pending_odds ?
			     end.off_ns * so->pending_thr / so->pending_odds : 0;
	}
	end.pid = next->tgid;
	end.tid = next->pid;
	if (bpf_ringbuf_output(&samples, &end, sizeof(end), BPF_RB_NO_WAKEUP))
		count(PBP_C_RINGBUF_DROPS);
}

/* A target's tgid may fall in this bucket; kept by user space (see PBP_TARGET_BUCKETS). */
__u16 target_buckets[PBP_TARGET_BUCKETS];

static __always_inline bool maybe_target(__u32 tgid)
{
	return target_buckets[tgid % PBP_TARGET_BUCKETS] != 0;
}

/* Counts a run of a scheduler program; true for the one in PBP_OFF_TIMED_EVERY that
 * is timed. */
static __always_inline bool timed_run(void)
{
	__u32 k = PBP_C_OFF_SELF_RUNS;
	__u64 *n = bpf_map_lookup_elem(&counters, &k);

	return n && ((*n)++ % PBP_OFF_TIMED_EVERY) == 0;
}

static __always_inline void timed_end(__u64 t0)
{
	add(PBP_C_OFF_SELF_NS, bpf_ktime_get_ns() - t0);
	count(PBP_C_OFF_SELF_TIMED);
}

static __always_inline void on_switch(bool preempt, struct task_struct *prev,
				      struct task_struct *next, unsigned int prev_state)
{
	if (maybe_target(prev->tgid) && !(prev->flags & (PF_EXITING | PF_KTHREAD)))
		switch_out(prev, preempt, prev_state);
	if (maybe_target(next->tgid))
		switch_in(next);
}

/* Every context switch on the host: targets' threads out and back in; others cost a
 * load each. */
SEC("tp_btf/sched_switch")
int BPF_PROG(pbp_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 t0;

	if (!timed_run()) {
		on_switch(preempt, prev, next, prev_state);
		return 0;
	}
	t0 = bpf_ktime_get_ns();
	on_switch(preempt, prev, next, prev_state);
	timed_end(t0);
	return 0;
}

/* The end of a wait inside a system call: the thread is back from every switch the
 * call made and has run no user code since it blocked. */
static __always_inline void call_done(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct task_struct *task;
	struct switch_state *so;
	const struct pbp_target *t;
	struct off_cpu off = { .slot = 1 };
	__u64 thr;

	if (!maybe_target(tgid))
		return;
	task = bpf_get_current_task_btf();
	so = bpf_task_storage_get(&offcpu, task, 0, 0);
	if (!so || !so->in_call)
		return;
	so->in_call = 0;
	/* The thread runs, so it came back; if the switch-in went unseen (its task
	 * storage was busy on that CPU), the wait is taken to have lasted until now. */
	if (so->out_ns) {
		__u64 now = bpf_ktime_get_ns();

		so->off_ns += now > so->out_ns ? now - so->out_ns : 0;
		so->out_ns = 0;
		so->in_ns = now;
		count(PBP_C_OFF_NO_STORAGE);
	}
	off.real_ns = so->off_ns;
	count(PBP_C_OFF_INTERVALS);
	add(PBP_C_OFF_NS, off.real_ns);
	off.weight_ns = off.real_ns;
	/* Its window is told by when it came back: a clock read saved per call. */
	thr = draw_threshold(so, so->in_ns);
	if (off.real_ns < thr) {
		if (draw_below(thr) >= off.real_ns) {
			count(PBP_C_OFF_SHORT_SKIPPED);
			return;
		}
		off.weight_ns = thr;
	}
	t = bpf_map_lookup_elem(&targets, &tgid);
	if (!t || !off.weight_ns)
		return;
	so->win_kept++;
	off.flags = PBP_SF_OFF_CPU;
	off.native_flags = PBP_NF_REGS_AT_ENTRY;
	off.start_ns = so->first_ns;
	off.arg = so->arg;
	off.syscall = so->syscall;
	off.state = so->state;
	snapshot(t, &off);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(pbp_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 t0;

	if (!timed_run()) {
		call_done();
		return 0;
	}
	t0 = bpf_ktime_get_ns();
	call_done();
	timed_end(t0);
	return 0;
}

/*
 * Read by user space when a profile ends: each target thread's wait still open, up to
 * now. What is reported leaves the thread's state, so that its end brings only the
 * rest. A thread that has not switched since it became a target's and is not running
 * has been blocked all along: it is counted from then, and from now on followed.
 */
SEC("iter/task")
int pbp_open_waits(struct bpf_iter__task *ctx)
{
	struct switch_state call = { .syscall = -1 }, *so;
	struct task_struct *task = ctx->task;
	struct pbp_open_wait w = { .syscall = -1 };
	const struct pbp_target *t;
	__u32 tgid;
	__u64 now;

	if (!task || (task->flags & (PF_EXITING | PF_KTHREAD)))
		return 0;
	tgid = task->tgid;
	if (!maybe_target(tgid) || !(t = bpf_map_lookup_elem(&targets, &tgid)))
		return 0;
	now = bpf_ktime_get_ns();
	so = bpf_task_storage_get(&offcpu, task, 0, 0);
	if (!so) {
		if (!task->__state)
			return 0;	/* TASK_RUNNING: on a CPU all along */
		so = bpf_task_storage_get(&offcpu, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!so)
			return 0;
		w.start_ns = t->since_ns;
		w.off_ns = now > t->since_ns ? now - t->since_ns : 0;
		w.state = task->__state;
		so->out_ns = now;
		/* Outside a call its end is a switch-in that finds nothing owed. */
		if (!syscall_of(task, &call)) {
			w.syscall = so->syscall = call.syscall;
			w.arg = so->arg = call.arg;
			so->state = w.state;
			so->in_call = 1;
			so->first_ns = now;
		}
	} else if (so->in_call) {
		w.start_ns = so->first_ns;
		w.off_ns = so->off_ns + (so->out_ns && now > so->out_ns ? now - so->out_ns : 0);
		w.syscall = so->syscall;
		w.arg = so->arg;
		w.state = so->state;
		so->first_ns = now;
		so->off_ns = 0;
		if (so->out_ns)
			so->out_ns = now;
	}
	if (cpu_timed && so->cpu_seen) {
		__u64 ran = task->se.sum_exec_runtime;

		w.cpu_ns = ran > so->cpu_ns ? ran - so->cpu_ns : 0;
		so->cpu_ns += w.cpu_ns;
	}
	if (!w.off_ns && !w.cpu_ns)
		return 0;
	w.pid = tgid;
	w.tid = task->pid;
	if (w.off_ns) {
		count(PBP_C_OFF_INTERVALS);
		add(PBP_C_OFF_NS, w.off_ns);
	}
	bpf_seq_write(ctx->meta->seq, &w, sizeof(w));
	return 0;
}

static __always_inline void emit(__u32 type, __u32 pid, __u32 ppid)
{
	struct pbp_event ev = {
		.type = type, .pid = pid, .ppid = ppid, .ts_ns = bpf_ktime_get_ns(),
	};

	/* No wake-up: the consumer polls on a timer anyway. */
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), BPF_RB_NO_WAKEUP))
		count(PBP_C_EVENT_DROPS);
}

/*
 * Wall mode: a thread that exits takes with it the CPU time it used since its last
 * tick, up to a tick period, or far more when its runs keep missing the ticks' phase
 * (two threads passing the GIL every 5 ms against a 10 ms tick). It is sent, to count
 * under that tick's stack.
 */
static __always_inline void send_cpu_rest(__u32 tgid, __u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pbp_cpu_rest r = {
		.abi = PBP_ABI_VERSION, .hdr_len = sizeof(r), .len = sizeof(r),
		.pid = tgid, .tid = tid,
	};
	struct switch_state *so;
	__u64 ran;

	if (!maybe_target(tgid))
		return;
	so = bpf_task_storage_get(&offcpu, task, 0, 0);
	if (!so || !so->cpu_seen)
		return;
	ran = task->se.sum_exec_runtime;
	if (ran <= so->cpu_ns)
		return;
	r.cpu_ns = ran - so->cpu_ns;
	so->cpu_ns = ran;
	if (bpf_ringbuf_output(&samples, &r, sizeof(r), BPF_RB_NO_WAKEUP))
		count(PBP_C_RINGBUF_DROPS);
}

/* Exited threads leave nothing behind: the LRU would evict them eventually, but a
 * reused tid must never inherit a dead thread's tstate or anchor. A raw tracepoint
 * needs no tracefs mount, which containers and minimal hosts often lack. */
SEC("raw_tp/sched_process_exit")
int pbp_thread_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;

	if (cpu_timed)
		send_cpu_rest(tgid, tid);
	bpf_map_delete_elem(&threads, &tid);
	bpf_map_delete_elem(&fcache, &tid);
	if (tid == tgid && bpf_map_lookup_elem(&targets, &tgid))
		emit(PBP_EV_EXIT, tgid, 0);
	return 0;
}

/* A target's new process (not a new thread) is Python from its first instruction. */
SEC("raw_tp/sched_process_fork")
int pbp_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 pid = BPF_CORE_READ(child, pid);

	if (pid != (__u32)BPF_CORE_READ(child, tgid) || !bpf_map_lookup_elem(&targets, &ptgid))
		return 0;
	emit(PBP_EV_FORK, pid, ptgid);
	return 0;
}

/* A new image: a target may have stopped being Python, and with every_exec any
 * process may have become Python. */
SEC("raw_tp/sched_process_exec")
int pbp_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (every_exec || bpf_map_lookup_elem(&targets, &tgid))
		emit(PBP_EV_EXEC, tgid, 0);
	return 0;
}
