// SPDX-License-Identifier: GPL-2.0-only
/*
 * Following a session's processes: the exec and exit events the sampler reports,
 * the children of the targets (--subprocesses), a target that exec'd another
 * program, and, system-wide, every new process and a sweep for exits whose event
 * was lost.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "session/descendants.h"
#include "base/log.h"
#include "base/proc.h"
#include "session/session_priv.h"
#include "session/spawn.h"
#include "base/vec.h"

/* A burst of process events grows their array; past this it is given back. */
#define EVENTS_KEEP 1024
/* System-wide, exits come as events; this sweep catches any whose event was lost. */
#define SWEEP_NS 1000000000ull

/* Ring-buffer callback for process events. Acting on one may drain the ring buffer,
 * which must not happen from inside its own callback: they wait for the poll's end. */
int session_follow__on_event(void *arg, const struct pbp_event *ev)
{
	struct session *s = arg;

	if (vec__reserve((void **)&s->follow.events, &s->follow.events_cap, s->follow.nevents + 1,
			 sizeof(*s->follow.events), 256)) {
		s->fatal = -ENOMEM;
		return -ENOMEM;
	}
	s->follow.events[s->follow.nevents++] = *ev;
	return 0;
}

/* --subprocesses: whether the target that is no Python, a parent, still runs. */
static int parent_alive(struct session *s)
{
	if (!s->parent_pid)
		return 0;
	if (s->spawned && s->spawn.pid == s->parent_pid)
		return !spawn__reap(&s->spawn);
	return !proc__alive(s->parent_pid);
}

static int watch_children(struct session *s)
{
	int err = 0;

	if (s->spawned && !s->spawn.exited)
		err = descendants__scan(s->follow.children, s->spawn.pid);
	for (size_t i = 0; !err && i < s->targets.n; i++)
		err = descendants__scan(s->follow.children, s->targets.v[i]->interp.pid);
	return err ? err : descendants__step(s->follow.children);
}

/*
 * Target @i exec'd another program: its interpreter (and every address we know in it)
 * is gone, though the process is not. What it sampled stays; the new image is watched
 * like a new process and adopted if it is a Python, else the run ends when the watch
 * gives up on it (see session__poll).
 */
static int follow_exec(struct session *s, size_t i)
{
	pid_t pid = s->targets.v[i]->interp.pid;
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, s->follow.exec_prog, sizeof(s->follow.exec_prog) - 1);
	s->follow.exec_prog[n > 0 ? n : 0] = '\0';
	if (n <= 0)
		snprintf(s->follow.exec_prog, sizeof(s->follow.exec_prog), "another program");
	pr_info("pid %d exec'd %s\n", (int)pid, s->follow.exec_prog);
	session_targets__detach(s, i);
	s->follow.exec_pid = pid;
	return descendants__watch(s->follow.children, pid);
}

/*
 * Whether exec event @ev took away the image target @t was adopted in. The kernel
 * reports an exec once it is done, but the new image shows in /proc before that, long
 * before if the exec is preempted: a look in between may have adopted that very image,
 * and the event, later than the adoption, is then of the exec that made it. Taking it
 * for a new exec would drop the target and enrol the same image again. Its identity
 * tells (AT_RANDOM moves with each exec under ASLR); without one, a later event is
 * taken for a new exec.
 */
static int exec_replaced(const struct target *t, const struct pbp_event *ev)
{
	if (ev->ts_ns < t->found_ns)
		return 0;
	return !t->ident.at_random || target__same(t) != 0;
}

/* System-wide: acts on the process events the poll took in, and sweeps for exits
 * now and then. */
int session_follow__host(struct session *s)
{
	uint64_t now;
	int err = 0;

	/* Detaching drains the ring buffer, which may add events: index, don't point. */
	for (size_t i = 0; !err && i < s->follow.nevents; i++) {
		struct pbp_event ev = s->follow.events[i];
		size_t at = session_targets__slot(s, ev.pid);
		int known = at < s->targets.n && (uint32_t)s->targets.v[at]->interp.pid == ev.pid;

		if (ev.type == PBP_EV_EXIT) {
			if (known && session_targets__gone(s, s->targets.v[at]))
				session_targets__detach(s, at);
			continue;
		}
		/* A target's exec takes its interpreter away; the new image may have one.
		 * But the watch may have found that image's interpreter already, before
		 * the event was read: the exec that made it changes nothing. */
		if (known && ev.type == PBP_EV_EXEC) {
			if (!exec_replaced(s->targets.v[at], &ev))
				continue;
			session_targets__detach(s, at);
		}
		err = descendants__watch(s->follow.children, ev.pid);
	}
	s->follow.nevents = 0;
	if (s->follow.events_cap > EVENTS_KEEP) {
		free(s->follow.events);
		s->follow.events = NULL;
		s->follow.events_cap = 0;
	}
	if (!err)
		err = descendants__step(s->follow.children);
	now = clock__mono_ns();
	if (err || now - s->follow.swept_ns < SWEEP_NS)
		return err;
	s->follow.swept_ns = now;
	for (size_t i = s->targets.n; i-- > 0;) {
		if (session_targets__gone(s, s->targets.v[i]))
			session_targets__detach(s, i);
		else
			proc__cpu_ns(s->targets.v[i]->interp.pid, &s->targets.v[i]->cpu);
	}
	return 0;
}

/*
 * Without -a, after each poll: a target's exec takes its interpreter away, a target's
 * exit ends the run unless --subprocesses follows others, and the processes being
 * watched may have become Pythons.
 */
int session_follow__targets(struct session *s)
{
	int err;

	for (size_t i = 0; !s->opts.system_wide && i < s->follow.nevents; i++) {
		/* Detaching drains the ring buffer, which may add events: copy, don't point. */
		struct pbp_event ev = s->follow.events[i];
		size_t at = session_targets__slot(s, ev.pid);

		/* A target's exec: its addresses are gone (unless it is the exec that
		 * made the image adopted). */
		if (ev.type == PBP_EV_EXEC && at < s->targets.n &&
		    (uint32_t)s->targets.v[at]->interp.pid == ev.pid &&
		    exec_replaced(s->targets.v[at], &ev)) {
			err = follow_exec(s, at);
			if (err)
				return err;
		}
	}
	if (!s->opts.system_wide)
		s->follow.nevents = 0;
	for (size_t i = 0; !s->opts.system_wide && i < s->targets.n;) {
		struct target *t = s->targets.v[i];

		if (!session_targets__gone(s, t)) {
			if (target__same(t) == -ENOEXEC) {
				err = follow_exec(s, i);
				if (err)
					return err;
				continue;
			}
			proc__cpu_ns(t->interp.pid, &t->cpu);
			i++;
			continue;
		}
		/* The first target's decoder stays for the end: its last records are
		 * drained at the stop, and its stats name the run. */
		if (!s->opts.subprocesses)
			return 1;
		session_targets__detach(s, i);
	}
	if (s->opts.subprocesses) {
		err = watch_children(s);
		if (err) {
			pr_warn("following child processes: %s\n", strerror(-err));
			return err;
		}
		if (!s->targets.n && !descendants__pending(s->follow.children) && !parent_alive(s))
			return 1;
	} else if (s->follow.exec_pid) {
		err = descendants__step(s->follow.children);
		if (err)
			return err;
		if (!s->targets.n && !descendants__pending(s->follow.children)) {
			if (proc__alive(s->follow.exec_pid) != 0)
				pr_warn("pid %d exec'd %s and exited before any Python showed in "
					"it\n", (int)s->follow.exec_pid, s->follow.exec_prog);
			else
				pr_warn("pid %d exec'd %s, which is not a Python pybpfprof "
					"reads: stopping\n", (int)s->follow.exec_pid,
					s->follow.exec_prog);
			return 1;
		}
	}
	return 0;
}
