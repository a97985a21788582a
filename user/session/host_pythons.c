// SPDX-License-Identifier: GPL-2.0-only
/*
 * One pass over /proc that finds each process's interpreter the way `-a` does, so
 * that the count matches what `-a` would take; used only after a run that took none,
 * so its cost (a look at each process's maps and ELF) is paid once, at the end.
 */
#include <unistd.h>

#include "session/host_pythons.h"
#include "cpython/py_interp.h"
#include "mem/mem_live.h"
#include "base/proc.h"

static int count_one(pid_t pid, void *arg)
{
	uint32_t *n = arg;
	struct mem_live m;
	struct py_interp in;

	if (pid == getpid())
		return 0;
	mem_live__init(&m, pid);
	if (!py_interp__find(pid, &m.base, &in))
		(*n)++;
	return 0;
}

int host_pythons__count(uint32_t *n)
{
	*n = 0;
	return proc__pids(count_one, n);
}
