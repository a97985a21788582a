/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A BPF record as a memory source: the record's copied spans are consulted first;
 * reads that fall outside them (or straddle an edge) go to @backing.
 */
#ifndef PBP_MEM_SNAPSHOT_H
#define PBP_MEM_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "mem/mem.h"

struct mem_span {
	uint64_t addr;
	const uint8_t *bytes;
	size_t len;
};

#define MEM_SNAPSHOT_SPANS 160
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
	struct mem_source copies;	/* the spans alone: see mem_snapshot__copies() */
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

/* The copied spans as a memory source of their own, where any read outside them
 * fails: for objects that must be read whole from one instant or not at all. */
struct mem_source *mem_snapshot__copies(struct mem_snapshot *m);

/* Whether [addr, addr + len) lies inside one of the copied spans; _first: one of the
 * first @n added. */
int mem_snapshot__covers(const struct mem_snapshot *m, uint64_t addr, size_t len);
int mem_snapshot__covers_first(const struct mem_snapshot *m, unsigned int n, uint64_t addr,
			       size_t len);

#endif
