// SPDX-License-Identifier: GPL-2.0-only
/*
 * dump --async: each thread's list of asyncio tasks and its running task, then the
 * tasks of threads that have exited (the interpreter's own list), each task read with
 * its awaiters and coroutine frames (py_asyncio.h), the frames named by the decoder.
 * A list that changes while it is walked is walked again; a task that fails its
 * checks is left out and counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dump_tasks.h"
#include "exitcodes.h"
#include "log.h"
#include "out_task_tree.h"
#include "py_asyncio.h"
#include "vec.h"

#define WALK_RETRIES 3
#define DUMP_TASKS_MAX (4 * PY_TASKS_MAX)

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
		pr_warn("dump --async reads CPython 3.14 and later, which publish asyncio's "
			"layout; process %d runs CPython %s\n", (int)in->interp->pid, ver);
		return EXIT_UNSUPPORTED;
	case -EINVAL:
		pr_warn("process %d: asyncio's published layout fails its checks; not read\n",
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
	if (err == -ENOENT) {
		fputs("\nasyncio is not imported: no tasks\n", f);
		return ferror(f) ? EXIT_RUNTIME : EXIT_OK;
	}
	if (err)
		return refuse(in, err);
	c.a = &a;
	err = collect_all(&c);
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
		err = out_task_tree__write(f, in->strs, tt, c.n);
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
