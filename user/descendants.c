// SPDX-License-Identifier: GPL-2.0-only
/* Watching the processes targets start; see descendants.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "clock.h"
#include "descendants.h"
#include "proc.h"

/* A new process is looked at for an interpreter at once, then again after 20 ms, and
 * twice as long after each further miss up to a second apart, ... */
#define RETRY_NS 20000000ull
#define RETRY_MAX_NS 1000000000ull
/* ... for this long after it appeared or last exec'd; then it is taken for not Python
 * until it execs again. A static CPython shows its runtime at the exec, a shared one
 * once the dynamic loader has mapped libpython: both within the first tries. */
#define PATIENCE_NS 3000000000ull

struct watched {
	pid_t pid;
	dev_t exe_dev;		/* its image: an exec starts the wait afresh */
	ino_t exe_ino;
	uint64_t since_ns, next_ns, wait_ns;
	int not_python;
};

struct descendants {
	struct watched *w;
	size_t n, cap;
	descendants_known_fn known;
	descendants_adopt_fn adopt;
	void *arg;
	int scan_children;
};

struct descendants *descendants__new(descendants_known_fn known, descendants_adopt_fn adopt,
				     void *arg, int scan_children)
{
	struct descendants *d = calloc(1, sizeof(*d));

	if (d) {
		d->known = known;
		d->adopt = adopt;
		d->arg = arg;
		d->scan_children = scan_children;
	}
	return d;
}

void descendants__free(struct descendants *d)
{
	if (d)
		free(d->w);
	free(d);
}

static int exe_id(pid_t pid, dev_t *dev, ino_t *ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st))
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* proc__children() callback: a process not seen before is watched. */
static int note(pid_t pid, void *arg)
{
	struct descendants *d = arg;
	struct watched *w;

	if (d->known(pid, d->arg))
		return 0;
	for (size_t i = 0; i < d->n; i++)
		if (d->w[i].pid == pid)
			return 0;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;

		w = realloc(d->w, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		d->w = w;
		d->cap = cap;
	}
	w = &d->w[d->n++];
	*w = (struct watched){ .pid = pid, .since_ns = clock__mono_ns() };
	w->next_ns = w->since_ns;
	exe_id(pid, &w->exe_dev, &w->exe_ino);
	return 0;
}

int descendants__watch(struct descendants *d, pid_t pid)
{
	int err = note(pid, d);

	/* Already watched: it exec'd again, so it gets a fresh wait. */
	for (size_t i = 0; !err && i < d->n; i++)
		if (d->w[i].pid == pid) {
			d->w[i].exe_ino = 0;
			d->w[i].exe_dev = 0;
		}
	return err;
}

int descendants__scan(struct descendants *d, pid_t parent)
{
	int err = proc__children(parent, note, d);

	return err == -ESRCH ? 0 : err;
}

/* 1 if @w is done with (exited or adopted), 0 to keep watching, or a negative errno. */
static int look_at(struct descendants *d, struct watched *w, uint64_t now)
{
	dev_t dev;
	ino_t ino;
	int r;

	/* Watched for events, a process needs no look before it is due. */
	if (!d->scan_children && now < w->next_ns)
		return 0;
	if (proc__alive(w->pid))
		return 1;
	/* No image to look at: in the middle of an exec, or a kernel thread. */
	if (exe_id(w->pid, &dev, &ino))
		return now - w->since_ns > PATIENCE_NS;
	if (dev != w->exe_dev || ino != w->exe_ino) {
		w->exe_dev = dev;
		w->exe_ino = ino;
		w->since_ns = w->next_ns = now;
		w->wait_ns = 0;
		w->not_python = 0;
	}
	if (w->not_python || now < w->next_ns)
		return 0;
	w->wait_ns = !w->wait_ns ? RETRY_NS : w->wait_ns * 2 > RETRY_MAX_NS ? RETRY_MAX_NS :
		     w->wait_ns * 2;
	w->next_ns = now + w->wait_ns;
	r = d->adopt(w->pid, d->arg);
	if (!r && now - w->since_ns > PATIENCE_NS) {
		/* An exec event brings it back; only a scan needs to keep watching. */
		if (!d->scan_children)
			return 1;
		w->not_python = 1;
	}
	return r;
}

int descendants__step(struct descendants *d)
{
	uint64_t now = clock__mono_ns();
	int err;

	/* The list grows as it is scanned: grandchildren are found in the same pass. */
	for (size_t i = 0; d->scan_children && i < d->n; i++) {
		err = descendants__scan(d, d->w[i].pid);
		if (err)
			return err;
	}
	for (size_t i = 0; i < d->n;) {
		int r = look_at(d, &d->w[i], now);

		if (r < 0)
			return r;
		if (r)
			d->w[i] = d->w[--d->n];
		else
			i++;
	}
	return 0;
}

size_t descendants__pending(const struct descendants *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n; i++)
		n += !d->w[i].not_python;
	return n;
}
