/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --clock tick: sampling on the scheduler's tick, which interrupts every busy CPU
 * anyway, rather than on a perf event of the profiler's: which of a thread's ticks to
 * take, whether a tick came from the kernel, how the tick timer's function is learnt,
 * and the probe the loader measures HZ with (user/sample/tick_clock.c). Its globals and
 * maps are in common.bpf.h, with the rest of the skeleton. A taken tick goes the way
 * of a perf event's, through timed_tick(), which bpf/sample.bpf.c defines before it
 * includes this part.
 */
#ifndef PBP_TICK_BPF_H
#define PBP_TICK_BPF_H

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

#endif
