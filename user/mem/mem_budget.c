// SPDX-License-Identifier: GPL-2.0-only
/* A bounded number of reads of another memory source; see mem_budget.h. */
#include <errno.h>

#include "mem/mem_budget.h"

static int budget_read(struct mem_source *m, uint64_t addr, void *dst, size_t len)
{
	struct mem_budget *b = (struct mem_budget *)m;

	if (!b->left) {
		b->spent = true;
		b->base.stats.failures++;
		return -EFAULT;
	}
	b->left--;
	b->base.stats.reads++;
	return mem__read(b->inner, addr, dst, len);
}

static const struct mem_ops budget_ops = { .read = budget_read };

void mem_budget__init(struct mem_budget *b, struct mem_source *inner, uint32_t reads)
{
	*b = (struct mem_budget){ .base = { .ops = &budget_ops }, .inner = inner, .left = reads };
}
