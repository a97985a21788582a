/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Target memory as the decoder sees it. The decoder reads only through this interface
 * and never learns whether bytes come from a BPF snapshot (mem_snapshot.h), the live
 * process (mem_live.h) or a core file (mem_core.h). Every read is all-or-nothing: a
 * partial read is a failure.
 */
#ifndef PBP_MEM_H
#define PBP_MEM_H

#include <stddef.h>
#include <stdint.h>

struct mem_source;

struct mem_ops {
	/* 0, or -EFAULT if any byte of [addr, addr + len) is unreadable. */
	int (*read)(struct mem_source *m, uint64_t addr, void *dst, size_t len);
};

struct mem_stats {
	uint64_t reads;		/* system calls into the target */
	uint64_t bytes;
	uint64_t failures;
};

struct mem_source {
	const struct mem_ops *ops;
	struct mem_stats stats;
};

static inline int mem__read(struct mem_source *m, uint64_t addr, void *dst, size_t len)
{
	return m->ops->read(m, addr, dst, len);
}

static inline int mem__read_u64(struct mem_source *m, uint64_t addr, uint64_t *v)
{
	return mem__read(m, addr, v, sizeof(*v));
}

#endif
