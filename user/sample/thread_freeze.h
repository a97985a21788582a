/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Every thread of a live process held still for a moment (PTRACE_SEIZE, then
 * PTRACE_INTERRUPT), so that `dump --native` reads each thread's registers, C stack
 * and Python frames as they were at one instant, or record opens a clock per thread
 * (sampler_tasks.h), then lets them all go. Nothing is
 * injected and no signal is sent: a seized thread stops in a ptrace stop its own code
 * never sees, and a signal that arrives meanwhile is handed back on release. If this
 * process dies while they are held, the kernel releases them.
 *
 * A thread in an uninterruptible wait (a vfork's parent, a read from a hung NFS
 * server) stops only when the wait ends, and cannot be let go before: it stays seized,
 * and the owner of the hold polls it so that it runs on as soon as it has stopped. Every
 * call on one struct thread_freeze must come from the thread that seized: a tracer is
 * a thread, not a process.
 */
#ifndef PBP_THREAD_FREEZE_H
#define PBP_THREAD_FREEZE_H

#include <stdint.h>
#include <sys/types.h>

#include "native/native_unwind.h"

/* How long the threads get to stop: one in an uninterruptible wait (a disk read, a
 * page fault on NFS) stops only when that ends, and every other thread is held
 * meanwhile. */
#define THREAD_FREEZE_WAIT_MS 2000
/* thread_freeze__all(): once only threads in an uninterruptible wait are left running
 * (after a few ms), stop waiting for them. Seized, such a thread cannot run its own
 * code before it stops; it is let go at a poll once it has. */
#define THREAD_FREEZE_SKIP_D 1
/* Threads held at most: past this the rest run on and are not dumped natively. */
#define THREAD_FREEZE_MAX 4096

struct thread_freeze;

struct thread_freeze_stats {
	uint32_t seized, stopped, gone;
	uint32_t late;	/* seized but not stopped within the wait */
};

/*
 * Seizes and stops every thread of @pid (threads started while this runs too, within
 * a few passes), waiting up to THREAD_FREEZE_WAIT_MS for them to stop (@flags:
 * THREAD_FREEZE_SKIP_D or 0). 0 and *@out; -EBUSY if a thread is traced by another
 * process (*@tracer: its pid, 0 if unknown); -EPERM/-EACCES when ptrace is not
 * allowed; -ESRCH if the process is gone; -ENOMEM. On failure every thread is let go
 * but those in an uninterruptible wait: *@out is then not NULL, and is to be polled as
 * after thread_freeze__let_go().
 */
int thread_freeze__all(pid_t pid, unsigned int flags, struct thread_freeze **out,
		      pid_t *tracer);

/*
 * The user registers of held thread @tid (its id here), by DWARF number as native
 * unwinding takes them (regs_mask: which are set). -ESRCH if @tid is not held.
 */
int thread_freeze__regs(const struct thread_freeze *f, pid_t tid, uint64_t regs[NATIVE_NREGS],
			uint32_t *regs_mask);

void thread_freeze__stats(const struct thread_freeze *f, struct thread_freeze_stats *st);

/*
 * Lets every stopped thread go, handing back a signal any of them stopped with; it
 * does not wait. Returns how many are still seized (late): @f then has to be polled.
 * Called again, it polls.
 */
uint32_t thread_freeze__let_go(struct thread_freeze *f);
/*
 * After thread_freeze__let_go(): lets go the late threads that have stopped since, and
 * forgets those that ended. Returns how many are still seized. It does not wait, and
 * looks at a bounded number of threads per call.
 */
uint32_t thread_freeze__poll(struct thread_freeze *f);
/* After thread_freeze__let_go(): how many are still seized, as of the last poll. */
uint32_t thread_freeze__held(const struct thread_freeze *f);
/* Frees @f. A thread still seized is let go by the kernel when the calling thread
 * exits, without stopping. */
void thread_freeze__free(struct thread_freeze *f);

#endif
