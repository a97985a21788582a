// SPDX-License-Identifier: GPL-2.0-only
/*
 * dump --async: each thread's list of asyncio tasks and its running task, then the
 * tasks of threads that have exited (the interpreter's own list), each task read with
 * its awaiters and coroutine frames (py_asyncio.h), the frames named by the decoder.
 * A list that changes while it is walked is walked again; a task that fails its
 * checks is left out and counted. 3.11-3.13 keep no list per thread: asyncio's own
 * sets of tasks are read, found from a thread's event-loop frame, and each task goes
 * to the thread that runs its loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dump/dump_tasks.h"
#include "base/exitcodes.h"
#include "base/log.h"
#include "output/out_task_tree.h"
#include "cpython/py_asyncio.h"
#include "base/vec.h"

#define WALK_RETRIES 3
#define DUMP_TASKS_MAX (4 * PY_TASKS_MAX)
#define DUMP_RUNNING_MAX 64		/* 3.11-3.13: tasks running now, one per loop */

struct collected {
	const struct dump_tasks_in *in;
	const struct py_asyncio *a;
	struct py_task *tasks;
	uint32_t *tids;
	size_t n, cap, tids_cap;
	uint32_t tid;
	uint64_t running;
	size_t skipped;
};

static int collect(uint64_t addr, void *arg)
{
	struct collected *c = arg;

	if (c->n == DUMP_TASKS_MAX)
		return -E2BIG;
	if (vec__reserve((void **)&c->tasks, &c->cap, c->n + 1, sizeof(*c->tasks), 64) ||
	    vec__reserve((void **)&c->tids, &c->tids_cap, c->n + 1, sizeof(*c->tids), 64))
		return -ENOMEM;
	if (py_asyncio__task(c->in->mem, c->in->interp, c->a, addr, c->running, 1,
			     &c->tasks[c->n])) {
		c->skipped++;
		return 0;
	}
	c->tids[c->n++] = c->tid;
	return 0;
}

/* One list; walked again from scratch while it changes under the walk. */
static int collect_list(struct collected *c, uint64_t head)
{
	size_t n0 = c->n, skipped0 = c->skipped;
	int err = 0;

	for (int i = 0; i <= WALK_RETRIES; i++) {
		c->n = n0;
		c->skipped = skipped0;
		err = py_asyncio__walk(c->in->mem, c->a, head, collect, c);
		if (err != -EFAULT && err != -ELOOP)
			break;
	}
	if (err == -EFAULT || err == -ELOOP) {
		pr_warn("a task list kept changing while it was read: %zu of its tasks shown\n",
			c->n - n0);
		err = 0;
	}
	return err;
}

static int collect_all(struct collected *c)
{
	const struct dump_tasks_in *in = c->in;
	uint64_t interps[PBP_INTERPS_MAX];
	unsigned int ninterps = 0;
	int err;

	for (unsigned int i = 0; i < in->nthreads; i++) {
		const struct py_thread *t = &in->threads[i];
		unsigned int k;

		c->tid = t->tid;
		if (mem__read_u64(in->mem, t->tstate + c->a->ts_running_task, &c->running))
			c->running = 0;
		err = collect_list(c, t->tstate + c->a->ts_tasks_head);
		if (err)
			return err;
		for (k = 0; k < ninterps && interps[k] != t->interp; k++)
			;
		if (k == ninterps && ninterps < PBP_INTERPS_MAX)
			interps[ninterps++] = t->interp;
	}
	c->tid = 0;
	c->running = 0;
	for (unsigned int k = 0; k < ninterps; k++) {
		err = collect_list(c, interps[k] + c->a->interp_tasks_head);
		if (err)
			return err;
	}
	return 0;
}

/* Tasks of one walk of asyncio's sets, by address. */
struct addrs {
	uint64_t *a;
	size_t n, cap;
};

static int add_addr(uint64_t task, uint64_t ref, void *arg)
{
	struct addrs *v = arg;

	(void)ref;
	if (v->n == DUMP_TASKS_MAX)
		return -E2BIG;
	if (vec__reserve((void **)&v->a, &v->cap, v->n + 1, sizeof(*v->a), 64))
		return -ENOMEM;
	v->a[v->n++] = task;
	return 0;
}

static int cmp_addr(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Each of @v's tasks once: a task moving from the eager set to the scheduled one
 * while they are walked is in both. */
static void unique(struct addrs *v)
{
	size_t k = 0;

	if (v->n)
		qsort(v->a, v->n, sizeof(*v->a), cmp_addr);
	for (size_t i = 0; i < v->n; i++)
		if (!k || v->a[i] != v->a[k - 1])
			v->a[k++] = v->a[i];
	v->n = k;
}

/* 3.11-3.13: learns where the tasks are from the first event loop's frame that shows
 * it, and each thread's loop into @loops (0: the thread runs none). 0; -ENOENT when no
 * thread runs an event loop; py_asyncio__learn's failure otherwise, a name it misses
 * as -EINVAL. */
static int learn_loops(const struct dump_tasks_in *in, struct py_asyncio *a, uint64_t *loops)
{
	int err = 0, seen = 0;

	for (unsigned int i = 0; i < in->nthreads; i++) {
		uint64_t frame = in->loop_frames ? in->loop_frames[i] : 0;

		loops[i] = 0;
		if (!frame)
			continue;
		seen = 1;
		if (!a->task_type)
			err = py_asyncio__learn(in->mem, in->interp, frame, a);
		if (a->task_type && py_asyncio__loop_of(in->mem, in->interp, frame, &loops[i]))
			loops[i] = 0;
	}
	if (a->task_type)
		return 0;
	if (!seen)
		return -ENOENT;
	return err == -ENOENT ? -EINVAL : err;
}

/* The rank of the thread whose event loop is @loop, as @loops holds them: its index,
 * or in->nthreads if none runs it. */
static unsigned int loop_rank(const struct dump_tasks_in *in, const uint64_t *loops,
			      uint64_t loop)
{
	unsigned int i;

	for (i = 0; loop && i < in->nthreads; i++)
		if (loops[i] == loop)
			break;
	return loop ? i : in->nthreads;
}

struct ranked {
	unsigned int rank;
	size_t at;
};

static int cmp_ranked(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

/* Puts @c's tasks in the order of @rank (each task's), keeping the order within one.
 * In place, by following each cycle of the permutation: at the cap the tasks take
 * some 180 MB, which a sorted copy would double. */
static int group(struct collected *c, const unsigned int *rank)
{
	struct ranked *r = calloc(c->n ? c->n : 1, sizeof(*r));
	struct py_task held;
	uint32_t held_tid;

	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++)
		r[i] = (struct ranked){ .rank = rank[i], .at = i };
	qsort(r, c->n, sizeof(*r), cmp_ranked);
	/* Slot i takes task r[i].at; a slot filled has its .at set to itself. */
	for (size_t i = 0; i < c->n; i++) {
		size_t j = i;

		if (r[i].at == i)
			continue;
		held = c->tasks[i];
		held_tid = c->tids[i];
		while (r[j].at != i) {
			size_t from = r[j].at;

			c->tasks[j] = c->tasks[from];
			c->tids[j] = c->tids[from];
			r[j].at = j;
			j = from;
		}
		c->tasks[j] = held;
		c->tids[j] = held_tid;
		r[j].at = j;
	}
	free(r);
	return 0;
}

/*
 * 3.11-3.13: the tasks asyncio's sets hold, each read once; a task belongs to the
 * thread that runs its event loop. A task that has ended (it waits only to be
 * collected) is left out, as 3.14 drops it from its thread's list. Tasks come grouped
 * by thread, in the threads' order, those of no running loop last (tid 0).
 */
static int collect_module(struct collected *c, struct py_asyncio *a)
{
	const struct dump_tasks_in *in = c->in;
	struct py_task_coro run[DUMP_RUNNING_MAX];
	uint64_t *loops = calloc(in->nthreads ? in->nthreads : 1, sizeof(*loops));
	unsigned int *rank = NULL;
	struct addrs v = { 0 };
	size_t nrun;
	int err = -ENOMEM;

	if (!loops)
		goto out;
	err = learn_loops(in, a, loops);
	if (!err)
		err = py_asyncio__walk_all(in->mem, in->interp, a, NULL, add_addr, &v);
	if (!err && !(rank = calloc(v.n ? v.n : 1, sizeof(*rank))))
		err = -ENOMEM;
	if (err)
		goto out;
	unique(&v);
	nrun = py_asyncio__running(in->mem, in->interp, a, run, DUMP_RUNNING_MAX);
	for (size_t k = 0; k < v.n && !err; k++) {
		const struct py_task *t;
		unsigned int at;

		c->running = py_asyncio__is_running(run, nrun, v.a[k]) ? v.a[k] : 0;
		c->tid = 0;
		err = collect(v.a[k], c);
		if (err || !c->n || c->tasks[c->n - 1].addr != v.a[k])
			continue;	/* skipped: it failed its checks */
		t = &c->tasks[c->n - 1];
		if (t->state == PY_TASK_DONE || t->state == PY_TASK_CANCELLED) {
			c->n--;
			continue;
		}
		at = loop_rank(in, loops, t->loop);
		rank[c->n - 1] = at;
		c->tids[c->n - 1] = at < in->nthreads ? in->threads[at].tid : 0;
	}
	if (!err)
		err = group(c, rank);
out:
	free(v.a);
	free(rank);
	free(loops);
	return err;
}

/* Names each task's frames, innermost first, into one array the tree points into. */
static int name_frames(const struct dump_tasks_in *in, const struct collected *c,
		       struct tt_task *tt, struct decoded_frame *frames)
{
	size_t used = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct py_task *t = &c->tasks[i];

		tt[i] = (struct tt_task){ .tid = c->tids[i], .task = t, .frames = frames + used };
		for (uint32_t k = t->nframes; k-- > 0;) {
			if (decoder__name_frame(in->dec, in->mem, t->frames[k], &frames[used])) {
				tt[i].incomplete = 1;
				continue;
			}
			used++;
			tt[i].nframes++;
		}
	}
	return 0;
}

static int refuse(const struct dump_tasks_in *in, int err)
{
	char ver[32];

	py_interp__version_str(in->interp->version_hex, ver, sizeof(ver));
	switch (err) {
	case -ENOTSUP:
		pr_warn("dump --async reads CPython 3.11 and later; process %d runs CPython %s\n",
			(int)in->interp->pid, ver);
		return EXIT_UNSUPPORTED;
	case -EPROTONOSUPPORT:
		pr_warn("process %d: its asyncio tasks are not _asyncio's C tasks, the only "
			"ones read on CPython %s; not read\n", (int)in->interp->pid, ver);
		return EXIT_UNSUPPORTED;
	case -EINVAL:
		pr_warn("process %d: asyncio's layout fails its checks; not read\n",
			(int)in->interp->pid);
		return EXIT_UNSUPPORTED;
	case -ESRCH:
		pr_warn("no such process: %d\n", (int)in->interp->pid);
		return EXIT_NO_PROCESS;
	default:
		pr_warn("cannot read asyncio's layout in process %d: %s\n", (int)in->interp->pid,
			strerror(-err));
		return EXIT_RUNTIME;
	}
}

int dump_tasks__run(const struct dump_tasks_in *in, FILE *f)
{
	struct collected c = { .in = in };
	struct decoded_frame *frames = NULL;
	struct tt_task *tt = NULL;
	struct py_asyncio a;
	int err, code = EXIT_OK;

	err = py_asyncio__find(in->mem, in->interp, &a);
	if (err == -ENOTSUP)
		err = py_asyncio__module(in->interp, &a);
	if (err == -ENOENT) {
		fputs("\nasyncio is not imported: no tasks\n", f);
		return ferror(f) ? EXIT_RUNTIME : EXIT_OK;
	}
	if (err)
		return refuse(in, err);
	c.a = &a;
	if (a.route == PY_ASYNCIO_MODULE) {
		err = collect_module(&c, &a);
		if (err == -ENOENT) {
			/* 3.11-3.13 find the tasks through a running loop's frame. */
			fputs("\nasyncio: no thread runs an event loop: no tasks\n", f);
			return ferror(f) ? EXIT_RUNTIME : EXIT_OK;
		}
		if (err == -ENOTSUP || err == -EINVAL)
			return refuse(in, err == -ENOTSUP ? -EPROTONOSUPPORT : -EINVAL);
	} else {
		err = collect_all(&c);
	}
	if (!err && c.n) {
		size_t nframes = 0;

		for (size_t i = 0; i < c.n; i++)
			nframes += c.tasks[i].nframes;
		tt = calloc(c.n, sizeof(*tt));
		frames = calloc(nframes ? nframes : 1, sizeof(*frames));
		err = tt && frames ? name_frames(in, &c, tt, frames) : -ENOMEM;
	}
	if (!err) {
		fprintf(f, "\nasyncio: %zu task%s\n", c.n, c.n == 1 ? "" : "s");
		if (c.skipped)
			fprintf(f, "(%zu more could not be read: they changed while read)\n",
				c.skipped);
		err = out_task_tree__write(f, in->strs, tt, c.n,
					   a.route == PY_ASYNCIO_MODULE ?
						   "Tasks of no running event loop" :
						   "Tasks of threads that have exited");
	}
	if (err) {
		pr_warn("cannot dump the asyncio tasks: %s\n", strerror(-err));
		code = EXIT_RUNTIME;
	}
	free(tt);
	free(frames);
	free(c.tasks);
	free(c.tids);
	return code;
}
