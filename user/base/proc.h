/* SPDX-License-Identifier: GPL-2.0-only */
/* What /proc says about a process: liveness, mappings, CPU time, names. */
#ifndef PBP_PROC_H
#define PBP_PROC_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_map {
	uint64_t start, end, offset;
	uint64_t dev, inode;	/* the mapped file (dev is makedev(major, minor)); 0 if unknown */
	char path[PATH_MAX];	/* as the reader of /proc/PID/maps sees it (not the target,
				 * when the two have different roots) */
};

/* 0 if @pid exists and is not a zombie, -ESRCH otherwise. */
int proc__alive(pid_t pid);

/*
 * Which process and which image a PID names: its start time (field 22 of
 * /proc/PID/stat, in clock ticks since boot: a reused PID gets a later one), the
 * device and inode of its executable, and where the kernel put the AT_RANDOM bytes of
 * its auxiliary vector (on the new stack of every exec, at a random address under
 * ASLR: it tells an exec of the same file apart). A part that cannot be read is 0 and
 * is not compared. -EAGAIN while an exec is building the new image (its auxiliary
 * vector still empty): what is read then may not be the image that runs.
 */
struct proc_identity {
	uint64_t start;
	uint64_t exe_dev, exe_ino;
	uint64_t at_random;
};

int proc__identity(pid_t pid, struct proc_identity *id);
/* 0 if @pid still is the process @id was taken of, in the same image; -ESRCH if it is
 * gone (or the PID was reused), -ENOEXEC if it exec'd, -EAGAIN if its image cannot be
 * told now (in the middle of an exec). */
int proc__same(pid_t pid, const struct proc_identity *id);

/*
 * Calls @fn for each file-backed mapping of @pid until it returns non-zero (which is
 * then returned). -ESRCH/-EACCES if the maps cannot be read.
 */
int proc__maps(pid_t pid, int (*fn)(const struct proc_map *m, void *arg), void *arg);

/* CPU time (user + system) the whole process has used, in nanoseconds. */
int proc__cpu_ns(pid_t pid, uint64_t *ns);

/* The process's command name (comm), NUL-terminated, at most @len - 1 bytes. */
int proc__comm(pid_t pid, char *buf, size_t len);
/* 1 if the file name (not its directory) of the executable @pid runs contains @part,
 * else 0 (also when it cannot be read). */
int proc__exe_named(pid_t pid, const char *part);
/* The command line, arguments joined by spaces and cut to @len; the comm of a process
 * with none (a kernel thread, a zombie); -ESRCH if it is gone. */
int proc__cmdline(pid_t pid, char *buf, size_t len);
/* /proc/PID/cgroup, NUL-terminated (cut at @len - 1 bytes); -ESRCH if it is gone. */
int proc__cgroup(pid_t pid, char *buf, size_t len);
/* Calls @fn for each child process of @pid (of any of its threads); stops early on a
 * non-zero return and passes it on. -ESRCH if @pid is gone. */
int proc__children(pid_t pid, int (*fn)(pid_t child, void *arg), void *arg);
/* Calls @fn for each process on the host (as /proc lists them) until it returns
 * non-zero, which is returned. */
int proc__pids(int (*fn)(pid_t pid, void *arg), void *arg);

/*
 * @pid's root directory as this process sees it (readlink of /proc/PID/root): "/" for
 * a process in our root or in a container of its own mount namespace, the chroot's
 * path for a chroot. -ESRCH, -EACCES (no ptrace access) or -ENAMETOOLONG.
 */
int proc__root(pid_t pid, char *buf, size_t len);

/* The scheduler state of thread @tid of @pid as /proc shows it: 'R' running or
 * runnable, 'S' sleeping, 'D' in uninterruptible wait, ... -ESRCH if it is gone. */
int proc__thread_state(pid_t pid, pid_t tid, char *state);

/* 1 if @pid lives in a PID namespace below ours (its NSpid line has more than one
 * id), so that its own thread ids are not the ones /proc shows here; else 0. */
int proc__ns_nested(pid_t pid);
/* Calls @fn for each thread of @pid, until @fn returns non-zero (which is returned);
 * -ESRCH if @pid is gone. A thread may end before @fn sees it. */
int proc__tasks(pid_t pid, int (*fn)(pid_t tid, void *arg), void *arg);
/* The same with each thread's id in the target's own PID namespace too; a thread that
 * ended since the listing is left out. */
int proc__tasks_ns(pid_t pid, int (*fn)(pid_t tid, pid_t ns_tid, void *arg), void *arg);

#endif
