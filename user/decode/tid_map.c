// SPDX-License-Identifier: GPL-2.0-only
/*
 * Target thread ids (as the target's PID namespace numbers them) to /proc thread ids.
 * A target in our own namespace needs no map; otherwise the task list is read again
 * whenever an id is missing, which a new thread makes happen once.
 */
#include <errno.h>
#include <string.h>

#include "base/proc.h"
#include "decode/tid_map.h"

void tid_map__init(struct tid_map *m, pid_t pid)
{
	memset(m, 0, sizeof(*m));
	m->pid = pid;
	m->nested = proc__ns_nested(pid);
}

static int add(pid_t tid, pid_t ns_tid, void *arg)
{
	struct tid_map *m = arg;

	if (m->n == TID_MAP_MAX)
		return 1;
	m->ns[m->n] = (uint32_t)ns_tid;
	m->host[m->n++] = tid;
	return 0;
}

int tid_map__known(const struct tid_map *m, uint32_t ns_tid, pid_t *tid)
{
	if (!m->nested) {
		*tid = (pid_t)ns_tid;
		return 0;
	}
	for (unsigned int i = 0; i < m->n; i++) {
		if (m->ns[i] == ns_tid) {
			*tid = m->host[i];
			return 0;
		}
	}
	return -ESRCH;
}

int tid_map__host(struct tid_map *m, uint32_t ns_tid, pid_t *tid)
{
	int err;

	if (!tid_map__known(m, ns_tid, tid))
		return 0;
	m->n = 0;
	err = proc__tasks_ns(m->pid, add, m);
	if (err < 0)
		return err;
	return tid_map__known(m, ns_tid, tid);
}
