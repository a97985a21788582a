// SPDX-License-Identifier: GPL-2.0-only
/*
 * asyncio's tasks read from outside the target (see py_asyncio.h). On 3.14+ the table
 * the interpreter publishes gives the task object's fields and the thread state's; on
 * 3.11-3.13 the task's fields are facts of the version (TASK_FACTS). The rest comes
 * from py_offsets.h: a coroutine's embedded frame and state, the value stack a
 * suspended frame awaits from, type names, sets and ints.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cpython/py_asyncio.h"
#include "cpython/py_attr.h"
#include "cpython/py_obj.h"
#include "base/structbuf.h"

#define ASYNCIO_SECTION ".AsyncioDebug"
#define ASYNCIO_MODULE "_asyncio."
#define ASYNCIO_SLOTS 13		/* the 3.14 table: three sections, 104 bytes */
#define TASK_SIZE_MAX 4096
#define THREAD_SIZE_MAX (64u << 10)
#define INTERP_SIZE_MAX (16u << 20)
#define TYPE_NAME_MAX 48
#define SET_SLOTS_MAX 4096
#define SET_CHUNK 256			/* set slots read at once */
#define SET_STRANGERS_MAX 8
#define FRAME_STACK_MAX (64u << 10)	/* a value stack deeper than this is not one */
#define ALL_SLOTS_MAX (1u << 18)	/* slots of a set of all tasks: PY_TASKS_MAX, sparse */
#define CALLBACKS_MAX 64		/* done callbacks looked at, after the first */

/*
 * _asyncio's TaskObj on 3.11-3.13: FutureObj's fields, then the task's. The first done
 * callback and its context, the list of the others, the state (an int), the
 * coroutine and the name (a str; 3.12+: or the int an unnamed task is counted by).
 * Checked on real tasks by tests/record/test_record_async.py, whose task names and chains
 * are read through them on each version.
 */
struct task_facts {
	uint32_t size, callback0, callbacks, state, coro, name;
};

static const struct task_facts TASK_311 = { 176, 24, 40, 88, 136, 144 };
static const struct task_facts TASK_313 = { 144, 24, 40, 96, 120, 128 };

/* Objects of CPython's own, whose layout 3.11-3.13 share: a future's (and so a task's)
 * event loop, a module's dict, a weak reference's referent, a builtin method's
 * definition and self, a bound method's self, a function's closure, a cell's content,
 * a list's length and items, a tuple's items. */
#define FUTURE_LOOP 16
#define MODULE_DICT 16
#define WEAKREF_OBJECT 16
#define CFUNC_ML 16
#define CFUNC_SELF 24
#define METHOD_SELF 24
#define FUNC_CLOSURE 72
#define CELL_REF 16
#define CLOSURE_CELLS_MAX 8
#define VAR_SIZE 16	/* a list's length, a tuple's */
#define LIST_ITEMS 24
#define TUPLE_ITEMS 24
/* What asyncio.base_events calls asyncio.tasks, and what that module calls what the
 * route reads. */
#define NAME_TASKS_MODULE "tasks"
#define NAME_TASK_TYPE "Task"
#define NAME_ALL_311 "_all_tasks"
#define NAME_SCHEDULED "_scheduled_tasks"
#define NAME_EAGER "_eager_tasks"
#define NAME_CURRENT "_current_tasks"
#define LOOPS_MAX 16			/* loops whose running task is looked at */
#define NAME_WAKEUP "task_wakeup"
#define NAME_GATHERING "_GatheringFuture"
#define NAME_TASK_GROUP "TaskGroup"
#define NAME_PARENT_TASK "_parent_task"

static int fits(uint64_t off, uint64_t width, uint64_t size)
{
	return off < size && width <= size - off;
}

int py_asyncio__find(struct mem_source *m, const struct py_interp *in, struct py_asyncio *out)
{
	uint64_t s[ASYNCIO_SLOTS], addr, size;
	const uint64_t ptr = sizeof(uint64_t);
	struct py_asyncio a;
	int err;

	if (in->version_hex < 0x030e0000 || in->off.gen_iframe == PBP_OFF_NONE)
		return -ENOTSUP;
	err = py_interp__find_section(in, ASYNCIO_MODULE, ASYNCIO_SECTION, &addr, &size);
	if (err)
		return err;
	if (size < sizeof(s))
		return -EINVAL;
	if (mem__read(m, addr, s, sizeof(s)))
		return -EFAULT;
	a = (struct py_asyncio){
		.task_size = s[0], .task_name = s[1], .task_awaited_by = s[2],
		.task_is_task = s[3], .task_awaited_by_is_set = s[4], .task_coro = s[5],
		.task_node = s[6], .interp_tasks_head = s[8], .ts_running_loop = s[10],
		.ts_running_task = s[11], .ts_tasks_head = s[12],
	};
	if (!a.task_size || a.task_size > TASK_SIZE_MAX || !fits(a.task_name, ptr, a.task_size) ||
	    !fits(a.task_awaited_by, ptr, a.task_size) || !fits(a.task_is_task, 1, a.task_size) ||
	    !fits(a.task_awaited_by_is_set, 1, a.task_size) ||
	    !fits(a.task_coro, ptr, a.task_size) || !fits(a.task_node, 2 * ptr, a.task_size) ||
	    s[7] > INTERP_SIZE_MAX || !fits(a.interp_tasks_head, 2 * ptr, s[7]) ||
	    s[9] > THREAD_SIZE_MAX || !fits(a.ts_running_loop, ptr, s[9]) ||
	    !fits(a.ts_running_task, ptr, s[9]) || !fits(a.ts_tasks_head, 2 * ptr, s[9]))
		return -EINVAL;
	/* fut_state is not in the table: it sits between fut_awaited_by and fut_is_task
	 * (an int after a pointer), where 3.14 and 3.15 put it. */
	a.task_state = a.task_is_task == a.task_awaited_by + ptr + sizeof(int32_t)
			       ? a.task_awaited_by + ptr : PBP_OFF_NONE;
	*out = a;
	return 0;
}

int py_asyncio__module(const struct py_interp *in, struct py_asyncio *out)
{
	const struct py_offsets *o = &in->off;
	const struct task_facts *f;

	if (in->version_hex >= 0x030b0000 && in->version_hex < 0x030d0000)
		f = &TASK_311;
	else if (in->version_hex >= 0x030d0000 && in->version_hex < 0x030e0000)
		f = &TASK_313;
	else
		return -ENOTSUP;
	if (o->gen_iframe == PBP_OFF_NONE || o->fr_stacktop == PBP_OFF_NONE ||
	    o->fr_globals == PBP_OFF_NONE || o->tp_name == PBP_OFF_NONE ||
	    o->set_table == PBP_OFF_NONE)
		return -ENOTSUP;
	*out = (struct py_asyncio){
		.route = PY_ASYNCIO_MODULE,
		.task_size = f->size,
		.task_name = f->name,
		.task_coro = f->coro,
		.task_state = f->state,
		.task_callback0 = f->callback0,
		.task_callbacks = f->callbacks,
		.await_state = in->version_hex >= 0x030d0000,
		.task_awaited_by = PBP_OFF_NONE,
		.task_is_task = PBP_OFF_NONE,
		.task_awaited_by_is_set = PBP_OFF_NONE,
		.task_node = PBP_OFF_NONE,
		.interp_tasks_head = PBP_OFF_NONE,
		.ts_running_loop = PBP_OFF_NONE,
		.ts_running_task = PBP_OFF_NONE,
		.ts_tasks_head = PBP_OFF_NONE,
	};
	return 0;
}

int py_asyncio__walk(struct mem_source *m, const struct py_asyncio *a, uint64_t head,
		     py_task_fn fn, void *arg)
{
	uint64_t node;
	int ret;

	/* llist_node: next, then prev. A list never set up holds zeros: empty. */
	if (mem__read_u64(m, head, &node))
		return -EFAULT;
	for (unsigned int n = 0; node && node != head; n++) {
		if (n == PY_TASKS_MAX || node < a->task_node)
			return -ELOOP;
		ret = fn(node - a->task_node, arg);
		if (ret)
			return ret;
		if (mem__read_u64(m, node, &node))
			return -EFAULT;
	}
	return 0;
}

/* The name of the type @type, "" if unreadable. */
static void name_of_type(struct mem_source *m, const struct py_offsets *o, uint64_t type,
			 char *out, size_t cap)
{
	uint64_t name;
	size_t len = cap - 1;

	out[0] = '\0';
	if (!type || mem__read_u64(m, type + o->tp_name, &name) || !name)
		return;
	/* A name may end just before an unmapped page: shorter reads then. */
	while (mem__read(m, name, out, len)) {
		if (len <= 8) {
			out[0] = '\0';
			return;
		}
		len /= 2;
	}
	out[len] = '\0';
}

/* The name of @obj's type, "" if unreadable. */
static void type_name(struct mem_source *m, const struct py_offsets *o, uint64_t obj, char *out,
		      size_t cap)
{
	uint64_t type;

	out[0] = '\0';
	if (!mem__read_u64(m, obj + o->ob_type, &type))
		name_of_type(m, o, type, out, cap);
}

/* Whether @obj's type is named @name. */
static int type_is(struct mem_source *m, const struct py_offsets *o, uint64_t obj,
		   const char *name)
{
	char type[TYPE_NAME_MAX];

	type_name(m, o, obj, type, sizeof(type));
	return !strcmp(type, name);
}

int py_asyncio__is_task(struct mem_source *m, const struct py_asyncio *a, uint64_t addr)
{
	uint64_t type;
	uint8_t is_task;

	if (a->route == PY_ASYNCIO_TABLE)
		return !mem__read(m, addr + a->task_is_task, &is_task, 1) && is_task == 1;
	/* A subclass of Task is left out rather than read by the base's layout. */
	return a->task_type && !mem__read_u64(m, addr + sizeof(uint64_t), &type) &&
	       type == a->task_type;
}

/* The value of global @name of the module whose dict is @dict, of type @type. */
static int global_of(struct mem_source *m, const struct py_offsets *o, uint64_t dict,
		     const char *name, const char *type, uint64_t *value)
{
	int err = py_attr__dict_get(m, o, dict, name, value);

	if (!err && !type_is(m, o, *value, type))
		err = -EINVAL;
	return err;
}

int py_asyncio__learn(struct mem_source *m, const struct py_interp *in, uint64_t frame,
		      struct py_asyncio *a)
{
	const struct py_offsets *o = &in->off;
	uint64_t globals, tasks, dict, type, all, current, eager = 0;
	char name[TYPE_NAME_MAX];
	int err;

	if (a->route != PY_ASYNCIO_MODULE)
		return -EINVAL;
	err = mem__read_u64(m, frame + o->fr_globals, &globals);
	if (!err && !type_is(m, o, globals, "dict"))
		err = -EINVAL;
	if (!err)
		err = global_of(m, o, globals, NAME_TASKS_MODULE, "module", &tasks);
	if (!err)
		err = mem__read_u64(m, tasks + MODULE_DICT, &dict);
	if (!err)
		err = global_of(m, o, dict, NAME_TASK_TYPE, "type", &type);
	if (err)
		return err;
	/* The type's own name: asyncio's Task in C, not its Python fallback. */
	name_of_type(m, o, type, name, sizeof(name));
	if (strcmp(name, "_asyncio.Task"))
		return -ENOTSUP;
	err = global_of(m, o, dict, NAME_CURRENT, "dict", &current);
	if (err)
		return err;
	if (in->version_hex < 0x030c0000) {
		err = global_of(m, o, dict, NAME_ALL_311, "WeakSet", &all);
	} else {
		err = global_of(m, o, dict, NAME_SCHEDULED, "WeakSet", &all);
		if (!err)
			err = global_of(m, o, dict, NAME_EAGER, "set", &eager);
	}
	if (err)
		return err;
	a->task_type = type;
	a->all_tasks = all;
	a->eager_tasks = eager;
	a->current_tasks = current;
	return 0;
}

/* @fn for each key of the set at @set until it returns non-zero, which is returned;
 * nothing for a set of @slots_max slots or more. Its slots are read a chunk at a
 * time. */
static int set_walk(struct mem_source *m, const struct py_offsets *o, uint64_t set,
		    uint64_t slots_max, int (*fn)(uint64_t key, void *arg), void *arg)
{
	uint64_t table, mask, e[SET_CHUNK][2];	/* setentry: key, hash */
	int ret;

	if (o->set_table == PBP_OFF_NONE || mem__read_u64(m, set + o->set_table, &table) ||
	    mem__read_u64(m, set + o->set_mask, &mask) || !table || mask >= slots_max)
		return 0;
	for (uint64_t i = 0; i <= mask; i += SET_CHUNK) {
		uint64_t n = mask + 1 - i < SET_CHUNK ? mask + 1 - i : SET_CHUNK;

		if (mem__read(m, table + i * sizeof(e[0]), e, n * sizeof(e[0])))
			return 0;
		for (uint64_t k = 0; k < n; k++)
			if (e[k][0] && (ret = fn(e[k][0], arg)))
				return ret;
	}
	return 0;
}

struct all_walk {
	struct mem_source *m;
	const struct py_offsets *o;
	struct py_asyncio *a;
	py_ref_known_fn known;
	py_task_ref_fn fn;
	void *arg;
	unsigned int n;
};

/* One task of the eager set, or of the WeakSet through its weak reference @ref. */
static int all_task(struct all_walk *w, uint64_t task, uint64_t ref)
{
	if (w->n++ == PY_TASKS_MAX)
		return 1;
	return py_asyncio__is_task(w->m, w->a, task) ? w->fn(task, ref, w->arg) : 0;
}

static int eager_key(uint64_t key, void *arg)
{
	return all_task(arg, key, 0);
}

static int weakref_key(uint64_t key, void *arg)
{
	struct all_walk *w = arg;
	uint64_t ref[3];	/* ob_refcnt, ob_type, wr_object */

	if (w->known && w->known(key, w->arg))
		return 0;
	if (mem__read(w->m, key, ref, sizeof(ref)))
		return 0;
	/* The first key names the type; a deleted entry's dummy is another. */
	if (!w->a->weakref_type && type_is(w->m, w->o, key, "weakref.ReferenceType"))
		w->a->weakref_type = ref[1];
	if (ref[1] != w->a->weakref_type || !ref[WEAKREF_OBJECT / 8])
		return 0;
	return all_task(w, ref[WEAKREF_OBJECT / 8], key);
}

struct running {
	struct mem_source *m;
	const struct py_asyncio *a;
	struct py_task_coro *out;
	size_t n, cap, looked;
};

/* @task, if it is one, with its coroutine. */
static int add_running(uint64_t task, void *arg)
{
	struct running *r = arg;
	uint64_t coro;

	if (r->n == r->cap || r->looked++ == 2 * r->cap)
		return 1;
	if (py_asyncio__is_task(r->m, r->a, task) &&
	    !mem__read_u64(r->m, task + r->a->task_coro, &coro) && coro)
		r->out[r->n++] = (struct py_task_coro){ .task = task, .coro = coro };
	return 0;
}

size_t py_asyncio__running(struct mem_source *m, const struct py_interp *in,
			   const struct py_asyncio *a, struct py_task_coro *out, size_t cap)
{
	struct running r = { .m = m, .a = a, .out = out, .cap = cap };
	uint64_t current[LOOPS_MAX];
	size_t n = 0;

	if (a->route != PY_ASYNCIO_MODULE || !a->task_type)
		return 0;
	py_attr__dict_values(m, &in->off, a->current_tasks, current, LOOPS_MAX, &n);
	for (size_t i = 0; i < n; i++)
		add_running(current[i], &r);
	/* An eager task is its loop's current one only while its first step runs. */
	if (a->eager_tasks)
		set_walk(m, &in->off, a->eager_tasks, ALL_SLOTS_MAX, add_running, &r);
	return r.n;
}

int py_asyncio__is_running(const struct py_task_coro *run, size_t n, uint64_t task)
{
	for (size_t i = 0; i < n; i++)
		if (run[i].task == task)
			return 1;
	return 0;
}

int py_asyncio__loop_of(struct mem_source *m, const struct py_interp *in, uint64_t frame,
			uint64_t *loop)
{
	/* _run_once(self): its first local is the loop, which it never rebinds. */
	if (mem__read_u64(m, frame + in->off.fr_size, loop))
		return -EFAULT;
	return *loop ? 0 : -EINVAL;
}

int py_asyncio__is_coroutine(struct mem_source *m, const struct py_interp *in, uint64_t obj)
{
	return type_is(m, &in->off, obj, "coroutine");
}

int py_asyncio__walk_all(struct mem_source *m, const struct py_interp *in,
			 struct py_asyncio *a, py_ref_known_fn known, py_task_ref_fn fn,
			 void *arg)
{
	struct all_walk w = {
		.m = m, .o = &in->off, .a = a, .known = known, .fn = fn, .arg = arg,
	};
	uint64_t data;
	int ret = 0;

	if (a->route != PY_ASYNCIO_MODULE || !a->task_type)
		return -ENOENT;
	if (a->eager_tasks)
		ret = set_walk(m, w.o, a->eager_tasks, ALL_SLOTS_MAX, eager_key, &w);
	if (!ret && !py_attr__get(m, w.o, a->all_tasks, "data", &data) &&
	    type_is(m, w.o, data, "set"))
		ret = set_walk(m, w.o, data, ALL_SLOTS_MAX, weakref_key, &w);
	return ret > 0 && w.n > PY_TASKS_MAX ? 0 : ret;
}

/* A small non-negative int object's value; -1 if @obj is none. */
static int64_t small_int(struct mem_source *m, const struct py_offsets *o, uint64_t obj)
{
	uint64_t tag;
	uint32_t d[2] = { 0, 0 };
	uint64_t n;

	/* 3.11 names every task by a str: its ints are laid out otherwise. */
	if (o->long_tag == PBP_OFF_NONE || mem__read_u64(m, obj + o->long_tag, &tag))
		return -1;
	n = tag >> 3;
	/* Sign bits 0: positive, 1: zero. Task counters stay within two 30-bit digits. */
	if ((tag & 3) > 1 || n > 2 || (n && mem__read(m, obj + o->long_digits, d, 4 * n)))
		return -1;
	return (int64_t)((uint64_t)(d[1] & 0x3fffffff) << 30 | (d[0] & 0x3fffffff));
}

/* A task's name: a str, or the counter an unnamed task is named "Task-N" from. */
static void task_name(struct mem_source *m, const struct py_offsets *o, uint64_t obj,
		      char *out, size_t cap)
{
	char type[TYPE_NAME_MAX];
	size_t len;
	int64_t v;

	snprintf(out, cap, "?");
	if (!obj)
		return;
	type_name(m, o, obj, type, sizeof(type));
	if (!strcmp(type, "str")) {
		if (py_obj__str(m, o, obj, out, cap, &len))
			snprintf(out, cap, "?");
	} else if (!strcmp(type, "int") && (v = small_int(m, o, obj)) >= 0) {
		snprintf(out, cap, "Task-%lld", (long long)v);
	}
}

/* Whether @obj looks like a task or future: the byte that says which, and a type that
 * is not the set's dummy (a deleted entry's key). */
static int is_awaiter(struct mem_source *m, const struct py_offsets *o, const struct py_asyncio *a,
		      uint64_t obj)
{
	char type[TYPE_NAME_MAX];
	uint8_t is_task;

	if (!obj || mem__read(m, obj + a->task_is_task, &is_task, 1) || is_task > 1)
		return 0;
	type_name(m, o, obj, type, sizeof(type));
	return type[0] && !strstr(type, "dummy");
}

struct awaiters {
	struct mem_source *m;
	const struct py_offsets *o;
	const struct py_asyncio *a;
	struct py_task *t;
	unsigned int strangers;
};

static int awaiter_key(uint64_t key, void *arg)
{
	struct awaiters *w = arg;

	if (is_awaiter(w->m, w->o, w->a, key))
		w->t->awaited_by[w->t->nawaited_by++] = key;
	else if (++w->strangers == SET_STRANGERS_MAX)
		return 1;
	return w->t->nawaited_by == PY_TASK_AWAITERS_MAX;
}

/* Who awaits the task: one object, or a set of them, whose scan ends at the
 * SET_STRANGERS_MAX-th key that is no awaiter (a deleted entry's, or the target's
 * making): its size is the target's. */
static void read_awaiters(struct mem_source *m, const struct py_offsets *o,
			  const struct py_asyncio *a, uint64_t by, int is_set, struct py_task *t)
{
	struct awaiters w = { .m = m, .o = o, .a = a, .t = t };

	if (!by)
		return;
	if (!is_set) {
		if (is_awaiter(m, o, a, by))
			t->awaited_by[t->nawaited_by++] = by;
		return;
	}
	set_walk(m, o, by, SET_SLOTS_MAX, awaiter_key, &w);
}

static void read_wakers(struct mem_source *m, const struct py_offsets *o,
			const struct py_asyncio *a, uint64_t fut, int depth, struct py_task *t);

static void add_task(struct mem_source *m, const struct py_asyncio *a, uint64_t task,
		     struct py_task *t)
{
	if (t->nawaited_by < PY_TASK_AWAITERS_MAX && py_asyncio__is_task(m, a, task))
		t->awaited_by[t->nawaited_by++] = task;
}

/* A gather()'s callback on each child, a closure over the future that gathers them:
 * whoever awaits that future awaits the child. */
static void add_gatherer(struct mem_source *m, const struct py_offsets *o,
			 const struct py_asyncio *a, uint64_t fn, struct py_task *t)
{
	uint64_t closure, cells[CLOSURE_CELLS_MAX], ref;
	int64_t n;

	if (mem__read_u64(m, fn + FUNC_CLOSURE, &closure) || !closure ||
	    mem__read(m, closure + VAR_SIZE, &n, sizeof(n)) || n <= 0)
		return;
	if (n > CLOSURE_CELLS_MAX)
		n = CLOSURE_CELLS_MAX;
	if (mem__read(m, closure + TUPLE_ITEMS, cells, (size_t)n * sizeof(cells[0])))
		return;
	for (int64_t i = 0; i < n; i++)
		if (cells[i] && !mem__read_u64(m, cells[i] + CELL_REF, &ref) && ref &&
		    type_is(m, o, ref, NAME_GATHERING)) {
			read_wakers(m, o, a, ref, 1, t);
			return;
		}
}

/*
 * PY_ASYNCIO_MODULE: who awaits the task, by one of its done callbacks. A task that
 * awaits it added its task_wakeup, a builtin method whose self is that task; a
 * gather() of it added a closure over the future the awaiting task awaits (followed
 * at @depth 0 only); a TaskGroup its _on_task_done, whose self names the group's task.
 */
static void add_waker(struct mem_source *m, const struct py_offsets *o,
		      const struct py_asyncio *a, uint64_t cb, int depth, struct py_task *t)
{
	char type[TYPE_NAME_MAX], got[sizeof(NAME_WAKEUP)];
	uint64_t ml, name, self, task;

	if (!cb || t->nawaited_by == PY_TASK_AWAITERS_MAX)
		return;
	type_name(m, o, cb, type, sizeof(type));
	if (!strcmp(type, "builtin_function_or_method")) {
		if (!mem__read_u64(m, cb + CFUNC_ML, &ml) && !mem__read_u64(m, ml, &name) &&
		    !mem__read(m, name, got, sizeof(got)) &&
		    !memcmp(got, NAME_WAKEUP, sizeof(got)) &&
		    !mem__read_u64(m, cb + CFUNC_SELF, &self))
			add_task(m, a, self, t);
	} else if (!strcmp(type, "function") && !depth) {
		add_gatherer(m, o, a, cb, t);
	} else if (!strcmp(type, "method")) {
		if (!mem__read_u64(m, cb + METHOD_SELF, &self) &&
		    type_is(m, o, self, NAME_TASK_GROUP) &&
		    !py_attr__get(m, o, self, NAME_PARENT_TASK, &task))
			add_task(m, a, task, t);
	}
}

/* The done callbacks of the task or future @fut: the first kept apart, the rest in a
 * list of (callback, context) tuples. */
static void read_wakers(struct mem_source *m, const struct py_offsets *o,
			const struct py_asyncio *a, uint64_t fut, int depth, struct py_task *t)
{
	uint64_t items[CALLBACKS_MAX], cb0, list, cb;
	int64_t n;

	if (mem__read_u64(m, fut + a->task_callback0, &cb0) ||
	    mem__read_u64(m, fut + a->task_callbacks, &list))
		return;
	add_waker(m, o, a, cb0, depth, t);
	if (!list || mem__read(m, list + VAR_SIZE, &n, sizeof(n)) || n <= 0 ||
	    mem__read_u64(m, list + LIST_ITEMS, &cb))
		return;
	if (n > CALLBACKS_MAX)
		n = CALLBACKS_MAX;
	if (!cb || mem__read(m, cb, items, (size_t)n * sizeof(items[0])))
		return;
	for (int64_t i = 0; i < n && t->nawaited_by < PY_TASK_AWAITERS_MAX; i++)
		if (items[i] && !mem__read_u64(m, items[i] + TUPLE_ITEMS, &cb))
			add_waker(m, o, a, cb, depth, t);
}

/* The object a frame suspended in an await awaits: the top of its value stack, found
 * through the stack pointer (3.14+) or the number of slots in use (3.11-3.13). */
static int awaited_of(struct mem_source *m, const struct py_offsets *o, uint64_t frame,
		      uint64_t *top)
{
	uint64_t depth = o->gen_awaited_depth * sizeof(uint64_t), sp;
	int32_t used;

	if (o->fr_stackpointer != PBP_OFF_NONE) {
		if (mem__read_u64(m, frame + o->fr_stackpointer, &sp))
			return -EFAULT;
	} else {
		if (mem__read(m, frame + o->fr_stacktop, &used, sizeof(used)) || used < 0 ||
		    (uint64_t)used > FRAME_STACK_MAX / sizeof(uint64_t))
			return -EFAULT;
		sp = frame + o->fr_size + (uint64_t)used * sizeof(uint64_t);
	}
	if (sp < frame + o->fr_size + depth || sp > frame + o->fr_size + FRAME_STACK_MAX ||
	    mem__read_u64(m, sp - depth, top))
		return -EFAULT;
	*top &= ~(uint64_t)o->stackref_tag_bits;
	return 0;
}

/*
 * The chain of coroutines from @coro down to the await it is suspended in: each one's
 * embedded frame, and from a frame suspended in an await the object on top of its value
 * stack, followed while it is a coroutine or generator of its own. Where the state
 * says only "suspended" (3.11/3.12), only a coroutine is in an await for sure: a
 * generator may have stopped at a plain yield.
 */
static void read_frames(struct mem_source *m, const struct py_offsets *o,
			const struct py_asyncio *a, uint64_t coro, struct py_task *t)
{
	char type[TYPE_NAME_MAX];
	uint64_t frame;
	int8_t state;

	while (coro) {
		type_name(m, o, coro, type, sizeof(type));
		if (strcmp(type, "coroutine") && strcmp(type, "generator") &&
		    strcmp(type, "async_generator"))
			return;		/* a task, a future: awaited in their own right */
		if (t->nframes == PY_TASK_FRAMES_MAX) {
			t->truncated = 1;
			return;
		}
		frame = coro + o->gen_iframe;
		t->frames[t->nframes++] = frame;
		if (mem__read(m, coro + o->gen_frame_state, &state, 1) ||
		    state < o->gen_awaiting_lo || state > o->gen_awaiting_hi ||
		    (a->route == PY_ASYNCIO_MODULE && !a->await_state && strcmp(type, "coroutine")) ||
		    awaited_of(m, o, frame, &coro))
			return;
	}
}

/* The state a task's fut_state holds, or the running one's. */
static enum py_task_state task_state(uint64_t addr, uint64_t running, int32_t state)
{
	if (addr == running)
		return PY_TASK_RUNNING;
	return state >= PY_TASK_PENDING && state <= PY_TASK_DONE ? (enum py_task_state)state
								 : PY_TASK_UNKNOWN;
}

/* py_asyncio__task by PY_ASYNCIO_MODULE: a task of the C Task type, read by its
 * version's layout; its awaiters from its done callbacks. */
static int module_task(struct mem_source *m, const struct py_interp *in,
		       const struct py_asyncio *a, uint64_t addr, uint64_t running, int frames,
		       struct py_task *t)
{
	const struct py_offsets *o = &in->off;
	uint8_t buf[TASK_SIZE_MAX];
	uint64_t type, name, coro;
	int32_t state;
	struct structbuf b;

	if (mem__read(m, addr, buf, a->task_size))
		return -EFAULT;
	b = structbuf__of(buf, a->task_size);
	if (structbuf__u64(&b, o->ob_type, &type) || !a->task_type || type != a->task_type ||
	    structbuf__u64(&b, a->task_name, &name) || structbuf__u64(&b, a->task_coro, &coro) ||
	    structbuf__read(&b, a->task_state, &state, sizeof(state)) ||
	    structbuf__u64(&b, FUTURE_LOOP, &t->loop))
		return -EINVAL;
	task_name(m, o, name, t->name, sizeof(t->name));
	read_wakers(m, o, a, addr, 0, t);
	/* A task that ended while its callbacks were read shows none: its state is the
	 * one read after them (a task's state is set before its callbacks go). */
	if (mem__read(m, addr + a->task_state, &state, sizeof(state)))
		return -EFAULT;
	t->state = task_state(addr, running, state);
	if (frames && t->state != PY_TASK_DONE && t->state != PY_TASK_CANCELLED)
		read_frames(m, o, a, coro, t);
	return 0;
}

int py_asyncio__task(struct mem_source *m, const struct py_interp *in,
		     const struct py_asyncio *a, uint64_t addr, uint64_t running, int frames,
		     struct py_task *t)
{
	const struct py_offsets *o = &in->off;
	uint8_t buf[TASK_SIZE_MAX];
	uint64_t name, coro, by;
	uint8_t is_task, is_set;
	int32_t state = -1;
	struct structbuf b;

	memset(t, 0, sizeof(*t));
	t->addr = addr;
	if (a->route == PY_ASYNCIO_MODULE)
		return module_task(m, in, a, addr, running, frames, t);
	if (mem__read(m, addr, buf, a->task_size))
		return -EFAULT;
	b = structbuf__of(buf, a->task_size);
	if (structbuf__u8(&b, a->task_is_task, &is_task) || is_task != 1 ||
	    structbuf__u64(&b, a->task_name, &name) || structbuf__u64(&b, a->task_coro, &coro) ||
	    structbuf__u64(&b, a->task_awaited_by, &by) ||
	    structbuf__u8(&b, a->task_awaited_by_is_set, &is_set) || is_set > 1)
		return -EINVAL;
	if (a->task_state != PBP_OFF_NONE &&
	    structbuf__read(&b, a->task_state, &state, sizeof(state)))
		return -EINVAL;
	t->state = task_state(addr, running, state);
	task_name(m, o, name, t->name, sizeof(t->name));
	read_awaiters(m, o, a, by, is_set, t);
	if (frames && t->state != PY_TASK_DONE && t->state != PY_TASK_CANCELLED)
		read_frames(m, o, a, coro, t);
	return 0;
}
