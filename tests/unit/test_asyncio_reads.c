// SPDX-License-Identifier: GPL-2.0-only
/*
 * What reading an asyncio task costs when the target makes its awaiters' set as large
 * as it likes (py_asyncio.c read_awaiters), or on 3.11-3.13 its done callbacks (a list
 * that claims more entries than memory holds, a gather() closure whose future leads
 * back to another closure), and that a read budget (mem_budget.c) ends a walk: over a
 * fake memory, counting its reads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_mem.h"
#include "mem/mem_budget.h"
#include "cpython/py_asyncio.h"

#define BASE 0x10000ull
#define SIZE (1u << 20)
#define TYPE (BASE + 0x100)		/* a type object, named "Task" */
#define TYPE_NAME (BASE + 0x200)
#define TASK (BASE + 0x1000)
#define SET (BASE + 0x2000)
#define TABLE (BASE + 0x3000)		/* 4096 set entries */
#define OBJS (BASE + 0x20000)		/* the set's keys, 64 bytes apart */
#define SLOTS 4096

static struct py_interp in;
static struct py_asyncio a;

static void layout(void)
{
	struct py_offsets *o = &in.off;

	memset(&in, 0, sizeof(in));
	o->ob_type = 8;
	o->tp_name = 24;
	o->set_table = 16;
	o->set_mask = 24;
	o->gen_iframe = PBP_OFF_NONE;
	a = (struct py_asyncio){ .task_size = 64, .task_name = 16, .task_awaited_by = 24,
				 .task_is_task = 40, .task_awaited_by_is_set = 41,
				 .task_coro = 48, .task_state = PBP_OFF_NONE };
}

/* A task awaited by a set whose keys are @nstrangers objects that are no task, with
 * @nawaiters tasks after them, spread over its 4096 slots. */
static void build(struct fake_mem *m, uint32_t nstrangers, uint32_t nawaiters)
{
	uint8_t one = 1, five = 5;

	memset(m->bytes, 0, m->len);
	fake_mem__put(m, TYPE_NAME, "Task", 5);
	fake_mem__put_u64(m, TYPE + in.off.tp_name, TYPE_NAME);
	fake_mem__put(m, TASK + a.task_is_task, &one, 1);
	fake_mem__put_u64(m, TASK + a.task_awaited_by, SET);
	fake_mem__put(m, TASK + a.task_awaited_by_is_set, &one, 1);
	fake_mem__put_u64(m, SET + in.off.set_table, TABLE);
	fake_mem__put_u64(m, SET + in.off.set_mask, SLOTS - 1);
	for (uint32_t i = 0; i < nstrangers + nawaiters; i++) {
		uint64_t obj = OBJS + 64ull * i;
		uint64_t slot = (uint64_t)i * SLOTS / (nstrangers + nawaiters);

		fake_mem__put_u64(m, TABLE + 16 * slot, obj);
		fake_mem__put_u64(m, obj + in.off.ob_type, TYPE);
		fake_mem__put(m, obj + a.task_is_task, i < nstrangers ? &five : &one, 1);
	}
}

/* 3.13's route: a task type, a builtin method type, a function type and a gathering
 * future's type, each named; callbacks at 24 (the first) and 40 (the list). */
#define M_TASK_TYPE (BASE + 0x40000)
#define M_METHOD_TYPE (BASE + 0x40100)
#define M_FUNC_TYPE (BASE + 0x40200)
#define M_GATHER_TYPE (BASE + 0x40300)
#define M_NAMES (BASE + 0x40400)
#define M_TASK (BASE + 0x41000)
#define M_METHOD (BASE + 0x42000)
#define M_DEF (BASE + 0x42100)
#define M_LIST (BASE + 0x43000)
#define M_ITEMS (BASE + 0x44000)
#define M_TUPLE (BASE + 0x45000)
#define M_FUNC (BASE + 0x46000)
#define M_CLOSURE (BASE + 0x47000)
#define M_CELL (BASE + 0x48000)
#define M_GATHER (BASE + 0x49000)

static void put_type(struct fake_mem *m, uint64_t type, uint64_t name_at, const char *name)
{
	fake_mem__put(m, name_at, name, strlen(name) + 1);
	fake_mem__put_u64(m, type + 24, name_at);
}

static void module_cases(struct fake_mem *m)
{
	struct py_interp mi;
	struct py_asyncio ma;
	struct py_task t;

	memset(&mi, 0, sizeof(mi));
	mi.version_hex = 0x030d00f0;
	mi.off.ob_type = 8;
	mi.off.tp_name = 24;
	mi.off.gen_iframe = 72;
	mi.off.fr_stacktop = 64;
	mi.off.fr_globals = 24;
	mi.off.set_table = 40;
	mi.off.set_mask = 32;
	mi.off.long_tag = PBP_OFF_NONE;
	mi.off.fr_stackpointer = PBP_OFF_NONE;
	CHECK(py_asyncio__module(&mi, &ma) == 0);
	CHECK(ma.route == PY_ASYNCIO_MODULE);
	ma.task_type = M_TASK_TYPE;
	mi.version_hex = 0x030e00f0;
	CHECK(py_asyncio__module(&mi, &ma) == -ENOTSUP);

	memset(m->bytes, 0, m->len);
	put_type(m, M_TASK_TYPE, M_NAMES, "_asyncio.Task");
	put_type(m, M_METHOD_TYPE, M_NAMES + 0x40, "builtin_function_or_method");
	put_type(m, M_FUNC_TYPE, M_NAMES + 0x80, "function");
	put_type(m, M_GATHER_TYPE, M_NAMES + 0xc0, "_GatheringFuture");
	fake_mem__put(m, M_NAMES + 0x100, "task_wakeup", 12);
	fake_mem__put_u64(m, M_TASK + 8, M_TASK_TYPE);
	/* Its own task_wakeup as every callback, in a list that claims 2^40 of them. */
	fake_mem__put_u64(m, M_METHOD + 8, M_METHOD_TYPE);
	fake_mem__put_u64(m, M_METHOD + 16, M_DEF);
	fake_mem__put_u64(m, M_DEF, M_NAMES + 0x100);
	fake_mem__put_u64(m, M_METHOD + 24, M_TASK);
	fake_mem__put_u64(m, M_TASK + ma.task_callback0, M_METHOD);
	fake_mem__put_u64(m, M_TASK + ma.task_callbacks, M_LIST);
	fake_mem__put_u64(m, M_LIST + 16, 1ull << 40);
	fake_mem__put_u64(m, M_LIST + 24, M_ITEMS);
	for (int i = 0; i < 64; i++)
		fake_mem__put_u64(m, M_ITEMS + 8 * i, M_TUPLE);
	fake_mem__put_u64(m, M_TUPLE + 24, M_METHOD);
	m->base.stats.reads = 0;
	CHECK(py_asyncio__task(&m->base, &mi, &ma, M_TASK, 0, 0, &t) == 0);
	CHECK(t.nawaited_by == PY_TASK_AWAITERS_MAX);
	printf("callbacks claiming 2^40 entries: %llu reads\n",
	       (unsigned long long)m->base.stats.reads);
	CHECK(m->base.stats.reads <= 256);

	/* A gather() closure of 2^30 cells, each the gathering future, whose own callback
	 * is that closure again: followed one level, in bounded reads, to no awaiter. */
	fake_mem__put_u64(m, M_FUNC + 8, M_FUNC_TYPE);
	fake_mem__put_u64(m, M_FUNC + 72, M_CLOSURE);
	fake_mem__put_u64(m, M_CLOSURE + 16, 1ull << 30);
	for (int i = 0; i < 8; i++)
		fake_mem__put_u64(m, M_CLOSURE + 24 + 8 * i, M_CELL);
	fake_mem__put_u64(m, M_CELL + 16, M_GATHER);
	fake_mem__put_u64(m, M_GATHER + 8, M_GATHER_TYPE);
	fake_mem__put_u64(m, M_GATHER + ma.task_callback0, M_FUNC);
	fake_mem__put_u64(m, M_TASK + ma.task_callback0, M_FUNC);
	fake_mem__put_u64(m, M_TASK + ma.task_callbacks, 0);
	m->base.stats.reads = 0;
	CHECK(py_asyncio__task(&m->base, &mi, &ma, M_TASK, 0, 0, &t) == 0);
	CHECK(t.nawaited_by == 0);
	printf("a gather closure that leads back to itself: %llu reads\n",
	       (unsigned long long)m->base.stats.reads);
	CHECK(m->base.stats.reads <= 64);

	/* Not the C task type: not a task. */
	fake_mem__put_u64(m, M_TASK + 8, M_FUNC_TYPE);
	CHECK(py_asyncio__task(&m->base, &mi, &ma, M_TASK, 0, 0, &t) == -EINVAL);
	CHECK(!py_asyncio__is_task(&m->base, &ma, M_TASK));
}

int main(void)
{
	uint8_t *bytes = calloc(1, SIZE);
	struct fake_mem m;
	struct mem_budget b;
	struct py_task t;
	uint64_t v;

	CHECK(bytes != NULL);
	layout();
	fake_mem__init(&m, BASE, bytes, SIZE);

	/* A set full of strangers: the scan stops after a few, in a few reads. */
	build(&m, SLOTS, 0);
	m.base.stats.reads = 0;
	CHECK(py_asyncio__task(&m.base, &in, &a, TASK, 0, 0, &t) == 0);
	CHECK(t.nawaited_by == 0);
	printf("set of %u strangers: %llu reads\n", SLOTS,
	       (unsigned long long)m.base.stats.reads);
	CHECK(m.base.stats.reads <= 32);

	/* Awaiters among fewer strangers than that are all found. */
	build(&m, 7, PY_TASK_AWAITERS_MAX);
	CHECK(py_asyncio__task(&m.base, &in, &a, TASK, 0, 0, &t) == 0);
	CHECK(t.nawaited_by == PY_TASK_AWAITERS_MAX);

	/* A budget ends a walk: its reads pass until it is spent, then fail. */
	mem_budget__init(&b, &m.base, 2);
	CHECK(mem__read_u64(&b.base, TASK, &v) == 0);
	CHECK(mem__read_u64(&b.base, TASK, &v) == 0);
	CHECK(!b.spent);
	CHECK(mem__read_u64(&b.base, TASK, &v) != 0);
	CHECK(b.spent);
	mem_budget__init(&b, &m.base, 3);
	CHECK(py_asyncio__task(&b.base, &in, &a, TASK, 0, 0, &t) == 0);
	CHECK(b.spent && t.nawaited_by < PY_TASK_AWAITERS_MAX);

	module_cases(&m);
	free(bytes);
	printf("asyncio reads: ok\n");
	return 0;
}
