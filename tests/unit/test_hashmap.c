// SPDX-License-Identifier: GPL-2.0-only
/*
 * The generic index (user/base/hashmap.c) and vec__reserve (user/base/vec.h): entries whose
 * hashes collide on purpose, so that every probe run, wrap-around at the end of the
 * slots and the move-back after a deletion are exercised; checked against a plain
 * array that says which keys are in.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "base/hashmap.h"
#include "base/vec.h"

#define KEYS 4000

#ifdef __SANITIZE_ADDRESS__
/* The allocation-failure checks ask for more than exists: a NULL, not a report. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}
#endif

struct table {
	uint64_t *keys;		/* entry -> key, dense */
	size_t n, cap;
	struct hashmap index;
	unsigned int buckets;	/* hashes fall in this many values: collisions */
	int direct;		/* the hash is key >> 8: the test picks each home slot */
};

/* Few distinct hashes, and high bits set so that the mask matters. */
static uint64_t key_hash(const struct table *t, uint64_t key)
{
	if (t->direct)
		return key >> 8;
	return (key % t->buckets) * 0x9e3779b97f4a7c15ull | 1ull << 63;
}

static uint64_t entry_hash(uint32_t idx, const void *ctx)
{
	const struct table *t = ctx;

	return key_hash(t, t->keys[idx]);
}

static bool entry_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct table *t = ctx;

	return t->keys[idx] == *(const uint64_t *)key;
}

static int lookup(const struct table *t, uint64_t key, uint32_t *idx)
{
	return hashmap__find(&t->index, key_hash(t, key), entry_equal, &key, t, idx);
}

/* Adds @key if new: 1 if added, 0 if it was there. */
static int add(struct table *t, uint64_t key)
{
	size_t slot;

	CHECK(!hashmap__grow(&t->index, 8, entry_hash, t));
	slot = hashmap__probe(&t->index, key_hash(t, key), entry_equal, &key, t);
	if (hashmap__used(&t->index, slot)) {
		CHECK(t->keys[hashmap__at(&t->index, slot)] == key);
		return 0;
	}
	CHECK(!vec__reserve((void **)&t->keys, &t->cap, t->n + 1, sizeof(*t->keys), 4));
	t->keys[t->n] = key;
	hashmap__set(&t->index, slot, (uint32_t)t->n++);
	return 1;
}

/* Deletes @key, moving the last entry into its place as the users do. */
static int del(struct table *t, uint64_t key)
{
	size_t slot;
	uint32_t idx;

	if (!t->index.nslots)
		return 0;
	slot = hashmap__probe(&t->index, key_hash(t, key), entry_equal, &key, t);
	if (!hashmap__used(&t->index, slot))
		return 0;
	idx = hashmap__at(&t->index, slot);
	hashmap__delete_at(&t->index, slot, entry_hash, t);
	if (idx != --t->n) {
		hashmap__renumber(&t->index, key_hash(t, t->keys[t->n]), (uint32_t)t->n, idx);
		t->keys[idx] = t->keys[t->n];
	}
	return 1;
}

/* Every key in @in is found at its entry, no other is, and each entry sits in exactly
 * one slot. */
static void check_matches(const struct table *t, const unsigned char *in, size_t nkeys)
{
	size_t seen_n = 0, want = 0;
	unsigned char *seen = calloc(t->n ? t->n : 1, 1);
	uint32_t idx;

	CHECK(seen);
	for (uint64_t k = 0; k < nkeys; k++) {
		int err = lookup(t, k, &idx);

		want += in[k];
		CHECK_MSG(in[k] ? !err && t->keys[idx] == k : err == -ENOENT,
			  "key %llu: in %d, find %d", (unsigned long long)k, in[k], err);
	}
	for (size_t s = 0; s < t->index.nslots; s++) {
		if (!hashmap__used(&t->index, s))
			continue;
		idx = hashmap__at(&t->index, s);
		CHECK(idx < t->n);
		CHECK_MSG(!seen[idx], "entry %u in two slots", idx);
		seen[idx] = 1;
		seen_n++;
	}
	CHECK_MSG(seen_n == t->n && t->n == want && t->index.n == t->n,
		  "slots used %zu, entries %zu, keys in %zu, index says %zu", seen_n, t->n, want,
		  t->index.n);
	/* The index never runs over half full: lookups of absent keys end. */
	CHECK(t->index.n * 2 <= t->index.nslots);
	free(seen);
}

static void test_add_find_delete(unsigned int buckets)
{
	struct table t = { .buckets = buckets };
	unsigned char in[KEYS] = { 0 };
	uint32_t idx;

	CHECK(lookup(&t, 1, &idx) == -ENOENT);	/* no slots yet */
	for (uint64_t k = 0; k < KEYS; k++) {
		CHECK(add(&t, k) == 1);
		in[k] = 1;
	}
	CHECK(t.index.nslots >= 2 * KEYS && t.index.nslots <= 4 * KEYS);
	for (uint64_t k = 0; k < KEYS; k += 7)
		CHECK(add(&t, k) == 0);
	/* Insertion order is the entries' order: the index does not move them. */
	for (uint64_t k = 0; k < KEYS; k++)
		CHECK(t.keys[k] == k);
	check_matches(&t, in, KEYS);
	/* Delete every third key, in a scattered order, then put some back. */
	for (uint64_t k = 0; k < KEYS; k++) {
		uint64_t key = k * 7919 % KEYS;

		if (key % 3 == 0) {
			CHECK(del(&t, key) == 1);
			CHECK(del(&t, key) == 0);
			in[key] = 0;
		}
	}
	check_matches(&t, in, KEYS);
	for (uint64_t k = 0; k < KEYS; k += 6) {
		CHECK(add(&t, k) == 1);
		in[k] = 1;
	}
	check_matches(&t, in, KEYS);
	hashmap__clear(&t.index);
	t.n = 0;
	memset(in, 0, sizeof(in));
	check_matches(&t, in, KEYS);
	CHECK(add(&t, 5) == 1);
	in[5] = 1;
	check_matches(&t, in, KEYS);
	hashmap__free(&t.index);
	free(t.keys);
}

/* Deletions in runs that wrap around from the last slot to the first, with entries
 * whose homes lie on either side of the end. */
static void test_wrap_around(void)
{
	/* home << 8 | serial; in 16 slots these fill 13, 14, 15, 0, 1, 2, 3, 4 */
	static const uint64_t keys[] = { 0xd00, 0xe00, 0xd01, 0x000, 0xe01, 0xf00, 0x001, 0x100 };
	enum { NK = sizeof(keys) / sizeof(keys[0]) };

	for (size_t first = 0; first < NK; first++) {
		struct table t = { .direct = 1 };
		unsigned char in[0x1000] = { 0 };

		CHECK(!hashmap__resize(&t.index, 16, entry_hash, &t));
		for (size_t k = 0; k < NK; k++) {
			CHECK(add(&t, keys[k]) == 1);
			in[keys[k]] = 1;
		}
		CHECK(t.index.nslots == 16);
		/* Delete each key in turn, starting at a different one each time. */
		for (size_t k = 0; k < NK; k++) {
			uint64_t key = keys[(first + k) % NK];

			CHECK(del(&t, key) == 1);
			in[key] = 0;
			check_matches(&t, in, sizeof(in));
		}
		hashmap__free(&t.index);
		free(t.keys);
	}
}

/* A resize into a table too small to allocate fails and leaves the index usable. */
static void test_resize_failure(void)
{
	struct table t = { .buckets = 97 };
	unsigned char in[64] = { 0 };

	for (uint64_t k = 0; k < 64; k++) {
		CHECK(add(&t, k) == 1);
		in[k] = 1;
	}
	CHECK(hashmap__resize(&t.index, SIZE_MAX / 2, entry_hash, &t) == -ENOMEM);
	check_matches(&t, in, 64);
	hashmap__free(&t.index);
	free(t.keys);
}

static void test_vec(void)
{
	uint32_t *v = NULL;
	size_t cap = 0;

	CHECK(!vec__reserve((void **)&v, &cap, 1, sizeof(*v), 16) && cap == 16);
	CHECK(!vec__reserve((void **)&v, &cap, 16, sizeof(*v), 16) && cap == 16);
	CHECK(!vec__reserve((void **)&v, &cap, 17, sizeof(*v), 16) && cap == 32);
	CHECK(!vec__reserve((void **)&v, &cap, 100, sizeof(*v), 16) && cap == 128);
	v[127] = 7;
	/* Sizes that overflow are refused, and the array is left as it was. */
	CHECK(vec__reserve((void **)&v, &cap, SIZE_MAX / 2, sizeof(*v), 16) == -ENOMEM);
	CHECK(vec__reserve((void **)&v, &cap, SIZE_MAX, 1, 16) == -ENOMEM);
	CHECK(cap == 128 && v[127] == 7);
	free(v);
	v = NULL;
	cap = 0;
	CHECK(!vec__reserve((void **)&v, &cap, 3, sizeof(*v), 0) && cap == 4);
	free(v);
}

int main(void)
{
	test_add_find_delete(1u << 30);	/* few collisions */
	test_add_find_delete(61);	/* long runs */
	test_add_find_delete(1);	/* one run */
	test_wrap_around();
	test_resize_failure();
	test_vec();
	if (check_failures)
		return 1;
	printf("hashmap: ok\n");
	return 0;
}
