// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-thread clocks; see sampler_tasks.h. A thread that ends keeps its clock's
 * descriptor open until its process is removed: the event is dead and costs nothing,
 * and only threads found at the start have descriptors (later ones inherit).
 *
 * A thread held for the clocks that was in an uninterruptible wait is still seized
 * when the others run again (thread_freeze.h); its hold is kept here and polled from
 * the session's loop, on the thread that seized it, until it has stopped and been let
 * go.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/log.h"
#include "sample/perf_clock.h"
#include "base/proc.h"
#include "sample/sampler_tasks.h"
#include "sample/thread_freeze.h"

struct task_clock {
	pid_t pid, tid;
	int fd;
	struct bpf_link *link;
};

struct sampler_tasks {
	struct bpf_program *prog;
	uint32_t rate_hz;
	struct task_clock *c;
	uint32_t n;
	struct thread_freeze **late;	/* holds with threads still seized */
	uint32_t nlate;
	uint32_t late_threads;		/* seized late, over the run */
	uint64_t polled_ns;
};

/* One pass of adding: the target's threads go after @first. */
struct adding {
	struct sampler_tasks *t;
	pid_t pid;
	uint32_t first;
};

int sampler_tasks__new(struct bpf_program *prog, uint32_t rate_hz, struct sampler_tasks **out)
{
	struct sampler_tasks *t = calloc(1, sizeof(*t));

	if (t)
		t->c = calloc(SAMPLER_TASKS_MAX, sizeof(*t->c));
	if (!t || !t->c) {
		free(t);
		return -ENOMEM;
	}
	t->prog = prog;
	t->rate_hz = rate_hz;
	*out = t;
	return 0;
}

static void close_clock(struct task_clock *c)
{
	bpf_link__destroy(c->link);
	if (c->fd >= 0)
		close(c->fd);
}

/* Closes the clocks from @from on that belong to @pid, keeping the others in order. */
static void drop(struct sampler_tasks *t, pid_t pid, uint32_t from)
{
	uint32_t k = from;

	for (uint32_t i = from; i < t->n; i++) {
		if (t->c[i].pid == pid)
			close_clock(&t->c[i]);
		else
			t->c[k++] = t->c[i];
	}
	t->n = k;
}

static int open_one(pid_t tid, void *arg)
{
	struct adding *a = arg;
	struct sampler_tasks *t = a->t;
	struct task_clock *c;
	int err;

	if (t->n == SAMPLER_TASKS_MAX)
		return -E2BIG;
	c = &t->c[t->n];
	c->fd = perf_clock__open(tid, -1, t->rate_hz);
	if (c->fd == -ESRCH)
		return 0;	/* it ended since the listing */
	if (c->fd < 0)
		return c->fd;
	c->link = bpf_program__attach_perf_event(t->prog, c->fd);
	if (!c->link) {
		err = -errno;
		close(c->fd);
		return err;
	}
	c->pid = a->pid;
	c->tid = tid;
	t->n++;
	return 0;
}

/* Lets @pid's held threads go; keeps the hold while any is still seized. */
static void let_go(struct sampler_tasks *t, pid_t pid, struct thread_freeze *held)
{
	uint32_t left = thread_freeze__let_go(held);
	struct thread_freeze **late;

	if (!left) {
		thread_freeze__free(held);
		return;
	}
	t->late_threads += left;
	pr_warn("process %d: %u thread%s in an uninterruptible wait at attach; each is "
		"let go as soon as it stops\n", (int)pid, left, left == 1 ? " was" : "s were");
	late = realloc(t->late, (t->nlate + 1) * sizeof(*late));
	if (!late) {
		/* Kept seized until this process exits, which lets them go. */
		thread_freeze__free(held);
		return;
	}
	t->late = late;
	t->late[t->nlate++] = held;
}

int sampler_tasks__add(struct sampler_tasks *t, pid_t pid)
{
	struct adding a = { .t = t, .pid = pid, .first = t->n };
	struct thread_freeze *held = NULL;
	pid_t tracer;
	int err;

	for (uint32_t i = 0; i < t->n; i++)
		if (t->c[i].pid == pid)
			return 0;
	err = thread_freeze__all(pid, THREAD_FREEZE_SKIP_D, &held, &tracer);
	if (err) {
		if (held)
			let_go(t, pid, held);
		return err;
	}
	err = proc__tasks(pid, open_one, &a);
	let_go(t, pid, held);
	if (!err && t->n == a.first)
		err = -ESRCH;
	if (err)
		drop(t, pid, a.first);
	else
		pr_debug("process %d: %u thread clocks\n", (int)pid, t->n - a.first);
	return err;
}

void sampler_tasks__remove(struct sampler_tasks *t, pid_t pid)
{
	if (t)
		drop(t, pid, 0);
}

void sampler_tasks__poll(struct sampler_tasks *t)
{
	uint64_t now;

	if (!t || !t->nlate)
		return;
	/* The loop turns at every wake-up of the ring buffer, far more often than a
	 * stopped thread needs looking at. */
	now = clock__mono_ns();
	if (now - t->polled_ns < SAMPLER_TASKS_POLL_MS * 1000000ull)
		return;
	t->polled_ns = now;
	for (uint32_t i = t->nlate; i-- > 0;) {
		if (thread_freeze__poll(t->late[i]))
			continue;
		thread_freeze__free(t->late[i]);
		t->late[i] = t->late[--t->nlate];
	}
}

void sampler_tasks__late(const struct sampler_tasks *t, uint32_t *late, uint32_t *held)
{
	*late = t ? t->late_threads : 0;
	*held = 0;
	for (uint32_t i = 0; t && i < t->nlate; i++)
		*held += thread_freeze__held(t->late[i]);
}

uint32_t sampler_tasks__count(const struct sampler_tasks *t)
{
	return t ? t->n : 0;
}

void sampler_tasks__close(struct sampler_tasks *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n; i++)
		close_clock(&t->c[i]);
	t->n = 0;
}

void sampler_tasks__free(struct sampler_tasks *t)
{
	if (!t)
		return;
	sampler_tasks__close(t);
	for (uint32_t i = 0; i < t->nlate; i++)
		thread_freeze__free(t->late[i]);
	free(t->late);
	free(t->c);
	free(t);
}
