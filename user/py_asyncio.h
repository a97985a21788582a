/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * asyncio's tasks in a target, read from outside: where CPython 3.14+ publishes the
 * layout of its C tasks (_Py_AsyncioModuleDebugOffsets, the .AsyncioDebug section of
 * the _asyncio module or of the interpreter that has it built in), each thread's list
 * of tasks and its running task, and for one task its name, state, the tasks awaiting
 * it and the coroutine frames it is suspended in. 3.11-3.13 publish none of this and
 * keep no list of tasks in C: they are refused (-ENOTSUP).
 *
 * The target runs on while it is read: every pointer is checked before it is
 * followed, every walk is bounded, and a task that fails a check is left out, never
 * guessed.
 */
#ifndef PBP_PY_ASYNCIO_H
#define PBP_PY_ASYNCIO_H

#include <stdint.h>

#include "mem.h"
#include "py_interp.h"

#define PY_TASKS_MAX 65536		/* tasks read per list */
#define PY_TASK_FRAMES_MAX 64		/* coroutines in one await chain */
#define PY_TASK_AWAITERS_MAX 16		/* awaiters read per task */
#define PY_TASK_NAME_MAX 128

struct py_asyncio {
	uint64_t task_size;
	uint64_t task_name, task_awaited_by, task_is_task, task_awaited_by_is_set;
	uint64_t task_coro, task_node;
	uint64_t task_state;		/* fut_state: PBP_OFF_NONE where it cannot be placed */
	uint64_t interp_tasks_head;	/* tasks whose thread has exited */
	uint64_t ts_running_loop, ts_running_task, ts_tasks_head;
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
};

/*
 * Finds and validates the asyncio layout of interpreter @in (a live process). 0;
 * -ENOTSUP before 3.14; -ENOENT if the process has not imported asyncio (no mapped
 * file carries the section); -EINVAL if the table fails validation; -EFAULT if it
 * cannot be read.
 */
int py_asyncio__find(struct mem_source *m, const struct py_interp *in, struct py_asyncio *out);

/* Called per task of a list; non-zero stops the walk and is returned. */
typedef int (*py_task_fn)(uint64_t task, void *arg);

/*
 * Walks the circular list of tasks whose head node is at @head (a thread state's or
 * the interpreter's, as py_asyncio says). 0; -EFAULT if a node cannot be read;
 * -ELOOP if the list does not come back to its head within PY_TASKS_MAX tasks.
 */
int py_asyncio__walk(struct mem_source *m, const struct py_asyncio *a, uint64_t head,
		     py_task_fn fn, void *arg);

/*
 * Reads task @addr into @t; @running is the running task of its thread (0: none), and
 * with @frames its coroutines' frames too. 0; -EINVAL if what is there is not a task;
 * -EFAULT if it cannot be read.
 */
int py_asyncio__task(struct mem_source *m, const struct py_interp *in,
		     const struct py_asyncio *a, uint64_t addr, uint64_t running, int frames,
		     struct py_task *t);

#endif
