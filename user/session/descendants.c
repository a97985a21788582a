// SPDX-License-Identifier: GPL-2.0-only
/* Watching the processes targets start; see descendants.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "session/descendants.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "base/proc.h"
#include "base/vec.h"

/* A new process is looked at for an interpreter at once, then again after 20 ms, and
 * twice as long after each further miss up to a second apart, ... */
#define RETRY_NS 20000000ull
#define RETRY_MAX_NS 1000000000ull
/* ... for this long after it appeared or last exec'd; then it is taken for not Python
 * until it execs again. A static CPython shows its runtime at the exec, a shared one
 * once the dynamic loader has mapped libpython: both within the first tries. */
#define PATIENCE_NS 3000000000ull
/* A program whose executable is not named like a Python can still be one (libpython
 * in uwsgi, a renamed binary), but its libpython is mapped by the loader before main()
 * or by a dlopen() at start-up: first looked at once the loader is done, then less
 * often. Most execs on a busy host are of such programs (compilers, shells, true). */
#define OTHER_FIRST_NS 50000000ull
#define OTHER_FACTOR 5
/* Each look parses /proc/PID/maps: at most this many per second, so that an exec
 * storm cannot take the loop that drains the ring buffer; the rest wait their turn. */
#define LOOKS_PER_S 200
#define LOOKS_BURST 50

struct watched {
	pid_t pid;
	int python_named;	/* its executable's name says python */
	dev_t exe_dev;		/* its image: an exec starts the wait afresh */
	ino_t exe_ino;
	uint64_t since_ns, next_ns, wait_ns;
	int not_python;
};

struct descendants {
	struct watched *w;
	size_t n, cap;
	struct hashmap index;	/* pid -> index in w; at least twice cap slots */
	size_t rr;		/* where the next step starts looking: turns for everyone */
	uint64_t tokens_ns;	/* look budget, as time: LOOKS_PER_S per second */
	uint64_t refill_ns;
	uint64_t looks, looks_deferred;
	descendants_known_fn known;
	descendants_adopt_fn adopt;
	void *arg;
	int scan_children;
};

#define LOOK_NS (1000000000ull / LOOKS_PER_S)

static uint64_t pid_hash(pid_t pid)
{
	return hash_u64((uint64_t)(uint32_t)pid);
}

static uint64_t watched_hash(uint32_t idx, const void *ctx)
{
	const struct descendants *d = ctx;

	return pid_hash(d->w[idx].pid);
}

static bool watched_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct descendants *d = ctx;

	return d->w[idx].pid == *(const pid_t *)key;
}

static struct watched *find(const struct descendants *d, pid_t pid)
{
	uint32_t k;

	if (hashmap__find(&d->index, pid_hash(pid), watched_equal, &pid, d, &k))
		return NULL;
	return &d->w[k];
}

/* Forgets w[k], moving the last entry into its place. */
static void forget(struct descendants *d, size_t k)
{
	hashmap__delete_at(&d->index,
			   hashmap__probe(&d->index, pid_hash(d->w[k].pid), watched_equal,
					  &d->w[k].pid, d),
			   watched_hash, d);
	if (k != --d->n) {
		hashmap__renumber(&d->index, pid_hash(d->w[d->n].pid), (uint32_t)d->n, (uint32_t)k);
		d->w[k] = d->w[d->n];
	}
}

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
	if (d) {
		free(d->w);
		hashmap__free(&d->index);
	}
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

/* Starts the wait for an interpreter in @w's current image. */
static void restart(struct watched *w, pid_t pid, uint64_t now)
{
	/* Named like a Python: "python3.12", "python". */
	w->python_named = proc__exe_named(pid, "python");
	w->since_ns = now;
	w->next_ns = w->python_named ? now : now + OTHER_FIRST_NS;
	w->wait_ns = 0;
	w->not_python = 0;
}

/* proc__children() callback: a process not seen before is watched. */
static int note(pid_t pid, void *arg)
{
	struct descendants *d = arg;
	struct watched *w;

	if (d->known(pid, d->arg) || find(d, pid))
		return 0;
	if (vec__reserve((void **)&d->w, &d->cap, d->n + 1, sizeof(*d->w), 16))
		return -ENOMEM;
	if (d->index.nslots < 2 * d->cap &&
	    hashmap__resize(&d->index, 4 * d->cap, watched_hash, d))
		return -ENOMEM;
	w = &d->w[d->n];
	*w = (struct watched){ .pid = pid };
	restart(w, pid, clock__mono_ns());
	exe_id(pid, &w->exe_dev, &w->exe_ino);
	hashmap__insert(&d->index, pid_hash(pid), (uint32_t)d->n++);
	return 0;
}

int descendants__watch(struct descendants *d, pid_t pid)
{
	struct watched *w = find(d, pid);

	/* Already watched: it exec'd again, so it gets a fresh wait. */
	if (w) {
		w->exe_ino = 0;
		w->exe_dev = 0;
		return 0;
	}
	return note(pid, d);
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
		restart(w, w->pid, now);
	}
	if (w->not_python || now < w->next_ns)
		return 0;
	if (d->tokens_ns < LOOK_NS) {
		d->looks_deferred++;
		return 0;	/* still due: looked at when the budget allows */
	}
	d->tokens_ns -= LOOK_NS;
	d->looks++;
	if (w->python_named)
		w->wait_ns = !w->wait_ns ? RETRY_NS : w->wait_ns * 2;
	else
		w->wait_ns = !w->wait_ns ? OTHER_FIRST_NS : w->wait_ns * OTHER_FACTOR;
	if (w->wait_ns > RETRY_MAX_NS)
		w->wait_ns = RETRY_MAX_NS;
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
	d->tokens_ns += d->refill_ns ? now - d->refill_ns : LOOKS_BURST * LOOK_NS;
	if (d->tokens_ns > LOOKS_BURST * LOOK_NS)
		d->tokens_ns = LOOKS_BURST * LOOK_NS;
	d->refill_ns = now;
	/* From where the last step left off, so that a budget spent early in the list
	 * does not starve its end. */
	for (size_t seen = 0, n = d->n, i = d->n ? d->rr % d->n : 0; seen < n; seen++) {
		int r = look_at(d, &d->w[i], now);

		if (r < 0)
			return r;
		if (r) {
			forget(d, i);	/* the last entry moves to i: look at it next */
			if (i >= d->n)
				i = 0;
		} else if (++i >= d->n) {
			i = 0;
		}
		d->rr = i;
	}
	return 0;
}

void descendants__counts(const struct descendants *d, uint64_t *looks, uint64_t *deferred)
{
	*looks = d->looks;
	*deferred = d->looks_deferred;
}

size_t descendants__pending(const struct descendants *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n; i++)
		n += !d->w[i].not_python;
	return n;
}
