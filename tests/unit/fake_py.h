/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPython objects laid out in a fake_mem at the offsets a py_offsets names: str,
 * bytes and code objects as the readers (py_obj.c, code_cache.c) expect them. Fields
 * that fall outside the fake memory are dropped, so any offsets can be used.
 */
#ifndef PBP_TEST_FAKE_PY_H
#define PBP_TEST_FAKE_PY_H

#include <stdint.h>
#include <string.h>

#include "fake_mem.h"
#include "cpython/py_offsets.h"

/* A compact ASCII str holding @s, with a cached hash. */
static inline void fake_py__str(struct fake_mem *m, const struct py_offsets *o, uint64_t addr,
				const char *s)
{
	uint32_t state = 1u << o->unicode_kind_shift | 1u << o->unicode_compact_bit |
			 1u << o->unicode_ascii_bit;

	fake_mem__put_u64(m, addr, 1);
	fake_mem__put_u64(m, addr + o->unicode_length, strlen(s));
	fake_mem__put_u64(m, addr + o->unicode_length + 8, 0x5eed0000 + strlen(s));
	fake_mem__put_u32(m, addr + o->unicode_state, state);
	fake_mem__put(m, addr + o->unicode_ascii_data, s, strlen(s) + 1);
}

static inline void fake_py__bytes(struct fake_mem *m, const struct py_offsets *o,
				  uint64_t addr, const void *b, size_t len)
{
	fake_mem__put_u64(m, addr, 1);
	fake_mem__put_u64(m, addr + o->bytes_size, len);
	fake_mem__put(m, addr + o->bytes_sval, b, len);
}

struct fake_code {
	uint64_t type;		/* ob_type */
	int64_t units;		/* ob_size: code units */
	int32_t firstlineno;
	uint32_t version;	/* co_version, where the version has one */
	uint64_t qualname, filename, name, linetable;	/* object addresses */
};

static inline void fake_py__code(struct fake_mem *m, const struct py_offsets *o, uint64_t addr,
				 const struct fake_code *c)
{
	fake_mem__put_u64(m, addr, 1);
	fake_mem__put_u64(m, addr + o->ob_type, c->type);
	fake_mem__put_u64(m, addr + o->ob_type + 8, (uint64_t)c->units);
	fake_mem__put_u32(m, addr + o->co_firstlineno, (uint32_t)c->firstlineno);
	fake_mem__put_u64(m, addr + o->co_qualname, c->qualname);
	fake_mem__put_u64(m, addr + o->co_filename, c->filename);
	fake_mem__put_u64(m, addr + o->co_name, c->name);
	fake_mem__put_u64(m, addr + o->co_linetable, c->linetable);
	if (o->co_version != PBP_OFF_NONE)
		fake_mem__put_u32(m, addr + o->co_version, c->version);
}

#endif
