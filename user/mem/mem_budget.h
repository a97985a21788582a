/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A memory source that passes reads on to another while a number of them lasts, then
 * fails every read: for walks whose length a target controls (asyncio's tasks and
 * sets), so that one sample or one sweep costs a bounded number of system calls.
 */
#ifndef PBP_MEM_BUDGET_H
#define PBP_MEM_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "mem/mem.h"

struct mem_budget {
	struct mem_source base;
	struct mem_source *inner;
	uint32_t left;		/* reads still allowed */
	bool spent;		/* a read was refused */
};

void mem_budget__init(struct mem_budget *b, struct mem_source *inner, uint32_t reads);

#endif
