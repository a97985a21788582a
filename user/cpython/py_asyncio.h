/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * asyncio's tasks in a target, read from outside, by one of two routes.
 *
 * PY_ASYNCIO_TABLE, 3.14+: the interpreter publishes the layout of its C tasks
 * (_Py_AsyncioModuleDebugOffsets, the .AsyncioDebug section of the _asyncio module or
 * of the interpreter that has it built in), each thread lists its tasks and names its
 * running one, and a task names the tasks that await it.
 *
 * PY_ASYNCIO_MODULE, 3.11-3.13: none of that is published or kept. The task's layout
 * is a fact of the version (checked on real tasks by tests/record/test_record_async.py); the
 * tasks are listed by asyncio.tasks' globals (a WeakSet of them, and from 3.12 the
 * set of those running their eager first step), found from the globals of the event
 * loop's own frame; and a task that awaits another left its task_wakeup,
 * a builtin method bound to it, among the awaited one's done callbacks. Which task
 * runs is told by the caller, from the coroutine frames on the thread's stack.
 *
 * For one task either route gives its name, state, the tasks awaiting it and the
 * coroutine frames it is suspended in.
 *
 * The target runs on while it is read: every pointer is checked before it is
 * followed, every walk is bounded, and a task that fails a check is left out, never
 * guessed.
 */
#ifndef PBP_PY_ASYNCIO_H
#define PBP_PY_ASYNCIO_H

#include <stdint.h>

#include "mem/mem.h"
#include "cpython/py_interp.h"

#define PY_TASKS_MAX 65536		/* tasks read per list */
#define PY_TASK_FRAMES_MAX 64		/* coroutines in one await chain */
#define PY_TASK_AWAITERS_MAX 16		/* awaiters read per task */
#define PY_TASK_NAME_MAX 128

enum py_asyncio_route {
	PY_ASYNCIO_TABLE,
	PY_ASYNCIO_MODULE,
};

struct py_asyncio {
	enum py_asyncio_route route;
	uint64_t task_size;
	uint64_t task_name, task_awaited_by, task_is_task, task_awaited_by_is_set;
	uint64_t task_coro, task_node;
	uint64_t task_state;		/* fut_state: PBP_OFF_NONE where it cannot be placed */
	uint64_t interp_tasks_head;	/* tasks whose thread has exited */
	uint64_t ts_running_loop, ts_running_task, ts_tasks_head;
	/* PY_ASYNCIO_MODULE: a task's first done callback, and the list of the others
	 * as (callback, context) tuples; whether a frame's state says "in an await"
	 * (3.13) rather than "suspended" (3.11/3.12: then only a coroutine's is one). */
	uint64_t task_callback0, task_callbacks;
	int await_state;
	/* ... and, once learnt (py_asyncio__learn; 0 before): the C Task type, the
	 * WeakSet of tasks (3.12+: those scheduled), the set of those in their eager
	 * first step (3.12+; 0 before), the dict of each loop's running task, and the
	 * type of a weak reference, once met. */
	uint64_t task_type, all_tasks, eager_tasks, current_tasks;
	uint64_t weakref_type;
};

enum py_task_state {
	PY_TASK_PENDING = 0,		/* fut_state's own values */
	PY_TASK_CANCELLED = 1,
	PY_TASK_DONE = 2,
	PY_TASK_RUNNING,		/* a thread's running task */
	PY_TASK_UNKNOWN,
};

struct py_task {
	uint64_t addr;
	char name[PY_TASK_NAME_MAX];
	enum py_task_state state;
	uint64_t awaited_by[PY_TASK_AWAITERS_MAX];	/* tasks (or futures) awaiting it */
	uint32_t nawaited_by;
	/* The frames of its coroutine and of each coroutine it awaits, outermost
	 * first: for a suspended task, down to the await it is suspended in; for the
	 * running one, down to the coroutine that runs (its callees are on the thread's
	 * stack). */
	uint64_t frames[PY_TASK_FRAMES_MAX];
	uint32_t nframes;
	int truncated;			/* a chain longer than PY_TASK_FRAMES_MAX */
	uint64_t loop;			/* PY_ASYNCIO_MODULE: its event loop (else 0) */
};

/*
 * Finds and validates the asyncio layout of interpreter @in (a live process). 0;
 * -ENOTSUP before 3.14; -ENOENT if the process has not imported asyncio (no mapped
 * file carries the section); -EINVAL if the table fails validation; -EFAULT if it
 * cannot be read.
 */
int py_asyncio__find(struct mem_source *m, const struct py_interp *in, struct py_asyncio *out);

/*
 * PY_ASYNCIO_MODULE for interpreter @in (3.11-3.13): the layout, facts of its version;
 * nothing is read. 0; -ENOTSUP for other versions or an interpreter whose offsets
 * lack what it needs.
 */
int py_asyncio__module(const struct py_interp *in, struct py_asyncio *out);

/*
 * PY_ASYNCIO_MODULE: learns where the target keeps its tasks into @a, from the globals
 * of @frame, a frame of asyncio.base_events' code (the event loop's): that module
 * imports asyncio.tasks as `tasks`, whose globals hold the Task type and the sets of
 * tasks. 0; -ENOENT if a name is missing; -ENOTSUP if Task is not asyncio's C task
 * (a Python build without _asyncio); -EINVAL if an object is not of its type;
 * -EFAULT if unreadable.
 */
int py_asyncio__learn(struct mem_source *m, const struct py_interp *in, uint64_t frame,
		      struct py_asyncio *a);

struct py_task_coro {
	uint64_t task, coro;
};

/*
 * PY_ASYNCIO_MODULE, once learnt: the tasks running now (each loop's current task,
 * and those in their eager first step), at most @cap into @out with their coroutines:
 * for a task too new for a list read earlier. Their number.
 */
size_t py_asyncio__running(struct mem_source *m, const struct py_interp *in,
			   const struct py_asyncio *a, struct py_task_coro *out, size_t cap);
/* Whether @task is among the @n tasks of @run (py_asyncio__running's). */
int py_asyncio__is_running(const struct py_task_coro *run, size_t n, uint64_t task);

/*
 * PY_ASYNCIO_MODULE: into *@loop, the event loop whose BaseEventLoop._run_once frame is
 * @frame, as its tasks name it (an address, compared, never followed). 0; -EFAULT if
 * unreadable; -EINVAL if the frame holds none.
 */
int py_asyncio__loop_of(struct mem_source *m, const struct py_interp *in, uint64_t frame,
			uint64_t *loop);

/* Whether @addr holds a task, by its type's flag or type (1/0). */
int py_asyncio__is_task(struct mem_source *m, const struct py_asyncio *a, uint64_t addr);

/* Called per task of a list; non-zero stops the walk and is returned. */
typedef int (*py_task_fn)(uint64_t task, void *arg);

/*
 * Walks the circular list of tasks whose head node is at @head (a thread state's or
 * the interpreter's, as py_asyncio says). 0; -EFAULT if a node cannot be read;
 * -ELOOP if the list does not come back to its head within PY_TASKS_MAX tasks.
 */
int py_asyncio__walk(struct mem_source *m, const struct py_asyncio *a, uint64_t head,
		     py_task_fn fn, void *arg);

/* Called per task of the module route's sets with the weak reference it was found
 * through (0 for one in its eager first step); non-zero stops the walk. */
typedef int (*py_task_ref_fn)(uint64_t task, uint64_t ref, void *arg);
/* Whether the task behind weak reference @ref was had from an earlier walk. */
typedef int (*py_ref_known_fn)(uint64_t ref, void *arg);

/*
 * PY_ASYNCIO_MODULE, once learnt: calls @fn for each task the target lists, those in
 * their eager first step first, up to PY_TASKS_MAX; with @known, not for those behind
 * a weak reference it knows (read no further). 0 (a set that changes under the walk
 * is taken as far as it was read); -ENOENT before py_asyncio__learn.
 */
int py_asyncio__walk_all(struct mem_source *m, const struct py_interp *in,
			 struct py_asyncio *a, py_ref_known_fn known, py_task_ref_fn fn,
			 void *arg);

/* Whether @obj is a coroutine (not a generator, nor an async generator). */
int py_asyncio__is_coroutine(struct mem_source *m, const struct py_interp *in, uint64_t obj);

/*
 * Reads task @addr into @t; @running is the running task of its thread (0: none), and
 * with @frames its coroutines' frames too. 0; -EINVAL if what is there is not a task;
 * -EFAULT if it cannot be read.
 */
int py_asyncio__task(struct mem_source *m, const struct py_interp *in,
		     const struct py_asyncio *a, uint64_t addr, uint64_t running, int frames,
		     struct py_task *t);

#endif
