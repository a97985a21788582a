/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Target memory as the decoder sees it. The decoder reads only through this interface
 * and never learns whether bytes come from a BPF snapshot, the live process or
 * (later) a core file. Every read is all-or-nothing: a partial read is a failure.
 */
#ifndef PBP_MEM_H
#define PBP_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

int mem__read_u64(struct mem_source *m, uint64_t addr, uint64_t *v);

/* Live memory of @pid through process_vm_readv. */
struct mem_live {
	struct mem_source base;
	pid_t pid;
};

void mem_live__init(struct mem_live *m, pid_t pid);

#define MEM_READV_MAX 128	/* --no-bpf: a chunk copy, the current frame, its copy page by page */

/* Several ranges in one system call, in order: @n ranges at @addr[i] of @len[i] bytes
 * into @dst[i]. All or nothing, like a read. */
int mem_live__readv(struct mem_live *m, unsigned int n, const uint64_t *addr,
		    void *const *dst, const size_t *len);

/* Writes into the target: only the frame cache's anchor (last_profiled_frame, 3.15+),
 * which the interpreter reserves for profilers. */
int mem_live__write(struct mem_live *m, uint64_t addr, const void *src, size_t len);

/*
 * A BPF record's copied spans, consulted first; reads that fall outside them (or
 * straddle an edge) go to @backing.
 */
struct mem_span {
	uint64_t addr;
	const uint8_t *bytes;
	size_t len;
};

#define MEM_SNAPSHOT_SPANS 24
#define MEM_WINDOW_BYTES 4096
#define MEM_WINDOWS 4

/* A page of live memory fetched on a miss, kept for the rest of one decode: frames
 * outside the copy sit next to each other, so one read serves dozens of them. */
struct mem_window {
	uint64_t addr;
	size_t len;
	uint8_t bytes[MEM_WINDOW_BYTES];
};

struct mem_snapshot {
	struct mem_source base;
	struct mem_source *backing;
	struct mem_span spans[MEM_SNAPSHOT_SPANS];
	unsigned int nspans;
	struct mem_window windows[MEM_WINDOWS];
	unsigned int nwindows, next_window;
	uint64_t hits, misses;
};

void mem_snapshot__init(struct mem_snapshot *m, struct mem_source *backing);
int mem_snapshot__add(struct mem_snapshot *m, uint64_t addr, const void *bytes, size_t len);
void mem_snapshot__clear(struct mem_snapshot *m);

/* Whether [addr, addr + len) lies inside one of the copied spans. */
int mem_snapshot__covers(const struct mem_snapshot *m, uint64_t addr, size_t len);

#endif
