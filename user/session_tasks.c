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
 */
#include <errno.h>
#include <stdio.h>

#include "clock.h"
#include "log.h"
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
	if (!err)
		err = sampler__add_target(s->sampler, &t->interp, t->gil, &t->asyncio);
	if (!err) {
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
