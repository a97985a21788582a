/* SPDX-License-Identifier: GPL-2.0-only */
/* Which of the capabilities the BPF path needs this process lacks. */
#ifndef PBP_PRIVS_H
#define PBP_PRIVS_H

#include <stddef.h>
#include <sys/types.h>

/* Writes the capabilities that loading and attaching BPF needs and this process lacks
 * ("CAP_BPF, CAP_PERFMON") into @buf; returns how many are missing (0: all there).
 * Reading the target's memory needs ptrace access instead, which the kernel checks
 * per target. */
int privs__missing_bpf(char *buf, size_t len);
/* 1 if this process lacks CAP_SYS_PTRACE: it may then read only processes of its own
 * user that hold no capability it lacks (the kernel's ptrace access check). */
int privs__missing_ptrace(void);
/* Becomes user @uid, group @gid, for good (no supplementary groups, no capabilities
 * left), when running as root and @uid is not root; otherwise changes nothing. 0, or
 * -errno if the change failed, when nothing more may be done. */
int privs__become(uid_t uid, gid_t gid);

#endif
