// SPDX-License-Identifier: GPL-2.0-only
/*
 * Off-CPU intervals into classes; see offcpu_class.h. The task states are the
 * kernel's (include/linux/sched.h), the system call numbers this machine's.
 */
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"
#include "session/offcpu_class.h"

#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_STATE_MASK 0xff

/*
 * How far past the GIL's state a futex may lie and still be the GIL's: its condition
 * variables and mutexes (struct _gil_runtime_state: about 200 bytes on 64-bit Linux
 * from 3.11 to 3.15, the forced-switching pair included).
 */
#define GIL_SPAN 224

#define FD_RECHECK_NS (1000ull * 1000 * 1000)

static const struct {
	const char *key, *label;
} classes[OFFCPU_MAX] = {
	[OFFCPU_RUNNABLE] = { "runnable", "[runnable: waiting for a CPU]" },
	[OFFCPU_GIL] = { "gil", "[off-CPU: GIL wait]" },
	[OFFCPU_LOCK] = { "lock", "[off-CPU: lock (futex)]" },
	[OFFCPU_SLEEP] = { "sleep", "[off-CPU: sleep]" },
	[OFFCPU_READ] = { "read", "[off-CPU: read]" },
	[OFFCPU_WRITE] = { "write", "[off-CPU: write]" },
	[OFFCPU_POLL] = { "poll", "[off-CPU: poll / select]" },
	[OFFCPU_ACCEPT] = { "accept", "[off-CPU: accept / connect]" },
	[OFFCPU_CHILD] = { "child", "[off-CPU: waiting for a child]" },
	[OFFCPU_DISK] = { "disk", "[off-CPU: page fault / disk]" },
	[OFFCPU_OTHER] = { "other", "[off-CPU: other]" },
};

static enum offcpu_class of_syscall(long nr, uint64_t arg, uint64_t gil)
{
	switch (nr) {
	case SYS_futex:
#ifdef SYS_futex_waitv
	case SYS_futex_waitv:
#endif
		return gil && arg >= gil && arg - gil < GIL_SPAN ? OFFCPU_GIL : OFFCPU_LOCK;
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
		return OFFCPU_SLEEP;
	case SYS_read:
	case SYS_readv:
	case SYS_pread64:
	case SYS_preadv:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_recvmmsg:
		return OFFCPU_READ;
	case SYS_write:
	case SYS_writev:
	case SYS_pwrite64:
	case SYS_pwritev:
	case SYS_sendto:
	case SYS_sendmsg:
	case SYS_sendmmsg:
		return OFFCPU_WRITE;
#ifdef SYS_poll
	case SYS_poll:
#endif
#ifdef SYS_select
	case SYS_select:
#endif
#ifdef SYS_epoll_wait
	case SYS_epoll_wait:
#endif
	case SYS_ppoll:
	case SYS_pselect6:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
		return OFFCPU_POLL;
	case SYS_accept:
	case SYS_accept4:
	case SYS_connect:
		return OFFCPU_ACCEPT;
	case SYS_wait4:
	case SYS_waitid:
		return OFFCPU_CHILD;
	default:
		return OFFCPU_OTHER;
	}
}

enum offcpu_class offcpu_class__of(const struct pbp_sample *s)
{
	uint32_t state = s->off_state & TASK_STATE_MASK;

	if (!state)
		return OFFCPU_RUNNABLE;
	/* A system call that sleeps interruptibly says why; one that sleeps in D (a
	 * read from disk) and a fault outside any call are waits for the disk. */
	if (state & TASK_UNINTERRUPTIBLE)
		return OFFCPU_DISK;
	if (s->off_syscall < 0)
		return OFFCPU_OTHER;
	return of_syscall(s->off_syscall, s->off_arg, s->gil);
}

const char *offcpu_class__key(enum offcpu_class c)
{
	return c < OFFCPU_MAX ? classes[c].key : "other";
}

/* What descriptor @fd of @pid is: "socket", "pipe", "file", "tty", "event" or "". */
static const char *fd_kind(struct offcpu_classifier *c, pid_t pid, uint64_t fd)
{
	struct offcpu_fd_slot *slot;
	char path[64], link[64];
	uint64_t now = clock__mono_ns();
	ssize_t n;

	if (fd > 1u << 30)
		return "";
	slot = &c->fds[((uint64_t)pid * 31 + fd) % OFFCPU_FD_SLOTS];
	if (slot->pid == pid && slot->fd == (int)fd && now - slot->seen_ns < FD_RECHECK_NS)
		return slot->kind;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, (int)fd);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = '\0';
	*slot = (struct offcpu_fd_slot){ .pid = pid, .fd = (int)fd, .seen_ns = now };
	if (!strncmp(link, "socket:", 7))
		strcpy(slot->kind, "socket");
	else if (!strncmp(link, "pipe:", 5))
		strcpy(slot->kind, "pipe");
	else if (!strncmp(link, "/dev/pts/", 9) || !strncmp(link, "/dev/tty", 8))
		strcpy(slot->kind, "tty");
	else if (!strncmp(link, "anon_inode:", 11))
		strcpy(slot->kind, "event");
	else if (link[0] == '/')
		strcpy(slot->kind, "file");
	return slot->kind;
}

void offcpu_class__name(struct offcpu_classifier *c, const struct pbp_sample *s, char *buf,
			size_t len)
{
	enum offcpu_class k = offcpu_class__of(s);
	const char *what;

	if (k != OFFCPU_READ && k != OFFCPU_WRITE) {
		snprintf(buf, len, "%s", classes[k].label);
		return;
	}
	what = fd_kind(c, (pid_t)s->pid, s->off_arg);
	snprintf(buf, len, *what ? "[off-CPU: %s(%s)]" : "[off-CPU: %s%s]",
		 k == OFFCPU_READ ? "read" : "write", what);
}
