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
};

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

static int rehash(struct strtab *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 1024;
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t id = 0; id < t->n; id++) {
		size_t i = hash_bytes(t->strs[id], t->lens[id]) & (nslots - 1);

		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = id + 1;
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
		err = rehash(t);
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
	t->strs[t->n] = copy;
	t->lens[t->n] = len;
	t->slots[i] = t->n + 1;
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
