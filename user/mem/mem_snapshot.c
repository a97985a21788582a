// SPDX-License-Identifier: GPL-2.0-only
/*
 * A BPF record as a memory source. Bytes inside the record were copied while the
 * sampled thread was stopped on its CPU, so they are preferred over live memory, which
 * has moved on since.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "mem/mem_snapshot.h"

static const struct mem_window *find_window(const struct mem_snapshot *m, uint64_t addr,
					    size_t len)
{
	for (unsigned int i = 0; i < m->nwindows; i++) {
		const struct mem_window *w = &m->windows[i];

		if (addr >= w->addr && addr + len <= w->addr + w->len)
			return w;
	}
	return NULL;
}

/* Live reads of small objects go through page-sized windows. A window never crosses a
 * page boundary, so it cannot fail where the object itself is readable. */
static int window_read(struct mem_snapshot *m, uint64_t addr, void *dst, size_t len)
{
	const struct mem_window *hit = find_window(m, addr, len);
	struct mem_window *w;
	uint64_t page = addr & ~(uint64_t)(MEM_WINDOW_BYTES - 1);

	if (!hit && (addr + len > page + MEM_WINDOW_BYTES || len > MEM_WINDOW_BYTES / 4))
		return mem__read(m->backing, addr, dst, len);
	if (!hit) {
		w = &m->windows[m->next_window];
		if (mem__read(m->backing, page, w->bytes, MEM_WINDOW_BYTES))
			return mem__read(m->backing, addr, dst, len);
		w->addr = page;
		w->len = MEM_WINDOW_BYTES;
		m->next_window = (m->next_window + 1) % MEM_WINDOWS;
		if (m->nwindows < MEM_WINDOWS)
			m->nwindows++;
		hit = w;
	}
	memcpy(dst, hit->bytes + (addr - hit->addr), len);
	return 0;
}

static int span_read(struct mem_snapshot *m, uint64_t addr, void *dst, size_t len)
{
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
	return -EFAULT;
}

static int snapshot_read(struct mem_source *base, uint64_t addr, void *dst, size_t len)
{
	struct mem_snapshot *m = (struct mem_snapshot *)base;

	if (!span_read(m, addr, dst, len))
		return 0;
	m->misses++;
	if (!m->backing || addr + len < addr)
		return -EFAULT;
	return window_read(m, addr, dst, len);
}

static int copies_read(struct mem_source *copies, uint64_t addr, void *dst, size_t len)
{
	struct mem_snapshot *m = (struct mem_snapshot *)((char *)copies -
							  offsetof(struct mem_snapshot, copies));

	return span_read(m, addr, dst, len);
}

static const struct mem_ops snapshot_ops = { .read = snapshot_read };
static const struct mem_ops copies_ops = { .read = copies_read };

void mem_snapshot__init(struct mem_snapshot *m, struct mem_source *backing)
{
	*m = (struct mem_snapshot){ .base = { .ops = &snapshot_ops },
				    .copies = { .ops = &copies_ops }, .backing = backing };
}

struct mem_source *mem_snapshot__copies(struct mem_snapshot *m)
{
	return &m->copies;
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
	m->nwindows = 0;
	m->next_window = 0;
}

int mem_snapshot__covers_first(const struct mem_snapshot *m, unsigned int n, uint64_t addr,
			       size_t len)
{
	for (unsigned int i = 0; i < m->nspans && i < n; i++)
		if (addr >= m->spans[i].addr && addr + len <= m->spans[i].addr + m->spans[i].len)
			return 1;
	return 0;
}

int mem_snapshot__covers(const struct mem_snapshot *m, uint64_t addr, size_t len)
{
	return mem_snapshot__covers_first(m, m->nspans, addr, len);
}
