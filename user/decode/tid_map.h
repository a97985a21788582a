/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A target's thread ids as this process's /proc names them. CPython records each
 * thread's id in the target's own PID namespace (native_thread_id); for a target in a
 * container that id means nothing in /proc/PID/task here. The map reads NSpid from
 * every task's status once and again only when asked for an id it does not know.
 */
#ifndef PBP_TID_MAP_H
#define PBP_TID_MAP_H

#include <stdint.h>
#include <sys/types.h>

#define TID_MAP_MAX 1024	/* threads remembered; a full map starts again */

struct tid_map {
	pid_t pid;
	int nested;		/* the target's PID namespace is not ours */
	unsigned int n;
	uint32_t ns[TID_MAP_MAX];
	pid_t host[TID_MAP_MAX];
};

/* Sets @m up for process @pid (an id in our namespace). */
void tid_map__init(struct tid_map *m, pid_t pid);

/* The id under /proc/PID/task of the thread the target calls @ns_tid; -ESRCH if no
 * thread of the target has it. */
int tid_map__host(struct tid_map *m, uint32_t ns_tid, pid_t *tid);
/* The same from what the map holds, reading nothing: -ESRCH if it holds no such id. */
int tid_map__known(const struct tid_map *m, uint32_t ns_tid, pid_t *tid);

#endif
