/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One thread of a live process held still for one reading (PTRACE_SEIZE, then
 * PTRACE_INTERRUPT), for a live sampler whose readings of a thread kept finding its
 * stack changed under them. The thread stops in a ptrace stop its own code never sees,
 * and a signal that arrives meanwhile is handed back when it is let go.
 *
 * A thread that does not stop within the wait (one waiting for a CPU on a busy machine,
 * or in an uninterruptible wait) cannot be let go before it stops: PTRACE_DETACH needs a
 * stopped tracee. It stays seized and is polled, by the thread that seized it (a tracer
 * is a thread), and let go as soon as it has stopped. Its stop must be left for the
 * poll: a wait by another thread of this process for the same id would take it (use
 * __WNOTHREAD there).
 */
#ifndef PBP_THREAD_HOLD_H
#define PBP_THREAD_HOLD_H

#include <stdint.h>
#include <sys/types.h>

/* How long thread_hold__take() waits for the thread to stop. A runnable thread on a
 * busy CPU stops when it is next scheduled, within a few ms. */
#define THREAD_HOLD_WAIT_NS (10 * 1000000ull)

enum thread_hold_state { THREAD_HOLD_NONE, THREAD_HOLD_STOPPED, THREAD_HOLD_LATE };

struct thread_hold {
	pid_t tid;
	enum thread_hold_state state;
	int sig;	/* the signal it stopped with, handed back at release */
	uint64_t seized_ns;	/* when the current hold began */
	uint64_t taken, late, denied;	/* holds stopped, holds late, seizes refused */
	uint64_t held_ns;	/* from seize to release, over the holds that stopped */
	uint64_t wait_ns;	/* ... of which until the thread had stopped */
};

/*
 * Seizes thread @tid and waits up to @wait_ns for it to stop. 0: it is held (let it go
 * with thread_hold__let_go()). -EINPROGRESS: it has not stopped yet and stays seized
 * (poll it). -EBUSY when a hold is still late; -EPERM, -ESRCH from the seize.
 */
int thread_hold__take(struct thread_hold *h, pid_t tid, uint64_t wait_ns);

/*
 * A look at seized thread @tid, without waiting: 0 if it has stopped (*@sig: the
 * signal it stopped with, if any), 1 if it still runs, -ESRCH if it has ended.
 */
int thread_hold__stopped(pid_t tid, int *sig);

/* Lets a held thread go. */
void thread_hold__let_go(struct thread_hold *h);

/* Lets a late hold go if its thread has stopped (or ended) since. 1 while it is still
 * seized. Does not wait. */
int thread_hold__poll(struct thread_hold *h);

#endif
