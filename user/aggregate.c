// SPDX-License-Identifier: GPL-2.0-only
/* The stack aggregate: frame arrays indexed by a hashmap; see aggregate.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "hash.h"
#include "hashmap.h"
#include "vec.h"

struct aggregate {
	struct agg_stack *stacks;
	uint64_t *hashes;	/* per stack, for the index */
	size_t n, cap, hashes_cap;
	struct hashmap index;
	uint64_t total;
};

struct aggregate *aggregate__new(void)
{
	return calloc(1, sizeof(struct aggregate));
}

void aggregate__free(struct aggregate *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->stacks[i].frames);
	free(a->stacks);
	free(a->hashes);
	hashmap__free(&a->index);
	free(a);
}

struct stack_key {
	uint64_t hash;
	uint32_t pid, tid, depth;
	const struct agg_frame *frames;
};

static uint64_t stack_hash(uint32_t idx, const void *ctx)
{
	const struct aggregate *a = ctx;

	return a->hashes[idx];
}

static bool stack_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct aggregate *a = ctx;
	const struct stack_key *k = key;
	const struct agg_stack *s = &a->stacks[idx];

	return a->hashes[idx] == k->hash && s->depth == k->depth && s->pid == k->pid &&
	       s->tid == k->tid && !memcmp(s->frames, k->frames, k->depth * sizeof(*k->frames));
}

int aggregate__add(struct aggregate *a, uint32_t pid, uint32_t tid,
		   const struct agg_frame *frames, uint32_t depth, uint64_t count,
		   uint32_t *index)
{
	size_t bytes = (size_t)depth * sizeof(*frames);
	const struct stack_key key = {
		.hash = hash_bytes(frames, bytes) ^ hash_u64((uint64_t)pid << 32 | tid) ^ depth,
		.pid = pid, .tid = tid, .depth = depth, .frames = frames,
	};
	struct agg_stack *s;
	size_t i;
	int err;

	err = hashmap__grow(&a->index, 1024, stack_hash, a);
	if (err)
		return err;
	i = hashmap__probe(&a->index, key.hash, stack_equal, &key, a);
	if (hashmap__used(&a->index, i)) {
		s = &a->stacks[hashmap__at(&a->index, i)];
		s->count += count;
		a->total += count;
		if (index)
			*index = hashmap__at(&a->index, i);
		return 0;
	}
	err = vec__reserve((void **)&a->stacks, &a->cap, a->n + 1, sizeof(*a->stacks), 256);
	if (!err)
		err = vec__reserve((void **)&a->hashes, &a->hashes_cap, a->n + 1,
				   sizeof(*a->hashes), 256);
	if (err)
		return err;
	s = &a->stacks[a->n];
	s->frames = malloc(bytes ? bytes : 1);
	if (!s->frames)
		return -ENOMEM;
	memcpy(s->frames, frames, bytes);
	s->depth = depth;
	s->count = count;
	s->pid = pid;
	s->tid = tid;
	if (index)
		*index = (uint32_t)a->n;
	a->hashes[a->n] = key.hash;
	hashmap__set(&a->index, i, (uint32_t)a->n++);
	a->total += count;
	return 0;
}

void aggregate__add_to(struct aggregate *a, uint32_t index, uint64_t count)
{
	if (index >= a->n)
		return;
	a->stacks[index].count += count;
	a->total += count;
}

size_t aggregate__count(const struct aggregate *a)
{
	return a->n;
}

const struct agg_stack *aggregate__stack(const struct aggregate *a, size_t i)
{
	return i < a->n ? &a->stacks[i] : NULL;
}

uint64_t aggregate__total(const struct aggregate *a)
{
	return a->total;
}
