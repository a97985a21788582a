// SPDX-License-Identifier: GPL-2.0-only
/*
 * --async: a sample of a thread running an asyncio task becomes the task's logical
 * stack. BPF sends the running task and the fingerprint of its coroutine's code with
 * the sample; here the frame of that coroutine is found in the thread's stack (the
 * outermost frame running that code: the event loop's frames are rootward of it), the
 * frames rootward of it are dropped, and in their place go the task's name and the
 * chain of tasks awaiting it, each with the coroutine frames it is suspended in, read
 * from live memory. A task whose coroutine no longer runs the sampled code has ended
 * since (its address may hold another task by now): the sample then stays the
 * thread's stack, never another task's name.
 *
 * In wall and off-CPU modes the tasks that wait are swept too, every
 * SESSION_TASK_SWEEP_NS: each suspended task is charged the time since the last sweep
 * under its own chain and the frames it awaits in, ending in "[task suspended]".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "py_threads.h"
#include "session_priv.h"

/* A target that has not imported asyncio yet is looked at again after a wait that
 * doubles from the first to the last: most programs import it as they start, and a
 * long-running one that never does costs a look every few seconds. */
#define LOOK_FIRST_NS 50000000ull
#define LOOK_LAST_NS 4000000000ull

void session_tasks__look(struct session *s, struct target *t)
{
	uint64_t now = clock__mono_ns();
	int err;

	if (!s->opts.async_tasks || s->live_mode || t->asyncio_state != TARGET_ASYNCIO_LOOK ||
	    now < t->asyncio_next_ns)
		return;
	t->asyncio_wait_ns = t->asyncio_wait_ns ? t->asyncio_wait_ns * 2 : LOOK_FIRST_NS;
	if (t->asyncio_wait_ns > LOOK_LAST_NS)
		t->asyncio_wait_ns = LOOK_LAST_NS;
	t->asyncio_next_ns = now + t->asyncio_wait_ns;
	err = py_asyncio__find(&t->live.base, &t->interp, &t->asyncio);
	if (err == -ENOENT || err == -ESRCH)
		return;		/* asyncio not imported yet (or the process is going) */
	if (!err && s->opts.mode != SESSION_CPU && !t->tids) {
		t->tids = malloc(sizeof(*t->tids));
		if (!t->tids)
			err = -ENOMEM;
		else
			tid_map__init(t->tids, t->interp.pid);
	}
	if (!err)
		err = sampler__add_target(s->sampler, &t->interp, t->gil, &t->asyncio,
					  t->native_fp);
	if (!err) {
		/* Found at the first look, asyncio was there when the target was: its
		 * suspended tasks are charged from then, however long the look took.
		 * Found later, from now (it came within the last wait). */
		t->tasks_swept_ns = t->asyncio_wait_ns > LOOK_FIRST_NS ? now : t->found_ns;
		t->asyncio_state = TARGET_ASYNCIO_FOUND;
		pr_info("pid %d: asyncio found: samples in tasks show the tasks\n",
			(int)t->interp.pid);
		return;
	}
	t->asyncio_state = TARGET_ASYNCIO_NONE;
	if (err == -ENOTSUP) {
		char ver[32];

		py_interp__version_str(t->interp.version_hex, ver, sizeof(ver));
		pr_warn("pid %d: CPython %s keeps no asyncio task list that can be read from "
			"outside (3.14 and later do): its samples stay threads' stacks\n",
			(int)t->interp.pid, ver);
	} else {
		pr_warn("pid %d: asyncio's layout cannot be used (%s): its samples stay "
			"threads' stacks\n", (int)t->interp.pid, strerror(-err));
	}
}

/* Where the running task's own frames end in @st: the outermost frame of its
 * coroutine's code, or -1. */
static int32_t task_root(const struct stack *st)
{
	for (uint32_t i = st->depth; i-- > 0;)
		if (st->frames[i].code_fp == st->task_fp)
			return (int32_t)i;
	return -1;
}

/* @link from task @task read live: its name and suspended frames. -ESTALE if its
 * coroutine no longer runs code @fp (the first link only, where @fp is not 0). */
static int read_link(struct target *t, uint64_t task, uint64_t fp, struct py_task *pt,
		     struct task_link *link)
{
	struct session *s = t->session;
	struct decoded_frame first;
	char name[PY_TASK_NAME_MAX + 8];
	int64_t id;
	int err;

	err = py_asyncio__task(&t->live.base, &t->interp, &t->asyncio, task, 0, pt);
	if (err)
		return err;
	if (fp && (!pt->nframes ||
		   decoder__name_frame(t->dec, &t->live.base, pt->frames[0], &first) ||
		   first.code_fp != fp))
		return -ESTALE;
	snprintf(name, sizeof(name), "task %s", pt->name);
	id = strtab__intern(s->strs, name, strlen(name));
	if (id < 0)
		return (int)id;
	link->name = (uint32_t)id;
	link->nframes = 0;
	/* The running task's frames are in the stack; an awaiter's are read here. */
	for (uint32_t i = 0; !fp && i < pt->nframes; i++)
		if (!decoder__name_frame(t->dec, &t->live.base, pt->frames[i],
					 &link->frames[link->nframes]))
			link->nframes++;
	return 0;
}

int session_tasks__chain(struct target *t, const struct stack *st, struct task_link *chain,
			 uint32_t *n, uint32_t *keep)
{
	struct session *s = t->session;
	struct py_task pt;
	uint64_t task = st->task;
	int32_t root;
	int err;

	*n = 0;
	if (t->asyncio_state != TARGET_ASYNCIO_FOUND || !st->task || !st->task_fp)
		return -ENOENT;
	root = task_root(st);
	if (root < 0) {
		s->tasks_unplaced++;
		return -ENOENT;
	}
	/* The first awaiter of each: a task awaited by several (a shared task) goes
	 * under the one its set lists first. */
	while (*n < SESSION_TASK_CHAIN_MAX) {
		err = read_link(t, task, *n ? 0 : st->task_fp, &pt, &chain[*n]);
		if (err) {
			if (!*n) {
				s->tasks_unplaced++;
				return err;
			}
			break;
		}
		(*n)++;
		if (!pt.nawaited_by)
			break;
		task = pt.awaited_by[0];
	}
	*keep = (uint32_t)root + 1;
	s->tasks_placed++;
	return 0;
}

/* What one sweep of the suspended tasks reads at most, per target. */
#define SWEEP_TASKS_MAX 4096

struct sweep {
	struct target *t;
	uint64_t running, ns;
	uint32_t tid;		/* the thread's id in the target's namespace, then ours */
	int tid_mapped;
	int rescans;		/* /proc task-list reads left in this sweep */
	size_t seen;
};

/* The BPF samples name threads by our ids: a task's wait must too, or a target in a
 * container shows each thread twice. An id no thread has (the thread is gone, or the
 * target wrote it) is kept as it is; the task list is read again at most once per
 * sweep, so a target cannot make every thread cost a scan of /proc. */
static void map_tid(struct sweep *w)
{
	struct tid_map *m = w->t->tids;
	pid_t host;

	w->tid_mapped = 1;
	if (!m)
		return;
	if (!tid_map__known(m, w->tid, &host)) {
		w->tid = (uint32_t)host;
		return;
	}
	if (w->rescans-- <= 0)
		return;
	if (!tid_map__host(m, w->tid, &host))
		w->tid = (uint32_t)host;
}

/* One suspended task: it and its awaiters, charged the sweep's interval. */
static int sweep_task(uint64_t task, void *arg)
{
	struct sweep *w = arg;
	struct session *s = w->t->session;
	struct py_task pt;
	uint64_t next = task;
	uint32_t n = 0;
	int err;

	if (task == w->running || w->seen++ == SWEEP_TASKS_MAX)
		return w->seen > SWEEP_TASKS_MAX;
	while (n < SESSION_TASK_CHAIN_MAX) {
		err = read_link(w->t, next, 0, &pt, &s->task_chain[n]);
		/* A task that has ended waits for nothing; one that cannot be read is
		 * left for the next sweep. */
		if (err || (!n && pt.state != PY_TASK_PENDING))
			break;
		n++;
		if (!pt.nawaited_by)
			break;
		next = pt.awaited_by[0];
	}
	if (!n)
		return 0;
	if (!w->tid_mapped)
		map_tid(w);
	s->tasks_suspended_ns += w->ns;
	return session_sink__add_task_wait(w->t, w->tid, s->task_chain, n, w->ns);
}

static int sweep_thread(const struct py_thread *th, void *arg)
{
	struct sweep *w = arg;
	const struct py_asyncio *a = &w->t->asyncio;
	struct mem_source *m = &w->t->live.base;

	w->tid = th->tid;
	w->tid_mapped = 0;
	if (mem__read_u64(m, th->tstate + a->ts_running_task, &w->running))
		w->running = 0;
	/* A list that changes under the walk is taken as far as it was read. */
	py_asyncio__walk(m, a, th->tstate + a->ts_tasks_head, sweep_task, w);
	return w->t->session->fatal ? 1 : 0;
}

void session_tasks__sweep(struct session *s, int now_anyway)
{
	uint64_t now = clock__mono_ns();
	struct sweep w = { 0 };

	if (!s->opts.async_tasks || s->opts.mode == SESSION_CPU || s->live_mode)
		return;
	if (!s->tasks_swept_ns)
		s->tasks_swept_ns = s->profile_ns;
	if (now < s->tasks_swept_ns) {
		s->tasks_swept_ns = now;
		return;
	}
	if (now - s->tasks_swept_ns < SESSION_TASK_SWEEP_NS && !now_anyway)
		return;
	s->tasks_swept_ns = now;
	for (size_t i = 0; i < s->ntargets; i++) {
		struct target *t = s->targets[i];

		if (t->asyncio_state != TARGET_ASYNCIO_FOUND)
			continue;
		/* Each target from its own last sweep: one found late is charged from
		 * when its tasks are known to have been there (see session_tasks__look),
		 * and none before the profile began. */
		if (t->tasks_swept_ns < s->profile_ns)
			t->tasks_swept_ns = s->profile_ns;
		if (now <= t->tasks_swept_ns)
			continue;
		w.ns = now - t->tasks_swept_ns;
		t->tasks_swept_ns = now;
		w.t = t;
		w.seen = 0;
		w.rescans = 1;
		py_threads__walk(&t->live.base, &t->interp, sweep_thread, &w);
	}
}
