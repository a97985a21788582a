/* SPDX-License-Identifier: GPL-2.0-only */
/* The live process as a memory source: process_vm_readv, while the target runs. */
#ifndef PBP_MEM_LIVE_H
#define PBP_MEM_LIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mem/mem.h"

struct mem_live {
	struct mem_source base;
	pid_t pid;
};

void mem_live__init(struct mem_live *m, pid_t pid);

#define MEM_READV_MAX 256	/* --no-bpf: a chunk copy, the current frame, its copy page by page */

/* Several ranges in one system call, in order: @n ranges at @addr[i] of @len[i] bytes
 * into @dst[i]. All or nothing, like a read. */
int mem_live__readv(struct mem_live *m, unsigned int n, const uint64_t *addr,
		    void *const *dst, const size_t *len);

/*
 * Reads as much of [addr, addr + len) as is readable from @addr on, page by page in
 * one system call (a stack copy that runs into the end of its mapping): the bytes
 * read into *@got, 0 if even the first page is not readable. 0 or -EINVAL.
 */
int mem_live__read_prefix(struct mem_live *m, uint64_t addr, void *dst, size_t len,
			  size_t *got);

/* Writes into the target: only the frame cache's anchor (last_profiled_frame, 3.15+),
 * which the interpreter reserves for profilers. */
int mem_live__write(struct mem_live *m, uint64_t addr, const void *src, size_t len);

#endif
