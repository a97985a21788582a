/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the parts of the sampler share: the configuration and every other global the
 * loader sets or reads, every map, the failure counters, and the reads of target
 * memory into a record. The globals and maps are here rather than each with the part
 * that uses it most because together they are the skeleton, which user space drives by
 * name whatever the mode (user/sample/sampler.c): what the object exposes is read in
 * one place. Included first by bpf/sample.bpf.c; like every part, it includes nothing
 * of bpf/ itself: the parts are one translation unit, and each uses what those before
 * it define.
 */
#ifndef PBP_COMMON_BPF_H
#define PBP_COMMON_BPF_H

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
	__u32 skipped;		/* a preemption left to the draw: its length is carried */
	__u64 preempt_avg_ns;	/* its preemptions' lengths, averaged; 0: none yet */
	__u64 carry_ns;		/* skipped preemptions' time, owed to the next one kept */
	__u64 thr_ns;		/* its draw threshold; 0: min_block_ns */
	__u64 win_ns;		/* when its current window began */
	__u64 win_kept;		/* stacks taken of its waits in that window */
	__u64 in_ns;		/* when it last came back on a CPU */
	__u64 steal_in;		/* its CPU's steal clock when it last came on */
	__u64 steal_ns;		/* stolen from its runs ended since its last tick */
	__u32 steal_on;		/* steal_in is set: it is on a CPU */
};

/*
 * Wall mode, on a virtual machine: the time the hypervisor ran something else while a
 * thread was on a CPU. The scheduler leaves it out of the thread's CPU time
 * (PARAVIRT_TIME_ACCOUNTING) and no switch marks it, so a wall profile without it
 * falls short of the thread's life by the host's steal. Each CPU's runqueue keeps the
 * steal clock its task clock was last advanced past; a thread's stolen time is that
 * clock's progress while it runs. The runqueue is reached from the running thread's
 * fair-class queue (the per-CPU variable needs kallsyms with data symbols, which
 * kernels often leave out). Without the field, or a thread of another class, it
 * reads 0 and nothing is stolen.
 */
struct rq___steal {
	__u64 prev_steal_time_rq;
	struct cfs_rq cfs;
} __attribute__((preserve_access_index));

struct cfs_rq___grouped {
	struct rq *rq;
} __attribute__((preserve_access_index));

/* The steal clock of the CPU @task (current, or switching on this CPU) runs on. */
static __always_inline __u64 steal_clock(struct task_struct *task)
{
	struct cfs_rq *cfs;
	struct rq___steal *rq;

	if (!bpf_core_field_exists(struct rq___steal, prev_steal_time_rq))
		return 0;
	cfs = BPF_CORE_READ(task, se.cfs_rq);
	if (!cfs)
		return 0;
	if (bpf_core_field_exists(struct cfs_rq___grouped, rq))
		rq = (struct rq___steal *)BPF_CORE_READ((struct cfs_rq___grouped *)cfs, rq);
	else	/* without group scheduling, the CPU's one fair queue is in its rq */
		rq = (struct rq___steal *)((char *)cfs -
					   bpf_core_field_offset(struct rq___steal, cfs));
	return rq ? BPF_CORE_READ(rq, prev_steal_time_rq) : 0;
}

/* @so's thread leaves its CPU: the steal of the run that ends is kept for its next
 * tick. */
static __always_inline void steal_run_ends(struct task_struct *task, struct switch_state *so)
{
	__u64 now;

	if (!so->steal_on)
		return;
	now = steal_clock(task);
	so->steal_ns += now > so->steal_in ? now - so->steal_in : 0;
	so->steal_on = 0;
}

/* @so's thread comes on a CPU, or a tick has just taken what it had stolen. */
static __always_inline void steal_run_starts(struct task_struct *task, struct switch_state *so)
{
	so->steal_in = steal_clock(task);
	so->steal_on = 1;
}

/* What @so's thread @task, on this CPU now, has had stolen since its last tick. */
static __always_inline __u64 steal_since_tick(struct task_struct *task,
					      const struct switch_state *so)
{
	__u64 now = so->steal_on ? steal_clock(task) : 0;

	return so->steal_ns + (now > so->steal_in ? now - so->steal_in : 0);
}

/* What steal_since_tick() told has gone out (a tick, the open waits at the end): it
 * counts from now. */
static __always_inline void steal_restart(struct task_struct *task, struct switch_state *so)
{
	so->steal_ns = 0;
	if (so->steal_on)
		steal_run_starts(task, so);
}

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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PBP_TICK_LEARN_MAX);
	__type(key, __u64);	/* a timer */
	__type(value, struct pbp_tick_learn);
} tick_learn SEC(".maps");

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

/* A target's tgid may fall in this bucket; kept by user space (see PBP_TARGET_BUCKETS). */
__u16 target_buckets[PBP_TARGET_BUCKETS];

static __always_inline bool maybe_target(__u32 tgid)
{
	return target_buckets[tgid % PBP_TARGET_BUCKETS] != 0;
}

#endif
