/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A process's cgroup (v2), as a path and as the open directory the kernel scopes perf
 * events by. Paths are as /proc shows them to this process: from the root of its
 * cgroup namespace, so a target outside that namespace (a path through "..") has none.
 */
#ifndef PBP_CGROUP_H
#define PBP_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CGROUP_PATH_MAX 4096

/* @pid's cgroup v2 path ("/" or "/a/b"): 0, -ESRCH, or -ENOENT when it has none this
 * process can name (no v2 line, a path out of the namespace, too long). */
int cgroup__of(pid_t pid, char *path, size_t len);
/* The same from the text of /proc/PID/cgroup: every line, each ending in a newline. */
int cgroup__parse(const char *text, char *path, size_t len);

/* The directory of @path in the cgroup v2 file system, opened read-only: a descriptor
 * or -errno (-ENOENT when no cgroup v2 file system is mounted where systemd puts it). */
int cgroup__open(const char *path);

/* Whether @path is @scope or a cgroup below it. */
bool cgroup__within(const char *path, const char *scope);

/* Cuts @scope back to the nearest cgroup that holds @path too. */
void cgroup__widen(char *scope, const char *path);

#endif
