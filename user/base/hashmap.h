/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An index over entries the caller keeps in its own array (so entries stay in the
 * order they were added, and the caller decides what they hold and cost): open
 * addressing with linear probing over a power-of-two number of slots, kept at least
 * twice the entries, without tombstones (a deletion moves later entries of its run
 * back). A slot holds an entry's index + 1, 0 when empty.
 *
 * The map keeps no keys and no hashes: the caller gives the hash of the key it looks
 * for, and callbacks that compare an entry with a key and hash an entry (to move it
 * when the table grows or an entry is deleted). Each user keeps its own hash function.
 */
#ifndef PBP_HASHMAP_H
#define PBP_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap {
	uint32_t *slots;	/* entry index + 1; 0 = empty */
	size_t nslots;		/* 0 or a power of two */
	size_t n;		/* entries indexed */
};

/* The hash of entry @idx, as its key hashes. */
typedef uint64_t (*hashmap_hash_fn)(uint32_t idx, const void *ctx);
/* Whether entry @idx has the key @key. */
typedef bool (*hashmap_equal_fn)(uint32_t idx, const void *key, const void *ctx);

void hashmap__free(struct hashmap *m);

/*
 * The slot of the entry whose key is @key (hash @hash), or the empty slot where it
 * would go; the map must have slots. Followed, on a miss, by hashmap__set() with
 * nothing added in between, this is one probe for a lookup-or-add.
 */
size_t hashmap__probe(const struct hashmap *m, uint64_t hash, hashmap_equal_fn eq,
		      const void *key, const void *ctx);

static inline bool hashmap__used(const struct hashmap *m, size_t slot)
{
	return m->slots[slot] != 0;
}

/* The entry in a used slot. */
static inline uint32_t hashmap__at(const struct hashmap *m, size_t slot)
{
	return m->slots[slot] - 1;
}

/* Puts entry @idx in the empty @slot that hashmap__probe() returned. */
static inline void hashmap__set(struct hashmap *m, size_t slot, uint32_t idx)
{
	m->slots[slot] = idx + 1;
	m->n++;
}

/* The entry whose key is @key: 0 with *@idx, or -ENOENT. */
int hashmap__find(const struct hashmap *m, uint64_t hash, hashmap_equal_fn eq,
		  const void *key, const void *ctx, uint32_t *idx);

/* Adds entry @idx, known not to be there yet; the map must have room for it. */
void hashmap__insert(struct hashmap *m, uint64_t hash, uint32_t idx);

/* Rebuilds the index in @nslots slots (a power of two, more than twice the entries);
 * -ENOMEM leaves it as it was. */
int hashmap__resize(struct hashmap *m, size_t nslots, hashmap_hash_fn hash, const void *ctx);

/* Whether one more entry would fill more than half the slots. */
static inline bool hashmap__full(const struct hashmap *m)
{
	return (m->n + 1) * 2 > m->nslots;
}

/* Room for one more entry: doubles the slots (@first when there are none) if full. */
int hashmap__grow(struct hashmap *m, size_t first, hashmap_hash_fn hash, const void *ctx);

/* Empties @slot, moving later entries of its run back so that each stays reachable. */
void hashmap__delete_at(struct hashmap *m, size_t slot, hashmap_hash_fn hash, const void *ctx);

/* Points the slot of entry @from (hash @hash) at entry @to instead: for a caller that
 * moves an entry within its array, such as into the place of a deleted one. */
void hashmap__renumber(struct hashmap *m, uint64_t hash, uint32_t from, uint32_t to);

/* Forgets every entry; the slots stay allocated. */
void hashmap__clear(struct hashmap *m);

/* What the slots take in memory. */
static inline size_t hashmap__bytes(const struct hashmap *m)
{
	return m->nslots * sizeof(*m->slots);
}

#endif
