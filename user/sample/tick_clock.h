/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The scheduler's tick as the sampling clock (--clock tick): it already interrupts
 * every busy CPU HZ times a second, so sampling on it adds no interrupt of its own.
 * Whether this kernel can, and at what rate it ticks.
 */
#ifndef PBP_TICK_CLOCK_H
#define PBP_TICK_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "pbp_abi.h"

/* The tracepoint the tick's timer passes, which the program attaches to. */
#define TICK_CLOCK_TRACEPOINT "hrtimer_expire_entry"

/* The attached program's parts the check works with. */
struct tick_clock_probe {
	int fd;		/* pbp_clock_probe, run to read the kernel's clocks... */
	const volatile struct pbp_clock_reading *reading;	/* ... into this */
	volatile pbp_u32 *learn_cpu;	/* where timers' expiries are followed... */
	volatile pbp_u64 *learn_period;	/* ... knowing the tick's period... */
	int learn_fd;	/* ... into this map: timer -> struct pbp_tick_learn */
};

/*
 * 0 when the tick can be the clock at @rate_hz, with *@hz its rate and *@fn its
 * timer's function; else a negative errno and, in @why, the reason in words that end
 * a sentence. Keeps one CPU busy for about 200 ms.
 */
int tick_clock__check(const struct tick_clock_probe *p, uint32_t rate_hz, uint32_t *hz,
		      uint64_t *fn, char *why, size_t len);

/* Whether this kernel's BTF has the tracepoint to attach to. */
int tick_clock__kernel_has(void);

#endif
