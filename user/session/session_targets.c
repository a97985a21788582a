// SPDX-License-Identifier: GPL-2.0-only
/*
 * A session's targets: the table of the processes being sampled, sorted by pid since
 * every record looks its process up, and how a process leaves it. How one joins it
 * (found, prepared, handed to the sampler) is session_enrol.c's; this file knows
 * nothing of tasks, native frames or where stacks go.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpython/py_interp.h"
#include "base/log.h"
#include "sample/sampler.h"
#include "session/session_priv.h"
#include "session/spawn.h"
#include "session/target.h"

/* Where target @pid is in s->targets.v, or where it would go. */
size_t session_targets__slot(const struct session *s, uint32_t pid)
{
	size_t lo = 0, hi = s->targets.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uint32_t)s->targets.v[mid]->interp.pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Every record asks this: a binary search, not a scan, for hundreds of processes. */
struct target *session_targets__of(const struct session *s, uint32_t pid)
{
	size_t i = session_targets__slot(s, pid);

	if (i < s->targets.n && (uint32_t)s->targets.v[i]->interp.pid == pid)
		return s->targets.v[i];
	return NULL;
}

/* The frame cache's entries go to the BPF map, where the sampler copies by them. */
int session_targets__publish_anchor(struct target *t, uint32_t tid, const struct pbp_fcache *fc)
{
	struct sampler *sampler = t->session->sampler;

	return sampler ? sampler__set_anchor(sampler, tid, fc) : 0;
}

/* ... and so do the code objects its decoder holds, which the sampler need not copy. */
void session_targets__code_known(struct target *t, uint64_t code, uint64_t fp, uint32_t flags)
{
	struct sampler *sampler = t->session->sampler;

	/* A slot not written costs copies of a code object user space already holds,
	 * one not cleared a read of a code object live: neither is worth failing for. */
	if (sampler)
		sampler__code_known(sampler, (uint32_t)t->interp.pid, code, fp, flags);
}

static void tell(struct session *s, const struct target *t, int gone)
{
	char version[32];
	struct session_process p = {
		.pid = t->interp.pid,
		.cmd = t->cmd,
		.python_version = version,
		.root_name = t->root_name,
		.start = t->ident.start,
	};

	if (!s->opts.on_process)
		return;
	py_interp__version_str(t->interp.version_hex, version, sizeof(version));
	s->opts.on_process(s->opts.on_process_ctx, &p, gone);
}

/* Room for one more target in the table; -ENOSPC when it is full. */
int session_targets__reserve(struct session *s)
{
	struct target **targets;

	if (s->targets.n == PBP_TARGETS_MAX)
		return -ENOSPC;
	targets = realloc(s->targets.v, (s->targets.n + 1) * sizeof(*targets));
	if (!targets)
		return -ENOMEM;
	s->targets.v = targets;
	return 0;
}

/* Puts target @t, which is being sampled, in the room session_targets__reserve() made. */
void session_targets__insert(struct session *s, struct target *t)
{
	size_t at = session_targets__slot(s, t->interp.pid);

	memmove(&s->targets.v[at + 1], &s->targets.v[at],
		(s->targets.n - at) * sizeof(*s->targets.v));
	s->targets.v[at] = t;
	s->targets.n++;
	s->targets.processes_seen++;
	tell(s, t, 0);
}

/* Stops following target @i, which has exited: what it sampled stays. */
void session_targets__detach(struct session *s, size_t i)
{
	struct target *t = s->targets.v[i];

	if (s->sampler) {
		sampler__remove_target(s->sampler, t->interp.pid);
		/* Its records still in flight are decoded while its decoder lives. */
		sampler__drain(s->sampler);
	}
	tell(s, t, 1);
	target__add_stats(t, &s->totals);
	s->targets.gone_cpu_ns += t->cpu > t->cpu0 ? t->cpu - t->cpu0 : 0;
	memmove(&s->targets.v[i], &s->targets.v[i + 1],
		(s->targets.n - i - 1) * sizeof(*s->targets.v));
	s->targets.n--;
	pr_info("stopped following pid %d: %zu process%s profiled now\n", (int)t->interp.pid,
		s->targets.n, s->targets.n == 1 ? "" : "es");
	target__free(t);
}

int session_targets__is_target(pid_t pid, void *arg)
{
	return session_targets__of(arg, pid) != NULL;
}

int session_targets__gone(struct session *s, struct target *t)
{
	if (s->spawned && t->interp.pid == s->spawn.pid && spawn__reap(&s->spawn))
		return 1;
	return target__same(t) == -ESRCH;
}
