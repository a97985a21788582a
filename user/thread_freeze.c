// SPDX-License-Identifier: GPL-2.0-only
/*
 * Holding a process's threads for `dump --native`.
 *
 * PTRACE_SEIZE, unlike PTRACE_ATTACH, sends no SIGSTOP: the thread stops only at
 * PTRACE_INTERRUPT, in a stop its code cannot observe, and a signal that reaches it
 * meanwhile is reported to us (a signal-delivery stop) and passed back at
 * PTRACE_DETACH. A thread blocked in a system call stops at once (the call restarts
 * when it goes on); one in an uninterruptible wait stops when the wait ends, so the
 * wait for them is bounded and such a thread is reported as late, not waited for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "native_regs.h"
#include "proc.h"
#include "thread_freeze.h"

#define SEIZE_PASSES 4		/* threads started while we seize the others */
#define RELEASE_WAIT_MS 100	/* a late thread that stops now can still be let go */

enum held_state { HELD_SEIZED, HELD_STOPPED, HELD_GONE };

struct held {
	pid_t tid;
	enum held_state state;
	int sig;	/* a signal it stopped with: handed back when it is let go */
	uint64_t regs[NATIVE_NREGS];
	uint32_t regs_mask;
};

struct thread_freeze {
	pid_t pid;
	struct held *t;
	uint32_t n;
	uint32_t added;	/* in the current seizing pass */
	pid_t tracer;
	struct thread_freeze_stats st;
};

/* TracerPid of thread @tid of @pid; 0 if none or unknown. */
static pid_t tracer_of(pid_t pid, pid_t tid)
{
	char path[64], line[128];
	long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %ld", &v) == 1)
			break;
	fclose(f);
	return v > 0 && v <= INT32_MAX ? (pid_t)v : 0;
}

static int seize_one(pid_t tid, void *arg)
{
	struct thread_freeze *f = arg;

	for (uint32_t i = 0; i < f->n; i++)
		if (f->t[i].tid == tid)
			return 0;
	if (f->n == THREAD_FREEZE_MAX)
		return 0;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		int err = errno;

		if (err == ESRCH)
			return 0;	/* ended since the listing */
		if (err == EPERM) {
			f->tracer = tracer_of(f->pid, tid);
			if (f->tracer && f->tracer != getpid())
				return -EBUSY;
		}
		return -err;
	}
	f->t[f->n++] = (struct held){ .tid = tid, .state = HELD_SEIZED };
	f->st.seized++;
	f->added++;
	/* ESRCH: it ended after the seize; the wait below sees it go. */
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	return 0;
}

static void take_regs(struct held *h)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, h->tid, NULL, &r))
		return;
	h->regs_mask = native_regs__from_user(&r, h->regs);
}

/* Collects the stops of seized threads until none is left running or @ms pass. */
static void wait_stops(struct thread_freeze *f, unsigned int ms)
{
	const struct timespec nap = { .tv_nsec = 1000000 };
	uint64_t end = clock__mono_ns() + (uint64_t)ms * 1000000;

	for (;;) {
		uint32_t running = 0;

		for (uint32_t i = 0; i < f->n; i++) {
			struct held *h = &f->t[i];
			int status;
			pid_t r;

			if (h->state != HELD_SEIZED)
				continue;
			r = waitpid(h->tid, &status, __WALL | WNOHANG);
			if (r == 0) {
				running++;
				continue;
			}
			if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
				h->state = HELD_GONE;
				f->st.gone++;
				continue;
			}
			if (!WIFSTOPPED(status)) {
				running++;
				continue;
			}
			/* A signal-delivery stop holds the thread as well as our interrupt
			 * does; its signal is handed back on release. */
			if (status >> 16 == 0)
				h->sig = WSTOPSIG(status);
			h->state = HELD_STOPPED;
			f->st.stopped++;
			take_regs(h);
		}
		if (!running || clock__mono_ns() >= end)
			return;
		nanosleep(&nap, NULL);
	}
}

int thread_freeze__all(pid_t pid, struct thread_freeze **out, pid_t *tracer)
{
	struct thread_freeze *f;
	int err = 0;

	*tracer = 0;
	f = calloc(1, sizeof(*f));
	if (f)
		f->t = calloc(THREAD_FREEZE_MAX, sizeof(*f->t));
	if (!f || !f->t) {
		free(f);
		return -ENOMEM;
	}
	f->pid = pid;
	for (int pass = 0; pass < SEIZE_PASSES && !err; pass++) {
		f->added = 0;
		err = proc__tasks(pid, seize_one, f);
		if (!f->added)
			break;
	}
	if (!err && !f->n)
		err = -ESRCH;
	if (err) {
		*tracer = f->tracer;
		thread_freeze__release(f);
		return err;
	}
	wait_stops(f, THREAD_FREEZE_WAIT_MS);
	for (uint32_t i = 0; i < f->n; i++)
		f->st.late += f->t[i].state == HELD_SEIZED;
	*out = f;
	return 0;
}

int thread_freeze__regs(const struct thread_freeze *f, pid_t tid, uint64_t regs[NATIVE_NREGS],
			uint32_t *regs_mask)
{
	for (uint32_t i = 0; f && i < f->n; i++) {
		const struct held *h = &f->t[i];

		if (h->tid != tid)
			continue;
		if (h->state != HELD_STOPPED || !h->regs_mask)
			return -ESRCH;
		memcpy(regs, h->regs, sizeof(h->regs));
		*regs_mask = h->regs_mask;
		return 0;
	}
	return -ESRCH;
}

void thread_freeze__stats(const struct thread_freeze *f, struct thread_freeze_stats *st)
{
	*st = f->st;
}

void thread_freeze__release(struct thread_freeze *f)
{
	if (!f)
		return;
	/* A thread seized but not yet stopped cannot be detached; one that stops in a
	 * moment can. Any still running after that is let go when this process exits. */
	wait_stops(f, RELEASE_WAIT_MS);
	for (uint32_t i = 0; i < f->n; i++)
		if (f->t[i].state == HELD_STOPPED)
			ptrace(PTRACE_DETACH, f->t[i].tid, NULL, (void *)(long)f->t[i].sig);
	free(f->t);
	free(f);
}
