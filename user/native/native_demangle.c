// SPDX-License-Identifier: GPL-2.0-only
/*
 * C++ demangling; see native_demangle.h.
 *
 * Why __cxa_demangle from libstdc++, and through dlopen: it is GCC's own demangler
 * (libiberty's cp-demangle.c, built into libstdc++), the one c++filt and gdb use, kept
 * up to date with the ABI by the compiler's authors; hand-written code would lag them.
 * libiberty-dev would give the same code as a static library, but as one more build
 * dependency for every host; linking -lstdc++ would load the C++ runtime into every run
 * for the few profiles that meet a C++ frame. libstdc++.so.6 is on every Debian system
 * (apt itself needs it), so loading it on the first mangled name costs nothing until
 * then, and a host without it still profiles, with mangled names.
 *
 * Why in a child process: the names come from objects of other users, and a mangled
 * name can make each level of templates repeat the one before twice, so that every 11
 * bytes of name double the output (267 bytes give 218 MB, in seconds; the 4 KiB cap
 * allows far more). Nothing bounds that inside the demangler. The child, forked once
 * the library is loaded, runs as nobody with its address space capped; each name has a
 * deadline, past which (or when the child dies) the child is killed, the name stays
 * mangled, and the next name starts a new child. Every name asked about is remembered,
 * so a hostile one costs its deadline once.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hash.h"
#include "native/native_demangle.h"
#include "base/privs.h"

/*
 * The demangler keeps two components per byte of the name on the stack (a VLA in
 * cp-demangle.c's d_demangle_callback, about 24 bytes each), and names come from
 * objects of other users: longer names stay mangled so that one cannot use up the
 * child's stack. 4 KiB of name is ~200 KiB of stack, and longer than the mangled names
 * of even PyTorch's templates.
 */
#define DEMANGLE_MAX_NAME 4096
#define DEMANGLE_MAX_OUT 4096		/* a longer C++ name is kept mangled */
#define DEMANGLE_DEADLINE_NS (200ull * 1000 * 1000)
#define DEMANGLE_SPAWNS_MAX 8		/* children started per run, at most */
#define DEMANGLE_CHILD_MEMORY (256ull << 20)	/* address space a child may add */
#define DEMANGLE_SEEN_MAX 65536		/* names remembered; then forgotten at once */
#define DEMANGLE_NOBODY 65534

struct reply {
	int32_t status;		/* __cxa_demangle's, or -4: longer than DEMANGLE_MAX_OUT */
	uint32_t len;		/* bytes of name that follow */
};

static void load(struct native_demangle *d)
{
	d->tried = 1;
	d->lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (!d->lib)
		return;
	/* POSIX's way to turn dlsym's object pointer into a function pointer. */
	*(void **)&d->fn = dlsym(d->lib, "__cxa_demangle");
	if (!d->fn) {
		dlclose(d->lib);
		d->lib = NULL;
	}
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads @len bytes by CLOCK_MONOTONIC @deadline (0: none). */
static int recv_all(int fd, void *buf, size_t len, uint64_t deadline)
{
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = clock__mono_ns();
		ssize_t n;

		if (deadline && now >= deadline)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, deadline ? (int)((deadline - now) / 1000000) + 1 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -ETIMEDOUT;
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The child: as nobody, with its address space capped, answers names until its
 * socket closes. Never returns. */
static void serve(const struct native_demangle *d, int fd)
{
	char name[DEMANGLE_MAX_NAME];
	unsigned long pages = 0;
	struct rlimit as;
	FILE *f;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL))
		_exit(1);
	if (dup2(fd, 3) < 0 || close_range(4, ~0u, 0))
		_exit(1);
	fd = 3;
	f = fopen("/proc/self/statm", "re");
	if (!f || fscanf(f, "%lu", &pages) != 1)
		_exit(1);
	fclose(f);
	as.rlim_cur = as.rlim_max = pages * (rlim_t)sysconf(_SC_PAGESIZE) + DEMANGLE_CHILD_MEMORY;
	if (setrlimit(RLIMIT_AS, &as))
		_exit(1);
	/* Root without CAP_SETUID (the agent's container) stays itself: the cap and the
	 * deadline still bound what a name can cost. */
	privs__become(DEMANGLE_NOBODY, DEMANGLE_NOBODY);
	for (;;) {
		struct reply r = { 0 };
		uint32_t len;
		char *out;

		if (recv_all(fd, &len, sizeof(len), 0) || len >= sizeof(name) ||
		    recv_all(fd, name, len, 0))
			_exit(0);
		name[len] = '\0';
		out = d->fn(name, NULL, NULL, &r.status);
		if (!r.status && out && strlen(out) > DEMANGLE_MAX_OUT)
			r.status = -4;
		if (!r.status && out)
			r.len = (uint32_t)strlen(out);
		if (send_all(fd, &r, sizeof(r)) || send_all(fd, out, r.len))
			_exit(0);
		free(out);
	}
}

static void stop(struct native_demangle *d)
{
	if (!d->child)
		return;
	close(d->fd);
	kill(d->child, SIGKILL);
	waitpid(d->child, NULL, 0);
	d->child = 0;
	d->fd = -1;
}

static int spawn(struct native_demangle *d)
{
	int sv[2];
	pid_t pid;

	if (d->spawns == DEMANGLE_SPAWNS_MAX)
		return -ECHILD;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (!pid) {
		close(sv[0]);
		serve(d, sv[1]);
	}
	close(sv[1]);
	d->child = pid;
	d->fd = sv[0];
	d->spawns++;
	return 0;
}

/* Asks the child about @name: its demangled form in *@out, or NULL if it has none or
 * no child is left to ask. 0, -ENOENT when no child can be started, -ENOMEM. */
static int ask(struct native_demangle *d, const char *name, char **out)
{
	uint32_t len = (uint32_t)strlen(name);
	struct reply r;
	int err;

	*out = NULL;
	if (!d->child && (err = spawn(d))) {
		if (err != -ECHILD)
			return -ENOENT;
		d->given_up++;
		return 0;
	}
	if (send_all(d->fd, &len, sizeof(len)) || send_all(d->fd, name, len) ||
	    recv_all(d->fd, &r, sizeof(r), clock__mono_ns() + DEMANGLE_DEADLINE_NS) ||
	    r.len > DEMANGLE_MAX_OUT)
		goto give_up;
	if (r.status == -1 || r.status == -4)
		d->given_up++;	/* out of the child's memory, or too long an answer */
	if (r.status || !r.len)
		return 0;	/* kept mangled */
	*out = malloc(r.len + 1);
	if (!*out)
		return -ENOMEM;
	if (recv_all(d->fd, *out, r.len, clock__mono_ns() + DEMANGLE_DEADLINE_NS)) {
		free(*out);
		*out = NULL;
		goto give_up;
	}
	(*out)[r.len] = '\0';
	return 0;
give_up:
	d->given_up++;
	stop(d);
	return 0;
}

static uint64_t seen_hash(uint32_t idx, const void *ctx)
{
	const struct native_demangle *d = ctx;

	return hash_bytes(d->seen[idx].name, strlen(d->seen[idx].name));
}

static bool seen_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct native_demangle *d = ctx;

	return !strcmp(d->seen[idx].name, key);
}

static void forget(struct native_demangle *d)
{
	for (size_t i = 0; i < d->nseen; i++) {
		free(d->seen[i].name);
		free(d->seen[i].out);
	}
	d->nseen = 0;
	hashmap__free(&d->index);
}

/* Remembers @name's answer @out (taken over); -ENOMEM. */
static int remember(struct native_demangle *d, const char *name, char *out, size_t slot)
{
	struct native_demangled *e;

	if (d->nseen == d->cap_seen) {
		size_t cap = d->cap_seen ? 2 * d->cap_seen : 256;

		e = realloc(d->seen, cap * sizeof(*e));
		if (!e)
			goto fail;
		d->seen = e;
		d->cap_seen = cap;
	}
	e = &d->seen[d->nseen];
	e->name = strdup(name);
	if (!e->name)
		goto fail;
	e->out = out;
	hashmap__set(&d->index, slot, (uint32_t)d->nseen++);
	return 0;
fail:
	free(out);
	return -ENOMEM;
}

int native_demangle__name(struct native_demangle *d, const char *name, char **out)
{
	uint64_t h;
	char *r;
	size_t slot;
	int err;

	*out = NULL;
	if (strncmp(name, "_Z", 2))
		return -ENOENT;
	h = hash_bytes(name, strnlen(name, DEMANGLE_MAX_NAME));
	if (strnlen(name, DEMANGLE_MAX_NAME) == DEMANGLE_MAX_NAME) {
		d->given_up++;
		return -ENOENT;
	}
	if (!d->tried)
		load(d);
	if (!d->fn)
		return -ENOENT;
	if (d->nseen == DEMANGLE_SEEN_MAX)
		forget(d);
	if (hashmap__grow(&d->index, 256, seen_hash, d))
		return -ENOMEM;
	slot = hashmap__probe(&d->index, h, seen_equal, name, d);
	if (!hashmap__used(&d->index, slot)) {
		err = ask(d, name, &r);
		if (err)
			return err;
		err = remember(d, name, r, slot);
		if (err)
			return err;
	}
	r = d->seen[hashmap__at(&d->index, slot)].out;
	if (!r)
		return -EINVAL;
	*out = strdup(r);
	return *out ? 0 : -ENOMEM;
}

int native_demangle__in_place(struct native_demangle *d, const char **function,
			      char **demangled)
{
	*demangled = NULL;
	if (!*function || native_demangle__name(d, *function, demangled) != -ENOMEM) {
		if (*demangled)
			*function = *demangled;
		return 0;
	}
	return -ENOMEM;
}

void native_demangle__close(struct native_demangle *d)
{
	stop(d);
	forget(d);
	free(d->seen);
	if (d->lib)
		dlclose(d->lib);
	*d = (struct native_demangle){ 0 };
}
