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
 *
 * A late thread cannot be let go before it stops: PTRACE_DETACH needs a stopped
 * tracee, and the interrupt stays pending, so it stops as soon as its wait ends (a
 * vfork's parent when the child exits, an NFS read when the server answers), minutes
 * or hours later. It is kept seized and polled until then, by the thread that seized
 * it: a tracer is a thread, not a process, and only it can detach.
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

#include "base/clock.h"
#include "native/native_regs.h"
#include "base/proc.h"
#include "sample/thread_freeze.h"
#include "sample/thread_hold.h"

#define SEIZE_PASSES 4		/* threads started while we seize the others */
/* A failed hold's threads, interrupted a moment ago, get this to stop and be let go. */
#define RELEASE_WAIT_MS 100
/* THREAD_FREEZE_SKIP_D: how long a thread in an uninterruptible wait is waited for
 * anyway (most such waits, a page read in, are over by then), and how often the states
 * of those still running are read after that. */
#define D_GRACE_MS 20
#define D_CHECK_MS 10
/* Late threads looked at per poll: thousands of threads stuck on a dead NFS server
 * are not each asked on every turn of the caller's loop. */
#define POLL_MAX 64

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
	uint32_t next;	/* where the next poll starts, once they are let go */
	int let_go;	/* only late threads are left in t[] */
	int skip_d;	/* THREAD_FREEZE_SKIP_D */
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

/* Takes @h's stop if it has stopped (or its end); 1 if it is still running. */
static int collect(struct thread_freeze *f, struct held *h)
{
	int r = thread_hold__stopped(h->tid, &h->sig);

	if (r > 0)
		return 1;
	if (r < 0) {
		h->state = HELD_GONE;
		f->st.gone++;
		return 0;
	}
	h->state = HELD_STOPPED;
	f->st.stopped++;
	return 0;
}

/* 1 if every thread seized and not yet stopped is in an uninterruptible wait. */
static int rest_in_d(const struct thread_freeze *f)
{
	for (uint32_t i = 0; i < f->n; i++) {
		char state = 0;

		if (f->t[i].state != HELD_SEIZED)
			continue;
		if (proc__thread_state(f->pid, f->t[i].tid, &state) || state != 'D')
			return 0;
	}
	return 1;
}

/* Collects the stops of seized threads until none is left running or @ms pass (or,
 * with skip_d, only threads in an uninterruptible wait are left). */
static void wait_stops(struct thread_freeze *f, unsigned int ms)
{
	const struct timespec nap = { .tv_nsec = 1000000 };
	uint64_t now = clock__mono_ns();
	uint64_t end = now + (uint64_t)ms * 1000000;
	uint64_t check = now + (uint64_t)D_GRACE_MS * 1000000;

	for (;;) {
		uint32_t running = 0;

		for (uint32_t i = 0; i < f->n; i++) {
			struct held *h = &f->t[i];

			if (h->state != HELD_SEIZED)
				continue;
			if (collect(f, h))
				running++;
			else if (h->state == HELD_STOPPED && !f->let_go)
				take_regs(h);
		}
		now = clock__mono_ns();
		if (!running || now >= end)
			return;
		/* A runnable thread on a busy CPU stops when it is next scheduled, and
		 * is worth waiting for; one in D may not stop for hours. */
		if (f->skip_d && now >= check) {
			if (rest_in_d(f))
				return;
			check = now + (uint64_t)D_CHECK_MS * 1000000;
		}
		nanosleep(&nap, NULL);
	}
}

static void detach(struct held *h)
{
	/* It fails only for one killed meanwhile: SIGKILL ends a stop. */
	ptrace(PTRACE_DETACH, h->tid, NULL, (void *)(long)h->sig);
	h->state = HELD_GONE;
}

int thread_freeze__all(pid_t pid, unsigned int flags, struct thread_freeze **out,
		      pid_t *tracer)
{
	struct thread_freeze *f;
	int err = 0;

	*tracer = 0;
	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (f)
		f->t = calloc(THREAD_FREEZE_MAX, sizeof(*f->t));
	if (!f || !f->t) {
		free(f);
		return -ENOMEM;
	}
	f->pid = pid;
	f->skip_d = !!(flags & THREAD_FREEZE_SKIP_D);
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
		wait_stops(f, RELEASE_WAIT_MS);
		if (thread_freeze__let_go(f))
			*out = f;
		else
			thread_freeze__free(f);
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

uint32_t thread_freeze__let_go(struct thread_freeze *f)
{
	uint32_t k = 0;

	if (!f)
		return 0;
	if (f->let_go)
		return thread_freeze__poll(f);
	f->let_go = 1;
	/* No wait: every thread that stopped is held until this returns, and a late one
	 * that stops later is let go at a poll. */
	wait_stops(f, 0);
	for (uint32_t i = 0; i < f->n; i++) {
		if (f->t[i].state == HELD_STOPPED)
			detach(&f->t[i]);
		if (f->t[i].state == HELD_SEIZED)
			f->t[k++] = f->t[i];
	}
	f->n = k;
	/* Kept for hours perhaps: only the late ones, not room for every thread. */
	if (k) {
		struct held *t = realloc(f->t, k * sizeof(*t));

		if (t)
			f->t = t;
	}
	return k;
}

uint32_t thread_freeze__poll(struct thread_freeze *f)
{
	uint32_t looks;

	if (!f || !f->let_go)
		return 0;
	looks = f->n < POLL_MAX ? f->n : POLL_MAX;
	while (looks-- && f->n) {
		struct held *h;

		if (f->next >= f->n)
			f->next = 0;
		h = &f->t[f->next];
		if (collect(f, h)) {
			f->next++;
			continue;
		}
		if (h->state == HELD_STOPPED)
			detach(h);
		*h = f->t[--f->n];
	}
	return f->n;
}

uint32_t thread_freeze__held(const struct thread_freeze *f)
{
	return f && f->let_go ? f->n : 0;
}

void thread_freeze__free(struct thread_freeze *f)
{
	if (!f)
		return;
	/* Any still seized is let go by the kernel when this thread exits, without
	 * having to stop. */
	free(f->t);
	free(f);
}
