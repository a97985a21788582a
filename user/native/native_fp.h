/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --native-unwind fp: a sample's native frames from the frame records BPF walked (RBP's
 * chain, struct pbp_native_fp), each believed only where the code's own CFI says its
 * function keeps a frame pointer there; the top frames, when the code at RIP does not,
 * from DWARF over the small stack copy taken with the records. See native_fp.c.
 */
#ifndef PBP_NATIVE_FP_H
#define PBP_NATIVE_FP_H

#include <stdint.h>

#include "native/native_unwind.h"
#include "pbp_abi.h"

/* What BPF's walk gave: @n records, innermost first, and how it ended (PBP_NF_FP_*). */
struct native_fp_chain {
	const struct pbp_native_fp *rec;
	uint32_t n;
	uint32_t flags;
};

/* Per process: which PCs are in code that keeps a frame pointer, cached. */
struct native_fp;

struct native_fp_stats {
	uint64_t walks;
	uint64_t dwarf_top;	  /* walks that unwound their top frames with DWARF first */
	uint64_t resumed;	  /* DWARF walks from a frame without frame pointer (rule 4) */
	uint64_t lookups, misses; /* of the per-PC cache */
};

/* Entries of the per-PC cache, direct-mapped: 16 bytes each. */
#define NATIVE_FP_CACHE_SLOTS 2048

int native_fp__new(struct native_fp **out);
void native_fp__free(struct native_fp *f);

/*
 * The frames of @s and @c into @out (at most @max_frames), with @u's modules and CFI:
 * 0 (out->end says how it ended), -EINVAL for a snapshot without RIP or RSP, -ENOENT
 * if @u has no maps yet. Never a frame out of order: a record is followed only from a
 * frame whose CFI says CFA = RBP + 16 with RBP saved at CFA - 16, and the walk ends
 * NATIVE_END_NO_FP at the first frame that keeps no frame pointer.
 */
int native_fp__walk(struct native_fp *f, struct native_unwind *u, const struct native_snapshot *s,
		    const struct native_fp_chain *c, unsigned int max_frames,
		    struct native_stack *out);

void native_fp__stats(const struct native_fp *f, struct native_fp_stats *st);

#endif
