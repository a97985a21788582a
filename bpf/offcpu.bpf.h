/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Off-CPU sampling: each target thread followed through the scheduler. A wait inside a
 * system call is measured across every switch until the call returns, and recorded at
 * the return, before the thread runs user code and so with its stack where it blocked;
 * a preemption outside a call is recorded as the thread leaves, and its length is sent
 * when it is back (struct pbp_off_end). Short waits are drawn, with odds that keep
 * their sum right. A part of its own because it runs on every context switch of the
 * host and is loaded only in its mode (user/sample/sampler.c). Its thread state,
 * struct switch_state, is in common.bpf.h: wall mode's CPU time and a thread's exit
 * use it too. Records go out through snapshot(), which bpf/sample.bpf.c defines before
 * it includes this part.
 */
#ifndef PBP_OFFCPU_BPF_H
#define PBP_OFFCPU_BPF_H

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
	steal_run_ends(prev, so);
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
	 * avg / threshold; waits of a thread whose preemptions run long are all kept.
	 * A skipped preemption's length is carried to the next one kept, as a tick
	 * carries the CPU time since the one before: scaling a kept one by its odds
	 * would be unbiased, but one long preemption after many short ones would count
	 * many times its length. The odds' floor, min_block_ns / 16 / threshold,
	 * falls as the threshold rises: a floor fixed at 1/16 would take more stacks
	 * than the budget whatever the threshold, and raise it without end.
	 */
	so->in_call = 0;
	so->pending = so->skipped = 0;
	thr = draw_threshold(so, now);
	odds = so->preempt_avg_ns ? so->preempt_avg_ns : thr;
	if (odds < min_block_ns / 16)
		odds = min_block_ns / 16;
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
	steal_run_starts(next, so);
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
	steal_run_starts(next, so);
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
		so->carry_ns += end.off_ns;
		count(PBP_C_OFF_SHORT_SKIPPED);
		return;
	}
	so->pending = 0;
	end.off_ns += so->carry_ns;
	so->carry_ns = 0;
	end.pid = next->tgid;
	end.tid = next->pid;
	if (bpf_ringbuf_output(&samples, &end, sizeof(end), BPF_RB_NO_WAKEUP))
		count(PBP_C_RINGBUF_DROPS);
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
		w.stolen_ns = steal_since_tick(task, so);
		steal_restart(task, so);
	}
	if (!w.off_ns && !w.cpu_ns && !w.stolen_ns)
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

#endif
