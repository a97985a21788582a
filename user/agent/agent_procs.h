/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The agent's processes and what it labels their profiles with: learnt when a process
 * becomes a target (its cgroup can only be read while it lives), kept until the profile
 * of the period it exited in has been cut.
 */
#ifndef PBP_AGENT_PROCS_H
#define PBP_AGENT_PROCS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/cgroup_labels.h"
#include "profile/profile.h"

struct agent_proc {
	pid_t pid;
	uint64_t start;		/* start time: with pid, names one process */
	int gone;		/* exited (or exec'd away) during this period */
	char pid_s[16];
	char cmd[128];
	char version[32];
	struct cgroup_labels cg;
};

struct agent_procs {
	struct agent_proc *v;	/* by pid */
	size_t n, cap;
	struct agent_proc *later;	/* PIDs reused this period: in the table after the cut */
	size_t nlater, later_cap;
};

/*
 * Notes process @pid, started at @start (again: an exec makes a process new), and
 * reads its cgroup. Returns 1 when @pid named another process earlier in this period
 * (the PID was reused): the new one is then kept aside until agent_procs__forget_gone()
 * and the caller must cut the period first, or the two would share one profile.
 */
int agent_procs__seen(struct agent_procs *t, pid_t pid, uint64_t start, const char *cmd,
		      const char *version);
void agent_procs__gone(struct agent_procs *t, pid_t pid);
const struct agent_proc *agent_procs__find(const struct agent_procs *t, pid_t pid);
/* Forgets the processes that have gone, once their last profile is cut, and takes in
 * those that reused their PIDs. */
void agent_procs__forget_gone(struct agent_procs *t);
/*
 * The labels of @p's profiles into @out (at most @max): host_name, pid, command,
 * python_version and, where its cgroup shows them, container_id, pod_uid and
 * qos_class. Returns how many; they point into @p and @host.
 */
size_t agent_procs__labels(const struct agent_proc *p, const char *host,
			   struct profile_label *out, size_t max);
void agent_procs__free(struct agent_procs *t);

#endif
