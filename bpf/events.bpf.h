/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Process events for user space's target table (struct pbp_event on the events ring
 * buffer): a target's exit, fork and exec, and with every_exec any process's exec. The
 * exit also forgets the thread's cached tstate and anchor, so that a reused tid starts
 * clean, and in wall mode sends the CPU time the thread used since its last tick. Apart
 * from the sampling because it is about processes, not stacks: nothing here copies
 * memory of the target. Included last by bpf/sample.bpf.c.
 */
#ifndef PBP_EVENTS_BPF_H
#define PBP_EVENTS_BPF_H

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
	r.stolen_ns = steal_since_tick(task, so);
	if (ran <= so->cpu_ns && !r.stolen_ns)
		return;
	r.cpu_ns = ran > so->cpu_ns ? ran - so->cpu_ns : 0;
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

#endif
