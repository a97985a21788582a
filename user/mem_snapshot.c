// SPDX-License-Identifier: GPL-2.0-only
/*
 * A BPF record as a memory source. Bytes inside the record were copied while the
 * sampled thread was stopped on its CPU, so they are preferred over live memory, which
 * has moved on since.
 */
#include <errno.h>
#include <string.h>

#include "mem.h"

static int snapshot_read(struct mem_source *base, uint64_t addr, void *dst, size_t len)
{
	struct mem_snapshot *m = (struct mem_snapshot *)base;

	if (addr + len < addr)
		return -EFAULT;
	for (unsigned int i = 0; i < m->nspans; i++) {
		const struct mem_span *s = &m->spans[i];

		if (addr >= s->addr && addr + len <= s->addr + s->len) {
			memcpy(dst, s->bytes + (addr - s->addr), len);
			m->hits++;
			return 0;
		}
	}
	m->misses++;
	if (!m->backing)
		return -EFAULT;
	return mem__read(m->backing, addr, dst, len);
}

static const struct mem_ops snapshot_ops = { .read = snapshot_read };

void mem_snapshot__init(struct mem_snapshot *m, struct mem_source *backing)
{
	*m = (struct mem_snapshot){ .base = { .ops = &snapshot_ops }, .backing = backing };
}

int mem_snapshot__add(struct mem_snapshot *m, uint64_t addr, const void *bytes, size_t len)
{
	if (m->nspans == MEM_SNAPSHOT_SPANS)
		return -ENOSPC;
	m->spans[m->nspans++] = (struct mem_span){ .addr = addr, .bytes = bytes, .len = len };
	return 0;
}

void mem_snapshot__clear(struct mem_snapshot *m)
{
	m->nspans = 0;
}
