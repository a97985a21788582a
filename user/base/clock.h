/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one clock user space keeps time with: CLOCK_MONOTONIC, which is also the clock
 * of bpf_ktime_get_ns(), so the times BPF stamps on records compare with ours.
 */
#ifndef PBP_CLOCK_H
#define PBP_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CPU time of the calling thread: what decoding and unwinding cost us. */
static inline uint64_t clock__thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Wall-clock time, only for stamping profiles with when they were taken. */
static inline int64_t clock__real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

#endif
