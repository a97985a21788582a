// SPDX-License-Identifier: GPL-2.0-only
/*
 * The order matters. Limits and the capability bounding set are set while still root
 * (dropping bounding capabilities needs CAP_SETPCAP); then groups, gid and uid, after
 * which the kernel clears the permitted and effective sets (no SECBIT_KEEP_CAPS), and
 * every capability left is dropped;
 * then no_new_privs, which seccomp needs from an unprivileged caller and which makes a
 * later exec of a set-uid file gain nothing; the filter last, so that the calls above
 * need not be on its list. The process is made non-dumpable as well: another process
 * of the same uid (65534 is every "nobody" on the host) cannot then ptrace it or read
 * its memory.
 */
#include "native/sandbox.h"

#include <errno.h>
#include <signal.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/privs.h"

/* Calls on both lists, at most: a jump in a filter reaches 255 words on. */
#define SANDBOX_MAX_SYSCALLS 200

/* Lowers @resource to @soft and @hard, or to the hard limit there is if lower: raising
 * it needs CAP_SYS_RESOURCE, which the least-privilege deployments do not grant. */
static int limit(int resource, uint64_t soft, uint64_t hard)
{
	struct rlimit r;

	if (getrlimit(resource, &r))
		return -errno;
	if (r.rlim_max != RLIM_INFINITY && hard > r.rlim_max)
		hard = r.rlim_max;
	r = (struct rlimit){ .rlim_cur = soft < hard ? soft : hard, .rlim_max = hard };
	return setrlimit(resource, &r) ? -errno : 0;
}

/* The address space mapped now, in bytes (a sanitizer build reserves terabytes of
 * shadow before main). */
static int mapped_now(uint64_t *bytes)
{
	unsigned long long pages;
	FILE *f = fopen("/proc/self/statm", "re");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%llu", &pages);
	fclose(f);
	if (n != 1)
		return -EIO;
	*bytes = pages * (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}

/* Needs CAP_SETPCAP, which the least-privilege deployments do not grant: without it
 * the set stays, and no_new_privs (no exec of a set-uid or file-capability binary can
 * raise the sets from it) and the filter (no exec at all) make it moot. */
static int drop_bounding_set(void)
{
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL && errno != EPERM)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	return 0;
}

/* A profiler run by another user than root with capabilities keeps its uid: the
 * capabilities go all the same. */
static int drop_capabilities(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };

	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/* Kills the process on any call of another architecture, an x32 call, or a call on
 * neither list. */
static int install_filter(const struct sandbox_limits *l)
{
	struct sock_filter f[9 + SANDBOX_MAX_SYSCALLS];
	const size_t n = l->nsyscalls, r = l->nrefused;
	struct sock_fprog prog;
	size_t k = 0;

	if (n + r > SANDBOX_MAX_SYSCALLS)
		return -E2BIG;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	/* Allowed call i jumps over the tests after it, the kill and the refusal. */
	for (size_t i = 0; i < n; i++)
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (uint32_t)l->syscalls[i],
						      (uint8_t)(n - 1 - i + r + 2), 0);
	/* Refused call j jumps over the tests after it and the kill. */
	for (size_t j = 0; j < r; j++)
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (uint32_t)l->refused[j], (uint8_t)(r - j), 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog = (struct sock_fprog){ .len = (unsigned short)k, .filter = f };
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) ? -errno : 0;
}

int sandbox__enter(const struct sandbox_limits *l)
{
	uint64_t mapped = 0;
	int err;

	err = mapped_now(&mapped);
	if (!err)
		err = limit(RLIMIT_AS, mapped + l->mem_bytes, mapped + l->mem_bytes);
	if (!err)
		err = limit(RLIMIT_CPU, l->cpu_s, l->cpu_s + 1);
	if (!err)
		err = limit(RLIMIT_NOFILE, l->files, l->files);
	if (!err)
		err = limit(RLIMIT_CORE, 0, 0);
	if (!err)
		err = limit(RLIMIT_FSIZE, l->file_bytes, l->file_bytes);
	if (!err)
		err = limit(RLIMIT_NPROC, 0, 0);
	if (!err)
		err = drop_bounding_set();
	if (err)
		return err;
	/* Without CAP_SETUID (the least-privilege deployments) the uid stays: root
	 * without any capability, kept by the filter from opening, signalling or
	 * tracing anything. */
	err = privs__become(l->uid, l->gid);
	if (err == -EPERM && getuid() == 0 && geteuid() == 0)
		err = 0;
	if (!err)
		err = drop_capabilities();
	if (err)
		return err;
	if (geteuid() && !setuid(0))
		return -EPERM;	/* back to root must be impossible */
	/* After the uid change, which clears it; and the parent may have gone before. */
	if (l->parent && (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != l->parent))
		return -ESRCH;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return -errno;
	return install_filter(l);
}
