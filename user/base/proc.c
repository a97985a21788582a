// SPDX-License-Identifier: GPL-2.0-only
/* /proc readers. Every one tolerates the process vanishing between two reads. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/proc.h"
#include "base/text_safe.h"

static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f;
	size_t n;

	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	if (!n)
		return -ESRCH;
	buf[n] = '\0';
	return 0;
}

static int read_stat(pid_t pid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return read_file(path, buf, len);
}

/* Fields after the comm, which may itself hold spaces and parentheses. */
static const char *stat_fields(const char *buf)
{
	const char *p = strrchr(buf, ')');

	return p ? p + 2 : NULL;
}

int proc__alive(pid_t pid)
{
	char buf[1024];
	const char *f;

	if (pid <= 0 || read_stat(pid, buf, sizeof(buf)))
		return -ESRCH;
	f = stat_fields(buf);
	if (!f || *f == 'Z' || *f == 'X')
		return -ESRCH;
	return 0;
}

#define AT_RANDOM_TYPE 25	/* <elf.h> AT_RANDOM */

/* Where AT_RANDOM points in @pid's auxiliary vector; -EAGAIN if the vector is there
 * but empty (an exec has put in a new image and not yet filled its stack), -ENOENT if
 * it cannot be read. */
static int auxv_random(pid_t pid, uint64_t *at)
{
	uint64_t v[2 * 64];
	char path[64];
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	n = (ssize_t)fread(v, 1, sizeof(v), f);
	fclose(f);
	if (n <= 0)
		return -ENOENT;
	for (ssize_t i = 0; i + 1 < n / (ssize_t)sizeof(v[0]); i += 2) {
		if (v[i] == AT_RANDOM_TYPE) {
			*at = v[i + 1];
			return 0;
		}
		if (!v[i])
			break;
	}
	return -EAGAIN;
}

int proc__identity(pid_t pid, struct proc_identity *id)
{
	unsigned long long start;
	char buf[1024], path[64];
	const char *f;
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (pid <= 0 || read_stat(pid, buf, sizeof(buf)))
		return -ESRCH;
	f = stat_fields(buf);
	/* fields 3 .. 21 (state .. itrealvalue), then 22: starttime */
	if (!f || sscanf(f, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			 "%*d %*d %*d %*d %llu", &start) != 1)
		return -EINVAL;
	if (*f == 'Z' || *f == 'X')
		return -ESRCH;
	id->start = start;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (!stat(path, &st)) {
		id->exe_dev = st.st_dev;
		id->exe_ino = st.st_ino;
	}
	return auxv_random(pid, &id->at_random) == -EAGAIN ? -EAGAIN : 0;
}

int proc__same(pid_t pid, const struct proc_identity *id)
{
	struct proc_identity now;
	int err = proc__identity(pid, &now);

	if (err)
		return err == -EINVAL ? -ESRCH : err;
	if (now.start != id->start)
		return -ESRCH;
	if ((id->exe_ino && !now.exe_ino) || (id->at_random && !now.at_random))
		return -EAGAIN;
	if ((id->exe_ino && (now.exe_ino != id->exe_ino || now.exe_dev != id->exe_dev)) ||
	    (id->at_random && now.at_random != id->at_random))
		return -ENOEXEC;
	return 0;
}

int proc__cpu_ns(pid_t pid, uint64_t *ns)
{
	unsigned long long utime, stime;
	char buf[1024];
	const char *f;
	long hz = sysconf(_SC_CLK_TCK);
	int err;

	err = read_stat(pid, buf, sizeof(buf));
	if (err)
		return err;
	f = stat_fields(buf);
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (!f || sscanf(f, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &utime, &stime) != 2)
		return -EINVAL;
	*ns = (utime + stime) * (1000000000ull / (hz > 0 ? hz : 100));
	return 0;
}

int proc__comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	if (len > INT_MAX || !fgets(buf, (int)len, f)) {
		fclose(f);
		return -ESRCH;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	text_safe__scrub(buf);	/* the target chose it (prctl PR_SET_NAME) */
	return 0;
}

/* Up to @len - 1 bytes of /proc/PID/@name; the count read, or -ESRCH. */
static ssize_t read_small(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (ssize_t)n;
}

int proc__cgroup(pid_t pid, char *buf, size_t len)
{
	ssize_t n = read_small(pid, "cgroup", buf, len);

	return n < 0 ? (int)n : 0;
}

int proc__cmdline(pid_t pid, char *buf, size_t len)
{
	ssize_t r = read_small(pid, "cmdline", buf, len);
	size_t n;

	if (r < 0)
		return (int)r;
	n = (size_t)r;
	while (n && !buf[n - 1])
		n--;
	if (!n)
		return proc__comm(pid, buf, len);
	for (size_t i = 0; i < n; i++)
		if (!buf[i] || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = 0;
	/* Logged, labelled and shown: the target chose it. */
	text_safe__scrub(buf);
	return 0;
}

int proc__exe_named(pid_t pid, const char *part)
{
	char link[64], exe[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	return strstr(base ? base + 1 : exe, part) != NULL;
}

int proc__children(pid_t pid, int (*fn)(pid_t child, void *arg), void *arg)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -ESRCH;
	/* A child belongs to the thread that forked it: every thread's list is read. */
	while (!ret && (de = readdir(dir))) {
		unsigned long child;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (!ret && fscanf(f, "%lu", &child) == 1)
			ret = fn((pid_t)child, arg);
		fclose(f);
	}
	closedir(dir);
	return ret;
}

int proc__pids(int (*fn)(pid_t pid, void *arg), void *arg)
{
	struct dirent *de;
	DIR *dir = opendir("/proc");
	int ret = 0;

	if (!dir)
		return -errno;
	while (!ret && (de = readdir(dir))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' && !*end && pid <= 0x7fffffff)
			ret = fn((pid_t)pid, arg);
	}
	closedir(dir);
	return ret;
}

int proc__root(pid_t pid, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	n = readlink(link, buf, len);
	if (n < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

int proc__maps(pid_t pid, int (*fn)(const struct proc_map *m, void *arg), void *arg)
{
	struct proc_map m;
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned int major, minor;
		int pos = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &m.start, &m.end, &m.offset, &major, &minor, &m.inode, &pos) < 6 || !pos)
			continue;
		m.dev = makedev(major, minor);
		if (line[pos] != '/')
			continue;
		snprintf(m.path, sizeof(m.path), "%s", line + pos);
		m.path[strcspn(m.path, "\n")] = '\0';
		ret = fn(&m, arg);
		if (ret)
			break;
	}
	free(line);
	fclose(f);
	return ret;
}

int proc__thread_state(pid_t pid, pid_t tid, char *state)
{
	char path[64], buf[1024];
	const char *f;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	err = read_file(path, buf, sizeof(buf));
	if (err)
		return err;
	f = stat_fields(buf);
	if (!f || !*f)
		return -ESRCH;
	*state = *f;
	return 0;
}

/* The last id on the NSpid line of the status file @path (the innermost namespace's)
 * and how many there are; @self and 1 where the kernel has no such line. */
static int status_ns_id(const char *path, pid_t self, pid_t *id, int *nids)
{
	char buf[4096];
	const char *p;
	char *end;
	long v = -1;
	int err = read_file(path, buf, sizeof(buf));

	if (err)
		return err;
	*nids = 0;
	p = strstr(buf, "\nNSpid:");
	if (!p) {
		*id = self;
		*nids = 1;
		return 0;
	}
	p += 7;
	for (;;) {
		long x = strtol(p, &end, 10);

		if (end == p)
			break;
		v = x;
		p = end;
		++*nids;
	}
	if (v <= 0 || v > INT32_MAX)
		return -EINVAL;
	*id = (pid_t)v;
	return 0;
}

int proc__ns_nested(pid_t pid)
{
	char path[64];
	pid_t id;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return !status_ns_id(path, pid, &id, &n) && n > 1;
}

int proc__tasks(pid_t pid, int (*fn)(pid_t tid, void *arg), void *arg)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!ret && (e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (*end || tid <= 0 || tid > INT32_MAX)
			continue;
		ret = fn((pid_t)tid, arg);
	}
	closedir(d);
	return ret;
}

struct tasks_ns {
	pid_t pid;
	int (*fn)(pid_t tid, pid_t ns_tid, void *arg);
	void *arg;
};

static int task_ns(pid_t tid, void *arg)
{
	const struct tasks_ns *a = arg;
	char path[64];
	pid_t ns;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)a->pid, (int)tid);
	/* A thread that ended since the listing is simply not there. */
	if (status_ns_id(path, tid, &ns, &n))
		return 0;
	return a->fn(tid, ns, a->arg);
}

int proc__tasks_ns(pid_t pid, int (*fn)(pid_t tid, pid_t ns_tid, void *arg), void *arg)
{
	struct tasks_ns a = { .pid = pid, .fn = fn, .arg = arg };

	return proc__tasks(pid, task_ns, &a);
}
