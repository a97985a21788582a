// SPDX-License-Identifier: GPL-2.0-only
/*
 * A thread's Python name read from its Thread object (py_thread_name.c) over a fake
 * memory: in each way instances keep their attributes (values shared with the class,
 * 3.11's and 3.12's and 3.13+'s; a dict of str keys; a dict of any keys), and from
 * objects a hostile target shapes: huge or impossible key tables, keys that are no
 * str, a name that is no str, a frame that runs other code. Each answer is either the
 * right name or an error, in a bounded number of reads.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fake_mem.h"
#include "fake_py.h"
#include "cpython/py_attr.h"
#include "cpython/py_thread_name.h"

#define BASE 0x10000ull
#define SIZE (1u << 20)
#define TYPE (BASE + 0x1000)
#define KEYS (BASE + 0x4000)
#define VALUES (BASE + 0x8000)
#define DICT (BASE + 0x9000)
#define OBJ (BASE + 0xa000)
#define STRS (BASE + 0x10000)		/* str objects, 0x100 apart */
#define FRAME (BASE + 0x20000)
#define CODE (BASE + 0x21000)
#define BASICSIZE 64
#define NKEYS 6				/* _name is the fourth */

static uint8_t bytes[SIZE];
static struct fake_mem m;
static struct py_offsets o;

static const char *const attr_names[NKEYS] = {
	"_target", "_args", "_kwargs", "_name", "_daemonic", "_ident",
};

static void reset(unsigned int layout)
{
	memset(bytes, 0, sizeof(bytes));
	fake_mem__init(&m, BASE, bytes, SIZE);
	CHECK(!py_offsets__builtin(layout == PY_INST_311 ? 0x030b02f0 : 0x030c01f0, &o));
	o.inst_layout = (uint8_t)layout;
	o.dictvalues_values = layout == PY_INST_313 ? 8 : 0;
	fake_mem__put_u64(&m, OBJ + o.ob_type, TYPE);
	fake_mem__put_u64(&m, TYPE + o.tp_basicsize, BASICSIZE);
	fake_mem__put_u64(&m, TYPE + o.tp_flags,
			  1ul << 9 | 1ul << 4 | (layout == PY_INST_313 ? 1ul << 2 : 0));
	for (unsigned int i = 0; i < NKEYS; i++)
		fake_py__str(&m, &o, STRS + 0x100 * i, attr_names[i]);
	fake_py__str(&m, &o, STRS + 0x100 * NKEYS, "worker-7");
}

/* A keys object at KEYS of @kind (0 any keys, 1 str keys, 2 shared) with NKEYS
 * entries; where they hold values, _name's is the name string. */
static void put_keys(uint8_t kind, int64_t nentries)
{
	uint8_t hdr[32] = { 0 };
	unsigned int width = kind ? 2 : 3;
	uint64_t entries = KEYS + 32 + 8;	/* log2_index_bytes 3 */

	hdr[8] = 3;
	hdr[9] = 3;
	hdr[10] = kind;
	memcpy(hdr + 24, &nentries, sizeof(nentries));
	fake_mem__put(&m, KEYS, hdr, sizeof(hdr));
	for (unsigned int i = 0; i < NKEYS; i++) {
		uint64_t e = entries + 8 * width * i;

		fake_mem__put_u64(&m, e + 8 * (width - 2), STRS + 0x100 * i);
		if (kind != 2)
			fake_mem__put_u64(&m, e + 8 * (width - 1),
					  i == 3 ? STRS + 0x100 * NKEYS : STRS);
	}
}

/* The values shared keys go with, at @at. */
static void put_values(uint64_t at)
{
	uint8_t head[8] = { NKEYS + 2, NKEYS, 1, 1 };	/* capacity, size, embedded, valid */

	if (o.dictvalues_values)
		fake_mem__put(&m, at, head, sizeof(head));
	for (unsigned int i = 0; i < NKEYS; i++)
		fake_mem__put_u64(&m, at + o.dictvalues_values + 8 * i,
				  i == 3 ? STRS + 0x100 * NKEYS : STRS);
}

static int name_of(char *out, size_t cap)
{
	return py_thread_name__of_object(&m.base, &o, OBJ, out, cap);
}

static void expect(const char *what, const char *want)
{
	char got[64] = "";
	int err = name_of(got, sizeof(got));

	CHECK_MSG(!err && !strcmp(got, want), "%s: %d '%s', want '%s'", what, err, got, want);
}

static void expect_error(const char *what)
{
	char got[64] = "";
	uint64_t before = m.base.stats.reads;
	int err = name_of(got, sizeof(got));

	CHECK_MSG(err < 0, "%s: %d '%s', want an error", what, err, got);
	CHECK_MSG(m.base.stats.reads - before <= 2 * PY_ATTR_KEYS_MAX + 16,
		  "%s: %llu reads", what, (unsigned long long)(m.base.stats.reads - before));
}

static void shared_values(void)
{
	reset(PY_INST_311);
	put_keys(2, NKEYS);
	fake_mem__put_u64(&m, TYPE + o.ht_cached_keys, KEYS);
	put_values(VALUES);
	fake_mem__put_u64(&m, OBJ - 32, VALUES);
	expect("3.11 values", "worker-7");

	reset(PY_INST_312);
	put_keys(2, NKEYS);
	fake_mem__put_u64(&m, TYPE + o.ht_cached_keys, KEYS);
	put_values(VALUES);
	fake_mem__put_u64(&m, OBJ - 24, VALUES - 1);
	expect("3.12 values", "worker-7");

	reset(PY_INST_313);
	put_keys(2, NKEYS);
	fake_mem__put_u64(&m, TYPE + o.ht_cached_keys, KEYS);
	put_values(OBJ + BASICSIZE);
	expect("3.13 inline values", "worker-7");
	/* Values no longer valid: the dict holds the attributes now. */
	bytes[OBJ + BASICSIZE + 3 - BASE] = 0;
	expect_error("3.13 invalid values, no dict");
}

static void dicts(void)
{
	static const unsigned int layouts[] = { PY_INST_311, PY_INST_312, PY_INST_313 };

	for (unsigned int i = 0; i < 3; i++) {
		for (uint8_t kind = 0; kind < 2; kind++) {
			reset(layouts[i]);
			put_keys(kind, NKEYS);
			fake_mem__put_u64(&m, DICT + o.dict_keys, KEYS);
			fake_mem__put_u64(&m, OBJ - 24, DICT);
			expect(kind ? "dict of str keys" : "dict of any keys", "worker-7");
		}
		/* A dict whose values are split off (3.12+: a materialised __dict__). */
		reset(layouts[i]);
		put_keys(2, NKEYS);
		put_values(VALUES);
		fake_mem__put_u64(&m, DICT + o.dict_keys, KEYS);
		fake_mem__put_u64(&m, DICT + o.dict_values, VALUES);
		fake_mem__put_u64(&m, OBJ - 24, DICT);
		expect("split dict", "worker-7");
	}
}

static void hostile(void)
{
	char name[8];

	reset(PY_INST_312);
	put_keys(1, NKEYS);
	fake_mem__put_u64(&m, DICT + o.dict_keys, KEYS);
	fake_mem__put_u64(&m, OBJ - 24, DICT);
	expect("the base case", "worker-7");
	CHECK(!name_of(name, sizeof(name)) && !strcmp(name, "work"));	/* cut to fit */

	put_keys(1, (int64_t)1 << 40);
	expect_error("more entries than the table holds");
	put_keys(1, -1);
	expect_error("a negative entry count");
	bytes[KEYS + 8 - BASE] = 60;
	expect_error("a table of 2^60 slots");
	put_keys(1, NKEYS);
	bytes[KEYS + 10 - BASE] = 7;
	expect_error("a kind no version has");
	put_keys(1, NKEYS);
	bytes[KEYS + 10 - BASE] = 2;
	expect_error("shared keys in a dict without values");

	/* As many entries as the table could hold, none of them _name. */
	put_keys(1, NKEYS);
	bytes[KEYS + 8 - BASE] = 14;
	bytes[KEYS + 9 - BASE] = 3;
	for (unsigned int i = 0; i < 4096; i++)
		fake_mem__put_u64(&m, KEYS + 40 + 16 * i, i % 2 ? STRS : OBJ);
	fake_mem__put_u64(&m, KEYS + 24, 4096);
	expect_error("4096 keys, none of them _name");

	/* _name's value is no str: a Thread object itself. */
	put_keys(1, NKEYS);
	fake_mem__put_u64(&m, KEYS + 40 + 16 * 3 + 8, OBJ);
	expect_error("a name that is no str");

	/* No managed dict on the type, or no class: not an instance we read. */
	put_keys(1, NKEYS);
	fake_mem__put_u64(&m, TYPE + o.tp_flags, 1ul << 9);
	expect_error("a type without a managed dict");
	fake_mem__put_u64(&m, TYPE + o.tp_flags, 1ul << 4);
	expect_error("a static type");

	/* Pointers out of the fake address space. */
	fake_mem__put_u64(&m, TYPE + o.tp_flags, 1ul << 9 | 1ul << 4);
	fake_mem__put_u64(&m, OBJ - 24, 0xdead0000beefull);
	expect_error("a dict pointer to nowhere");
	fake_mem__put_u64(&m, OBJ + o.ob_type, 0x8);
	expect_error("a type pointer to nowhere");
}

static void frames(void)
{
	char name[64];
	struct fake_code c = { .qualname = STRS + 0x800 };

	reset(PY_INST_312);
	put_keys(1, NKEYS);
	fake_mem__put_u64(&m, DICT + o.dict_keys, KEYS);
	fake_mem__put_u64(&m, OBJ - 24, DICT);
	fake_py__code(&m, &o, CODE, &c);
	fake_mem__put_u64(&m, FRAME + o.fr_code, CODE);
	fake_mem__put_u64(&m, FRAME + o.fr_size, OBJ);
	fake_py__str(&m, &o, STRS + 0x800, PY_THREAD_NAME_FRAME);
	CHECK(!py_thread_name__of_frame(&m.base, &o, FRAME, name, sizeof(name)));
	CHECK(!strcmp(name, "worker-7"));
	/* The frame's memory went to another function's frame. */
	fake_py__str(&m, &o, STRS + 0x800, "Thread.run");
	CHECK(py_thread_name__of_frame(&m.base, &o, FRAME, name, sizeof(name)) == -ENOENT);
}

int main(void)
{
	shared_values();
	dicts();
	hostile();
	frames();
	if (check_failures)
		return 1;
	printf("thread names: ok\n");
	return 0;
}
