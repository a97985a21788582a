// SPDX-License-Identifier: GPL-2.0-only
/*
 * --async: a sample of a thread running an asyncio task becomes the task's logical
 * stack. On 3.14+ BPF sends the running task and the fingerprint of its coroutine's
 * code with the sample, and copies the task object and its name; here the frame of
 * that coroutine is found in the thread's stack (the outermost frame running that
 * code: the event loop's frames are rootward of it). On 3.11-3.13, which name no
 * running task, it is the innermost frame on the stack, inside the event loop's, that
 * is some task's coroutine's (task_of_coro). The frames rootward of it are dropped,
 * and in their place go the task's name and the chain of tasks awaiting it, each with
 * the coroutine frames it is suspended in, read from live memory; a task started
 * eagerly goes under the task that started it (eager_parent()). A task that was not
 * copied and whose coroutine no longer runs the sampled code has ended since (its
 * address may hold another task by now), as has an awaiter that is done: the sample
 * then stays the thread's stack, never under another task's name.
 *
 * In wall and off-CPU modes the tasks that wait are swept too, every
 * SESSION_TASK_SWEEP_NS: each suspended task is charged the time since the last sweep
 * under its own chain and the frames it awaits in, ending in "[task suspended]".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/asyncio_loop.h"
#include "base/clock.h"
#include "base/log.h"
#include "mem/mem_budget.h"
#include "cpython/py_threads.h"
#include "sample/sampler_live.h"
#include "session/session_priv.h"

/* A target that has not imported asyncio yet is looked at again after a wait that
 * doubles from the first to the last: most programs import it as they start, and a
 * long-running one that never does costs a look every few seconds. */
#define LOOK_FIRST_NS 50000000ull
#define LOOK_LAST_NS 4000000000ull

void session_tasks__look(struct session *s, struct target *t)
{
	uint64_t now = clock__mono_ns();
	int err;

	if (!s->opts.async_tasks || t->asyncio_state != TARGET_ASYNCIO_LOOK ||
	    now < t->asyncio_next_ns)
		return;
	t->asyncio_wait_ns = t->asyncio_wait_ns ? t->asyncio_wait_ns * 2 : LOOK_FIRST_NS;
	if (t->asyncio_wait_ns > LOOK_LAST_NS)
		t->asyncio_wait_ns = LOOK_LAST_NS;
	t->asyncio_next_ns = now + t->asyncio_wait_ns;
	err = py_asyncio__find(&t->live.base, &t->interp, &t->asyncio);
	if (err == -ENOTSUP && !py_asyncio__module(&t->interp, &t->asyncio)) {
		/* Found from the samples' stacks, once one runs the event loop. */
		t->asyncio_state = TARGET_ASYNCIO_FOUND;
		return;
	}
	if (err == -ENOENT || err == -ESRCH)
		return;		/* asyncio not imported yet (or the process is going) */
	if (!err && s->live_mode)
		sampler_live__task_at(t->sampler_live, t->asyncio.ts_running_task,
				      t->asyncio.task_size);
	/* A wait is charged to a thread by the id its samples carry (map_tid): ours for
	 * BPF's, the target's own for live ones, as its task lists name them. */
	if (!err && !s->live_mode && s->opts.mode != SESSION_CPU && !t->tids) {
		t->tids = malloc(sizeof(*t->tids));
		if (!t->tids)
			err = -ENOMEM;
		else
			tid_map__init(t->tids, t->interp.pid);
	}
	if (!err && !s->live_mode)
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
		pr_warn("pid %d: asyncio's tasks of CPython %s cannot be read from outside: "
			"its samples stay threads' stacks\n", (int)t->interp.pid, ver);
	} else {
		pr_warn("pid %d: asyncio's layout cannot be used (%s): its samples stay "
			"threads' stacks\n", (int)t->interp.pid, strerror(-err));
	}
}

/* Where the running task's own frames end in @st: the outermost frame of its
 * coroutine's code, @fp; or -1. */
static int32_t task_root(const struct stack *st, uint64_t fp)
{
	for (uint32_t i = st->depth; i-- > 0;)
		if (st->frames[i].code_fp == fp)
			return (int32_t)i;
	return -1;
}

/* A live sample names the running task only (sampler_live__task_at): the fingerprint
 * of its coroutine's code, read now through @m, which BPF reads with the sample. A
 * task that ended since gives another code, or none (0), and is not placed. */
static uint64_t running_fp(struct target *t, struct mem_source *m, uint64_t task)
{
	struct decoded_frame f;
	uint64_t coro;

	if (mem__read_u64(m, task + t->asyncio.task_coro, &coro) || !coro ||
	    decoder__name_frame(t->dec, m, coro + t->interp.off.gen_iframe, &f))
		return 0;
	return f.code_fp;
}

/* Starts @link as task @pt, with no frames yet. */
static int name_link(struct target *t, const struct py_task *pt, struct task_link *link)
{
	char name[PY_TASK_NAME_MAX + 8];
	int64_t id;

	snprintf(name, sizeof(name), "task %s", pt->name);
	id = strtab__intern(t->session->strs, name, strlen(name));
	if (id < 0)
		return (int)id;
	link->name = (uint32_t)id;
	link->nframes = 0;
	return 0;
}

/* @link from task @task: its name and suspended frames, read from @m. The running
 * task (@fp its coroutine's code, not 0) needs no frames: they are in the stack. Read
 * live, its coroutine must still run code @fp (-ESTALE if not): the task may have
 * ended since the sample, and its memory been reused; from the record's copy of it
 * (@copied), it is as it was then. */
static int read_link(struct target *t, struct mem_source *m, uint64_t task, uint64_t fp,
		     int copied, struct py_task *pt, struct task_link *link)
{
	struct decoded_frame first;
	int err;

	err = py_asyncio__task(m, &t->interp, &t->asyncio, task, 0, !fp || !copied, pt);
	if (err)
		return err;
	if (fp && !copied && (!pt->nframes ||
			      decoder__name_frame(t->dec, m, pt->frames[0], &first) ||
			      first.code_fp != fp))
		return -ESTALE;
	err = name_link(t, pt, link);
	if (err)
		return err;
	/* The running task's frames are in the stack; an awaiter's are read here. */
	for (uint32_t i = 0; !fp && i < pt->nframes; i++)
		if (!decoder__name_frame(t->dec, m, pt->frames[i],
					 &link->frames[link->nframes]))
			link->nframes++;
	return 0;
}

/* A target's index of tasks by coroutine is rebuilt on a miss, at most this often,
 * from at most this many tasks; 3.11-3.13 add the tasks made since, on a miss, at
 * most every INDEX_ADD_NS (a scan of the set of tasks, and two reads per new task):
 * a server makes a task per request, which a rebuild every 100 ms would miss. */
#define INDEX_EVERY_NS 100000000ull
#define INDEX_ADD_NS 2000000ull
#define INDEX_TASKS_MAX 4096
#define INDEX_READS_MAX (2 * INDEX_TASKS_MAX + 1024)	/* the lists' nodes, the tasks' */
/* What placing one sample may read of live memory: the awaiters, their frames, and
 * the tasks that started the running one eagerly. A chain that needs more is cut. */
#define CHAIN_READS_MAX 1024
/* Frames below a running task's own searched for the task that started it. */
#define EAGER_SEARCH 64

struct index_walk {
	struct target *t;
	struct mem_budget mem;
	size_t seen;
};

static int index_task(uint64_t task, void *arg)
{
	struct index_walk *w = arg;
	uint64_t coro;

	if (w->seen++ == INDEX_TASKS_MAX || w->mem.spent)
		return 1;
	if (mem__read_u64(&w->mem.base, task + w->t->asyncio.task_coro, &coro) || !coro)
		return 0;
	return task_index__add(&w->t->tasks, coro, task);
}

/* 3.11-3.13: a task of asyncio's sets, and the weak reference it was read through. */
static int index_module_task(uint64_t task, uint64_t ref, void *arg)
{
	struct index_walk *w = arg;
	int err = index_task(task, arg);

	if (!err && ref)
		err = task_index__add(&w->t->task_refs, ref, task);
	return err;
}

static int ref_known(uint64_t ref, void *arg)
{
	struct index_walk *w = arg;
	uint64_t task;

	return !task_index__find(&w->t->task_refs, ref, &task);
}

/* 3.11-3.13: indexes the tasks asyncio's sets hold; with @fresh only, those read
 * through weak references not indexed yet (and those in their eager first step). */
static void index_module(struct index_walk *w, int fresh)
{
	struct target *t = w->t;

	if (!fresh)
		task_index__reset(&t->task_refs, t->tasks.built_ns);
	py_asyncio__walk_all(&w->mem.base, &t->interp, &t->asyncio, fresh ? ref_known : NULL,
			     index_module_task, w);
	task_index__done(&t->task_refs);
}

static int index_thread(const struct py_thread *th, void *arg)
{
	struct index_walk *w = arg;
	const struct py_asyncio *a = &w->t->asyncio;

	/* A list that changes under the walk is taken as far as it was read. */
	if (py_asyncio__walk(&w->mem.base, a, th->tstate + a->ts_tasks_head, index_task,
			     w) == -ENOMEM)
		return -ENOMEM;
	return w->seen > INDEX_TASKS_MAX || w->mem.spent;
}

/* An entry of the index for @coro that still holds: a task whose coroutine is @coro.
 * The index may hold several, for a coroutine's memory reused by a later one. */
static int indexed(struct target *t, struct mem_source *m, uint64_t coro, uint64_t *task)
{
	uint64_t c;

	for (size_t k = 0; !task_index__find_at(&t->tasks, coro, k, task); k++)
		if (!mem__read_u64(m, *task + t->asyncio.task_coro, &c) && c == coro &&
		    py_asyncio__is_task(m, &t->asyncio, *task))
			return 0;
	return -ENOENT;
}

/* The task whose coroutine is at @coro, checked against memory @m: the index may be
 * older than the task found, or than the task looked for. */
static int task_of_coro(struct target *t, struct mem_source *m, uint64_t coro, uint64_t *task)
{
	struct index_walk w = { .t = t };
	uint64_t now = clock__mono_ns();
	int module = t->asyncio.route == PY_ASYNCIO_MODULE, fresh;

	if (!indexed(t, m, coro, task))
		return 0;
	fresh = t->tasks.built_ns && now - t->tasks.built_ns < INDEX_EVERY_NS;
	if (fresh && (!module || now - t->tasks_added_ns < INDEX_ADD_NS))
		return -ENOENT;
	if (!fresh)
		task_index__reset(&t->tasks, now);
	t->tasks_added_ns = now;
	mem_budget__init(&w.mem, &t->live.base, INDEX_READS_MAX);
	if (module)
		index_module(&w, fresh);
	else
		py_threads__walk(&w.mem.base, &t->interp, index_thread, &w);
	task_index__done(&t->tasks);
	return indexed(t, m, coro, task);
}

/*
 * A task started eagerly (asyncio.Task(coro, eager_start=True), as aiohttp starts its
 * handlers) runs its first step inside the step of the task that started it, which
 * awaits it only once it suspends: until then nothing in the new task names that one.
 * But its coroutine's frame is on the stack, below the new task's frames, which end at
 * @low: the first frame below that is some task's coroutine frame. Its index, with
 * the task in *@task; -1 if none.
 */
static int32_t eager_parent(struct target *t, struct mem_source *m, const struct stack *st,
			    uint32_t low, uint64_t *task)
{
	const struct py_offsets *o = &t->interp.off;
	uint64_t addr[EAGER_SEARCH];
	uint8_t owner[EAGER_SEARCH];
	uint32_t n;

	if (low + 1 >= st->depth)
		return -1;
	n = decoder__frame_addrs(t->dec, low + 1, EAGER_SEARCH, addr, owner);
	for (uint32_t i = 0; i < n; i++)
		if (owner[i] == o->owner_generator && addr[i] > o->gen_iframe &&
		    !task_of_coro(t, m, addr[i] - o->gen_iframe, task))
			return (int32_t)(low + 1 + i);
	return -1;
}

/* @link from the task @task that started the one above it eagerly: its name, and its
 * frames from the stack, @st->frames (@low, @at], outermost first. */
static int parent_link(struct target *t, struct mem_source *m, const struct stack *st,
		       uint32_t low, uint32_t at, uint64_t task, struct py_task *pt,
		       struct task_link *link)
{
	int err;

	err = py_asyncio__task(m, &t->interp, &t->asyncio, task, 0, 0, pt);
	if (!err)
		err = name_link(t, pt, link);
	if (err)
		return err;
	for (uint32_t i = at; i > low && link->nframes < PY_TASK_FRAMES_MAX; i--)
		link->frames[link->nframes++] = st->frames[i];
	return 0;
}

/* A learning that failed is tried again this much later. */
#define LEARN_AGAIN_NS 1000000000ull
/* Frames inside the event loop's searched for the running task's coroutine, and the
 * tasks running now compared with them. */
#define ROOT_SEARCH 256
#define RUNNING_MAX 32

/* 3.11-3.13: learns where the target keeps its tasks, from the event loop's frame
 * @frame, at most every LEARN_AGAIN_NS. 0, or -ENOENT until it is learnt. */
static int learn(struct target *t, struct mem_source *m, uint64_t frame)
{
	uint64_t now = clock__mono_ns();
	int err;

	if (t->asyncio.task_type)
		return 0;
	if (now < t->asyncio_next_ns)
		return -ENOENT;
	err = py_asyncio__learn(m, &t->interp, frame, &t->asyncio);
	if (!err) {
		/* From now on BPF copies the dict of running tasks with each sample. Without
		 * the copies the dict is read live, later: as before. */
		if (!t->session->live_mode)
			sampler__add_target(t->session->sampler, &t->interp, t->gil, &t->asyncio,
					    t->native_fp);
		return 0;
	}
	t->asyncio_next_ns = now + LEARN_AGAIN_NS;
	if (err == -ENOTSUP) {
		t->asyncio_state = TARGET_ASYNCIO_NONE;
		pr_warn("pid %d: asyncio runs without its C tasks (_asyncio): its samples stay "
			"threads' stacks\n", (int)t->interp.pid);
	}
	return -ENOENT;
}

/* 3.11-3.13: remembers that thread @tid runs the event loop whose _run_once frame is
 * at @frame, read through @m, for the wall-mode sweep (loop_thread). */
static void note_loop(struct target *t, struct mem_source *m, uint32_t tid, uint64_t frame)
{
	struct target_loop l = { .tid = tid };
	unsigned int k;

	if (t->session->opts.mode == SESSION_CPU ||
	    py_asyncio__loop_of(m, &t->interp, frame, &l.loop))
		return;
	for (k = 0; k < t->nloops && t->loops[k].loop != l.loop; k++)
		;
	if (k == t->nloops && t->nloops < TARGET_LOOPS_MAX)
		t->nloops++;
	if (k == TARGET_LOOPS_MAX)
		k--;
	memmove(t->loops + 1, t->loops, k * sizeof(t->loops[0]));
	t->loops[0] = l;
}

/* The thread last seen running event loop @loop; -ENOENT if none was. */
static int loop_thread(const struct target *t, uint64_t loop, uint32_t *tid)
{
	for (unsigned int k = 0; k < t->nloops; k++)
		if (t->loops[k].loop == loop) {
			*tid = t->loops[k].tid;
			return 0;
		}
	return -ENOENT;
}

/*
 * 3.11-3.13: the running task of @st and where its frames end (*@root): the innermost
 * frame inside the event loop's that is some task's coroutine's. Coroutine frames
 * inside it are those it awaits, but on 3.12+ a task started eagerly runs inside the
 * frames of the task that started it: a coroutine frame called from C (a task's step)
 * whose task is not known stops the search, rather than leave its frames to the task
 * below. The tasks running at the sample are read from the record's copy of them
 * (@st->task_copy) when it has one, and *@copied says the task was found there. -ENOENT
 * when @st runs no task: outside an event loop, or in the loop's own code or a plain
 * callback; -ESRCH when it runs coroutines of no task known.
 */
static int module_root(struct target *t, struct mem_source *m, const struct stack *st,
		       uint64_t *task, int32_t *root, int *copied)
{
	const struct py_offsets *o = &t->interp.off;
	uint64_t addr[ROOT_SEARCH];
	uint8_t owner[ROOT_SEARCH], kind[ROOT_SEARCH];
	struct py_task_coro run[RUNNING_MAX];
	int32_t loop = asyncio_loop__frame(t->session->strs, st);
	uint32_t n, k, nc = 0, at[ROOT_SEARCH];
	size_t nrun;

	if (loop <= 0 || decoder__frame_addrs(t->dec, (uint32_t)loop, 1, addr, owner) != 1 ||
	    learn(t, m, addr[0]))
		return -ENOENT;
	/* The frame is in the record's copy of the chunks, when it has one: the loop is
	 * read as it was at the sample, with no read of live memory. */
	note_loop(t, st->task_mem ? st->task_mem : m, st->tid, addr[0]);
	n = decoder__frame_addrs(t->dec, 0, loop < ROOT_SEARCH ? (uint32_t)loop : ROOT_SEARCH,
				 addr, owner);
	if (decoder__frames_kind(t->dec, st, 0, n, kind) != n)
		return -ENOENT;
	/* The coroutine frames the running task's may be, innermost first. */
	for (uint32_t i = 0; i < n; i++) {
		if (owner[i] != o->owner_generator || addr[i] <= o->gen_iframe)
			continue;
		addr[nc] = addr[i] - o->gen_iframe;
		at[nc++] = i;
		/* Whether it is a coroutine's (not a generator's) is the code's to say:
		 * the object, read live, may have ended since the sample. */
		if ((kind[i] & DECODER_FROM_C) && t->asyncio.eager_tasks &&
		    ((kind[i] & DECODER_COROUTINE) ||
		     ((kind[i] & DECODER_CODE_GONE) &&
		      py_asyncio__is_coroutine(m, &t->interp, addr[nc - 1]))))
			break;
	}
	if (!nc)
		return -ENOENT;
	/* Each pass costs more reads than the one before: the index, the tasks running
	 * now (one look for every frame), the index with the tasks made since. */
	for (k = 0; k < nc; k++)
		if (!indexed(t, m, addr[k], task))
			goto found;
	nrun = py_asyncio__running(st->task_copy ? st->task_copy : m, &t->interp, &t->asyncio,
				   run, RUNNING_MAX);
	for (k = 0; k < nc; k++)
		for (size_t j = 0; j < nrun; j++)
			if (run[j].coro == addr[k]) {
				*task = run[j].task;
				*copied = !!st->task_copy;
				goto found;
			}
	for (k = 0; k < nc; k++)
		if (!task_of_coro(t, m, addr[k], task))
			goto found;
	return -ESRCH;
found:
	*root = (int32_t)at[k];
	return 0;
}

/* Whether a frame outside @st's frame @low and inside the event loop's is a
 * generator's or coroutine's. */
static int coroutine_below(struct target *t, const struct stack *st, uint32_t low)
{
	uint64_t addr[ROOT_SEARCH];
	uint8_t owner[ROOT_SEARCH];
	int32_t loop = asyncio_loop__frame(t->session->strs, st);
	uint32_t n;

	if (loop <= (int32_t)low + 1)
		return 0;
	n = decoder__frame_addrs(t->dec, low + 1, (uint32_t)loop - low - 1 < ROOT_SEARCH ?
				 (uint32_t)loop - low - 1 : ROOT_SEARCH, addr, owner);
	for (uint32_t i = 0; i < n; i++)
		if (owner[i] == t->interp.off.owner_generator)
			return 1;
	return 0;
}

/*
 * 3.11-3.13: has the task @task, as copied with the sample (@copy), run its done
 * callbacks since (@live)? Its awaiters are found through them, and once run they may
 * be gone, with the gather or the group they led to: a task whose copy names no
 * awaiter may then have had one, and its chain would stop short.
 */
static int callbacks_ran(struct target *t, struct mem_source *copy, struct mem_source *live,
			 uint64_t task)
{
	uint64_t then, now;

	if (mem__read_u64(copy, task + t->asyncio.task_callback0, &then) || !then)
		return 0;
	return mem__read_u64(live, task + t->asyncio.task_callback0, &now) || now != then;
}

int session_tasks__chain(struct target *t, const struct stack *st, struct task_link *chain,
			 uint32_t *n, uint32_t *keep)
{
	struct session *s = t->session;
	struct mem_source *first;
	struct mem_budget live;
	struct py_task pt;
	uint64_t task = st->task, fp = st->task_fp;
	int32_t root, low, at;
	int copied = !!st->task_mem;
	int err;

	*n = 0;
	mem_budget__init(&live, &t->live.base, CHAIN_READS_MAX);
	if (t->asyncio_state != TARGET_ASYNCIO_FOUND)
		return -ENOENT;
	if (t->asyncio.route == PY_ASYNCIO_MODULE) {
		copied = 0;
		err = module_root(t, &live.base, st, &task, &root, &copied);
		if (err == -ESRCH)
			s->tasks.unplaced++;
		if (err)
			return -ENOENT;
		fp = st->frames[root].code_fp;
	} else {
		if (task && !fp && s->live_mode)
			fp = running_fp(t, copied ? st->task_mem : &live.base, task);
		if (!task || !fp)
			return -ENOENT;
		root = task_root(st, fp);
		if (root < 0) {
			s->tasks.unplaced++;
			return -ENOENT;
		}
	}
	first = copied ? st->task_mem : &live.base;
	/* Where the frames of the last task read end in the stack: it runs, or started
	 * the one above it eagerly; -1 once a task is a suspended awaiter. */
	low = root;
	/* The first awaiter of each: a task awaited by several (a shared task) goes
	 * under the one its set lists first. */
	while (*n < SESSION_TASK_CHAIN_MAX) {
		err = read_link(t, *n ? &live.base : first, task, *n ? 0 : fp, !*n && copied, &pt,
				&chain[*n]);
		/* A task read live that has ended since the sample no longer says who
		 * awaits it: the chain would stop short. */
		if (!err && (*n || !copied) &&
		    (pt.state == PY_TASK_DONE || pt.state == PY_TASK_CANCELLED))
			err = -ESTALE;
		if (err) {
			if (!*n || err == -ESTALE) {
				s->tasks.unplaced++;
				return err;
			}
			break;
		}
		(*n)++;
		if (*n == 1 && copied && !pt.nawaited_by && t->asyncio.route == PY_ASYNCIO_MODULE &&
		    callbacks_ran(t, first, &live.base, task)) {
			s->tasks.unplaced++;
			return -ESTALE;
		}
		while (!pt.nawaited_by && low >= 0 && *n < SESSION_TASK_CHAIN_MAX &&
		       (at = eager_parent(t, &live.base, st, (uint32_t)low, &task)) >= 0 &&
		       !parent_link(t, &live.base, st, (uint32_t)low, (uint32_t)at, task, &pt,
				    &chain[*n])) {
			(*n)++;
			low = at;
		}
		if (!pt.nawaited_by) {
			/* Coroutine frames left between the last task's and the event
			 * loop's belong to a task not found (one that started it eagerly):
			 * the chain would stop short. */
			if (low >= 0 && t->asyncio.route == PY_ASYNCIO_MODULE &&
			    coroutine_below(t, st, (uint32_t)low)) {
				s->tasks.unplaced++;
				return -ESTALE;
			}
			break;
		}
		low = -1;
		task = pt.awaited_by[0];
	}
	*keep = (uint32_t)root + 1;
	s->tasks.placed++;
	return 0;
}

/* What one sweep of the suspended tasks reads at most, per target: tasks, and reads
 * of live memory (a task and its awaiters cost some tens). The tasks the budget does
 * not reach are not charged that interval. */
#define SWEEP_TASKS_MAX 4096
#define SWEEP_READS_MAX 65536

struct sweep {
	struct target *t;
	session_task_wait_fn on_wait;
	struct mem_budget mem;
	uint64_t running, ns;
	uint32_t tid;		/* the thread's id in the target's namespace, then ours */
	int tid_mapped;
	int rescans;		/* /proc task-list reads left in this sweep */
	size_t seen;
	/* 3.11-3.13: each task's thread is the one its loop ran in (loop_thread), and
	 * the tasks running now are not suspended. */
	int by_loop;
	struct py_task_coro run[RUNNING_MAX];
	size_t nrun;
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

	if (task == w->running || w->seen++ == SWEEP_TASKS_MAX || w->mem.spent)
		return w->seen > SWEEP_TASKS_MAX || w->mem.spent;
	if (py_asyncio__is_running(w->run, w->nrun, task))
		return 0;
	while (n < SESSION_TASK_CHAIN_MAX) {
		err = read_link(w->t, &w->mem.base, next, 0, 0, &pt, &s->tasks.chain[n]);
		/* A task that has ended waits for nothing; one that cannot be read is
		 * left for the next sweep; one of a loop no sample showed running has no
		 * thread to wait in. */
		if (err || (!n && pt.state != PY_TASK_PENDING) ||
		    (!n && w->by_loop && loop_thread(w->t, pt.loop, &w->tid)))
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
	s->tasks.suspended_ns += w->ns;
	return w->on_wait(w->t, w->tid, s->tasks.chain, n, w->ns);
}

static int sweep_module_task(uint64_t task, uint64_t ref, void *arg)
{
	(void)ref;
	return sweep_task(task, arg);
}

static int sweep_thread(const struct py_thread *th, void *arg)
{
	struct sweep *w = arg;
	const struct py_asyncio *a = &w->t->asyncio;
	struct mem_source *m = &w->mem.base;

	w->tid = th->tid;
	w->tid_mapped = 0;
	if (mem__read_u64(m, th->tstate + a->ts_running_task, &w->running))
		w->running = 0;
	/* A list that changes under the walk is taken as far as it was read. */
	py_asyncio__walk(m, a, th->tstate + a->ts_tasks_head, sweep_task, w);
	return w->t->session->fatal || w->mem.spent ? 1 : 0;
}

void session_tasks__sweep(struct session *s, int now_anyway, session_task_wait_fn on_wait)
{
	uint64_t now = clock__mono_ns();
	struct sweep w = { .on_wait = on_wait };

	if (!s->opts.async_tasks || s->opts.mode == SESSION_CPU)
		return;
	if (!s->tasks.swept_ns)
		s->tasks.swept_ns = s->profile_ns;
	if (now < s->tasks.swept_ns) {
		s->tasks.swept_ns = now;
		return;
	}
	if (now - s->tasks.swept_ns < SESSION_TASK_SWEEP_NS && !now_anyway)
		return;
	s->tasks.swept_ns = now;
	for (size_t i = 0; i < s->targets.n; i++) {
		struct target *t = s->targets.v[i];

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
		mem_budget__init(&w.mem, &t->live.base, SWEEP_READS_MAX);
		if (t->asyncio.route == PY_ASYNCIO_TABLE) {
			w.by_loop = 0;
			w.nrun = 0;
			py_threads__walk(&w.mem.base, &t->interp, sweep_thread, &w);
			continue;
		}
		/* 3.11-3.13 keep no list of each thread's tasks: a task waits in the
		 * thread its loop was seen running in. Before the first sample in a loop
		 * has taught where the tasks are, there is nothing to sweep. */
		w.by_loop = 1;
		w.running = 0;
		w.tid_mapped = 1;	/* as the samples named the loop's thread */
		if (!t->asyncio.task_type || !t->nloops)
			continue;
		w.nrun = py_asyncio__running(&w.mem.base, &t->interp, &t->asyncio, w.run,
					     RUNNING_MAX);
		py_asyncio__walk_all(&w.mem.base, &t->interp, &t->asyncio, NULL,
				     sweep_module_task, &w);
	}
}
