// SPDX-License-Identifier: GPL-2.0-only
/*
 * HZ is a build option of the kernel that user space cannot ask for (sysconf's clock
 * ticks are USER_HZ, always 100, and the kernel's config is often not on the host, let
 * alone in a container). So it is measured: the jiffies count BPF reads at two of its
 * edges 100 ms apart, against the monotonic clock read in the same instant. The
 * loader stays busy on one CPU meanwhile, so that the CPU ticks and BPF learns which
 * timer is the tick's.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sample/tick_clock.h"

/* Between the readings on either side of an edge: any longer (the loader was
 * preempted) and the edge is looked for again. The tick's own interrupt falls between
 * them when it lands on the loader's CPU, which in a VM takes tens of microseconds. */
#define EDGE_SLACK_NS (1000 * 1000)
#define EDGE_TRIES 20
#define SPAN_NS (100 * 1000 * 1000)
/* The rates kernels are built with; a measure within 3 % of one is taken as it. */
static const uint32_t usual_hz[] = { 100, 250, 300, 1000 };

static int read_clocks(const struct tick_clock_probe *p, struct pbp_clock_reading *r)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	int err = bpf_prog_test_run_opts(p->fd, &opts);

	if (err)
		return err;
	r->jiffies = p->reading->jiffies;
	r->ns = p->reading->ns;
	return 0;
}

/* The reading just after the next jiffies edge; a few ticks at most. */
static int next_edge(const struct tick_clock_probe *p, struct pbp_clock_reading *edge)
{
	struct pbp_clock_reading prev, cur;
	int err;

	for (int tries = 0; tries < EDGE_TRIES; tries++) {
		err = read_clocks(p, &prev);
		if (err)
			return err;
		do {
			err = read_clocks(p, &cur);
			if (err)
				return err;
			/* A kernel whose jiffies stand still for 100 ms has no tick to use. */
			if (cur.ns - prev.ns > SPAN_NS)
				return -ETIME;
			if (cur.jiffies == prev.jiffies)
				prev = cur;
		} while (cur.jiffies == prev.jiffies);
		if (cur.ns - prev.ns <= EDGE_SLACK_NS) {
			*edge = cur;
			edge->ns = prev.ns + (cur.ns - prev.ns) / 2;
			return 0;
		}
	}
	return -EAGAIN;
}

/*
 * The tick's rate, with this thread busy on one CPU for SPAN_NS so that the CPU ticks
 * throughout; *@span_ns: how long it was busy, edge to edge.
 */
static int measure_hz(const struct tick_clock_probe *p, uint32_t *hz, uint64_t *span_ns)
{
	struct pbp_clock_reading a, b, now;
	int err;

	err = next_edge(p, &a);
	if (err)
		return err;
	do {
		err = read_clocks(p, &now);
		if (err)
			return err;
	} while (now.ns - a.ns < SPAN_NS);
	err = next_edge(p, &b);
	if (err)
		return err;
	*span_ns = b.ns - a.ns;
	if (!*span_ns || b.jiffies <= a.jiffies)
		return -ETIME;
	*hz = (uint32_t)(((b.jiffies - a.jiffies) * 1000000000ull + *span_ns / 2) / *span_ns);
	for (size_t i = 0; i < sizeof(usual_hz) / sizeof(usual_hz[0]); i++) {
		if (*hz * 100 >= usual_hz[i] * 97 && *hz * 100 <= usual_hz[i] * 103)
			*hz = usual_hz[i];
	}
	return *hz ? 0 : -ETIME;
}

/*
 * The function of the timer that expired one tick @period after its previous expiry
 * most often on the busy CPU, @want times if all went well: the tick's. Another
 * timer as regular there (someone's perf clock at HZ) makes it ambiguous, and then
 * none is taken.
 */
static int pick_tick_fn(int map_fd, uint64_t want, uint64_t *fn)
{
	struct pbp_tick_learn l;
	uint64_t key, next, best = 0, second = 0, best_fn = 0;
	int err = bpf_map_get_next_key(map_fd, NULL, &next);

	while (!err) {
		key = next;
		if (!bpf_map_lookup_elem(map_fd, &key, &l)) {
			if (l.on_period > best) {
				second = best;
				best = l.on_period;
				best_fn = l.fn;
			} else if (l.on_period > second) {
				second = l.on_period;
			}
		}
		err = bpf_map_get_next_key(map_fd, &key, &next);
	}
	if (!best_fn || best * 2 < want || second * 2 > best)
		return -ENOENT;
	*fn = best_fn;
	return 0;
}

/* Keeps the CPU busy for @ns, so that it ticks throughout. */
static void busy_for(uint64_t ns)
{
	struct timespec t;
	uint64_t end;

	clock_gettime(CLOCK_MONOTONIC, &t);
	end = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec + ns;
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec < end);
}

/* Keeps this thread on the CPU it is on; @old gets its affinity back. */
static int pin_here(cpu_set_t *old, uint32_t *cpu)
{
	cpu_set_t one;
	int c = sched_getcpu();

	if (c < 0 || sched_getaffinity(0, sizeof(*old), old))
		return -errno;
	CPU_ZERO(&one);
	CPU_SET(c, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -errno;
	*cpu = (uint32_t)c;
	return 0;
}

/* Whether some CPU runs without a tick while busy (nohz_full=): its threads would
 * go unsampled. */
static int some_cpu_tickless(void)
{
	char buf[256] = "";
	FILE *f = fopen("/sys/devices/system/cpu/nohz_full", "re");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return buf[0] && buf[0] != '\n' && strncmp(buf, "(null)", 6);
}

int tick_clock__kernel_has(void)
{
	return libbpf_find_vmlinux_btf_id(TICK_CLOCK_TRACEPOINT, BPF_TRACE_RAW_TP) > 0;
}

int tick_clock__check(const struct tick_clock_probe *p, uint32_t rate_hz, uint32_t *hz,
		      uint64_t *fn, char *why, size_t len)
{
	uint64_t span_ns = 0, period = 1;
	uint32_t cpu = 0;
	cpu_set_t old;
	int err;

	*hz = 0;
	if (some_cpu_tickless()) {
		snprintf(why, len, "some CPUs run without a tick (nohz_full)");
		return -EOPNOTSUPP;
	}
	err = pin_here(&old, &cpu);
	if (err) {
		snprintf(why, len, "the loader could not stay on one CPU (%s)", strerror(-err));
		return err;
	}
	err = measure_hz(p, hz, &span_ns);
	if (!err) {
		period = (1000000000ull + *hz / 2) / *hz;
		*p->learn_period = period;
		*p->learn_cpu = cpu;
		busy_for(SPAN_NS);
		*p->learn_cpu = (pbp_u32)-1;
		*p->learn_period = 0;
	}
	sched_setaffinity(0, sizeof(old), &old);
	if (err) {
		snprintf(why, len, "its rate could not be measured (%s)", strerror(-err));
		return err;
	}
	if (pick_tick_fn(p->learn_fd, SPAN_NS / period, fn)) {
		snprintf(why, len, "no timer of CPU %u expired every %u Hz tick, alone (the "
			 "kernel runs without high-resolution timers, or another timer as "
			 "regular shares the CPU)", cpu, *hz);
		return -EOPNOTSUPP;
	}
	if (rate_hz > *hz) {
		snprintf(why, len, "it runs at %u Hz, below the %u Hz asked", *hz, rate_hz);
		return -ERANGE;
	}
	return 0;
}
