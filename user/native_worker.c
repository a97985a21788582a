// SPDX-License-Identifier: GPL-2.0-only
/*
 * The profiler's side of the parsing worker; see native_worker.h.
 *
 * Why a fresh image (fork, then exec of /proc/self/exe) rather than a fork that goes
 * on: a fork would keep a copy of everything the profiler holds, other processes'
 * stacks and the BPF objects' descriptors among them, for a process whose inputs may
 * take it over. The child closes every descriptor but its socket before the exec,
 * which it does with an empty environment (the tests' fault switch aside), and
 * confines itself before it reads a request.
 *
 * Why requests are synchronous: a parse is a step of decoding a sample, which waits
 * for its answer anyway, and the deadline needs one request in flight to know which
 * file to blame.
 */
#include "native_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "native_worker_proto.h"

struct quarantined {
	uint64_t dev, ino;
};

struct native_worker {
	pid_t pid;	/* 0: none runs */
	int fd;		/* our end of its socket */
	uint32_t seq;
	uint32_t failures; /* in a row */
	int faults;	/* the tests' switch is set */
	struct quarantined q[NATIVE_WORKER_QUARANTINE_MAX];
	uint32_t nq;
	struct native_worker_stats st;
};

static void stop(struct native_worker *w, int *status)
{
	if (!w->pid)
		return;
	close(w->fd);
	kill(w->pid, SIGKILL);
	if (waitpid(w->pid, status, 0) != w->pid && status)
		*status = 0;
	w->pid = 0;
	w->fd = -1;
}

/* Only async-signal-safe calls between fork and exec: the agent has threads. @sock
 * and @null are moved out of the way first, as either may be 0-3. */
static void exec_worker(int sock, int null, char *const envp[])
{
	char *const argv[] = { "pybpfprof", NATIVE_WORKER_ARG, NULL };

	sock = fcntl(sock, F_DUPFD, 10);
	null = fcntl(null, F_DUPFD, 10);
	if (sock < 0 || null < 0 || dup2(null, 0) || dup2(null, 1) != 1 || dup2(null, 2) != 2 ||
	    dup2(sock, NATIVE_WORKER_FD) != NATIVE_WORKER_FD ||
	    syscall(SYS_close_range, NATIVE_WORKER_FD + 1, ~0u, 0))
		_exit(127);
	execve("/proc/self/exe", argv, envp);
	_exit(127);
}

static int start(struct native_worker *w)
{
	static char faults_env[] = NATIVE_WORKER_FAULTS_ENV "=1";
	char *const envp[] = { w->faults ? faults_env : NULL, NULL };
	int sv[2], null;
	pid_t pid;

	if (w->failures >= NATIVE_WORKER_FAILURES_MAX)
		return -ECHILD;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return -errno;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		close(null);
		return -errno;
	}
	pid = fork();
	if (!pid)
		exec_worker(sv[1], null, envp);
	close(null);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return -errno;
	}
	w->pid = pid;
	w->fd = sv[0];
	w->st.starts++;
	return 0;
}

int native_worker__new(struct native_worker **out)
{
	struct native_worker *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->faults = getenv(NATIVE_WORKER_FAULTS_ENV) != NULL;
	err = start(w);
	if (err) {
		free(w);
		return err;
	}
	*out = w;
	return 0;
}

void native_worker__free(struct native_worker *w)
{
	if (!w)
		return;
	stop(w, NULL);
	free(w);
}

pid_t native_worker__pid(const struct native_worker *w)
{
	return w->pid;
}

void native_worker__stats(const struct native_worker *w, struct native_worker_stats *st)
{
	*st = w->st;
}

static int file_id(int fd, struct quarantined *id)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	*id = (struct quarantined){ .dev = (uint64_t)st.st_dev, .ino = (uint64_t)st.st_ino };
	return 0;
}

static int held(const struct native_worker *w, const struct quarantined *id)
{
	for (uint32_t i = 0; i < w->nq; i++)
		if (w->q[i].dev == id->dev && w->q[i].ino == id->ino)
			return 1;
	return 0;
}

int native_worker__quarantined(const struct native_worker *w, int fd)
{
	struct quarantined id;

	return !file_id(fd, &id) && held(w, &id);
}

/* The worker failed on @id's file (@why, for the warning): it goes. With @id NULL,
 * it failed before it could parse anything. */
static void blame(struct native_worker *w, const struct quarantined *id, const char *what,
		  const char *why)
{
	if (++w->failures == NATIVE_WORKER_FAILURES_MAX)
		pr_warn("the parsing worker failed %d times in a row: native objects are no "
			"longer parsed in this run\n", NATIVE_WORKER_FAILURES_MAX);
	if (!id) {
		if (w->failures == 1)
			pr_warn("the parsing worker cannot confine itself (uid 65534, seccomp)\n");
		return;
	}
	if (held(w, id))
		return;
	pr_warn("parsing %s %s: its native frames are [unknown] from now on\n", what, why);
	w->st.quarantined++;
	if (w->nq < NATIVE_WORKER_QUARANTINE_MAX)
		w->q[w->nq++] = *id;
}

static int send_request(struct native_worker *w, const struct native_worker_req *req, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = (void *)req, .iov_len = sizeof(*req) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			      .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	memset(c.buf, 0, sizeof(c.buf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(w->fd, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(*req) ? 0 : -errno;
}

/* Waits for the answer to @req until the deadline: 0, -ETIMEDOUT, or -ECHILD if the
 * worker closed its end (died) or answered something else than asked. */
static int receive_answer(struct native_worker *w, const struct native_worker_req *req,
			  struct native_worker_ans *ans)
{
	uint64_t deadline = clock__mono_ns() + NATIVE_WORKER_DEADLINE_MS * 1000000ull;
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	ssize_t n;

	for (;;) {
		uint64_t now = clock__mono_ns();
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)((deadline - now) / 1000000 + 1));
		if (r > 0)
			break;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	n = recv(w->fd, ans, sizeof(*ans), MSG_TRUNC | MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(*ans) || ans->op != req->op || ans->seq != req->seq ||
	    ans->err > NATIVE_BUILD_ID_MAX || ans->err < -4095)
		return -ECHILD;
	return 0;
}

static int call(struct native_worker *w, uint32_t op, int fd, const char *what,
		struct native_worker_ans *ans)
{
	struct native_worker_req req = { .op = op };
	struct quarantined id;
	char why[96];
	int err, status = 0;

	err = file_id(fd, &id);
	if (err)
		return err;
	if (held(w, &id)) {
		w->st.refused++;
		return -EPERM;
	}
	/* A worker that died between requests (its CPU limit) is replaced, blaming none. */
	for (int tries = 0; tries < 2; tries++) {
		if (!w->pid && (err = start(w)))
			return err;
		req.seq = ++w->seq;
		err = send_request(w, &req, fd);
		if (!err)
			break;
		stop(w, NULL);
	}
	if (err)
		return -ECHILD;
	err = receive_answer(w, &req, ans);
	if (!err) {
		w->failures = 0;
		w->st.requests++;
		return 0;
	}
	stop(w, &status);
	if (err == -ETIMEDOUT) {
		w->st.timeouts++;
		blame(w, &id, what, "took longer than the deadline");
		return err;
	}
	w->st.deaths++;
	/* Its CPU limit is the worker's age, not this file's doing. */
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
		return -ECHILD;
	if (WIFEXITED(status) && WEXITSTATUS(status) == NATIVE_WORKER_EXIT_UNCONFINED) {
		blame(w, NULL, what, NULL);
		return -ECHILD;
	}
	if (WIFSIGNALED(status))
		snprintf(why, sizeof(why), "killed the parsing worker (SIG%s)",
			 sigabbrev_np(WTERMSIG(status)) ?: "?");
	else
		snprintf(why, sizeof(why), "ended the parsing worker (exit %d)",
			 WEXITSTATUS(status));
	blame(w, &id, what, why);
	return -ECHILD;
}

int native_worker__build_id(struct native_worker *w, int fd, const char *what, uint8_t *id,
			    size_t cap)
{
	struct native_worker_ans ans;
	int err;

	err = call(w, NATIVE_WORKER_BUILD_ID, fd, what, &ans);
	if (err)
		return err;
	if (ans.err <= 0)
		return ans.err;
	if ((size_t)ans.err > cap || ans.err > NATIVE_BUILD_ID_MAX)
		return -ENOEXEC;
	memcpy(id, ans.build_id, (size_t)ans.err);
	return ans.err;
}

int native_worker__fpcheck(struct native_worker *w, int fd, const char *what,
			   struct native_fpcheck *out)
{
	struct native_worker_ans ans;
	int err;

	err = call(w, NATIVE_WORKER_FPCHECK, fd, what, &ans);
	if (err)
		return err;
	if (ans.err)
		return ans.err < 0 ? ans.err : -EPROTO;
	*out = ans.fpcheck;
	out->frame_pointers = !!out->frame_pointers;
	return 0;
}
