// SPDX-License-Identifier: GPL-2.0-only
/*
 * The aggregate's native tables (user/profile/aggregate.c), run by
 * tests/units/test_unit_binaries.py: an object is found by (pid, base name) and shared
 * by every process that maps the same build; a second object under one (pid, base name),
 * or a second start for one function, is refused and the first kept; a copy for one
 * process carries that process's objects and functions only; the tables grow past their
 * first sizes; and native frames that differ only in offset are different stacks. Prints
 * "aggregate: ok" when every check holds.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/aggregate.h"
#include "check.h"

/* Ids stand for strtab ids: the tables never read the strings. */
enum { LIBC = 1, LIBZ, PATH_LIBC, PATH_LIBZ, BID_A, BID_B, NO_BID, MEMCPY, DEFLATE };

static uint32_t object_of(const struct aggregate *a, uint32_t pid, uint32_t file)
{
	uint32_t object = UINT32_MAX;

	CHECK(!aggregate__native_object_of(a, pid, file, &object));
	return object;
}

static uint64_t func_rel(const struct aggregate *a, uint32_t object, uint32_t name)
{
	uint64_t rel = UINT64_MAX;

	CHECK(!aggregate__native_func_rel(a, object, name, &rel));
	return rel;
}

static void empty_tables_find_nothing(void)
{
	struct aggregate *a = aggregate__new();
	uint32_t object;
	uint64_t rel;

	CHECK(a);
	CHECK(aggregate__native_objects(a) == 0);
	CHECK(aggregate__native_object_of(a, 1, LIBC, &object) == -ENOENT);
	CHECK(aggregate__native_func_rel(a, 0, MEMCPY, &rel) == -ENOENT);
	/* A function of an object nobody named has nowhere to go. */
	CHECK(aggregate__native_function(a, 1, LIBC, MEMCPY, 0x100) == -ENOENT);
	aggregate__free(a);
}

static void objects_are_shared_by_build_and_first_stays(void)
{
	struct aggregate *a = aggregate__new();
	struct agg_native_object o;

	CHECK(a);
	CHECK(!aggregate__native_object(a, 1, LIBC, PATH_LIBC, BID_A));
	CHECK(!aggregate__native_object(a, 1, LIBC, PATH_LIBC, BID_A));	/* again: fine */
	CHECK(!aggregate__native_object(a, 2, LIBC, PATH_LIBC, BID_A));
	CHECK(aggregate__native_objects(a) == 1);
	CHECK(object_of(a, 1, LIBC) == object_of(a, 2, LIBC));
	/* A container's libc: same path and base name, another build. */
	CHECK(!aggregate__native_object(a, 3, LIBC, PATH_LIBC, BID_B));
	CHECK(aggregate__native_objects(a) == 2);
	CHECK(object_of(a, 3, LIBC) != object_of(a, 1, LIBC));
	o = aggregate__native_object_at(a, object_of(a, 3, LIBC));
	CHECK(o.file == LIBC && o.path == PATH_LIBC && o.build_id == BID_B);
	/* Process 1 said libc.so.6 is build A: build B under that name is refused. */
	CHECK(aggregate__native_object(a, 1, LIBC, PATH_LIBC, BID_B) == -EEXIST);
	o = aggregate__native_object_at(a, object_of(a, 1, LIBC));
	CHECK(o.build_id == BID_A);
	CHECK(!aggregate__native_object(a, 1, LIBZ, PATH_LIBZ, NO_BID));
	CHECK(object_of(a, 1, LIBZ) == 2);

	CHECK(!aggregate__native_function(a, 1, LIBC, MEMCPY, 0x19e6c0));
	CHECK(!aggregate__native_function(a, 2, LIBC, MEMCPY, 0x19e6c0));	/* same object */
	CHECK(aggregate__native_function(a, 2, LIBC, MEMCPY, 0x1000) == -EEXIST);
	CHECK(!aggregate__native_function(a, 3, LIBC, MEMCPY, 0x1a0340));
	CHECK(func_rel(a, object_of(a, 1, LIBC), MEMCPY) == 0x19e6c0);
	CHECK(func_rel(a, object_of(a, 3, LIBC), MEMCPY) == 0x1a0340);
	CHECK(!aggregate__native_function(a, 1, LIBZ, DEFLATE, 0));	/* start 0 is a start */
	CHECK(func_rel(a, object_of(a, 1, LIBZ), DEFLATE) == 0);
	aggregate__free(a);
}

static void a_copy_carries_one_process(void)
{
	struct aggregate *from = aggregate__new(), *to = aggregate__new();
	struct agg_native_object o;
	uint32_t object;

	CHECK(from && to);
	CHECK(!aggregate__native_object(from, 1, LIBC, PATH_LIBC, BID_A));
	CHECK(!aggregate__native_object(from, 1, LIBZ, PATH_LIBZ, NO_BID));
	CHECK(!aggregate__native_object(from, 3, LIBC, PATH_LIBC, BID_B));
	CHECK(!aggregate__native_function(from, 1, LIBC, MEMCPY, 0x19e6c0));
	CHECK(!aggregate__native_function(from, 1, LIBZ, DEFLATE, 0x9c70));
	CHECK(!aggregate__native_function(from, 3, LIBC, MEMCPY, 0x1a0340));

	CHECK(!aggregate__copy_natives(to, from, 3));
	CHECK(aggregate__native_objects(to) == 1);
	o = aggregate__native_object_at(to, object_of(to, 3, LIBC));
	CHECK(o.file == LIBC && o.path == PATH_LIBC && o.build_id == BID_B);
	CHECK(func_rel(to, object_of(to, 3, LIBC), MEMCPY) == 0x1a0340);
	CHECK(aggregate__native_object_of(to, 1, LIBC, &object) == -ENOENT);

	CHECK(!aggregate__copy_natives(to, from, 1));
	CHECK(aggregate__native_objects(to) == 3);
	CHECK(func_rel(to, object_of(to, 1, LIBZ), DEFLATE) == 0x9c70);
	CHECK(func_rel(to, object_of(to, 1, LIBC), MEMCPY) == 0x19e6c0);
	/* A process with no native frames copies nothing. */
	CHECK(!aggregate__copy_natives(to, from, 42));
	CHECK(aggregate__native_objects(to) == 3);
	aggregate__free(from);
	aggregate__free(to);
}

/* Many processes and functions: every table grows and keeps every entry findable. */
static void tables_grow(void)
{
	struct aggregate *a = aggregate__new();
	const uint32_t npids = 3000, nfuncs = 200;

	CHECK(a);
	for (uint32_t pid = 1; pid <= npids; pid++) {
		/* Every tenth process runs another build of libc. */
		CHECK(!aggregate__native_object(a, pid, LIBC, PATH_LIBC, pid % 10 ? BID_A : BID_B));
		CHECK(!aggregate__native_object(a, pid, 1000 + pid, 100000 + pid, NO_BID));
	}
	CHECK(aggregate__native_objects(a) == 2 + npids);
	for (uint32_t f = 0; f < nfuncs; f++) {
		CHECK(!aggregate__native_function(a, 1, LIBC, 5000 + f, 0x1000 + 16ull * f));
		CHECK(!aggregate__native_function(a, 10, LIBC, 5000 + f, 0x2000 + 16ull * f));
	}
	for (uint32_t pid = 1; pid <= npids; pid++) {
		uint32_t lib = object_of(a, pid, LIBC);
		struct agg_native_object o = aggregate__native_object_at(a, object_of(a, pid,
										      1000 + pid));

		CHECK(o.file == 1000 + pid && o.path == 100000 + pid);
		CHECK(aggregate__native_object_at(a, lib).build_id == (pid % 10 ? BID_A : BID_B));
		CHECK(func_rel(a, lib, 5000 + pid % nfuncs) ==
		      (pid % 10 ? 0x1000u : 0x2000u) + 16ull * (pid % nfuncs));
	}
	aggregate__free(a);
}

static void native_frames_differ_by_offset(void)
{
	struct aggregate *a = aggregate__new();
	struct agg_frame frames[2] = {
		{ .kind = AGG_PYTHON, .name = 20, .file = 21, .line = 3 },
		{ .kind = AGG_NATIVE, .name = MEMCPY, .file = LIBC, .line = 0x2c },
	};
	uint32_t first, second, again;

	CHECK(a);
	CHECK(!aggregate__add(a, 1, 1, frames, 2, 5, &first));
	frames[1].line = 0x30;
	CHECK(!aggregate__add(a, 1, 1, frames, 2, 2, &second));
	frames[1].line = 0x2c;
	CHECK(!aggregate__add(a, 1, 1, frames, 2, 1, &again));
	CHECK(first != second && first == again);
	CHECK(aggregate__stack(a, first)->count == 6 && aggregate__total(a) == 8);
	aggregate__free(a);
}

int main(void)
{
	empty_tables_find_nothing();
	objects_are_shared_by_build_and_first_stays();
	a_copy_carries_one_process();
	tables_grow();
	native_frames_differ_by_offset();
	printf("aggregate: ok\n");
	return 0;
}
