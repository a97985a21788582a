// SPDX-License-Identifier: GPL-2.0-only
/*
 * The parsing worker's side (native_worker.h): started by the profiler as a fresh
 * image of itself, with its end of a socket pair as NATIVE_WORKER_FD, the board as
 * NATIVE_WORKER_BOARD_FD and nothing else open but /dev/null as the standard streams
 * (what it writes could otherwise reach the terminal of the root who runs the
 * profiler). It confines itself (sandbox.h) before it reads a request, then serves
 * requests one at a time until the pair is closed: it keeps each target's maps and
 * unwinder (native_proc.h) and one symbol cache, and opens no path itself: every file
 * is asked of the profiler (struct native_files), which checks the ask against the
 * target's maps.
 */
#include "native/native_worker_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/hostile_file.h"
#include "native/native_fp.h"
#include "native/native_proc.h"
#include "native/native_sym.h"
#include "native/native_worker_proto.h"
#include "native/sandbox.h"
#include "base/vec.h"

#define WORKER_UID 65534
#define WORKER_GID 65534
/* libdwfl maps a private copy of each object (hostile_file__copy()) and reads symbol
 * tables and DWARF into memory: a few hundred MB for a process with a large libpython
 * and its debug file, times the processes -a follows. */
#define WORKER_MEM (4ull << 30)
/* CPU in all before the kernel ends it; the profiler then starts another, without
 * blaming a file (native_worker.c). */
#define WORKER_CPU_S 600
/* libdwfl keeps each module's copy open until its process's Dwfl ends: a CPython
 * process maps 10-200 objects (NATIVE_MAPS_MAX_ENTRIES at most), times the processes
 * -a follows. */
#define WORKER_FILES 65536
#define WORKER_SYM_BYTES (8u << 20)
#define WORKER_BUILDID_BYTES (1u << 20)

/* A sanitizer build's runtime makes calls of its own (a report checks its output with
 * ioctl, and so on): allowed there only, for the tests. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define SANITIZER_SYSCALLS SYS_ioctl, SYS_sched_yield, SYS_prlimit64, SYS_getrlimit, \
	SYS_sigaltstack, SYS_rt_sigaction, SYS_nanosleep, SYS_uname, SYS_getppid, SYS_tgkill,
#else
#define SANITIZER_SYSCALLS
#endif

static const int worker_syscalls[] = {
	SYS_read,	 SYS_write,	  SYS_pread64,	    SYS_close,	     SYS_fstat,
	SYS_newfstatat,	 SYS_lseek,	  SYS_fcntl,	    SYS_mmap,	     SYS_munmap,
	SYS_mremap,	 SYS_mprotect,	  SYS_brk,	    SYS_madvise,     SYS_recvmsg,
	SYS_sendmsg,	 SYS_sendto,	  SYS_memfd_create, SYS_sendfile,    SYS_ftruncate,
	SYS_exit,	 SYS_exit_group,  SYS_rt_sigreturn, SYS_rt_sigprocmask, SYS_futex,
	SYS_getpid,	 SYS_gettid,	  SYS_clock_gettime, SYS_getrandom, SYS_sysinfo,
	SANITIZER_SYSCALLS
};
/* libdw looks for a DWARF supplement (.gnu_debugaltlink) by its path, and libdwfl
 * resolves a module's name: they get no file and go on without it, rather than
 * killing the worker. */
static const int worker_refused[] = { SYS_open, SYS_openat, SYS_readlink, SYS_readlinkat };

struct served {
	uint32_t handle;
	struct native_proc *p;
};

struct serve {
	struct native_sym *syms;
	struct native_buildid_cache *ids;
	struct native_files files;
	struct served *procs;
	size_t nprocs, cap;
	struct native_proc *cur;	/* the request's process */
	struct nw_header req;		/* the request being served */
	struct nw_board *board;
	const uint8_t *ring;		/* the samples ring's data, twice over; NULL: none */
	size_t ring_len;		/* ... of the whole mapping */
	uint32_t ring_bytes;
	int faults;
	uint8_t *rx;			/* a message: header and payload */
	uint8_t *tx;			/* the answer */
	size_t txlen, txcap;
};

/* ---- Messages ---- */

static int send_msg(const struct nw_header *h, const void *payload)
{
	struct iovec iov[2] = { { .iov_base = (void *)h, .iov_len = sizeof(*h) },
				{ .iov_base = (void *)payload, .iov_len = h->len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = h->len ? 2 : 1 };
	ssize_t want = (ssize_t)(sizeof(*h) + h->len);

	return sendmsg(NATIVE_WORKER_FD, &msg, MSG_NOSIGNAL) == want ? 0 : -EPIPE;
}

/* One message into @buf (@cap bytes), and the descriptor it carries (-1 if none): its
 * length, 0 at the end of the pair, or a negative errno. */
static ssize_t receive(void *buf, size_t cap, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			      .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm;
	const struct nw_header *h = buf;
	ssize_t n;

	*fd = -1;
	n = recvmsg(NATIVE_WORKER_FD, &msg, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n ? -errno : 0;
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if (n < (ssize_t)sizeof(*h) || h->len != (size_t)n - sizeof(*h) ||
	    (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0)
			close(*fd);
		return -EPROTO;
	}
	return n;
}

/* ---- Test faults ---- */

/* Whether the object at @fd has a section named @name. */
static int has_section(int fd, const char *name)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int found = 0;

	if (!elf)
		return 0;
	if (elf_kind(elf) == ELF_K_ELF && !elf_getshdrstrndx(elf, &shstrndx))
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *s;

			s = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
			found = s && !strcmp(s, name);
		}
	elf_end(elf);
	return found;
}

static void test_faults(int fd)
{
	if (has_section(fd, ".pbp_worker_hang"))
		for (;;)
			;
	if (has_section(fd, ".pbp_worker_crash")) {
		volatile int *volatile nowhere = NULL;

		// cppcheck-suppress nullPointer ; the crash is the point
		*nowhere = 1;
	}
	/* A call on neither list: the kernel kills the worker. */
	if (has_section(fd, ".pbp_worker_socket"))
		close(socket(AF_INET, SOCK_STREAM, 0));
}

/* ---- Files, asked of the profiler ---- */

static void post(struct serve *sv, uint64_t dev, uint64_t ino)
{
	sv->board->dev = dev;
	sv->board->ino = ino;
}

/* Sends an ask; its answer's header in *@got and payload in @buf (@cap bytes). The
 * descriptor it carries, or a negative errno. */
static int exchange(struct serve *sv, uint32_t type, const void *a, size_t alen,
		    const char *path, struct nw_header *got, char *buf, size_t cap)
{
	size_t plen = path ? strnlen(path, NW_PATH_MAX) : 0;
	struct nw_header h = { .type = type, .seq = sv->req.seq, .handle = sv->req.handle,
			       .len = (uint32_t)(alen + plen) };
	uint8_t out[sizeof(struct nw_ask_mapped) + NW_PATH_MAX];
	struct {
		struct nw_header h;
		char payload[NW_PATH_MAX + 1];
	} in;
	ssize_t n;
	int fd;

	if (alen)
		memcpy(out, a, alen);
	if (plen)
		memcpy(out + alen, path, plen);
	if (send_msg(&h, out))
		_exit(1);
	/* Into a buffer of its own: the request's payload (the stack) is in use. */
	n = receive(&in, sizeof(in), &fd);
	if (n <= 0 || in.h.type != NW_FILE || in.h.seq != sv->req.seq || in.h.len > cap)
		_exit(1);	/* the profiler is gone, or speaks out of turn */
	*got = in.h;
	if (in.h.len)
		memcpy(buf, in.payload, in.h.len);
	if (in.h.err || fd < 0) {
		if (fd >= 0)
			close(fd);
		return in.h.err ? in.h.err : -EPROTO;
	}
	return fd;
}

static int ask_raw(struct serve *sv, uint32_t type, const void *a, size_t alen,
		   const char *path)
{
	struct nw_header got;

	return exchange(sv, type, a, alen, path, &got, NULL, 0);
}

/* The tests' stand-in for a worker taken over: it asks for files no target maps. The
 * profiler must refuse each; if it hands one over, the worker crashes, which the test
 * sees. */
static void try_escape(struct serve *sv)
{
	static const char *const debug[] = { "/etc/shadow", "/usr/lib/debug/../../../etc/shadow",
					     "/usr/lib/debug/.build-id/../../../../etc/shadow" };
	const struct nw_ask_mapped a = { .start = 0x10000, .end = 0x11000, .ino = 1 };
	uint32_t in_root = 1, host = 0;
	int fd;

	fd = ask_raw(sv, NW_ASK_MAPPED, &a, sizeof(a), "/etc/shadow");
	for (size_t i = 0; fd < 0 && i < sizeof(debug) / sizeof(debug[0]); i++)
		fd = ask_raw(sv, NW_ASK_DEBUG, &in_root, sizeof(in_root), debug[i]);
	if (fd < 0)
		fd = ask_raw(sv, NW_ASK_DEBUG, &host, sizeof(host), "/etc/shadow");
	if (fd >= 0) {
		volatile int *volatile nowhere = NULL;

		// cppcheck-suppress nullPointer ; the crash is the point
		*nowhere = 1;
	}
}

static int ask(struct serve *sv, uint32_t type, const void *a, size_t alen, const char *path)
{
	int fd = ask_raw(sv, type, a, alen, path);

	if (fd >= 0 && sv->faults) {
		if (has_section(fd, ".pbp_worker_escape"))
			try_escape(sv);
		test_faults(fd);
	}
	return fd;
}

static int ask_maps(void *arg, pid_t pid)
{
	(void)pid;
	return ask(arg, NW_ASK_MAPS, NULL, 0, NULL);
}

static int ask_root(void *arg, pid_t pid, char *buf, size_t len)
{
	struct nw_header got;
	char path[NW_PATH_MAX];
	int fd;

	(void)pid;
	fd = exchange(arg, NW_ASK_ROOT, NULL, 0, NULL, &got, path, sizeof(path));
	if (fd >= 0)
		close(fd);
	if (got.err)
		return got.err;
	if (!got.len || got.len >= len || memchr(path, 0, got.len))
		return -EPROTO;
	memcpy(buf, path, got.len);
	buf[got.len] = '\0';
	return 0;
}

static int ask_mapped(void *arg, const struct native_maps *m, const struct native_map *e)
{
	const struct nw_ask_mapped a = { .start = e->start, .end = e->end, .offset = e->offset,
					 .dev = e->dev, .ino = e->ino };

	(void)m;
	/* What is parsed next is this file. */
	post(arg, e->dev, e->ino);
	return ask(arg, NW_ASK_MAPPED, &a, sizeof(a), e->path);
}

static int ask_debug(void *arg, pid_t pid, int in_root, const char *path)
{
	const uint32_t r = (uint32_t)in_root;

	(void)pid;
	return ask(arg, NW_ASK_DEBUG, &r, sizeof(r), path);
}

/* The module whose call-frame information a walk reads next. */
static void watch(void *arg, uint64_t pc)
{
	struct serve *sv = arg;
	const struct native_maps *m = sv->cur ? native_proc__maps(sv->cur) : NULL;
	const struct native_map *e = m ? native_maps__find(m, pc) : NULL;

	post(sv, e ? e->dev : 0, e ? e->ino : 0);
}

/* ---- Requests ---- */

static int proc_of(struct serve *sv, const struct nw_header *h, struct native_proc **out)
{
	struct native_proc *p;
	int err;

	for (size_t i = 0; i < sv->nprocs; i++)
		if (sv->procs[i].handle == h->handle) {
			*out = sv->procs[i].p;
			return 0;
		}
	err = vec__reserve((void **)&sv->procs, &sv->cap, sv->nprocs + 1, sizeof(*sv->procs), 16);
	if (!err)
		err = native_proc__new(h->pid, &sv->files, sv->ids, &p);
	if (err)
		return err;
	native_proc__watch(p, watch, sv);
	sv->procs[sv->nprocs++] = (struct served){ .handle = h->handle, .p = p };
	*out = p;
	return 0;
}

static void forget(struct serve *sv, uint32_t handle)
{
	for (size_t i = 0; i < sv->nprocs; i++)
		if (sv->procs[i].handle == handle) {
			native_proc__free(sv->procs[i].p);
			sv->procs[i] = sv->procs[--sv->nprocs];
			return;
		}
}

static int put(struct serve *sv, const void *data, size_t len)
{
	int err;

	if (!len)
		return 0;
	err = vec__reserve((void **)&sv->tx, &sv->txcap, sv->txlen + len, 1, 64 << 10);
	if (err)
		return err;
	memcpy(sv->tx + sv->txlen, data, len);
	sv->txlen += len;
	return 0;
}

static size_t cut(const char *s, size_t max)
{
	return s ? strnlen(s, max) : 0;
}

/* Frame @f of a walk, named, into the answer. */
static int put_frame(struct serve *sv, const struct native_frame *f)
{
	const struct native_maps *m = native_proc__maps(sv->cur);
	const struct native_map *e = m ? native_maps__find(m, f->lookup) : NULL;
	struct native_symbol sym;
	struct nw_frame o = { .pc = f->pc, .lookup = f->lookup, .sp = f->sp };
	int err;

	post(sv, e ? e->dev : 0, e ? e->ino : 0);
	err = native_sym__lookup(sv->syms, native_proc__unwind(sv->cur), f->lookup, &sym);
	if (err && err != -ENOENT)
		return err;
	o.flags = err ? 0 : NW_FRAME_KNOWN;
	o.offset = sym.offset;
	o.rel = sym.rel;
	o.func_rel = sym.func_rel;
	o.module_len = (uint16_t)cut(sym.module, NW_MODULE_MAX);
	if (sym.function) {
		o.flags |= NW_FRAME_FUNCTION;
		o.function_len = (uint16_t)cut(sym.function, NW_FUNCTION_MAX);
	}
	if (sym.function && sym.source) {
		o.flags |= NW_FRAME_SOURCE;
		o.source_len = (uint16_t)cut(sym.source, NW_SOURCE_MAX);
		o.line = sym.line;
		o.func_line = sym.func_line;
	}
	if (e) {
		o.flags |= NW_FRAME_MAP;
		o.path_len = (uint16_t)cut(e->path, NW_PATH_MAX);
		o.build_id_len = e->build_id_len;
		memcpy(o.build_id, e->build_id, sizeof(o.build_id));
	}
	err = put(sv, &o, sizeof(o));
	if (!err)
		err = put(sv, sym.module, o.module_len);
	if (!err)
		err = put(sv, sym.function, o.function_len);
	if (!err)
		err = put(sv, sym.source, o.source_len);
	if (!err && e)
		err = put(sv, e->path, o.path_len);
	return err;
}

/* The stack copy in the memfd @fd, of @len bytes, mapped read-only; NULL if it is not
 * that long (a shorter file would fault as it is read). */
static const uint8_t *map_stack(int fd, uint32_t len)
{
	struct stat sb;
	void *m;

	if (fd < 0 || !len || len > NATIVE_WORKER_STACK_MAX || fstat(fd, &sb) ||
	    sb.st_size < (off_t)len)
		return NULL;
	m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	return m == MAP_FAILED ? NULL : m;
}

static int walk(struct serve *sv, const uint8_t *payload, uint32_t len, int fd)
{
	struct nw_walk_req r;
	struct native_snapshot snap;
	struct native_fp_chain chain;
	struct native_stack *st = NULL;
	const uint8_t *mapped = NULL;
	struct nw_walk w;
	size_t recs;
	int err;

	if (len < sizeof(r))
		return -EPROTO;
	memcpy(&r, payload, sizeof(r));
	recs = (size_t)r.nfp * sizeof(struct pbp_native_fp);
	if (r.nfp > PBP_NATIVE_FP_MAX || (r.from_ring && r.in_memfd) ||
	    len != sizeof(r) + recs + (r.from_ring || r.in_memfd ? 0 : r.stack_len))
		return -EPROTO;
	snap = (struct native_snapshot){ .tid = r.tid, .regs_mask = r.regs_mask,
					 .stack = payload + sizeof(r) + recs,
					 .stack_len = r.stack_len };
	if (r.from_ring) {
		if (!sv->ring || r.stack_off > 2ull * sv->ring_bytes ||
		    r.stack_len > 2ull * sv->ring_bytes - r.stack_off)
			return -EPROTO;
		snap.stack = sv->ring + sv->ring_len - 2ull * sv->ring_bytes + r.stack_off;
	} else if (r.in_memfd) {
		mapped = map_stack(fd, r.stack_len);
		if (!mapped)
			return -EPROTO;
		snap.stack = mapped;
	}
	memcpy(snap.regs, r.regs, sizeof(snap.regs));
	chain = (struct native_fp_chain){ .rec = (const void *)(payload + sizeof(r)), .n = r.nfp,
					  .flags = r.fp_flags };
	st = malloc(sizeof(*st));
	if (!st) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = native_proc__walk_fp(sv->cur, &snap, r.fp_walk ? &chain : NULL, r.max_frames,
				   sv->req.now_ns, st);
	if (err)
		goto cleanup;
	w = (struct nw_walk){ .n = st->n, .end = st->end, .stack_used = st->stack_used,
			      .guessed_from = st->guessed_from, .fp_first = st->fp_first,
			      .fp_resumed = st->fp_resumed, .fp_dwarf_top = st->fp_dwarf_top };
	err = put(sv, &w, sizeof(w));
	for (uint32_t i = 0; !err && i < st->n; i++)
		err = put_frame(sv, &st->frames[i]);
cleanup:
	free(st);
	if (mapped)
		munmap((void *)mapped, r.stack_len);
	return err;
}

static int fpcheck(struct serve *sv, const uint8_t *payload, uint32_t len)
{
	char path[NW_PATH_MAX + 1];
	struct native_fpcheck fc;
	int fd, err;

	if (!len || len > NW_PATH_MAX)
		return -EPROTO;
	memcpy(path, payload, len);
	path[len] = '\0';
	fd = native_proc__open_object(sv->cur, path);
	if (fd < 0)
		return fd;
	err = native_fpcheck__file(fd, &fc);
	close(fd);
	return err ? err : put(sv, &fc, sizeof(fc));
}

/* Sends the answer in parts, the last one NW_DONE with @err. */
static void answer(struct serve *sv, int err)
{
	struct nw_header h = { .seq = sv->req.seq, .handle = sv->req.handle };
	size_t at = 0;

	if (err)
		sv->txlen = 0;
	do {
		size_t n = sv->txlen - at < NATIVE_WORKER_MSG_MAX ? sv->txlen - at :
								  NATIVE_WORKER_MSG_MAX;

		h.type = at + n == sv->txlen ? NW_DONE : NW_PART;
		h.err = h.type == NW_DONE ? err : 0;
		h.len = (uint32_t)n;
		if (send_msg(&h, sv->tx + at))
			_exit(1);
		at += n;
	} while (at < sv->txlen);
	sv->txlen = 0;
}

/* Maps the samples ring open at @fd (its producer's page, then its data twice over),
 * read-only, in place of any before. */
static int map_ring(struct serve *sv, int fd, const uint8_t *payload, uint32_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n;
	uint32_t bytes;
	void *m;

	if (fd < 0 || len != sizeof(bytes))
		return -EPROTO;
	memcpy(&bytes, payload, sizeof(bytes));
	if (!bytes || (bytes & (bytes - 1)) || bytes > (1u << 30) || bytes % page)
		return -EPROTO;
	n = page + 2 * (size_t)bytes;
	m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, (off_t)page);
	if (m == MAP_FAILED)
		return -errno;
	if (sv->ring)
		munmap((void *)sv->ring, sv->ring_len);
	sv->ring = m;
	sv->ring_len = n;
	sv->ring_bytes = bytes;
	return 0;
}

static void serve_one(struct serve *sv, const struct nw_header *h, int fd)
{
	const uint8_t *payload = sv->rx + sizeof(*h);
	int err;

	sv->req = *h;
	if (h->type == NW_FREE) {
		forget(sv, h->handle);
		return;
	}
	if (h->type == NW_RING) {
		answer(sv, map_ring(sv, fd, payload, h->len));
		return;
	}
	err = proc_of(sv, h, &sv->cur);
	if (!err) {
		switch (h->type) {
		case NW_WALK:
			err = walk(sv, payload, h->len, fd);
			break;
		case NW_FPCHECK:
			err = fpcheck(sv, payload, h->len);
			break;
		case NW_REFRESH:
			err = native_proc__refresh(sv->cur, h->now_ns);
			break;
		default:
			err = -EOPNOTSUPP;
		}
	}
	post(sv, 0, 0);
	sv->cur = NULL;
	answer(sv, err);
}

static int setup(struct serve *sv)
{
	void *board;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	board = mmap(NULL, sizeof(struct nw_board), PROT_READ | PROT_WRITE, MAP_SHARED,
		     NATIVE_WORKER_BOARD_FD, 0);
	if (board == MAP_FAILED)
		return -errno;
	close(NATIVE_WORKER_BOARD_FD);
	sv->board = board;
	sv->faults = getenv(NATIVE_WORKER_FAULTS_ENV) != NULL;
	sv->files = (struct native_files){ .maps = ask_maps, .root = ask_root,
					   .mapped = ask_mapped, .debug = ask_debug, .arg = sv };
	sv->rx = malloc(sizeof(struct nw_header) + NATIVE_WORKER_MSG_MAX);
	if (!sv->rx)
		return -ENOMEM;
	err = native_sym__new(WORKER_SYM_BYTES, &sv->syms);
	if (!err)
		err = native_buildid_cache__new(WORKER_BUILDID_BYTES, &sv->ids);
	if (err)
		return err;
	native_sym__keep_mangled(sv->syms);
	return 0;
}

int native_worker_serve__main(void)
{
	const struct sandbox_limits lim = {
		.uid = WORKER_UID,
		.gid = WORKER_GID,
		.mem_bytes = WORKER_MEM,
		.cpu_s = WORKER_CPU_S,
		.files = WORKER_FILES,
		.file_bytes = HOSTILE_FILE_COPY_MAX,
		.syscalls = worker_syscalls,
		.nsyscalls = sizeof(worker_syscalls) / sizeof(worker_syscalls[0]),
		.refused = worker_refused,
		.nrefused = sizeof(worker_refused) / sizeof(worker_refused[0]),
		/* Its work is the profiler's: it ends with it, even in the middle of a
		 * parse that would take long. */
		.parent = getppid(),
	};
	struct serve sv = { 0 };

	/* Its name in ps and top; the exec named it "exe". */
	prctl(PR_SET_NAME, "pbp-worker", 0, 0, 0);
	if (setup(&sv) || sandbox__enter(&lim))
		return NATIVE_WORKER_EXIT_UNCONFINED;
	for (;;) {
		int fd;
		ssize_t n = receive(sv.rx, sizeof(struct nw_header) + NATIVE_WORKER_MSG_MAX, &fd);

		if (n > 0)
			serve_one(&sv, (const struct nw_header *)sv.rx, fd);
		if (fd >= 0)
			close(fd);	/* the ring's stays mapped, a stack's until its walk ends */
		if (n <= 0)
			return n ? 1 : 0;
	}
}
