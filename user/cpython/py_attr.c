// SPDX-License-Identifier: GPL-2.0-only
/*
 * An object's attributes and a dict's str keys, read from outside (see py_attr.h).
 * How an instance keeps its attributes differs by version (enum py_inst_layout); the
 * dict keys object does not, from 3.11 to 3.15: { dk_refcnt; u8 log2_size,
 * log2_index_bytes, kind; ...; dk_nentries at 24; dk_indices at 32 }, then the entries
 * after 1 << log2_index_bytes bytes of indices: { key, value } for str-only and shared
 * keys, { hash, key, value } for the rest.
 */
#include <errno.h>
#include <string.h>

#include "cpython/py_attr.h"
#include "cpython/py_obj.h"

#define TPFLAGS_INLINE_VALUES	(1ul << 2)	/* 3.13+ */
#define TPFLAGS_MANAGED_DICT	(1ul << 4)
#define TPFLAGS_HEAPTYPE	(1ul << 9)

#define DK_LOG2_SIZE		8
#define DK_LOG2_INDEX_BYTES	9
#define DK_KIND			10
#define DK_NENTRIES		24
#define DK_INDICES		32
#define DK_KIND_GENERAL		0
#define DK_KIND_SPLIT		2
#define DK_LOG2_MAX		30

/* From 3.13 a values array starts with capacity, size, embedded and valid bytes. */
#define VALUES_CAPACITY		0
#define VALUES_VALID		3

/* Where the managed dict, and on 3.11 the values array, sit before the object. */
#define MANAGED_DICT_BEFORE	24
#define MANAGED_VALUES_BEFORE_311 32

/* Where the attributes of the object are: a dict, or else a values array whose keys
 * the class keeps. */
struct attrs {
	uint64_t dict;
	uint64_t values, keys;
};

/* The first PY_ATTR_KEYS_MAX entries of a keys object, as they were read. */
struct entries {
	uint64_t v[PY_ATTR_KEYS_MAX * 3];
	size_t n, width;	/* entries, and words in each: key and value last */
	uint64_t values;	/* of a split table: where the values are */
};

/* Reads the entries of the keys object @keys, whose values are at @values for shared
 * keys, else in the entries. */
static int read_entries(struct mem_source *m, uint64_t keys, uint64_t values, struct entries *e)
{
	uint8_t hdr[DK_INDICES];
	int64_t nentries;
	int err;

	err = mem__read(m, keys, hdr, sizeof(hdr));
	if (err)
		return err;
	memcpy(&nentries, hdr + DK_NENTRIES, sizeof(nentries));
	if (hdr[DK_LOG2_SIZE] > DK_LOG2_MAX || hdr[DK_LOG2_INDEX_BYTES] > DK_LOG2_MAX + 3 ||
	    hdr[DK_KIND] > DK_KIND_SPLIT || nentries < 0 ||
	    nentries > (int64_t)1 << hdr[DK_LOG2_SIZE] || (hdr[DK_KIND] == DK_KIND_SPLIT) != !!values)
		return -EINVAL;
	e->width = hdr[DK_KIND] == DK_KIND_GENERAL ? 3 : 2;
	e->n = nentries < PY_ATTR_KEYS_MAX ? (size_t)nentries : PY_ATTR_KEYS_MAX;
	e->values = values;
	return mem__read(m, keys + DK_INDICES + (1ull << hdr[DK_LOG2_INDEX_BYTES]), e->v,
			 e->n * e->width * sizeof(uint64_t));
}

static uint64_t entry_key(const struct entries *e, size_t i)
{
	return e->v[i * e->width + e->width - 2];
}

/* The value of entry @i; 0 for a deleted one. */
static int entry_value(struct mem_source *m, const struct py_offsets *o,
		       const struct entries *e, size_t i, uint64_t *value)
{
	if (!e->values) {
		*value = e->v[i * e->width + e->width - 1];
		return 0;
	}
	return mem__read_u64(m, e->values + o->dictvalues_values + 8 * i, value);
}

/*
 * The value of the key @want (a str) in the keys object @keys: from the entry itself,
 * or from @values when the keys are shared. -ENOENT if absent among the first
 * PY_ATTR_KEYS_MAX entries.
 */
static int keys_lookup(struct mem_source *m, const struct py_offsets *o, uint64_t keys,
		       uint64_t values, const char *want, uint64_t *value)
{
	size_t want_len = strlen(want);
	struct entries e;
	int err;

	if (want_len > PY_ATTR_NAME_MAX)
		return -EINVAL;
	err = read_entries(m, keys, values, &e);
	if (err)
		return err;
	for (size_t i = 0; i < e.n; i++) {
		uint64_t key = entry_key(&e, i), len;
		char got[PY_ATTR_NAME_MAX + 8];
		size_t got_len;

		if (!key || mem__read_u64(m, key + o->unicode_length, &len) || len != want_len ||
		    py_obj__str(m, o, key, got, sizeof(got), &got_len) || got_len != want_len ||
		    memcmp(got, want, want_len))
			continue;
		err = entry_value(m, o, &e, i, value);
		return err ? err : *value ? 0 : -ENOENT;
	}
	return -ENOENT;
}

/* The keys object of the dict at @dict, and its values array if the keys are shared. */
static int dict_tables(struct mem_source *m, const struct py_offsets *o, uint64_t dict,
		       uint64_t *keys, uint64_t *values)
{
	int err = mem__read_u64(m, dict + o->dict_keys, keys);

	if (!err)
		err = mem__read_u64(m, dict + o->dict_values, values);
	return err ? err : *keys ? 0 : -EINVAL;
}

int py_attr__dict_get(struct mem_source *m, const struct py_offsets *o, uint64_t dict,
		      const char *name, uint64_t *value)
{
	uint64_t keys, values;
	int err = dict_tables(m, o, dict, &keys, &values);

	return err ? err : keys_lookup(m, o, keys, values, name, value);
}

int py_attr__dict_values(struct mem_source *m, const struct py_offsets *o, uint64_t dict,
			 uint64_t *out, size_t cap, size_t *n)
{
	uint64_t keys, values, value;
	struct entries e;
	int err = dict_tables(m, o, dict, &keys, &values);

	if (!err)
		err = read_entries(m, keys, values, &e);
	*n = 0;
	for (size_t i = 0; !err && i < e.n && *n < cap; i++)
		if (entry_key(&e, i) && !entry_value(m, o, &e, i, &value) && value)
			out[(*n)++] = value;
	return err;
}

/* The attributes of @obj, of type @type with @flags. */
static int attrs_of(struct mem_source *m, const struct py_offsets *o, uint64_t obj,
		    uint64_t type, uint64_t flags, struct attrs *a)
{
	uint64_t word, size;
	uint8_t vhdr[VALUES_VALID + 1];
	int err;

	*a = (struct attrs){ 0 };
	if (!(flags & TPFLAGS_MANAGED_DICT) || !(flags & TPFLAGS_HEAPTYPE) ||
	    obj < MANAGED_VALUES_BEFORE_311)
		return -ENOENT;
	switch (o->inst_layout) {
	case PY_INST_311:
		err = mem__read_u64(m, obj - MANAGED_VALUES_BEFORE_311, &a->values);
		if (!err && !a->values)
			err = mem__read_u64(m, obj - MANAGED_DICT_BEFORE, &a->dict);
		break;
	case PY_INST_312:
		err = mem__read_u64(m, obj - MANAGED_DICT_BEFORE, &word);
		if (!err && (word & 1))
			a->values = word + 1;	/* stored as the address less one */
		else
			a->dict = word;
		break;
	case PY_INST_313:
		err = 0;
		if (flags & TPFLAGS_INLINE_VALUES) {
			err = mem__read_u64(m, type + o->tp_basicsize, &size);
			if (!err && (size < o->ob_type + 8 || size > 1 << 16))
				err = -EINVAL;
			if (!err)
				err = mem__read(m, obj + size, vhdr, sizeof(vhdr));
			if (!err && vhdr[VALUES_VALID] && vhdr[VALUES_CAPACITY])
				a->values = obj + size;
		}
		if (!err && !a->values)
			err = mem__read_u64(m, obj - MANAGED_DICT_BEFORE, &a->dict);
		break;
	default:
		return -ENOENT;
	}
	if (!err && a->values)
		err = mem__read_u64(m, type + o->ht_cached_keys, &a->keys);
	if (!err && !a->keys && !a->dict)
		err = -ENOENT;
	return err;
}

int py_attr__get(struct mem_source *m, const struct py_offsets *o, uint64_t obj,
		 const char *name, uint64_t *value)
{
	uint64_t type, flags;
	struct attrs a;
	int err;

	err = mem__read_u64(m, obj + o->ob_type, &type);
	if (!err)
		err = mem__read_u64(m, type + o->tp_flags, &flags);
	if (!err)
		err = attrs_of(m, o, obj, type, flags, &a);
	if (err)
		return err;
	if (a.values)
		return keys_lookup(m, o, a.keys, a.values, name, value);
	return py_attr__dict_get(m, o, a.dict, name, value);
}
