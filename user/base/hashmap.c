// SPDX-License-Identifier: GPL-2.0-only
/* The open-addressing index; see hashmap.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"

void hashmap__free(struct hashmap *m)
{
	free(m->slots);
	*m = (struct hashmap){ 0 };
}

size_t hashmap__probe(const struct hashmap *m, uint64_t hash, hashmap_equal_fn eq,
		      const void *key, const void *ctx)
{
	size_t mask = m->nslots - 1, i = hash & mask;

	while (m->slots[i] && !eq(m->slots[i] - 1, key, ctx))
		i = (i + 1) & mask;
	return i;
}

int hashmap__find(const struct hashmap *m, uint64_t hash, hashmap_equal_fn eq,
		  const void *key, const void *ctx, uint32_t *idx)
{
	size_t i;

	if (!m->nslots)
		return -ENOENT;
	i = hashmap__probe(m, hash, eq, key, ctx);
	if (!m->slots[i])
		return -ENOENT;
	*idx = m->slots[i] - 1;
	return 0;
}

static void put(uint32_t *slots, size_t nslots, uint64_t hash, uint32_t val)
{
	size_t mask = nslots - 1, i = hash & mask;

	while (slots[i])
		i = (i + 1) & mask;
	slots[i] = val;
}

void hashmap__insert(struct hashmap *m, uint64_t hash, uint32_t idx)
{
	put(m->slots, m->nslots, hash, idx + 1);
	m->n++;
}

int hashmap__resize(struct hashmap *m, size_t nslots, hashmap_hash_fn hash, const void *ctx)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t k = 0; k < m->nslots; k++)
		if (m->slots[k])
			put(slots, nslots, hash(m->slots[k] - 1, ctx), m->slots[k]);
	free(m->slots);
	m->slots = slots;
	m->nslots = nslots;
	return 0;
}

int hashmap__grow(struct hashmap *m, size_t first, hashmap_hash_fn hash, const void *ctx)
{
	if (!hashmap__full(m))
		return 0;
	if (m->nslots > SIZE_MAX / 2 / sizeof(*m->slots))
		return -ENOMEM;
	return hashmap__resize(m, m->nslots ? m->nslots * 2 : first, hash, ctx);
}

void hashmap__delete_at(struct hashmap *m, size_t slot, hashmap_hash_fn hash, const void *ctx)
{
	size_t mask = m->nslots - 1, i = slot, j = slot, k;

	m->slots[i] = 0;
	m->n--;
	for (;;) {
		j = (j + 1) & mask;
		if (!m->slots[j])
			return;
		k = hash(m->slots[j] - 1, ctx) & mask;
		/* An entry whose home lies cyclically in (i, j] is still reachable. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		m->slots[i] = m->slots[j];
		m->slots[j] = 0;
		i = j;
	}
}

void hashmap__renumber(struct hashmap *m, uint64_t hash, uint32_t from, uint32_t to)
{
	size_t mask = m->nslots - 1, i = hash & mask;

	while (m->slots[i] && m->slots[i] != from + 1)
		i = (i + 1) & mask;
	if (m->slots[i])
		m->slots[i] = to + 1;
}

void hashmap__clear(struct hashmap *m)
{
	if (m->slots)
		memset(m->slots, 0, m->nslots * sizeof(*m->slots));
	m->n = 0;
}
