// SPDX-License-Identifier: GPL-2.0-only
/*
 * agent_procs: a PID that names another process within one period (PID reuse) must
 * not take over the first one's entry before its profile is cut; an exec (same start
 * time) must. Exits non-zero on the first mismatch, naming it.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "agent/agent_procs.h"



static const char *cmd_of(const struct agent_procs *t, pid_t pid)
{
	const struct agent_proc *p = agent_procs__find(t, pid);

	return p ? p->cmd : "(none)";
}

int main(void)
{
	/* PIDs that cannot be live processes of this host, so no cgroup is read. */
	const pid_t a = 2000000001, b = 2000000002;
	struct agent_procs t = { 0 };
	int r;

	CHECK_MSG(agent_procs__seen(&t, a, 100, "first", "3.13.1") == 0, "first sight");
	CHECK_MSG(agent_procs__seen(&t, b, 100, "other", "3.13.1") == 0, "another pid");
	/* An exec: the same process (same start), a new program. */
	CHECK_MSG(agent_procs__seen(&t, a, 100, "first-execd", "3.14.0") == 0, "exec");
	CHECK_MSG(!strcmp(cmd_of(&t, a), "first-execd"), "exec takes over: %s", cmd_of(&t, a));

	/* The process exits and its PID is reused in the same period. */
	agent_procs__gone(&t, a);
	r = agent_procs__seen(&t, a, 200, "second", "3.11.2");
	CHECK_MSG(r == 1, "a reused pid asks for a cut first: %d", r);
	CHECK_MSG(!strcmp(cmd_of(&t, a), "first-execd"),
	      "until the cut, the pid's stacks are labelled as the first process's: %s",
	      cmd_of(&t, a));
	agent_procs__forget_gone(&t);
	CHECK_MSG(!strcmp(cmd_of(&t, a), "second"), "after the cut, the new process: %s",
	      cmd_of(&t, a));
	CHECK_MSG(agent_procs__find(&t, a)->start == 200, "its start time");
	CHECK_MSG(!strcmp(cmd_of(&t, b), "other"), "the other pid is untouched: %s", cmd_of(&t, b));

	/* A reuse whose exit was never reported: the old entry is let go at the cut. */
	r = agent_procs__seen(&t, b, 300, "third", "3.15.0");
	CHECK_MSG(r == 1, "reuse without an exit asks for a cut too: %d", r);
	agent_procs__forget_gone(&t);
	CHECK_MSG(!strcmp(cmd_of(&t, b), "third"), "after the cut: %s", cmd_of(&t, b));
	CHECK_MSG(t.n == 2, "two entries, not %zu", t.n);

	agent_procs__free(&t);
	if (check_failures)
		return 1;
	printf("agent_procs: ok\n");
	return 0;
}
