// SPDX-License-Identifier: GPL-2.0-only
/*
 * What reading an asyncio task costs when the target makes its awaiters' set as large
 * as it likes (py_asyncio.c read_awaiters), and that a read budget (mem_budget.c) ends
 * a walk: both over a fake memory, counting its reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_mem.h"
#include "mem_budget.h"
#include "py_asyncio.h"

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

	free(bytes);
	printf("asyncio reads: ok\n");
	return 0;
}
