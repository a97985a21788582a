// SPDX-License-Identifier: GPL-2.0-only
/* Interned strings in an open-addressing hash table; see strtab.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "strtab.h"

struct strtab {
	char **strs;		/* id -> string */
	size_t *lens;
	size_t n, cap;
	uint32_t *slots;	/* id + 1, 0 = empty */
	size_t nslots;
	size_t str_bytes;	/* the strings' own allocations */
};

/* What malloc keeps beside each block, as glibc does on 64-bit hosts. */
#define MALLOC_OVERHEAD 16

struct strtab *strtab__new(void)
{
	return calloc(1, sizeof(struct strtab));
}

void strtab__free(struct strtab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->lens);
	free(t->slots);
	free(t);
}

static int rehash(struct strtab *t, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t id = 0; id < t->n; id++) {
		size_t i = hash_bytes(t->strs[id], t->lens[id]) & (nslots - 1);

		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = (uint32_t)(id + 1);
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

int64_t strtab__intern(struct strtab *t, const char *s, size_t len)
{
	size_t i;
	char *copy;
	int err;

	if ((t->n + 1) * 2 > t->nslots) {
		err = rehash(t, t->nslots ? t->nslots * 2 : 1024);
		if (err)
			return err;
	}
	i = hash_bytes(s, len) & (t->nslots - 1);
	for (; t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
		uint32_t id = t->slots[i] - 1;

		if (t->lens[id] == len && !memcmp(t->strs[id], s, len))
			return id;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		char **strs = realloc(t->strs, cap * sizeof(*strs));

		if (!strs)
			return -ENOMEM;
		t->strs = strs;
		size_t *lens = realloc(t->lens, cap * sizeof(*lens));

		if (!lens)
			return -ENOMEM;
		t->lens = lens;
		t->cap = cap;
	}
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->str_bytes += len + 1 + MALLOC_OVERHEAD;
	t->strs[t->n] = copy;
	t->lens[t->n] = len;
	t->slots[i] = (uint32_t)(t->n + 1);
	return t->n++;
}

const char *strtab__get(const struct strtab *t, uint32_t id)
{
	return id < t->n ? t->strs[id] : "?";
}

size_t strtab__count(const struct strtab *t)
{
	return t->n;
}

size_t strtab__bytes(const struct strtab *t)
{
	return sizeof(*t) + t->str_bytes + t->cap * (sizeof(*t->strs) + sizeof(*t->lens)) +
	       t->nslots * sizeof(*t->slots);
}

int strtab_remap__init(struct strtab_remap *r, struct strtab *t)
{
	size_t cap = t->n ? t->n : 1, nslots = 1024;

	/* Room for every string now, so that nothing later allocates (or fails). */
	while (nslots < 2 * (cap + 1))
		nslots *= 2;
	*r = (struct strtab_remap){ .from = t, .n = t->n };
	r->to = strtab__new();
	r->map = calloc(cap, sizeof(*r->map));
	if (r->to) {
		r->to->strs = calloc(cap, sizeof(*r->to->strs));
		r->to->lens = calloc(cap, sizeof(*r->to->lens));
		r->to->slots = calloc(nslots, sizeof(*r->to->slots));
		r->to->cap = cap;
		r->to->nslots = nslots;
	}
	if (!r->to || !r->map || !r->to->strs || !r->to->lens || !r->to->slots) {
		strtab__free(r->to);
		free(r->map);
		*r = (struct strtab_remap){ 0 };
		return -ENOMEM;
	}
	return 0;
}

void strtab_remap__id(struct strtab_remap *r, uint32_t *id)
{
	struct strtab *to = r->to, *from = r->from;
	size_t i, len;

	if (*id >= r->n)
		return;
	if (!r->map[*id]) {
		/* Old strings are distinct: no need to look for this one in @to. */
		len = from->lens[*id];
		i = hash_bytes(from->strs[*id], len) & (to->nslots - 1);
		while (to->slots[i])
			i = (i + 1) & (to->nslots - 1);
		to->strs[to->n] = from->strs[*id];
		to->lens[to->n] = len;
		to->str_bytes += len + 1 + MALLOC_OVERHEAD;
		from->strs[*id] = NULL;
		to->slots[i] = (uint32_t)(to->n + 1);
		r->map[*id] = (uint32_t)++to->n;
	}
	*id = r->map[*id] - 1;
}

/* After a rebuild the arrays are sized for the old table: fit them to what was kept,
 * as far as memory allows (a failure leaves them larger, and still right). */
static void shrink(struct strtab *t)
{
	size_t cap = t->n > 256 ? t->n : 256, nslots = 1024;
	char **strs;
	size_t *lens;

	while (nslots < 2 * (t->n + 1))
		nslots *= 2;
	if (nslots < t->nslots)
		(void)rehash(t, nslots);
	if (cap >= t->cap)
		return;
	strs = realloc(t->strs, cap * sizeof(*strs));
	if (!strs)
		return;
	t->strs = strs;
	/* If this one fails, the old array is larger than @cap: still right. */
	lens = realloc(t->lens, cap * sizeof(*lens));
	if (lens)
		t->lens = lens;
	t->cap = cap;
}

void strtab_remap__finish(struct strtab_remap *r)
{
	struct strtab old = *r->from;

	shrink(r->to);
	*r->from = *r->to;
	*r->to = old;
	strtab__free(r->to);	/* the strings nobody kept */
	free(r->map);
	*r = (struct strtab_remap){ 0 };
}
