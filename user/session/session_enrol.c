// SPDX-License-Identifier: GPL-2.0-only
/*
 * How a process becomes a session's target: found running a CPython we can read,
 * checked for room, prepared, readied for --native, handed to its sampler (BPF, or a
 * live reader whose stacks go to the sink), looked at for asyncio, and only then put
 * in the target table. It sits above the table, the tasks, the native walks and the
 * sink, which it wires together, so that none of them needs to know the others.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/proc.h"
#include "cpython/py_interp.h"
#include "cpython/py_threads.h"
#include "sample/sampler.h"
#include "sample/sampler_live.h"
#include "session/proc_filter.h"
#include "session/session_priv.h"
#include "session/target.h"

static int start_live(struct target *t)
{
	struct sampler_live_cfg lc = {
		.interp = &t->interp,
		.live = &t->live,
		.dec = t->dec,
		.fcache = t->fcache,
		.rate_hz = t->session->opts.rate_hz,
		/* No verifier bounds user space: the whole stack, up to a sane size. */
		.stack_cap = LIVE_STACK_BYTES,
		/* Wall and off-CPU time are the threads off a CPU too, however live
		 * sampling was chosen (--no-bpf, or no BPF to be had). */
		.want_idle = t->session->opts.idle || t->session->opts.mode != SESSION_CPU,
		.hold = !t->session->opts.no_hold,
		.on_stack = session_sink__on_live_stack,
		.ctx = t,
	};

	return sampler_live__new(&lc, &t->sampler_live);
}

/* Starts sampling prepared target @t, which the session then owns. */
int session_enrol__target(struct session *s, struct target *t, uint64_t gil)
{
	int err;

	err = session_targets__reserve(s);
	if (err)
		return err;
	proc__cpu_ns(t->interp.pid, &t->cpu0);
	t->cpu = t->cpu0;
	t->gil = gil;
	t->asyncio_state = s->opts.async_tasks ? TARGET_ASYNCIO_LOOK : TARGET_ASYNCIO_NONE;
	err = session_native__target(s, t);
	if (!err)
		err = s->live_mode ? start_live(t) :
				     sampler__add_target(s->sampler, &t->interp, gil, NULL,
							 t->native_fp);
	if (err)
		return err;
	session_tasks__look(s, t);
	session_sources__target(s, t);
	session_targets__insert(s, t);
	return 0;
}

/* Whether there is room for one more target; says once when there is not. */
static int room_for(struct session *s, pid_t pid)
{
	uint32_t max = s->opts.max_processes ? s->opts.max_processes : PBP_TARGETS_MAX;
	char cmd[128];

	if (s->targets.n < max)
		return 1;
	if (!s->enrol.processes_skipped++) {
		if (proc__cmdline(pid, cmd, sizeof(cmd)))
			snprintf(cmd, sizeof(cmd), "?");
		pr_warn("%u processes are being profiled, the most %s: pid %d (%s) and "
			"further new ones are not, until some exit\n", max,
			s->opts.max_processes ? "--max-processes allows" : "one run can follow",
			(int)pid, cmd);
	}
	return 0;
}

/* Makes @pid a target if it runs a CPython we can read; 1 if it does now (or never
 * will: no room), 0 if not (yet). */
int session_enrol__adopt(pid_t pid, void *arg)
{
	struct session *s = arg;
	struct target *t = calloc(1, sizeof(*t));
	char version[32];
	uint64_t gil = 0;
	int err;

	if (!t)
		return -ENOMEM;
	mem_live__init(&t->live, pid);
	/* The interpreter found must be the image identified: not one an exec is still
	 * building, nor one an exec replaced while it was looked for. */
	if (target__identify(t) == -EAGAIN)
		goto not_yet;
	t->found_ns = clock__mono_ns();
	err = py_interp__find(pid, &t->live.base, &t->interp);
	if (err) {
		if (err == -ENOTSUP) {
			py_interp__version_str(t->interp.version_hex, version, sizeof(version));
			pr_info("pid %d runs CPython %s, which pybpfprof does not read\n",
				(int)pid, version);
		} else if ((err == -EACCES || err == -EPERM) && t->interp.unopened) {
			/* Permissions do not change as the process starts up: said once,
			 * and not looked at again. */
			pr_warn("pid %d maps %s, which cannot be opened (%s): for files in "
				"other users' private directories root needs "
				"CAP_DAC_READ_SEARCH\n", (int)pid, t->interp.path, strerror(-err));
			target__free(t);
			return 1;
		}
		goto not_yet;
	}
	if (target__same(t))
		goto not_yet;
	/* The command line is read once, by target__prepare(), unless it is for the
	 * notice that there is no room. */
	if (s->opts.system_wide && !room_for(s, pid)) {
		target__free(t);
		return 1;
	}
	py_threads__gil(&t->live.base, &t->interp, &gil);
	t->session = s;
	err = target__prepare(t, &s->shared, !s->opts.no_frame_cache,
			      session_targets__publish_anchor, session_targets__code_known);
	if (!err)
		err = session_enrol__target(s, t, gil);
	if (err) {
		pr_warn("cannot follow pid %d: %s\n", (int)pid, strerror(-err));
		target__free(t);
		return err == -ENOMEM ? err : 1;	/* 1: not to be tried again */
	}
	pr_info("following pid %d (%s)\n", (int)pid, t->cmd);
	if (pid == s->follow.exec_pid) {
		pr_warn("pid %d exec'd %s, a Python: profiling it on\n", (int)pid,
			s->follow.exec_prog);
		s->follow.exec_pid = 0;
	}
	if (s->opts.system_wide || s->parent_pid) {
		py_interp__version_str(t->interp.version_hex, version, sizeof(version));
		if (!s->totals.python_version[0])
			snprintf(s->totals.python_version, sizeof(s->totals.python_version), "%s",
				 version);
		else if (strcmp(s->totals.python_version, version))
			snprintf(s->totals.python_version, sizeof(s->totals.python_version),
				 "several");
	}
	return 1;

not_yet:
	target__free(t);
	return 0;	/* not (yet) Python */
}

/* System-wide: @pid is adopted if the filters take it. */
int session_enrol__consider(pid_t pid, void *arg)
{
	struct session *s = arg;
	int r;

	if (pid == getpid() || session_targets__of(s, pid))
		return 1;
	r = proc_filter__match(s->opts.filter, pid);
	if (r != 1)
		return 1;	/* not wanted, or gone; an exec brings it back */
	return session_enrol__adopt(pid, s);
}

