// SPDX-License-Identifier: GPL-2.0-only
/* Interned strings, indexed by a hashmap; see strtab.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/hashmap.h"
#include "base/strtab.h"
#include "base/vec.h"

struct str {
	char *s;
	size_t len;
};

struct strtab {
	struct str *strs;	/* id -> string */
	size_t n, cap;
	struct hashmap index;	/* string -> id */
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
		free(t->strs[i].s);
	free(t->strs);
	hashmap__free(&t->index);
	free(t);
}

static uint64_t str_hash(uint32_t id, const void *ctx)
{
	const struct strtab *t = ctx;

	return hash_bytes(t->strs[id].s, t->strs[id].len);
}

static bool str_equal(uint32_t id, const void *key, const void *ctx)
{
	const struct strtab *t = ctx;
	const struct str *k = key;

	return t->strs[id].len == k->len && !memcmp(t->strs[id].s, k->s, k->len);
}

int64_t strtab__intern(struct strtab *t, const char *s, size_t len)
{
	const struct str key = { .s = (char *)s, .len = len };
	size_t i;
	char *copy;
	int err;

	err = hashmap__grow(&t->index, 1024, str_hash, t);
	if (err)
		return err;
	i = hashmap__probe(&t->index, hash_bytes(s, len), str_equal, &key, t);
	if (hashmap__used(&t->index, i))
		return hashmap__at(&t->index, i);
	err = vec__reserve((void **)&t->strs, &t->cap, t->n + 1, sizeof(*t->strs), 256);
	if (err)
		return err;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->str_bytes += len + 1 + MALLOC_OVERHEAD;
	t->strs[t->n] = (struct str){ .s = copy, .len = len };
	hashmap__set(&t->index, i, (uint32_t)t->n);
	return t->n++;
}

const char *strtab__get(const struct strtab *t, uint32_t id)
{
	return id < t->n ? t->strs[id].s : "?";
}

const char *strtab__second(const struct strtab *t, uint32_t id)
{
	const char *nul;

	if (id >= t->n)
		return NULL;
	nul = memchr(t->strs[id].s, 0, t->strs[id].len);
	return nul ? nul + 1 : NULL;
}

size_t strtab__len(const struct strtab *t, uint32_t id)
{
	return id < t->n ? t->strs[id].len : 1;
}

size_t strtab__count(const struct strtab *t)
{
	return t->n;
}

size_t strtab__bytes(const struct strtab *t)
{
	return sizeof(*t) + t->str_bytes + t->cap * sizeof(*t->strs) + hashmap__bytes(&t->index);
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
		r->to->cap = cap;
	}
	if (!r->to || !r->map || !r->to->strs ||
	    hashmap__resize(&r->to->index, nslots, str_hash, r->to)) {
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
	struct str *s;

	if (*id >= r->n)
		return;
	if (!r->map[*id]) {
		/* Old strings are distinct: no need to look for this one in @to. */
		s = &from->strs[*id];
		hashmap__insert(&to->index, hash_bytes(s->s, s->len), (uint32_t)to->n);
		to->strs[to->n] = *s;
		to->str_bytes += s->len + 1 + MALLOC_OVERHEAD;
		s->s = NULL;
		r->map[*id] = (uint32_t)++to->n;
	}
	*id = r->map[*id] - 1;
}

/* After a rebuild the arrays are sized for the old table: fit them to what was kept,
 * as far as memory allows (a failure leaves them larger, and still right). */
static void shrink(struct strtab *t)
{
	size_t cap = t->n > 256 ? t->n : 256, nslots = 1024;
	struct str *strs;

	while (nslots < 2 * (t->n + 1))
		nslots *= 2;
	if (nslots < t->index.nslots)
		(void)hashmap__resize(&t->index, nslots, str_hash, t);
	if (cap >= t->cap)
		return;
	strs = realloc(t->strs, cap * sizeof(*strs));
	if (!strs)
		return;
	t->strs = strs;
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
