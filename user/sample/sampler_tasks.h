/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Clocks that tick only while a target's threads run: record -p and record -- CMD.
 *
 * A clock on every CPU interrupts every CPU rate times a second whoever runs there;
 * in a VM each of those ticks costs the machine far more than the program it runs (a
 * timer interrupt is a VM exit), so profiling one process at a high rate slowed every
 * process on the host. A per-thread clock (perf_event_open with a thread id and no
 * CPU) is armed only while its thread is on a CPU, so the machine pays for the
 * target's own CPU time only.
 *
 * Threads the target starts later inherit their creator's clock (inherit_thread: the
 * kernel copies the event at clone, with the BPF program, and not to child
 * processes, which become targets of their own). A thread must not get a clock of
 * ours twice, or it would be sampled twice as often: while the clocks are opened the
 * target is held (thread_freeze.h), so that no thread is created by one that has its
 * clock already and then found again by the listing.
 */
#ifndef PBP_SAMPLER_TASKS_H
#define PBP_SAMPLER_TASKS_H

#include <stdint.h>
#include <sys/types.h>

struct bpf_program;

/* Threads with a clock opened by us, over all targets (threads started since inherit
 * theirs and need none): past this, a target is ticked by per-CPU clocks instead. */
#define SAMPLER_TASKS_MAX 4096
/* How often threads still seized since an attach are looked at (see __poll). */
#define SAMPLER_TASKS_POLL_MS 20

struct sampler_tasks;

int sampler_tasks__new(struct bpf_program *prog, uint32_t rate_hz, struct sampler_tasks **out);
void sampler_tasks__free(struct sampler_tasks *t);

/*
 * Gives every thread of @pid its clock, with @prog attached. 0 (also if @pid has them
 * already); -E2BIG past SAMPLER_TASKS_MAX; -EBUSY if another tracer holds @pid;
 * -EPERM/-EACCES; -ESRCH; -ENOMEM. On failure @pid has none.
 *
 * A thread in an uninterruptible wait cannot be let go until it stops (a warning says
 * so): sampler_tasks__poll() lets it go then, and must be called often, from the
 * thread that called this one.
 */
int sampler_tasks__add(struct sampler_tasks *t, pid_t pid);
/* Closes @pid's clocks (and so those its threads inherited). */
void sampler_tasks__remove(struct sampler_tasks *t, pid_t pid);

/* Lets go the threads held since an attach that have stopped since; cheap when none
 * is, and called on every turn of the loop. */
void sampler_tasks__poll(struct sampler_tasks *t);
/* Threads that were still seized after an attach (@late, over the run) and those of
 * them still seized now (@held). */
void sampler_tasks__late(const struct sampler_tasks *t, uint32_t *late, uint32_t *held);

/* Clocks open now. */
uint32_t sampler_tasks__count(const struct sampler_tasks *t);
/* Closes every clock; the threads still held are still polled. */
void sampler_tasks__close(struct sampler_tasks *t);

#endif
