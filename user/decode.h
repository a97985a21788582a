/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * From a BPF record to a Python stack: walk the _PyInterpreterFrame chain starting at
 * the sampled frame, name each frame by its code object and line, and say whether the
 * walk reached the bottom of the thread's stack.
 */
#ifndef PBP_DECODE_H
#define PBP_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "code_cache.h"
#include "interp.h"
#include "mem.h"
#include "pbp_abi.h"

#define DECODE_MAX_DEPTH 4096

/* Why a stack is incomplete (0 = complete). */
enum decode_gap {
	GAP_NONE = 0,
	GAP_UNREADABLE,		/* a frame could not be read */
	GAP_BAD_FRAME,		/* a frame failed validation */
	GAP_BAD_CODE,		/* a frame's code object is not one */
	GAP_STALE_CODE,		/* the sampled code object was freed before decoding */
	GAP_TOO_DEEP,		/* DECODE_MAX_DEPTH reached */
	GAP_BAD_RECORD,		/* the record itself is malformed */
	GAP_NO_BOTTOM,		/* the chain ended at a frame that cannot be the first */
	GAP_MAX,
};

struct decoded_frame {
	uint32_t qualname;	/* strtab ids */
	uint32_t filename;
	int32_t line;
};

struct stack {
	uint32_t pid, tid;
	uint64_t ts_ns;
	enum decode_gap gap;
	uint32_t depth;
	struct decoded_frame frames[DECODE_MAX_DEPTH];	/* innermost first */
};

struct decode_stats {
	uint64_t samples, complete, incomplete;
	uint64_t gaps[GAP_MAX];
	uint64_t frames, frames_from_snapshot, frames_read_live;
	uint64_t ns;		/* CPU time spent decoding */
};

struct decoder;

struct decoder_cfg {
	const struct py_interp *interp;
	struct mem_source *live;
	struct strtab *strs;
	uint32_t code_cache_entries;
};

int decoder__new(const struct decoder_cfg *cfg, struct decoder **out);
void decoder__free(struct decoder *d);

/* Decodes @rec (@len bytes from the ring buffer) into @st. 0 even for incomplete
 * stacks (see st->gap); -EINVAL only for a record that is not ours. */
int decoder__decode(struct decoder *d, const void *rec, size_t len, struct stack *st);

const struct decode_stats *decoder__stats(const struct decoder *d);
const struct code_cache_stats *decoder__code_stats(const struct decoder *d);
const struct mem_stats *decoder__mem_stats(const struct decoder *d);

#endif
