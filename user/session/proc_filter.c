// SPDX-License-Identifier: GPL-2.0-only
/* Choosing processes for system-wide profiling; see proc_filter.h. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/proc.h"
#include "session/proc_filter.h"

static int push(char ***list, size_t *n, const char *s)
{
	char **l = realloc(*list, (*n + 1) * sizeof(*l));

	if (!l)
		return -ENOMEM;
	*list = l;
	l[*n] = strdup(s);
	if (!l[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

int proc_filter__add_pids(struct proc_filter *f, const char *list)
{
	const char *p = list;

	do {
		char *end;
		long v;
		pid_t *pids;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v < 1 || v > 0x7fffffff || (*end && *end != ','))
			return -EINVAL;
		pids = realloc(f->pids, (f->npids + 1) * sizeof(*pids));
		if (!pids)
			return -ENOMEM;
		f->pids = pids;
		f->pids[f->npids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	} while (*p);
	return 0;
}

int proc_filter__add_container(struct proc_filter *f, const char *id)
{
	if (strlen(id) < PROC_FILTER_CONTAINER_MIN || strchr(id, '\n'))
		return -EINVAL;
	return push(&f->containers, &f->ncontainers, id);
}

int proc_filter__add_exclude(struct proc_filter *f, const char *pattern)
{
	if (!*pattern)
		return -EINVAL;
	return push(&f->excludes, &f->nexcludes, pattern);
}

int proc_filter__empty(const struct proc_filter *f)
{
	return !f || (!f->npids && !f->ncontainers && !f->nexcludes);
}

/* The systemd cgroup driver writes a pod UID with '_' for '-': match either form. */
static int in_cgroup(const char *cgroups, const char *id)
{
	char alt[128];
	size_t i;

	if (strstr(cgroups, id))
		return 1;
	for (i = 0; i < sizeof(alt) - 1 && id[i]; i++)
		alt[i] = id[i] == '-' ? '_' : id[i];
	alt[i] = '\0';
	return strstr(cgroups, alt) != NULL;
}

int proc_filter__match(const struct proc_filter *f, pid_t pid)
{
	char buf[4096], comm[64];
	size_t i;
	int err;

	if (proc_filter__empty(f))
		return 1;
	if (f->npids) {
		for (i = 0; i < f->npids && f->pids[i] != pid; i++)
			;
		if (i == f->npids)
			return 0;
	}
	if (f->ncontainers) {
		err = proc__cgroup(pid, buf, sizeof(buf));
		if (err)
			return err;
		for (i = 0; i < f->ncontainers && !in_cgroup(buf, f->containers[i]); i++)
			;
		if (i == f->ncontainers)
			return 0;
	}
	if (f->nexcludes) {
		err = proc__cmdline(pid, buf, sizeof(buf));
		if (err == -ESRCH)
			return err;
		if (err)
			buf[0] = '\0';
		if (proc__comm(pid, comm, sizeof(comm)))
			comm[0] = '\0';
		for (i = 0; i < f->nexcludes; i++)
			if (!fnmatch(f->excludes[i], buf, 0) || !fnmatch(f->excludes[i], comm, 0))
				return 0;
	}
	return 1;
}

void proc_filter__free(struct proc_filter *f)
{
	for (size_t i = 0; i < f->ncontainers; i++)
		free(f->containers[i]);
	for (size_t i = 0; i < f->nexcludes; i++)
		free(f->excludes[i]);
	free(f->containers);
	free(f->excludes);
	free(f->pids);
	*f = (struct proc_filter){ 0 };
}
