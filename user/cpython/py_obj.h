/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Reading CPython str and bytes objects out of target memory, with every length
 * bounded: the object may be freed and its memory reused while we read it.
 */
#ifndef PBP_PY_OBJ_H
#define PBP_PY_OBJ_H

#include <stddef.h>
#include <stdint.h>

#include "mem/mem.h"
#include "cpython/py_offsets.h"

#define PYSTR_MAX_CHARS 1024
#define PYBYTES_MAX (1 << 20)

/* Decodes the str at @addr into UTF-8 in @out (@cap bytes, NUL-terminated); sets
 * *@len. -EINVAL for anything but a compact str, -EFAULT if unreadable. */
int py_obj__str(struct mem_source *m, const struct py_offsets *o, uint64_t addr, char *out,
		size_t cap, size_t *len);

/* The cached hash of the str at @addr (-1 if never computed). */
int py_obj__str_hash(struct mem_source *m, const struct py_offsets *o, uint64_t addr,
		uint64_t *hash);

/* Reads the bytes object at @addr into a malloc'ed buffer of *@len bytes: all of them,
 * or (py_obj__bytes_upto) no more than @max. */
int py_obj__bytes_upto(struct mem_source *m, const struct py_offsets *o, uint64_t addr,
		       size_t max, uint8_t **out, size_t *len);
int py_obj__bytes(struct mem_source *m, const struct py_offsets *o, uint64_t addr,
		  uint8_t **out, size_t *len);

#endif
