/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which processes system-wide profiling takes: --pid-filter, --container and
 * --exclude. An empty filter takes every process.
 */
#ifndef PBP_PROC_FILTER_H
#define PBP_PROC_FILTER_H

#include <stddef.h>
#include <sys/types.h>

struct proc_filter {
	pid_t *pids;		/* --pid-filter: only these */
	size_t npids;
	char **containers;	/* --container: a cgroup path part each */
	size_t ncontainers;
	char **excludes;	/* --exclude: shell patterns for the command line */
	size_t nexcludes;
};

/* "123,456": adds each PID. -EINVAL for anything else, -ENOMEM. */
int proc_filter__add_pids(struct proc_filter *f, const char *list);
/* A --container value is at least this long: shorter ones match too much by chance. */
#define PROC_FILTER_CONTAINER_MIN 4

/* A container id (or a prefix of at least PROC_FILTER_CONTAINER_MIN characters), a pod
 * UID or any part of a cgroup path. -EINVAL if too short. */
int proc_filter__add_container(struct proc_filter *f, const char *id);
/* A shell pattern (fnmatch) matched against the whole command line and against the
 * command name. */
int proc_filter__add_exclude(struct proc_filter *f, const char *pattern);
int proc_filter__empty(const struct proc_filter *f);
/* 1 if @pid is to be profiled, 0 if not, -ESRCH if it is gone. */
int proc_filter__match(const struct proc_filter *f, pid_t pid);
void proc_filter__free(struct proc_filter *f);

#endif
