/* SPDX-License-Identifier: GPL-2.0-only */
/* The software clock the sampling program runs on: per CPU, per CPU while a cgroup's
 * tasks run there, or per thread. */
#ifndef PBP_PERF_CLOCK_H
#define PBP_PERF_CLOCK_H

#include <stdint.h>
#include <sys/types.h>

/*
 * A cpu-clock perf event firing every 1/@rate_hz s of CPU time: on CPU @cpu whoever
 * runs there (@tid -1), or for thread @tid wherever it runs (@cpu -1), inherited by
 * the threads it starts but not by child processes. A descriptor or -errno.
 */
int perf_clock__open(pid_t tid, int cpu, uint32_t rate_hz);
/*
 * A clock of period @period_ns on CPU @cpu, armed only while a task of the cgroup (v2)
 * whose directory @cgroup_fd is open, or of a cgroup below it, runs there. Its period
 * carries over from one such task to the next (the kernel stops and restarts it at
 * cgroup switches), so a thread shorter than a period is sampled in proportion to
 * its CPU time. A descriptor or -errno.
 */
int perf_clock__open_cgroup(int cgroup_fd, int cpu, uint64_t period_ns);

/* Used when the kernel's limit cannot be read. */
#define PERF_CLOCK_MAX_RATE_DEFAULT 100000

/*
 * The highest rate the kernel lets a clock fire at (kernel.perf_event_max_sample_rate;
 * PERF_CLOCK_MAX_RATE_DEFAULT if it cannot be read). The kernel lowers it by itself
 * when perf interrupts take too long, and then throttles faster clocks to it.
 */
uint32_t perf_clock__max_rate(void);

#endif
