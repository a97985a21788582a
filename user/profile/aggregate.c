// SPDX-License-Identifier: GPL-2.0-only
/* The stack aggregate: frame arrays indexed by a hashmap; see aggregate.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/aggregate.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "base/vec.h"

/*
 * A set of three-id keys with a value each, for the native tables: small next to the
 * stacks, and empty (no allocation) in a profile without native frames.
 */
struct nat_entry {
	uint32_t key[3];
	uint32_t _pad;
	uint64_t value;
};

struct nat_table {
	struct nat_entry *v;
	size_t n, cap;
	struct hashmap index;
};

struct aggregate {
	struct agg_stack *stacks;
	uint64_t *hashes;	/* per stack, for the index */
	size_t n, cap, hashes_cap;
	struct hashmap index;
	uint64_t total;
	struct nat_table objects;	/* (file, path, build_id) */
	struct nat_table procs;		/* (pid, file) -> object */
	struct nat_table funcs;		/* (object, name) -> func_rel */
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
	free(a->objects.v);
	hashmap__free(&a->objects.index);
	free(a->procs.v);
	hashmap__free(&a->procs.index);
	free(a->funcs.v);
	hashmap__free(&a->funcs.index);
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
	if (bytes)	/* no frames: @frames may be NULL */
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

/* ---- native objects and functions ------------------------------------------------ */

static uint64_t nat_key_hash(const uint32_t key[3])
{
	return hash_bytes(key, 3 * sizeof(*key));
}

static uint64_t nat_hash(uint32_t idx, const void *ctx)
{
	const struct nat_table *t = ctx;

	return nat_key_hash(t->v[idx].key);
}

static bool nat_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct nat_table *t = ctx;

	return !memcmp(t->v[idx].key, key, sizeof(t->v[idx].key));
}

static int nat_find(const struct nat_table *t, const uint32_t key[3], uint32_t *idx)
{
	if (!t->index.nslots)
		return -ENOENT;
	return hashmap__find(&t->index, nat_key_hash(key), nat_equal, key, t, idx);
}

/* The entry of @key, added with @value if new: 0 with *@idx, or -ENOMEM. */
static int nat_add(struct nat_table *t, const uint32_t key[3], uint64_t value, uint32_t *idx)
{
	size_t slot;
	int err;

	err = hashmap__grow(&t->index, 64, nat_hash, t);
	if (!err)
		err = vec__reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v), 32);
	if (err)
		return err;
	slot = hashmap__probe(&t->index, nat_key_hash(key), nat_equal, key, t);
	if (hashmap__used(&t->index, slot)) {
		*idx = hashmap__at(&t->index, slot);
		return 0;
	}
	t->v[t->n] = (struct nat_entry){ .key = { key[0], key[1], key[2] }, .value = value };
	*idx = (uint32_t)t->n;
	hashmap__set(&t->index, slot, (uint32_t)t->n++);
	return 0;
}

int aggregate__native_object(struct aggregate *a, uint32_t pid, uint32_t file,
			     uint32_t path, uint32_t build_id)
{
	const uint32_t object_key[3] = { file, path, build_id }, proc_key[3] = { pid, file };
	uint32_t object, proc;
	int err;

	err = nat_add(&a->objects, object_key, 0, &object);
	if (!err)
		err = nat_add(&a->procs, proc_key, object, &proc);
	if (err)
		return err;
	return a->procs.v[proc].value == object ? 0 : -EEXIST;
}

int aggregate__native_function(struct aggregate *a, uint32_t pid, uint32_t file,
			       uint32_t name, uint64_t func_rel)
{
	uint32_t object, fn;
	int err = aggregate__native_object_of(a, pid, file, &object);

	if (err)
		return err;
	err = nat_add(&a->funcs, (const uint32_t[3]){ object, name }, func_rel, &fn);
	if (err)
		return err;
	return a->funcs.v[fn].value == func_rel ? 0 : -EEXIST;
}

size_t aggregate__native_objects(const struct aggregate *a)
{
	return a->objects.n;
}

struct agg_native_object aggregate__native_object_at(const struct aggregate *a, uint32_t i)
{
	const uint32_t *k = a->objects.v[i].key;

	return (struct agg_native_object){ .file = k[0], .path = k[1], .build_id = k[2] };
}

int aggregate__native_object_of(const struct aggregate *a, uint32_t pid, uint32_t file,
				uint32_t *object)
{
	uint32_t proc;
	int err = nat_find(&a->procs, (const uint32_t[3]){ pid, file }, &proc);

	if (!err)
		*object = (uint32_t)a->procs.v[proc].value;
	return err;
}

int aggregate__native_func_rel(const struct aggregate *a, uint32_t object, uint32_t name,
			       uint64_t *func_rel)
{
	uint32_t fn;
	int err = nat_find(&a->funcs, (const uint32_t[3]){ object, name }, &fn);

	if (!err)
		*func_rel = a->funcs.v[fn].value;
	return err;
}

size_t aggregate__native_procs(const struct aggregate *a)
{
	return a->procs.n;
}

struct agg_native_proc aggregate__native_proc_at(const struct aggregate *a, uint32_t i)
{
	const struct nat_entry *e = &a->procs.v[i];

	return (struct agg_native_proc){ .pid = e->key[0], .file = e->key[1],
					 .object = (uint32_t)e->value };
}

size_t aggregate__native_functions(const struct aggregate *a)
{
	return a->funcs.n;
}

struct agg_native_function aggregate__native_function_at(const struct aggregate *a, uint32_t i)
{
	const struct nat_entry *e = &a->funcs.v[i];

	return (struct agg_native_function){ .object = e->key[0], .name = e->key[1],
					     .func_rel = e->value };
}

/* Adds a new entry to @t: 0, -EEXIST if @key is there, -ENOMEM. */
static int nat_put(struct nat_table *t, const uint32_t key[3], uint64_t value)
{
	size_t n = t->n;
	uint32_t idx;
	int err = nat_add(t, key, value, &idx);

	return err ? err : t->n == n ? -EEXIST : 0;
}

int aggregate__put_native_object(struct aggregate *a, struct agg_native_object o)
{
	return nat_put(&a->objects, (const uint32_t[3]){ o.file, o.path, o.build_id }, 0);
}

int aggregate__put_native_proc(struct aggregate *a, struct agg_native_proc p)
{
	if (p.object >= a->objects.n)
		return -ENOENT;
	return nat_put(&a->procs, (const uint32_t[3]){ p.pid, p.file }, p.object);
}

int aggregate__put_native_function(struct aggregate *a, struct agg_native_function f)
{
	if (f.object >= a->objects.n)
		return -ENOENT;
	return nat_put(&a->funcs, (const uint32_t[3]){ f.object, f.name }, f.func_rel);
}

int aggregate__copy_natives(struct aggregate *to, const struct aggregate *from,
			    uint32_t pid)
{
	/* Which of from's objects the process maps. */
	uint8_t *mine = calloc(from->objects.n ? from->objects.n : 1, 1);
	int err = mine ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < from->procs.n; i++) {
		const struct nat_entry *e = &from->procs.v[i];
		struct agg_native_object o = aggregate__native_object_at(from, (uint32_t)e->value);

		if (e->key[0] != pid)
			continue;
		mine[e->value] = 1;
		err = aggregate__native_object(to, pid, o.file, o.path, o.build_id);
		err = err == -EEXIST ? 0 : err;	/* @to had its own: it stays */
	}
	for (size_t i = 0; !err && i < from->funcs.n; i++) {
		const struct nat_entry *e = &from->funcs.v[i];

		if (!mine[e->key[0]])
			continue;
		err = aggregate__native_function(to, pid,
						 from->objects.v[e->key[0]].key[0],
						 e->key[1], e->value);
		err = err == -EEXIST || err == -ENOENT ? 0 : err;
	}
	free(mine);
	return err;
}
