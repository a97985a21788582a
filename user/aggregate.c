// SPDX-License-Identifier: GPL-2.0-only
/* The stack aggregate: an open-addressing table over frame arrays; see aggregate.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "hash.h"

struct aggregate {
	struct agg_stack *stacks;
	uint64_t *hashes;
	size_t n, cap;
	uint32_t *slots;	/* index + 1; 0 = empty */
	size_t nslots;
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
	free(a->slots);
	free(a);
}

static int grow_slots(struct aggregate *a)
{
	size_t nslots = a->nslots ? a->nslots * 2 : 1024;
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t k = 0; k < a->n; k++) {
		size_t i = a->hashes[k] & (nslots - 1);

		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = (uint32_t)(k + 1);
	}
	free(a->slots);
	a->slots = slots;
	a->nslots = nslots;
	return 0;
}

static int grow_stacks(struct aggregate *a)
{
	size_t cap = a->cap ? a->cap * 2 : 256;
	struct agg_stack *stacks = realloc(a->stacks, cap * sizeof(*stacks));
	uint64_t *hashes;

	if (!stacks)
		return -ENOMEM;
	a->stacks = stacks;
	hashes = realloc(a->hashes, cap * sizeof(*hashes));
	if (!hashes)
		return -ENOMEM;
	a->hashes = hashes;
	a->cap = cap;
	return 0;
}

int aggregate__add(struct aggregate *a, uint32_t pid, uint32_t tid,
		   const struct agg_frame *frames, uint32_t depth, uint64_t count,
		   uint32_t *index)
{
	size_t bytes = (size_t)depth * sizeof(*frames);
	uint64_t h = hash_bytes(frames, bytes) ^ hash_u64((uint64_t)pid << 32 | tid) ^ depth;
	struct agg_stack *s;
	size_t i;
	int err;

	if ((a->n + 1) * 2 > a->nslots) {
		err = grow_slots(a);
		if (err)
			return err;
	}
	for (i = h & (a->nslots - 1); a->slots[i]; i = (i + 1) & (a->nslots - 1)) {
		s = &a->stacks[a->slots[i] - 1];
		if (a->hashes[a->slots[i] - 1] == h && s->depth == depth && s->pid == pid &&
		    s->tid == tid && !memcmp(s->frames, frames, bytes)) {
			s->count += count;
			a->total += count;
			if (index)
				*index = a->slots[i] - 1;
			return 0;
		}
	}
	if (a->n == a->cap) {
		err = grow_stacks(a);
		if (err)
			return err;
	}
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
	a->hashes[a->n] = h;
	a->slots[i] = (uint32_t)++a->n;
	a->total += count;
	return 0;
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
