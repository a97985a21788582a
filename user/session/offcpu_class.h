/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Why a thread was off the CPU, from what the kernel saw as it switched out (its
 * task state, the system call it was in and that call's first argument) and what
 * the interpreter tells (where its GIL lives). The answer is the name of the leaf
 * frame an off-CPU interval is charged to: "[off-CPU: lock (futex)]".
 */
#ifndef PBP_OFFCPU_CLASS_H
#define PBP_OFFCPU_CLASS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pbp_abi.h"

enum offcpu_class {
	OFFCPU_RUNNABLE,	/* preempted: runnable, waiting for a CPU */
	OFFCPU_GIL,		/* waiting for the GIL */
	OFFCPU_LOCK,		/* any other futex: a lock, a condition, a queue */
	OFFCPU_SLEEP,		/* nanosleep: time.sleep */
	OFFCPU_READ,		/* read/recv on a descriptor */
	OFFCPU_WRITE,		/* write/send on a descriptor */
	OFFCPU_POLL,		/* poll, select, epoll: an event loop waiting */
	OFFCPU_ACCEPT,		/* accept, connect */
	OFFCPU_CHILD,		/* waiting for a child process */
	OFFCPU_DISK,		/* uninterruptible: page fault, disk */
	OFFCPU_OTHER,		/* another system call, or none */
	OFFCPU_MAX,
};

/* Remembers what each (process, descriptor) was, for a second: a busy reader blocks
 * on the same socket thousands of times a second. */
#define OFFCPU_FD_SLOTS 256

struct offcpu_fd_slot {
	pid_t pid;
	int fd;
	uint64_t seen_ns;
	char kind[12];
};

struct offcpu_classifier {
	struct offcpu_fd_slot fds[OFFCPU_FD_SLOTS];
};

/* The class of the interval in @s, which must carry PBP_SF_OFF_CPU. */
enum offcpu_class offcpu_class__of(const struct pbp_sample *s);
/* Its stats name: "gil", "lock", ... */
const char *offcpu_class__key(enum offcpu_class c);
/* The leaf frame's name for @s into @buf: "[off-CPU: read(socket)]". Reads
 * /proc/PID/fd for what a read or write waited on. */
void offcpu_class__name(struct offcpu_classifier *c, const struct pbp_sample *s, char *buf,
			size_t len);

#endif
