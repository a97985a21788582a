// SPDX-License-Identifier: GPL-2.0-only
/* The agent's process table; see agent_procs.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_procs.h"
#include "base/vec.h"

/* Where @pid is in the table, or where it would go. */
static size_t slot(const struct agent_procs *t, pid_t pid)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void fill(struct agent_proc *p, pid_t pid, uint64_t start, const char *cmd,
		 const char *version)
{
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->start = start;
	snprintf(p->pid_s, sizeof(p->pid_s), "%d", (int)pid);
	snprintf(p->cmd, sizeof(p->cmd), "%s", cmd);
	snprintf(p->version, sizeof(p->version), "%s", version);
	/* A process that has no cgroup to show (gone already, no cgroupfs) is still
	 * profiled: its profiles just carry no container labels. */
	if (cgroup_labels__read(pid, &p->cg))
		memset(&p->cg, 0, sizeof(p->cg));
}

static int grow(struct agent_proc **v, size_t n, size_t *cap)
{
	return vec__reserve((void **)v, cap, n + 1, sizeof(**v), 64);
}

static int insert(struct agent_procs *t, const struct agent_proc *p)
{
	size_t i = slot(t, p->pid);

	if (i < t->n && t->v[i].pid == p->pid) {
		t->v[i] = *p;
		return 0;
	}
	if (grow(&t->v, t->n, &t->cap))
		return -ENOMEM;
	memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
	t->v[i] = *p;
	t->n++;
	return 0;
}

int agent_procs__seen(struct agent_procs *t, pid_t pid, uint64_t start, const char *cmd,
		      const char *version)
{
	size_t i = slot(t, pid);
	struct agent_proc p;

	fill(&p, pid, start, cmd, version);
	if (i == t->n || t->v[i].pid != pid || t->v[i].start == start)
		return insert(t, &p);
	/* Another process under this PID this period: its stacks are cut first. */
	t->v[i].gone = 1;
	if (grow(&t->later, t->nlater, &t->later_cap))
		return -ENOMEM;
	t->later[t->nlater++] = p;
	return 1;
}

void agent_procs__gone(struct agent_procs *t, pid_t pid)
{
	size_t i = slot(t, pid);

	if (i < t->n && t->v[i].pid == pid)
		t->v[i].gone = 1;
}

const struct agent_proc *agent_procs__find(const struct agent_procs *t, pid_t pid)
{
	size_t i = slot(t, pid);

	return i < t->n && t->v[i].pid == pid ? &t->v[i] : NULL;
}

void agent_procs__forget_gone(struct agent_procs *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		if (!t->v[i].gone)
			t->v[n++] = t->v[i];
	t->n = n;
	/* Cannot fail: each one's PID left the table just now, so it has room. */
	for (size_t i = 0; i < t->nlater; i++)
		insert(t, &t->later[i]);
	t->nlater = 0;
}

size_t agent_procs__labels(const struct agent_proc *p, const char *host,
			   struct profile_label *out, size_t max)
{
	const struct profile_label all[] = {
		{ "host_name", host },
		{ "pid", p->pid_s },
		{ "command", p->cmd },
		{ "python_version", p->version },
		{ "container_id", p->cg.container_id },
		{ "pod_uid", p->cg.pod_uid },
		{ "qos_class", p->cg.qos },
	};
	size_t n = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]) && n < max; i++)
		if (all[i].value && *all[i].value)
			out[n++] = all[i];
	return n;
}

void agent_procs__free(struct agent_procs *t)
{
	free(t->v);
	free(t->later);
	*t = (struct agent_procs){ 0 };
}
