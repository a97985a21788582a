/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A Python object's attributes, and a dict's values by str key, read from outside the
 * target: a Thread's name, asyncio's module globals. Only the first PY_ATTR_KEYS_MAX
 * entries of a dict are looked at, one read for them all: enough for an instance's
 * attributes or a module's globals, and a dict the target grows without end costs no
 * more. Every read is bounded and checked; the object may change while it is read.
 */
#ifndef PBP_PY_ATTR_H
#define PBP_PY_ATTR_H

#include <stdint.h>

#include "mem/mem.h"
#include "cpython/py_offsets.h"

/* Most entries looked at in one dict (a Thread has about 15 attributes, asyncio.tasks
 * about 80 globals). */
#define PY_ATTR_KEYS_MAX 128
/* The longest key looked for, in bytes. */
#define PY_ATTR_NAME_MAX 48

/*
 * The value of the str key @name in the dict at @dict (0 with *@value, never NULL).
 * -ENOENT when it has no such key among its first PY_ATTR_KEYS_MAX entries, -EINVAL
 * for memory that does not hold together, -EFAULT when unreadable.
 */
int py_attr__dict_get(struct mem_source *m, const struct py_offsets *o, uint64_t dict,
		      const char *name, uint64_t *value);

/* The values of the first entries of the dict at @dict, at most @cap into @out: 0 with
 * their number in *@n, or an error as above. */
int py_attr__dict_values(struct mem_source *m, const struct py_offsets *o, uint64_t dict,
			 uint64_t *out, size_t cap, size_t *n);

/* The same for the attribute @name of @obj, an instance of a class without __slots__
 * (-ENOENT for any other). */
int py_attr__get(struct mem_source *m, const struct py_offsets *o, uint64_t obj,
		 const char *name, uint64_t *value);

#endif
