/* SPDX-License-Identifier: GPL-2.0-only */
/* The software clock the sampling program runs on: per CPU, or per thread. */
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

#endif
