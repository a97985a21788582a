// SPDX-License-Identifier: GPL-2.0-only
/*
 * Capability check from /proc/self/status, so a missing privilege is named before the
 * first bpf() call fails with a bare EPERM. CAP_SYS_ADMIN still implies CAP_BPF and
 * CAP_PERFMON, as it does in the kernel.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <grp.h>
#include <unistd.h>

#include "base/privs.h"

#define CAP_SYS_PTRACE_BIT 19
#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

static uint64_t effective_caps(void)
{
	unsigned long long caps = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return caps;
}

int privs__missing_bpf(char *buf, size_t len)
{
	static const struct {
		int bit;
		const char *name;
	} need[] = {
		{ CAP_BPF_BIT, "CAP_BPF" },
		{ CAP_PERFMON_BIT, "CAP_PERFMON" },
	};
	uint64_t caps = effective_caps();
	int missing = 0;
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		int have = (caps >> need[i].bit) & 1;

		if ((caps >> CAP_SYS_ADMIN_BIT) & 1)
			have = 1;
		if (have)
			continue;
		if (used < len)
			used += snprintf(buf + used, len - used, "%s%s", missing ? ", " : "",
					 need[i].name);
		missing++;
	}
	return missing;
}

int privs__missing_ptrace(void)
{
	return !((effective_caps() >> CAP_SYS_PTRACE_BIT) & 1);
}

int privs__become(uid_t uid, gid_t gid)
{
	uid_t r, e, saved;

	if (geteuid() != 0 || uid == 0)
		return 0;
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -errno;
	/* Root may not come back: checked, not assumed. */
	if (getresuid(&r, &e, &saved) || r != uid || e != uid || saved != uid)
		return -EPERM;
	return 0;
}
