// SPDX-License-Identifier: GPL-2.0-only
/*
 * The parsing worker's side (native_worker.h): started by the profiler as a fresh
 * image of itself, with its end of a socket pair as NATIVE_WORKER_FD and nothing else
 * open but /dev/null as the standard streams (what it writes could otherwise reach the
 * terminal of the root who runs the profiler); it confines itself (sandbox.h) before it reads a
 * request, then answers requests one at a time until the pair is closed. Everything it
 * parses is a descriptor the profiler opened: it opens no path itself, and its
 * allow-list has no open, socket, fork or exec.
 */
#include "native_worker_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "native_worker_proto.h"
#include "sandbox.h"

#define WORKER_UID 65534
#define WORKER_GID 65534
/* libelf reads a symbol table or .eh_frame into memory (ELF_C_READ): tens of MB for
 * the largest objects a process maps. */
#define WORKER_MEM (1ull << 30)
/* CPU in all before the kernel ends it; the profiler then starts another, without
 * blaming a file (native_worker.c). */
#define WORKER_CPU_S 600
#define WORKER_FILES 16

static const int worker_syscalls[] = {
	SYS_read,	  SYS_write,	   SYS_close,	   SYS_fstat,	 SYS_newfstatat,
	SYS_lseek,	  SYS_pread64,	   SYS_mmap,	   SYS_munmap,	 SYS_mremap,
	SYS_mprotect,	  SYS_brk,	   SYS_madvise,	   SYS_recvmsg,	 SYS_sendmsg,	SYS_sendto,
	SYS_exit,	  SYS_exit_group,  SYS_rt_sigreturn, SYS_rt_sigprocmask,
	SYS_fcntl,	  SYS_futex,	  SYS_getpid,	   SYS_gettid,	   SYS_clock_gettime, SYS_getrandom,
};

/* Whether the object at @fd has a section named @name (the tests' faults). */
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

		*nowhere = 1;
	}
	/* A call off the allow-list: the kernel kills the worker. */
	if (has_section(fd, ".pbp_worker_open"))
		close(open("/etc/passwd", O_RDONLY));
}

static void answer(const struct native_worker_req *req, int fd, int faults,
		   struct native_worker_ans *ans)
{
	*ans = (struct native_worker_ans){ .op = req->op, .seq = req->seq };
	if (faults)
		test_faults(fd);
	switch (req->op) {
	case NATIVE_WORKER_BUILD_ID:
		ans->err = native_maps__read_build_id(fd, ans->build_id, sizeof(ans->build_id));
		break;
	case NATIVE_WORKER_FPCHECK:
		ans->err = native_fpcheck__file(fd, &ans->fpcheck);
		break;
	default:
		ans->err = -EOPNOTSUPP;
	}
}

/* One request and the descriptor it carries (-1 if none): 1, 0 at the end of the
 * pair, or a negative errno. */
static int receive(struct native_worker_req *req, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = req, .iov_len = sizeof(*req) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			      .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	n = recvmsg(NATIVE_WORKER_FD, &msg, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n ? -errno : 0;
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if (n != sizeof(*req) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EPROTO;
	return 1;
}

int native_worker_serve__main(void)
{
	const struct sandbox_limits lim = {
		.uid = WORKER_UID,
		.gid = WORKER_GID,
		.mem_bytes = WORKER_MEM,
		.cpu_s = WORKER_CPU_S,
		.files = WORKER_FILES,
		.syscalls = worker_syscalls,
		.nsyscalls = sizeof(worker_syscalls) / sizeof(worker_syscalls[0]),
	};
	int faults = getenv(NATIVE_WORKER_FAULTS_ENV) != NULL;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 1;
	err = sandbox__enter(&lim);
	if (err)
		return NATIVE_WORKER_EXIT_UNCONFINED;
	for (;;) {
		struct native_worker_req req;
		struct native_worker_ans ans;
		int fd, r;

		r = receive(&req, &fd);
		if (r <= 0) {
			if (fd >= 0)
				close(fd);
			return r ? 1 : 0;
		}
		answer(&req, fd, faults, &ans);
		if (fd >= 0)
			close(fd);
		if (send(NATIVE_WORKER_FD, &ans, sizeof(ans), MSG_NOSIGNAL) != sizeof(ans))
			return 1;
	}
}
