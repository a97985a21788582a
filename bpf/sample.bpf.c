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
 *
 * One object, so that every program shares the maps and the loader has one skeleton
 * (sample_bpf): the concerns are headers in bpf/, parts of this one translation unit,
 * included below in the order they use one another. This file keeps what joins them:
 * the record every sampling program makes (snapshot(), the Python part and the native
 * one) and the on-CPU tick of either clock, with pbp_sample on the perf event.
 *   common.bpf.h   configuration set through the skeleton, maps, counters, reads
 *   python.bpf.h   the Python part: tstate, chunks, frame walk, code fingerprints and
 *                  copies, asyncio tasks, GIL, frame-cache anchor
 *   native.bpf.h   --native: user registers, stack copy, frame-pointer walk
 *   tick.bpf.h     --clock tick: the scheduler's own tick as the clock
 *   offcpu.bpf.h   off-CPU: waits and preemptions, followed through the scheduler
 *   events.bpf.h   a target's exits, forks and execs, for user space's target table
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "pbp_abi.h"

char LICENSE[] SEC("license") = "GPL";

#include "common.bpf.h"
#include "python.bpf.h"
#include "native.bpf.h"

/* What a record carries besides the stack: off-CPU and wall-mode fields, all zero for
 * an on-CPU tick but native_flags. */
struct off_cpu {
	__u32 flags;		/* PBP_SF_OFF_CPU, PBP_SF_OFF_PENDING, PBP_SF_CPU_TIMED */
	__u16 slot;		/* scratch slot: 0, or 1 for the system-call exit */
	__u16 native_flags;	/* PBP_NF_REGS_AT_ENTRY: the thread is in the kernel */
	__u64 cpu_ns;		/* PBP_SF_CPU_TIMED */
	__u64 stolen_ns;	/* ... and the time the hypervisor took from its runs */
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
		s->off_real_ns = off->stolen_ns;
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
		if (so)
			on.stolen_ns = steal_since_tick(task, so);
	}
	if (snapshot(t, &on))
		return 0;
	if (so) {
		so->cpu_ns += on.cpu_ns;
		steal_restart(task, so);
	}
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

#include "tick.bpf.h"
#include "offcpu.bpf.h"
#include "events.bpf.h"
