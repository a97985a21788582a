/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A memory source for tests: a target whose whole address space is one buffer of
 * bytes the test wrote (or a fuzzer chose) at a fixed address. Reads outside it fail
 * as an unmapped address would, and stats count them as mem_live does.
 */
#ifndef PBP_TEST_FAKE_MEM_H
#define PBP_TEST_FAKE_MEM_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "mem/mem.h"

struct fake_mem {
	struct mem_source base;
	uint64_t addr;		/* where bytes[0] is in the "target" */
	uint8_t *bytes;
	size_t len;
};

static inline int fake_mem__read(struct mem_source *src, uint64_t addr, void *dst, size_t len)
{
	struct fake_mem *m = (struct fake_mem *)src;

	m->base.stats.reads++;
	if (addr < m->addr || addr - m->addr > m->len || len > m->len - (addr - m->addr)) {
		m->base.stats.failures++;
		return -EFAULT;
	}
	memcpy(dst, m->bytes + (addr - m->addr), len);
	m->base.stats.bytes += len;
	return 0;
}

static const struct mem_ops fake_mem_ops = { .read = fake_mem__read };

static inline void fake_mem__init(struct fake_mem *m, uint64_t addr, uint8_t *bytes, size_t len)
{
	*m = (struct fake_mem){ .base = { .ops = &fake_mem_ops }, .addr = addr, .bytes = bytes,
				.len = len };
}

/* Writes @len bytes of @src at target address @addr; what falls outside is dropped. */
static inline void fake_mem__put(struct fake_mem *m, uint64_t addr, const void *src, size_t len)
{
	if (addr < m->addr || addr - m->addr > m->len || len > m->len - (addr - m->addr))
		return;
	memcpy(m->bytes + (addr - m->addr), src, len);
}

static inline void fake_mem__put_u64(struct fake_mem *m, uint64_t addr, uint64_t v)
{
	fake_mem__put(m, addr, &v, sizeof(v));
}

static inline void fake_mem__put_u32(struct fake_mem *m, uint64_t addr, uint32_t v)
{
	fake_mem__put(m, addr, &v, sizeof(v));
}

#endif
