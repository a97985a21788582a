// SPDX-License-Identifier: GPL-2.0-only
/*
 * One thread held for one reading. See thread_hold.h; thread_freeze.c holds every
 * thread of a process the same way and says why PTRACE_SEIZE and not PTRACE_ATTACH.
 */
#include <errno.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "base/clock.h"
#include "sample/thread_hold.h"

/* A thread on another CPU stops within microseconds of the interrupt, sooner than a
 * sleep of this thread's would end (timer slack adds 50 us to each): the first looks
 * only yield the CPU, in case the thread is waiting for this one. */
#define YIELD_NS 200000
#define LOOK_NS 20000

int thread_hold__stopped(pid_t tid, int *sig)
{
	int status;
	pid_t r;

	r = waitpid(tid, &status, __WALL | __WNOTHREAD | WNOHANG);
	if (r == 0)
		return 1;
	if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status))
		return -ESRCH;
	if (!WIFSTOPPED(status))
		return 1;
	/* A signal-delivery stop holds the thread as well as the interrupt does; its
	 * signal is handed back on release. */
	if (status >> 16 == 0)
		*sig = WSTOPSIG(status);
	return 0;
}

int thread_hold__take(struct thread_hold *h, pid_t tid, uint64_t wait_ns)
{
	const struct timespec nap = { .tv_nsec = LOOK_NS };
	uint64_t end, now;
	int r;

	if (h->state != THREAD_HOLD_NONE && thread_hold__poll(h))
		return -EBUSY;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		h->denied++;
		return -errno;
	}
	h->tid = tid;
	h->sig = 0;
	h->seized_ns = clock__mono_ns();
	end = h->seized_ns + wait_ns;
	/* ESRCH: it ended after the seize; the look below sees it go. */
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	for (;;) {
		r = thread_hold__stopped(tid, &h->sig);
		if (r <= 0)
			break;
		now = clock__mono_ns();
		if (now >= end) {
			h->state = THREAD_HOLD_LATE;
			h->late++;
			return -EINPROGRESS;
		}
		if (now - h->seized_ns < YIELD_NS)
			sched_yield();
		else
			nanosleep(&nap, NULL);
	}
	if (r < 0) {
		h->state = THREAD_HOLD_NONE;
		return r;
	}
	h->state = THREAD_HOLD_STOPPED;
	h->taken++;
	h->wait_ns += clock__mono_ns() - h->seized_ns;
	return 0;
}

static void release(struct thread_hold *h)
{
	/* It fails only for a thread killed meanwhile: SIGKILL ends a stop. */
	ptrace(PTRACE_DETACH, h->tid, NULL, (void *)(long)h->sig);
	h->state = THREAD_HOLD_NONE;
}

void thread_hold__let_go(struct thread_hold *h)
{
	if (h->state != THREAD_HOLD_STOPPED)
		return;
	release(h);
	h->held_ns += clock__mono_ns() - h->seized_ns;
}

int thread_hold__poll(struct thread_hold *h)
{
	int r;

	if (h->state != THREAD_HOLD_LATE)
		return 0;
	r = thread_hold__stopped(h->tid, &h->sig);
	if (r > 0)
		return 1;
	if (!r)
		release(h);
	h->state = THREAD_HOLD_NONE;
	return 0;
}
