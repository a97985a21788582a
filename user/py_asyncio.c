// SPDX-License-Identifier: GPL-2.0-only
/*
 * asyncio's tasks read from outside the target (see py_asyncio.h). The table the
 * interpreter publishes gives the task object's fields and the thread state's; the
 * rest comes from _Py_DebugOffsets (py_offsets.h): a coroutine's embedded frame and
 * state, the value stack a suspended frame awaits from, type names, sets and ints.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "py_asyncio.h"
#include "py_obj.h"
#include "structbuf.h"

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

/* The name of @obj's type, "" if unreadable. */
static void type_name(struct mem_source *m, const struct py_offsets *o, uint64_t obj, char *out,
		      size_t cap)
{
	uint64_t type, name;
	size_t len = cap - 1;

	out[0] = '\0';
	if (mem__read_u64(m, obj + o->ob_type, &type) || !type ||
	    mem__read_u64(m, type + o->tp_name, &name) || !name)
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

/* A small non-negative int object's value; -1 if @obj is none. */
static int64_t small_int(struct mem_source *m, const struct py_offsets *o, uint64_t obj)
{
	uint64_t tag;
	uint32_t d[2] = { 0, 0 };
	uint64_t n;

	if (mem__read_u64(m, obj + o->long_tag, &tag))
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

/* Who awaits the task: one object, or a set of them. The set's slots are read a
 * chunk at a time, and its scan ends at the SET_STRANGERS_MAX-th key that is no
 * awaiter (a deleted entry's, or the target's making): its size is the target's. */
static void read_awaiters(struct mem_source *m, const struct py_offsets *o,
			  const struct py_asyncio *a, uint64_t by, int is_set, struct py_task *t)
{
	uint64_t table, mask, e[SET_CHUNK][2];	/* setentry: key, hash */
	unsigned int strangers = 0;

	if (!by)
		return;
	if (!is_set) {
		if (is_awaiter(m, o, a, by))
			t->awaited_by[t->nawaited_by++] = by;
		return;
	}
	if (o->set_table == PBP_OFF_NONE || mem__read_u64(m, by + o->set_table, &table) ||
	    mem__read_u64(m, by + o->set_mask, &mask) || !table || mask >= SET_SLOTS_MAX)
		return;
	for (uint64_t i = 0; i <= mask && t->nawaited_by < PY_TASK_AWAITERS_MAX; i += SET_CHUNK) {
		uint64_t n = mask + 1 - i < SET_CHUNK ? mask + 1 - i : SET_CHUNK;

		if (mem__read(m, table + i * sizeof(e[0]), e, n * sizeof(e[0])))
			return;
		for (uint64_t k = 0; k < n && t->nawaited_by < PY_TASK_AWAITERS_MAX; k++) {
			if (!e[k][0])
				continue;
			if (is_awaiter(m, o, a, e[k][0]))
				t->awaited_by[t->nawaited_by++] = e[k][0];
			else if (++strangers == SET_STRANGERS_MAX)
				return;
		}
	}
}

/*
 * The chain of coroutines from @coro down to the await it is suspended in: each one's
 * embedded frame, and from a frame suspended in an await the object on top of its value
 * stack, followed while it is a coroutine or generator of its own.
 */
static void read_frames(struct mem_source *m, const struct py_offsets *o, uint64_t coro,
			struct py_task *t)
{
	char type[TYPE_NAME_MAX];
	uint64_t frame, sp, top;
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
		    state < o->gen_awaiting_lo || state > o->gen_awaiting_hi)
			return;
		if (mem__read_u64(m, frame + o->fr_stackpointer, &sp) ||
		    sp < frame + o->fr_size + o->gen_awaited_depth * sizeof(uint64_t) ||
		    sp > frame + o->fr_size + FRAME_STACK_MAX ||
		    mem__read_u64(m, sp - o->gen_awaited_depth * sizeof(uint64_t), &top))
			return;
		coro = top & ~(uint64_t)o->stackref_tag_bits;
	}
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
	t->state = addr == running ? PY_TASK_RUNNING
		   : state >= PY_TASK_PENDING && state <= PY_TASK_DONE ? (enum py_task_state)state
		   : PY_TASK_UNKNOWN;
	task_name(m, o, name, t->name, sizeof(t->name));
	read_awaiters(m, o, a, by, is_set, t);
	if (frames && t->state != PY_TASK_DONE && t->state != PY_TASK_CANCELLED)
		read_frames(m, o, coro, t);
	return 0;
}
