// SPDX-License-Identifier: GPL-2.0-only
/*
 * The profiler's side of the parsing worker; see native_worker.h.
 *
 * Why a fresh image (fork, then exec of /proc/self/exe) rather than a fork that goes
 * on: a fork would keep a copy of everything the profiler holds, other processes'
 * stacks and the BPF objects' descriptors among them, for a process whose inputs may
 * take it over. The child closes every descriptor but its socket and the board before
 * the exec, which it does with an empty environment (the tests' fault switch aside),
 * and confines itself before it reads a request.
 *
 * Why requests are synchronous: a walk is a step of decoding a sample, which waits for
 * its answer anyway, and the deadline needs one request in flight to know which file
 * to blame.
 */
#include "native/native_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "native/native_proc.h"
#include "native/native_worker_answer.h"
#include "native/native_worker_proto.h"
#include "base/proc.h"
#include "base/text_safe.h"
#include "base/vec.h"

#define DEBUG_DIR "/usr/lib/debug/"
/* Asks a request may make, and re-reads of the maps they may cost: a process maps at
 * most NATIVE_MAPS_MAX_ENTRIES files, each opened once for its build-id and once for
 * the unwinder, with a few debug-file candidates each. */
#define ASKS_MAX (4 * NATIVE_MAPS_MAX_ENTRIES + 64)
#define REREADS_MAX 8

struct quarantined {
	uint64_t dev, ino;
};

struct native_worker {
	pid_t pid;	/* 0: none runs */
	int fd;		/* our end of its socket */
	int board_fd;
	struct nw_board *board;
	uint32_t seq, next_handle;
	uint32_t failures; /* in a row */
	uint64_t unblamed; /* failures in no file the worker named: warned about once */
	int faults;	/* the tests' switch is set */
	struct native_worker_proc **procs;
	size_t nprocs, cap;
	struct quarantined q[NATIVE_WORKER_QUARANTINE_MAX];
	uint32_t nq;
	uint8_t *rx;	/* a message */
	uint8_t *ans;	/* an answer's parts */
	size_t nans, cap_ans;
	struct native_worker_arena arena;	/* the answer's strings */
	int ring_fd;	/* the samples ring (native_worker__ring()), -1: none */
	uint32_t ring_bytes;
	const uint8_t *ring_data;
	uint64_t ring_for; /* the worker (by w->st.starts) that has mapped it */
	struct native_worker_stats st;
};

struct native_worker_proc {
	struct native_worker *w; /* NULL once the worker is freed */
	uint32_t handle;
	pid_t pid;
	uint32_t asks, rereads;	  /* in the request under way */
	uint64_t refreshed_ns;	  /* the last NW_REFRESH sent */
	int walked;		  /* ... and whether a walk came since */
	struct native_maps *maps; /* our own read: what asks are checked against */
	/* A core's (native_worker__core_proc()): @maps are the core's, never read again,
	 * and every file is the host's; pid is the core's, never looked up. */
	int core;
};

/* ---- The process ---- */

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

/* A sanitizer build (the tests') keeps the worker's stderr: its reports must be seen. */
#ifdef __SANITIZE_ADDRESS__
#define SANITIZER_REPORTS 1
#else
#define SANITIZER_REPORTS 0
#endif

/* Only async-signal-safe calls between fork and exec: the agent has threads. Each
 * descriptor is moved out of the way first, as any may be 0-4. */
static void exec_worker(int sock, int board, int null, char *const envp[])
{
	char *const argv[] = { "pybpfprof", NATIVE_WORKER_ARG, NULL };

	/* A session of its own: the terminal's ^C and ^Z go to the profiler, which ends
	 * its run with the worker still there to walk the last samples. */
	setsid();
	sock = fcntl(sock, F_DUPFD, 10);
	board = fcntl(board, F_DUPFD, 10);
	null = fcntl(null, F_DUPFD, 10);
	if (sock < 0 || board < 0 || null < 0 || dup2(null, 0) || dup2(null, 1) != 1 ||
	    (!SANITIZER_REPORTS && dup2(null, 2) != 2) ||
	    dup2(sock, NATIVE_WORKER_FD) != NATIVE_WORKER_FD ||
	    dup2(board, NATIVE_WORKER_BOARD_FD) != NATIVE_WORKER_BOARD_FD ||
	    syscall(SYS_close_range, NATIVE_WORKER_BOARD_FD + 1, ~0u, 0))
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

	if (w->failures >= NATIVE_WORKER_FAILURES_MAX || w->st.starts >= NATIVE_WORKER_STARTS_MAX)
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
		exec_worker(sv[1], w->board_fd, null, envp);
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
	void *board = MAP_FAILED;
	int err = -ENOMEM;

	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->ring_fd = -1;
	w->faults = getenv(NATIVE_WORKER_FAULTS_ENV) != NULL;
	w->rx = malloc(sizeof(struct nw_header) + NATIVE_WORKER_MSG_MAX);
	w->board_fd = memfd_create("pbp-worker-board", MFD_CLOEXEC);
	if (!w->rx || w->board_fd < 0 || ftruncate(w->board_fd, sizeof(struct nw_board))) {
		err = w->rx ? -errno : -ENOMEM;
		goto fail;
	}
	board = mmap(NULL, sizeof(struct nw_board), PROT_READ | PROT_WRITE, MAP_SHARED,
		     w->board_fd, 0);
	if (board == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	w->board = board;
	err = start(w);
	if (err)
		goto fail;
	*out = w;
	return 0;
fail:
	if (board != MAP_FAILED)
		munmap(board, sizeof(struct nw_board));
	if (w->board_fd >= 0)
		close(w->board_fd);
	free(w->rx);
	free(w);
	return err;
}

void native_worker__free(struct native_worker *w)
{
	if (!w)
		return;
	stop(w, NULL);
	for (size_t i = 0; i < w->nprocs; i++)
		w->procs[i]->w = NULL;
	free(w->procs);
	munmap(w->board, sizeof(struct nw_board));
	close(w->board_fd);
	if (w->ring_fd >= 0)
		close(w->ring_fd);
	free(w->rx);
	free(w->ans);
	free(w->arena.strs);
	free(w);
}

void native_worker__stats(const struct native_worker *w, struct native_worker_stats *st)
{
	*st = w->st;
}

/* ---- Quarantine ---- */

static int held(const struct native_worker *w, uint64_t dev, uint64_t ino)
{
	for (uint32_t i = 0; i < w->nq; i++)
		if (w->q[i].dev == dev && w->q[i].ino == ino)
			return 1;
	return 0;
}

/* The worker failed (@why), parsing the file on its board if it names one: that file
 * goes. */
static void blame(struct native_worker *w, const struct native_worker_proc *p, const char *why)
{
	const struct nw_board b = *w->board;
	const char *path = NULL;
	char safe[512];

	if (++w->failures == NATIVE_WORKER_FAILURES_MAX ||
	    w->st.starts == NATIVE_WORKER_STARTS_MAX)
		pr_warn("the parsing worker failed %u times: native frames are no longer "
			"unwound in this run\n", (unsigned int)(w->st.deaths + w->st.timeouts));
	if (!why) {
		if (w->failures == 1)
			pr_warn("the parsing worker cannot confine itself (uid 65534, seccomp)\n");
		return;
	}
	if ((!b.dev && !b.ino) || held(w, b.dev, b.ino)) {
		if (!w->unblamed++)
			pr_warn("a request %s, in no object it names\n", why);
		return;
	}
	for (size_t i = 0; p->maps && i < p->maps->n && !path; i++)
		if (p->maps->maps[i].dev == b.dev && p->maps->maps[i].ino == b.ino)
			path = p->maps->maps[i].path;
	/* The target chose the name: no control character reaches the terminal. */
	snprintf(safe, sizeof(safe), "%s", path ? path : "an object of the target");
	text_safe__scrub(safe);
	pr_warn("parsing %s %s: its native frames are [unknown] from now on\n", safe, why);
	w->st.quarantined++;
	if (w->nq < NATIVE_WORKER_QUARANTINE_MAX)
		w->q[w->nq++] = (struct quarantined){ .dev = b.dev, .ino = b.ino };
}

/* ---- Asks ---- */

static int reread(struct native_worker_proc *p)
{
	struct native_maps *m = NULL;
	int err;

	if (p->core || ++p->rereads > REREADS_MAX)
		return -EPERM;
	err = native_maps__read(p->pid, NULL, NULL, &m);
	if (err)
		return err;
	native_maps__free(p->maps);
	p->maps = m;
	return 0;
}

/* An ask's payload: @hlen bytes into @head, then a path of at least one byte, none of
 * them NUL, into @path (NW_PATH_MAX + 1 bytes). 0 or -EPROTO. */
static int split_ask(const uint8_t *payload, uint32_t len, void *head, size_t hlen, char *path)
{
	size_t plen = len - hlen;

	if (len <= hlen || plen > NW_PATH_MAX || memchr(payload + hlen, 0, plen))
		return -EPROTO;
	memcpy(head, payload, hlen);
	memcpy(path, payload + hlen, plen);
	path[plen] = '\0';
	return 0;
}

static const struct native_map *find_mapped(const struct native_maps *m,
					    const struct nw_ask_mapped *a, const char *path)
{
	const struct native_map *e = m ? native_maps__find(m, a->start) : NULL;

	if (e && e->start == a->start && e->end == a->end && e->offset == a->offset &&
	    e->dev == a->dev && e->ino == a->ino && !strcmp(e->path, path))
		return e;
	return NULL;
}

/* A file the target maps: the one its maps name at that address, now. */
static int open_mapped(struct native_worker_proc *p, const uint8_t *payload, uint32_t len)
{
	char path[NW_PATH_MAX + 1];
	struct nw_ask_mapped a;
	const struct native_map *e;

	if (split_ask(payload, len, &a, sizeof(a), path))
		return -EPROTO;
	e = find_mapped(p->maps, &a, path);
	if (!e && !reread(p))
		e = find_mapped(p->maps, &a, path);
	if (!e || held(p->w, e->dev, e->ino))
		return -EPERM;
	return native_maps__open(p->maps, e);
}

/* Whether @dir (@n bytes) is the directory of a file the target maps, as the target
 * names it, or its .debug/. */
static int beside_mapped(const struct native_maps *m, const char *dir, size_t n)
{
	for (size_t i = 0; m && i < m->n; i++) {
		const char *ip = native_maps__in_root(m, m->maps[i].path);
		const char *slash = strrchr(ip, '/');
		size_t d = slash ? (size_t)(slash - ip) : 0;

		if (!slash)
			continue;
		if (n == d && !memcmp(dir, ip, d))
			return 1;
		if (n == d + 7 && !memcmp(dir, ip, d) && !memcmp(dir + d, "/.debug", 7))
			return 1;
	}
	return 0;
}

/* A debug-file candidate: under /usr/lib/debug or beside a mapped object, inside the
 * target's root, by a path with no "." or ".." in it. */
static int open_debug(struct native_worker_proc *p, const uint8_t *payload, uint32_t len)
{
	char path[NW_PATH_MAX + 1];
	const char *slash;
	uint32_t in_root;

	if (split_ask(payload, len, &in_root, sizeof(in_root), path))
		return -EPROTO;
	if (in_root != 1 || path[0] != '/' || strstr(path, "//") ||
	    strstr(path, "/./") || strstr(path, "/../"))
		return -EPERM;
	slash = strrchr(path, '/');
	if (!strcmp(slash, "/.") || !strcmp(slash, "/.."))
		return -EPERM;
	if (strncmp(path, DEBUG_DIR, sizeof(DEBUG_DIR) - 1) &&
	    !beside_mapped(p->maps, path, (size_t)(slash - path)))
		return -EPERM;
	/* A core's are the host's: a core is never a way into a live process. */
	return native_files__debug(NULL, p->pid, !p->core, path);
}

/* A core's maps as /proc/PID/maps would list them, in a memfd: each mapping of code
 * with its host path (one with a newline in it left out), no device, and the inode
 * native_core gave it. */
static int core_maps(const struct native_maps *m)
{
	FILE *f;
	int fd, err = 0;

	fd = memfd_create("pbp-core-maps", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(dup(fd), "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n && !err; i++) {
		const struct native_map *e = &m->maps[i];

		if (!strchr(e->path, '\n') &&
		    fprintf(f, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " 00:00 %" PRIu64 " %s\n",
			    e->start, e->end, e->offset, e->ino, e->path) < 0)
			err = -EIO;
	}
	if (fclose(f) && !err)
		err = -EIO;
	if (!err && lseek(fd, 0, SEEK_SET))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* Room for one descriptor passed with a message. */
union fd_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

/* Attaches @fd to @msg, in @c, if it is one. */
static void attach_fd(struct msghdr *msg, union fd_cmsg *c, int fd)
{
	struct cmsghdr *cm;

	if (fd < 0)
		return;
	memset(c->buf, 0, sizeof(c->buf));
	msg->msg_control = c->buf;
	msg->msg_controllen = sizeof(c->buf);
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
}

/* The answer to @ask: @fd (closed here) or its error; or, with @fd -1, @len bytes of
 * @payload. */
static int send_file(struct native_worker *w, const struct nw_header *ask, int fd,
		     const void *payload, size_t len)
{
	union fd_cmsg c;
	struct nw_header h = { .type = NW_FILE, .seq = ask->seq, .handle = ask->handle,
			       .err = fd < 0 && !len ? fd : 0, .len = (uint32_t)len };
	struct iovec iov[2] = { { .iov_base = &h, .iov_len = sizeof(h) },
				{ .iov_base = (void *)payload, .iov_len = len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	int err;

	attach_fd(&msg, &c, fd);
	err = sendmsg(w->fd, &msg, MSG_NOSIGNAL) == (ssize_t)(sizeof(h) + len) ? 0 : -ECHILD;
	if (fd >= 0)
		close(fd);
	return err;
}

static int serve_ask(struct native_worker_proc *p, const struct nw_header *h,
		     const uint8_t *payload)
{
	char root[NW_PATH_MAX];
	int fd;

	if (h->handle != p->handle) {
		p->w->st.refused++;	/* about another process than the request's */
		return send_file(p->w, h, -EPERM, NULL, 0);
	}
	if (h->type == NW_ASK_ROOT && p->core)
		return send_file(p->w, h, -1, "/", 1);
	if (h->type == NW_ASK_ROOT) {
		fd = proc__root(p->pid, root, sizeof(root));
		return fd ? send_file(p->w, h, fd, NULL, 0) :
			    send_file(p->w, h, -1, root, strlen(root));
	}
	if (!p->maps && h->type != NW_ASK_MAPS)
		reread(p);
	switch (h->type) {
	case NW_ASK_MAPS:
		fd = p->core ? core_maps(p->maps) : native_files__maps(NULL, p->pid);
		break;
	case NW_ASK_MAPPED:
		fd = open_mapped(p, payload, h->len);
		break;
	case NW_ASK_DEBUG:
		fd = open_debug(p, payload, h->len);
		break;
	default:
		fd = -EPROTO;
	}
	if (fd == -EPERM)
		p->w->st.refused++;
	return send_file(p->w, h, fd, NULL, 0);
}

/* ---- Requests ---- */

/* Waits until the deadline for one message: 0 with it in w->rx, -ETIMEDOUT, or
 * -ECHILD if the worker closed its end (died) or sent something malformed. */
static int receive(struct native_worker *w, uint64_t deadline)
{
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
	struct iovec iov = { .iov_base = w->rx,
			     .iov_len = sizeof(struct nw_header) + NATIVE_WORKER_MSG_MAX };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	const struct nw_header *h = (const void *)w->rx;
	ssize_t n;

	for (;;) {
		uint64_t now = clock__mono_ns();
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)((deadline - now) / 1000000 + 1));
		if (r > 0)
			break;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	/* No control buffer: a descriptor the worker sends is closed by the kernel. */
	n = recvmsg(w->fd, &msg, MSG_DONTWAIT);
	if (n < (ssize_t)sizeof(*h) || (msg.msg_flags & MSG_TRUNC) ||
	    h->len != (size_t)n - sizeof(*h))
		return -ECHILD;
	return 0;
}

static int add_part(struct native_worker *w, const struct nw_header *h)
{
	if (!h->len)
		return 0;
	if (w->nans + h->len > NATIVE_WORKER_ANSWER_MAX)
		return -ECHILD;
	if (vec__reserve((void **)&w->ans, &w->cap_ans, w->nans + h->len, 1, 64 << 10))
		return -ENOMEM;
	memcpy(w->ans + w->nans, w->rx + sizeof(*h), h->len);
	w->nans += h->len;
	return 0;
}

/* Serves the worker's asks until its answer to @req is whole in w->ans: its error, or
 * -ETIMEDOUT/-ECHILD, -ENOMEM. */
static int await(struct native_worker_proc *p, const struct nw_header *req, uint64_t deadline)
{
	struct native_worker *w = p->w;
	const struct nw_header *h = (const void *)w->rx;
	int err;

	w->nans = 0;
	p->asks = p->rereads = 0;
	for (;;) {
		err = receive(w, deadline);
		if (err)
			return err;
		if (h->seq != req->seq || h->handle != req->handle)
			return -ECHILD;
		switch (h->type) {
		case NW_ASK_MAPS:
		case NW_ASK_ROOT:
		case NW_ASK_MAPPED:
		case NW_ASK_DEBUG:
			err = ++p->asks > ASKS_MAX ? -ECHILD : serve_ask(p, h, w->rx + sizeof(*h));
			break;
		case NW_PART:
			err = add_part(w, h);
			break;
		case NW_DONE:
			err = add_part(w, h);
			if (err)
				return err;
			if (h->err > 0 || h->err < -4095)
				return -ECHILD;
			/* Those two say what became of the worker, not of the request. */
			return h->err == -ETIMEDOUT || h->err == -ECHILD ? -EIO : h->err;
		default:
			err = -ECHILD;
		}
		if (err)
			return err;
	}
}

/*
 * Sends request @type about @p with the payload @iov (@n pieces) and waits for its
 * answer (in w->ans). The worker is started first if none runs; if it failed, it is
 * killed, and the file on its board quarantined.
 */
static int call(struct native_worker_proc *p, uint32_t type, uint64_t now_ns,
		struct iovec *iov, size_t n, int fd)
{
	struct native_worker *w = p->w;
	struct nw_header h = { .type = type, .handle = p->handle, .pid = (int32_t)p->pid,
			       .now_ns = now_ns };
	union fd_cmsg c;
	struct iovec all[5];
	struct msghdr msg = { .msg_iov = all, .msg_iovlen = n + 1 };
	uint64_t deadline;
	int err, status = 0;
	char why[96];

	if (!w)
		return -ECHILD;
	if (n > 4)
		return -EINVAL;
	all[0] = (struct iovec){ .iov_base = &h, .iov_len = sizeof(h) };
	for (size_t i = 0; i < n; i++) {
		all[i + 1] = iov[i];
		h.len += (uint32_t)iov[i].iov_len;
	}
	if (h.len > NATIVE_WORKER_MSG_MAX)
		return -E2BIG;
	attach_fd(&msg, &c, fd);
	/* A worker that died between requests (its CPU limit) is replaced, blaming none. */
	err = -ECHILD;
	for (int tries = 0; tries < 2 && err; tries++) {
		if (!w->pid && (type == NW_FREE || (err = start(w))))
			return type == NW_FREE ? 0 : err;	/* a new worker knows no process */
		h.seq = ++w->seq;
		*w->board = (struct nw_board){ 0 };
		err = sendmsg(w->fd, &msg, MSG_NOSIGNAL) == (ssize_t)(sizeof(h) + h.len) ? 0 :
											     -ECHILD;
		if (err)
			stop(w, NULL);
	}
	if (err)
		return err;
	if (type == NW_FREE)
		return 0;
	deadline = clock__mono_ns() + NATIVE_WORKER_DEADLINE_MS * 1000000ull;
	err = await(p, &h, deadline);
	if (err != -ETIMEDOUT && err != -ECHILD) {
		w->failures = 0;
		w->st.requests++;
		return err;
	}
	stop(w, &status);
	if (err == -ETIMEDOUT) {
		w->st.timeouts++;
		blame(w, p, "took longer than the deadline");
		return err;
	}
	w->st.deaths++;
	/* Its CPU limit is the worker's age, not a file's doing. */
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
		return err;
	if (WIFEXITED(status) && WEXITSTATUS(status) == NATIVE_WORKER_EXIT_UNCONFINED)
		blame(w, p, NULL);
	else if (WIFSIGNALED(status))
		blame(w, p, (snprintf(why, sizeof(why), "killed the parsing worker (SIG%s)",
				      sigabbrev_np(WTERMSIG(status)) ?: "?"), why));
	else
		blame(w, p, (snprintf(why, sizeof(why), "ended the parsing worker (exit %d)",
				      WEXITSTATUS(status)), why));
	return err;
}

/* ---- Processes ---- */

int native_worker__proc(struct native_worker *w, pid_t pid, struct native_worker_proc **out)
{
	struct native_worker_proc *p;

	if (vec__reserve((void **)&w->procs, &w->cap, w->nprocs + 1, sizeof(*w->procs), 16))
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*p = (struct native_worker_proc){ .w = w, .handle = ++w->next_handle, .pid = pid };
	w->procs[w->nprocs++] = p;
	*out = p;
	return 0;
}

int native_worker__core_proc(struct native_worker *w, struct native_maps *maps,
			    struct native_worker_proc **out)
{
	int err = native_worker__proc(w, maps->pid, out);

	if (err) {
		native_maps__free(maps);
		return err;
	}
	(*out)->maps = maps;
	(*out)->core = 1;
	return 0;
}

void native_worker__proc_free(struct native_worker_proc *p)
{
	struct native_worker *w;

	if (!p)
		return;
	w = p->w;
	if (w) {
		if (w->pid)
			call(p, NW_FREE, 0, NULL, 0, -1);
		for (size_t i = 0; i < w->nprocs; i++)
			if (w->procs[i] == p) {
				w->procs[i] = w->procs[--w->nprocs];
				break;
			}
	}
	native_maps__free(p->maps);
	free(p);
}

/* The worker re-reads maps walks used at most once per NATIVE_PROC_REREAD_NS: asking it
 * more often would cost a round trip per target per loop for nothing. */
int native_worker__refresh(struct native_worker_proc *p, uint64_t now_ns)
{
	if (!p->walked || now_ns - p->refreshed_ns < NATIVE_PROC_REREAD_NS)
		return 0;
	p->walked = 0;
	p->refreshed_ns = now_ns;
	return call(p, NW_REFRESH, now_ns, NULL, 0, -1);
}

int native_worker__fpcheck(struct native_worker_proc *p, const char *path,
			   struct native_fpcheck *out)
{
	struct iovec iov = { .iov_base = (void *)path, .iov_len = strnlen(path, NW_PATH_MAX) };
	int err = call(p, NW_FPCHECK, 0, &iov, 1, -1);

	if (err)
		return err;
	if (p->w->nans != sizeof(*out))
		return -EPROTO;
	memcpy(out, p->w->ans, sizeof(*out));
	out->frame_pointers = !!out->frame_pointers;
	return 0;
}

int native_worker__ring(struct native_worker *w, int fd, uint32_t bytes, const uint8_t *data)
{
	int copy;

	if (w->ring_fd >= 0 && data == w->ring_data && bytes == w->ring_bytes)
		return 0;
	copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (copy < 0)
		return -errno;
	if (w->ring_fd >= 0)
		close(w->ring_fd);
	w->ring_fd = copy;
	w->ring_bytes = bytes;
	w->ring_data = data;
	w->ring_for = 0;
	return 0;
}

/* Whether @s's stack lies in the ring, and the worker running now has mapped it (it is
 * given the ring first if not): 1 with its offset in *@off. */
static int in_ring(struct native_worker_proc *p, const struct native_snapshot *s, uint64_t *off)
{
	struct native_worker *w = p->w;
	const uint64_t span = 2ull * w->ring_bytes;
	struct iovec iov = { .iov_base = &w->ring_bytes, .iov_len = sizeof(w->ring_bytes) };

	const uint64_t at = (uint64_t)(uintptr_t)s->stack, base = (uint64_t)(uintptr_t)w->ring_data;

	if (w->ring_fd < 0 || !s->stack_len || at < base || at - base > span ||
	    s->stack_len > span - (at - base))
		return 0;
	*off = at - base;
	if (!w->pid && start(w))
		return 0;
	if (w->ring_for != w->st.starts) {
		if (call(p, NW_RING, 0, &iov, 1, w->ring_fd))
			return 0;
		w->ring_for = w->st.starts;
	}
	return 1;
}

/* A stack copy too large to send (dump's) in a sealed memfd; its descriptor, or a
 * negative errno. */
static int stack_memfd(const struct native_snapshot *s)
{
	size_t done = 0;
	ssize_t n;
	int fd, err;

	fd = memfd_create("pbp-stack", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	while (done < s->stack_len) {
		n = write(fd, s->stack + done, s->stack_len - done);
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto fail;
		}
		done += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

int native_worker__walk(struct native_worker_proc *p, const struct native_snapshot *s,
			const struct native_fp_chain *c, unsigned int max_frames,
			uint64_t now_ns, struct native_stack *out,
			struct native_worker_name *names)
{
	struct nw_walk_req r = { .tid = s->tid, .regs_mask = s->regs_mask,
				 .max_frames = max_frames, .stack_len = (uint32_t)s->stack_len };
	struct iovec iov[3];
	int err, fd = -1;

	if (!p->w)
		return -ECHILD;
	if (s->stack_len > NATIVE_WORKER_STACK_MAX)
		return -E2BIG;
	memcpy(r.regs, s->regs, sizeof(r.regs));
	if (c) {
		r.fp_walk = 1;
		r.nfp = c->n;
		r.fp_flags = c->flags;
	}
	r.from_ring = (uint32_t)in_ring(p, s, &r.stack_off);
	if (!r.from_ring &&
	    sizeof(r) + (c ? c->n * sizeof(*c->rec) : 0) + s->stack_len > NATIVE_WORKER_MSG_MAX) {
		fd = stack_memfd(s);
		if (fd < 0)
			return fd;
		r.in_memfd = 1;
	}
	iov[0] = (struct iovec){ .iov_base = &r, .iov_len = sizeof(r) };
	iov[1] = (struct iovec){ .iov_base = c ? (void *)c->rec : NULL,
				 .iov_len = c ? c->n * sizeof(*c->rec) : 0 };
	iov[2] = (struct iovec){ .iov_base = (void *)s->stack,
				 .iov_len = r.from_ring || r.in_memfd ? 0 : s->stack_len };
	p->walked = 1;
	err = call(p, NW_WALK, now_ns, iov, 3, fd);
	if (fd >= 0)
		close(fd);
	if (!err)
		err = native_worker_answer__walk(p->w->ans, p->w->nans, max_frames, &p->w->arena,
						 out, names);
	if (!err)
		p->w->st.ring_walks += r.from_ring;
	return err;
}
