// SPDX-License-Identifier: GPL-2.0-only
/*
 * The "--" command. The child asks to be traced before exec, so it stops at every exec
 * and we can look for an interpreter at each one. Exec failures travel back over a
 * close-on-exec pipe, so "not found" and "not executable" are told apart from a
 * command that ran and failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/proc.h"
#include "session/spawn.h"

int spawn__start(char *const argv[], struct spawn *sp)
{
	int pipefd[2], child_errno = 0;
	ssize_t n;
	pid_t pid;

	memset(sp, 0, sizeof(*sp));
	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	if (pid == 0) {
		close(pipefd[0]);
		/* A failed TRACEME is sent negated, to be told from a failed exec. */
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0) {
			execvp(argv[0], argv);
			child_errno = errno;
		} else {
			child_errno = -errno;
		}
		if (write(pipefd[1], &child_errno, sizeof(child_errno)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	do
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	sp->pid = pid;
	if (n == sizeof(child_errno)) {
		waitpid(pid, &sp->status, 0);
		sp->exited = 1;
		if (child_errno < 0) {
			sp->trace_failed = 1;
			return child_errno;
		}
		return -child_errno;
	}
	sp->traced = 1;
	return 0;
}

/* How long a command named like a Python may take to show its interpreter (its
 * libpython mapped) once it runs untraced. */
#define PATIENCE_NS 5000000000ull

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* -ETIMEDOUT once @w's deadline has passed, -EINTR once its stop flag is set, else 0. */
static int waited_enough(const struct spawn_wait *w)
{
	if (w->stop && *w->stop)
		return -EINTR;
	if (w->deadline_ns && clock__mono_ns() >= w->deadline_ns)
		return -ETIMEDOUT;
	return 0;
}

/*
 * The command's next stop, which it waits in for us: 0 with @status; -ECHILD once it
 * has exited; or waited_enough()'s error while it runs. Looked for, not waited for,
 * so that a deadline or a signal ends the wait however long the command runs: a 1 ms
 * poll for its first 200 ms, when its execs come, then 5 ms.
 */
static int wait_stop(struct spawn *sp, const struct spawn_wait *w, int *status)
{
	uint64_t patience = w->exec_patience_ns ? clock__mono_ns() + w->exec_patience_ns : 0;

	for (unsigned int polls = 0;; polls++) {
		pid_t r = waitpid(sp->pid, status, WNOHANG);
		int err;

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r == sp->pid) {
			if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
				sp->exited = 1;
				sp->traced = 0;
				sp->running = 0;
				sp->status = *status;
				return -ECHILD;
			}
			sp->running = 0;
			return 0;
		}
		err = waited_enough(w);
		if (!err && patience && clock__mono_ns() >= patience)
			err = -EAGAIN;
		if (err)
			return err;
		sleep_ms(polls < 200 ? 1 : 5);
	}
}

static int next_exec_stop(struct spawn *sp, const struct spawn_wait *w)
{
	int status, sig = 0, err;

	for (;;) {
		if (ptrace(PTRACE_CONT, sp->pid, NULL, (void *)(long)sig))
			return -errno;
		sp->running = 1;
		err = wait_stop(sp, w, &status);
		if (err)
			return err;
		if (!WIFSTOPPED(status))
			continue;
		if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
			return 0;
		/* An ordinary signal: deliver it, as if we were not there. */
		sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
	}
}

int spawn__wait_python(struct spawn *sp, const struct spawn_wait *w, struct mem_source *mem,
		       struct py_interp *interp)
{
	uint64_t since;
	int status, err;

	/* The first stop is the SIGTRAP of the initial exec. */
	if (waitpid(sp->pid, &status, 0) < 0)
		return -errno;
	if (!WIFSTOPPED(status)) {
		sp->exited = 1;
		sp->traced = 0;
		sp->status = status;
		return -ECHILD;
	}
	ptrace(PTRACE_SETOPTIONS, sp->pid, NULL, (void *)(long)(PTRACE_O_TRACEEXEC |
								  PTRACE_O_EXITKILL));
	for (;;) {
		err = py_interp__find(sp->pid, mem, interp);
		if (err != -ENOENT)
			return err;
		/* A shared libpython is not mapped yet at exec; the loader maps it
		 * before any Python code runs, so watch for it without the tracer. */
		if (proc__exe_named(sp->pid, "python"))
			break;
		err = waited_enough(w);
		if (!err)
			err = next_exec_stop(sp, w);
		if (err)
			return err;
	}
	spawn__release(sp);
	for (since = clock__mono_ns(); clock__mono_ns() - since < PATIENCE_NS;) {
		if (spawn__reap(sp))
			return -ECHILD;
		err = py_interp__find(sp->pid, mem, interp);
		if (err != -ENOENT)
			return err;
		err = waited_enough(w);
		if (err)
			return err;
		sleep_ms(1);
	}
	return -ENOENT;
}

/*
 * A tracee can be detached only while it is stopped. One that runs is stopped with a
 * SIGSTOP, which the detach then takes back; a stop that comes first (an exec, another
 * signal) is let through on the way, its signal delivered.
 */
static void stop_to_detach(struct spawn *sp)
{
	int status, sig;

	if (kill(sp->pid, SIGSTOP))
		return;
	for (;;) {
		if (waitpid(sp->pid, &status, 0) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			sp->exited = 1;
			sp->status = status;
			return;
		}
		if (!WIFSTOPPED(status) || WSTOPSIG(status) == SIGSTOP)
			return;
		sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
		if (ptrace(PTRACE_CONT, sp->pid, NULL, (void *)(long)sig))
			return;
	}
}

void spawn__release(struct spawn *sp)
{
	if (sp->traced) {
		if (sp->running)
			stop_to_detach(sp);
		if (!sp->exited)
			ptrace(PTRACE_DETACH, sp->pid, NULL, NULL);
		sp->traced = 0;
		sp->running = 0;
	}
}

int spawn__reap(struct spawn *sp)
{
	siginfo_t si = { 0 };
	int status;

	if (sp->exited)
		return 1;
	/* A look that takes nothing first: the command's main thread may be held since
	 * an attach (thread_freeze.h), and its stop, which a wait would take too, must be
	 * left for the hold to collect and let go. */
	if (waitid(P_PID, sp->pid, &si, WEXITED | WNOHANG | WNOWAIT) || si.si_pid != sp->pid ||
	    (si.si_code != CLD_EXITED && si.si_code != CLD_KILLED && si.si_code != CLD_DUMPED))
		return 0;
	if (waitpid(sp->pid, &status, 0) == sp->pid) {
		sp->exited = 1;
		sp->status = status;
		return 1;
	}
	return 0;
}

void spawn__stop(struct spawn *sp, int sig, int ms)
{
	if (sp->exited || sp->pid <= 0)
		return;
	spawn__release(sp);
	kill(sp->pid, sig);
	for (int i = 0; i < ms / 10; i++) {
		if (spawn__reap(sp))
			return;
		sleep_ms(10);
	}
	kill(sp->pid, SIGKILL);
	waitpid(sp->pid, &sp->status, 0);
	sp->exited = 1;
}
