/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Running the command after "--": start it stopped under ptrace, follow its execs
 * (wrappers such as env, chroot or a shebang) until the image is a CPython, and hand
 * it over still stopped, so that profiling can begin before its first Python code.
 */
#ifndef PBP_SPAWN_H
#define PBP_SPAWN_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpython/py_interp.h"

struct spawn {
	pid_t pid;
	int traced;		/* still under ptrace */
	int running;		/* ... and not stopped for us: a detach must stop it first */
	int exited;
	int status;		/* wait status once exited */
	int trace_failed;	/* the child could not be traced: no exec was tried */
};

/* Forks and execs @argv. -ENOENT / -EACCES (and friends) if the exec failed; if the
 * child could not be traced, sp->trace_failed is set and nothing was run. */
int spawn__start(char *const argv[], struct spawn *sp);

/* How long spawn__wait_python() may wait. */
struct spawn_wait {
	uint64_t deadline_ns;	/* clock__mono_ns() at which it gives up; 0: never */
	const volatile sig_atomic_t *stop;	/* gives up once this is set; may be NULL */
	/* A program not named like a Python that runs this long without an exec is
	 * given up on (-EAGAIN); 0: it is waited for until it execs or exits. */
	uint64_t exec_patience_ns;
};

/*
 * Waits until the command runs a CPython whose interpreter can be read, filling
 * @interp; the process stays stopped when that happens at an exec, or runs if the
 * interpreter appeared later (a shared libpython). Returns 0, -ECHILD if the command
 * exited first (sp->status holds its status), -ETIMEDOUT once @w's deadline has passed,
 * -EINTR once its stop flag is set or -EAGAIN once its exec patience ran out (the
 * command is still traced then: release or stop it), or py_interp__find()'s error.
 */
int spawn__wait_python(struct spawn *sp, const struct spawn_wait *w, struct mem_source *mem,
		       struct py_interp *interp);

/* Lets the command run untraced. */
void spawn__release(struct spawn *sp);

/* Non-blocking: 1 if the command has exited (status in sp->status), else 0. */
int spawn__reap(struct spawn *sp);

/* Sends @sig, waits up to @ms for the command to exit, then kills it. */
void spawn__stop(struct spawn *sp, int sig, int ms);

#endif
