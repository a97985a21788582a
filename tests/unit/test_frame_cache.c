// SPDX-License-Identifier: GPL-2.0-only
/*
 * The frame cache's byte budgets: threads with the deepest chains (4096 frames, 256 KiB
 * a chain) stay within a cache's own limit and the session's; threads past them are
 * not cached (and decode in full), the cached ones still serve their parents, the
 * decoded names go through a string table rebuild, and freeing gives every byte back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/frame_cache.h"

#define DEPTH DECODE_MAX_DEPTH
#define THREADS 16

static struct raw_frame raw[DEPTH];
static struct decoded_frame dec[DEPTH], got[DEPTH];

static struct thread_sample sample(uint32_t tid)
{
	return (struct thread_sample){ .pid = 1, .tid = tid, .tstate = 0x1000ull * tid };
}

/* Thread @tid's chain: frame i at a distinct address, innermost first. */
static void make_chain(uint32_t tid)
{
	for (uint32_t i = 0; i < DEPTH; i++) {
		raw[i] = (struct raw_frame){
			.addr = 0x100000ull * tid + 0x100 * i,
			.code = 0x900000000ull + i,
			.instr = 0x10,
			.previous = i + 1 < DEPTH ? 0x100000ull * tid + 0x100 * (i + 1) : 0,
		};
		dec[i] = (struct decoded_frame){ .qualname = i % 7, .filename = 7, .line = i };
	}
}

static struct frame_cache *new_cache(struct frame_cache_budget *b)
{
	static struct py_offsets off;
	struct frame_cache *fc;

	memset(&off, 0xff, sizeof(off));
	CHECK(frame_cache__new(&off, 0, NULL, b, &fc) == 0);
	return fc;
}

/* How many frames thread @tid gets back from the cache for its unchanged chain. */
static uint32_t reused(struct frame_cache *fc, uint32_t tid)
{
	struct thread_sample t = sample(tid);
	uint32_t ndec;

	make_chain(tid);
	frame_cache__reuse(fc, &t, raw, DEPTH, got, &ndec);
	return ndec;
}

static void store(struct frame_cache *fc, uint32_t tid)
{
	struct thread_sample t = sample(tid);

	make_chain(tid);
	frame_cache__store(fc, &t, raw, DEPTH, dec, DEPTH);
}

static void own_budget(void)
{
	struct frame_cache_budget b = { .per_cache = 1u << 20 };
	struct frame_cache *fc = new_cache(&b);
	uint32_t cached = 0;

	for (uint32_t tid = 1; tid <= THREADS; tid++) {
		store(fc, tid);
		CHECK(b.bytes <= b.per_cache);
	}
	for (uint32_t tid = 1; tid <= THREADS; tid++) {
		uint32_t n = reused(fc, tid);

		CHECK(n == 0 || n == DEPTH);
		cached += n == DEPTH;
	}
	/* 256 KiB a chain: three fit in 1 MiB beside the entries' bookkeeping. */
	CHECK(cached >= 2 && cached <= 4);
	CHECK(reused(fc, 1) == DEPTH);	/* the first ones stay cached */
	CHECK(reused(fc, THREADS) == 0);
	frame_cache__free(fc);
	CHECK(b.bytes == 0);
}

static void shared_budget(void)
{
	struct frame_cache_budget b = { .total = 1u << 20 };
	struct frame_cache *x = new_cache(&b), *y = new_cache(&b);

	for (uint32_t tid = 1; tid <= THREADS; tid++) {
		store(x, tid);
		store(y, 100 + tid);
		CHECK(b.bytes <= b.total);
	}
	CHECK(reused(x, 1) == DEPTH && reused(y, 101) == DEPTH);
	frame_cache__free(x);
	frame_cache__free(y);
	CHECK(b.bytes == 0);
}

/* The decoded names of cached chains are string ids: a rebuild rewrites them. */
static void remap(void)
{
	struct frame_cache_budget b = { 0 };
	struct frame_cache *fc = new_cache(&b);
	struct strtab *strs = strtab__new();
	struct strtab_remap map;
	char name[16];

	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "s%d", 99 - i);
		CHECK(strtab__intern(strs, name, strlen(name)) == i);
	}
	store(fc, 1);
	CHECK(strtab_remap__init(&map, strs) == 0);
	frame_cache__remap_strings(fc, &map);
	strtab_remap__finish(&map);
	CHECK(strtab__count(strs) == 8);
	CHECK(reused(fc, 1) == DEPTH);
	for (uint32_t i = 0; i < DEPTH; i++) {
		/* got[] is outermost last, as decoded: frame i of the chain */
		snprintf(name, sizeof(name), "s%u", 99 - i % 7);
		CHECK(!strcmp(strtab__get(strs, got[i].qualname), name));
		CHECK(!strcmp(strtab__get(strs, got[i].filename), "s92"));
	}
	frame_cache__free(fc);
	strtab__free(strs);
}

int main(void)
{
	own_budget();
	shared_budget();
	remap();
	printf("ok\n");
	return 0;
}
