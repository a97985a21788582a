// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sample/perf_clock.h"

static int open_clock(pid_t who, int cpu, uint64_t period_ns, bool inherit, unsigned long flags)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/* A fixed period, not a frequency: the kernel would otherwise retune it
		 * and the expected sample count would drift. */
		.sample_period = period_ns,
		.inherit = inherit,
		.inherit_thread = inherit,
	};
	int fd = (int)syscall(__NR_perf_event_open, &attr, who, cpu, -1,
			      flags | PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int perf_clock__open(pid_t tid, int cpu, uint32_t rate_hz)
{
	return open_clock(tid, cpu, 1000000000ull / (rate_hz ? rate_hz : 1), tid >= 0, 0);
}

int perf_clock__open_cgroup(int cgroup_fd, int cpu, uint64_t period_ns)
{
	return open_clock(cgroup_fd, cpu, period_ns, false, PERF_FLAG_PID_CGROUP);
}

uint32_t perf_clock__max_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	unsigned long v = 0;

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v && v <= UINT32_MAX ? (uint32_t)v : PERF_CLOCK_MAX_RATE_DEFAULT;
}
