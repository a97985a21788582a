/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * From a BPF record to a Python stack: walk the _PyInterpreterFrame chain starting at
 * the sampled frame, name each frame by its code object and line, and say whether the
 * walk reached the bottom of the thread's stack.
 */
#ifndef PBP_DECODER_H
#define PBP_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "decode/code_cache.h"
#include "cpython/py_interp.h"
#include "mem/mem.h"
#include "pbp_abi.h"
#include "cpython/py_run.h"

struct mem_snapshot;

#define DECODE_MAX_DEPTH 4096
/* Eval-loop activations told apart in one stack. A native walk holds at most
 * NATIVE_MAX_FRAMES (256) frames, one at least per activation, so more could never be
 * placed among native frames: past this, the last run holds the rest, c_addr 0. */
#define DECODE_MAX_RUNS 256

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
	GAP_TORN,		/* a second reading of live memory disagreed */
	GAP_CACHE_LOST,		/* copied down to an anchor whose cache entry is gone */
	GAP_NOT_COPIED,		/* BPF could not copy the stack: live memory has moved on */
	GAP_MOVING,		/* BPF caught the thread between two chunks */
	GAP_WALK_CUT,		/* BPF stopped its walk short (PBP_SF_WALK_ENDS) */
	GAP_CODES_CUT,		/* BPF left code objects uncopied (PBP_SF_CODES_CUT) */
	GAP_MAX,
};

/* One frame as walked, shims included. */
struct raw_frame {
	uint64_t addr;
	uint64_t code;		/* 0 for a shim */
	uint64_t instr;
	uint64_t previous;
	uint8_t owner;
	uint8_t is_entry;	/* 3.11: the first frame its eval-loop activation ran */
};

struct decoded_frame {
	uint32_t qualname;	/* strtab ids */
	uint32_t filename;
	int32_t line;
	int32_t first_line;	/* co_firstlineno: where the function starts */
	uint64_t code_fp;	/* the code object's fingerprint when it was named */
};

struct stack {
	uint32_t pid, tid;
	uint64_t ts_ns;
	uint32_t flags;		/* PBP_TS_* of the sample */
	enum decode_gap gap;
	uint64_t task, task_fp;	/* --async: the running task and its coroutine's code fp */
	/* ... and where the task object (and its name) can be read as they were when
	 * the sample was taken, falling back to live memory: the record's copies; NULL
	 * when it has none. Valid only until the record's callback returns. */
	struct mem_source *task_mem;
	/* ... the copies alone, where a read outside them fails. */
	struct mem_source *task_copy;
	/* --native: the record's registers and user stack copy (native->stack_len bytes),
	 * checked to lie within it; NULL when it has none or an invalid one, and from
	 * every source but a record. They point into the ring buffer: valid only until
	 * the record's callback returns. */
	const struct pbp_native *native;
	const uint8_t *native_stack;
	/* ... and with PBP_NF_FP_WALK its native->nfp frame records, checked sound
	 * (8-aligned, rising, no return address 0); NULL without. */
	const struct pbp_native_fp *native_fp;
	uint32_t depth;
	struct decoded_frame frames[DECODE_MAX_DEPTH];	/* innermost first */
	/* Which activation of the eval loop ran which frames, innermost first: together
	 * the runs cover frames[0, depth), in order (decode_runs.h). */
	uint32_t nruns;
	struct py_run runs[DECODE_MAX_RUNS];
};

struct decode_stats {
	uint64_t samples, complete, incomplete;
	uint64_t gaps[GAP_MAX];
	uint64_t frames, frames_from_snapshot, frames_read_live, frames_from_cache;
	uint64_t native_blocks;		/* records with a valid native block */
	uint64_t native_invalid;	/* ... with one that failed the checks, ignored */
	uint64_t frames_outside;	/* frames outside the chunks BPF copied */
	uint64_t walks_cut;		/* records whose walk stopped short (PBP_SF_WALK_ENDS) */
	uint64_t codes_cut;		/* ... that left code objects uncopied */
	uint64_t ns;		/* CPU time spent decoding */
};

/*
 * One thread at one instant, from any memory source: a BPF record, live memory, a core
 * file. @mem serves the frames. When @verify is set, every frame header the walk used
 * is read again through it and must agree, or the stack is GAP_TORN: the live sampler
 * passes the reading taken just before the one in @mem (docs/live-sampling.md says
 * why agreement of the two is enough).
 */
struct thread_sample {
	uint32_t pid, tid;
	uint32_t ns_tid;	/* native_thread_id as the thread state held it; 0: same as tid */
	uint64_t ts_ns;		/* CLOCK_MONOTONIC, when the frames were read */
	uint32_t flags;		/* PBP_TS_* */
	uint64_t tstate;
	uint64_t current_frame;
	uint64_t anchor, anchor_seq;	/* 3.15+: last_profiled_frame(_seq) as read */
	/* The frames were copied only down to the frame cache's anchor: entry
	 * generation @cache_gen, its path[@cache_depth] (see frame_cache.h). */
	int from_anchor;
	uint32_t cache_gen, cache_depth;
	const struct pbp_code_fp *fps;	/* code fingerprints read with the frames */
	uint32_t nfps;
	struct mem_source *mem;
	/* The sample's copies alone (NULL: none), where code objects BPF copied with it
	 * are read: they may have been freed since. */
	struct mem_source *copies;
	/* If set: thread-owned frames must be in it, in its first @copy_chunks spans
	 * (the data-stack chunks; the rest are frames copied outside them). */
	const struct mem_snapshot *copy;
	uint32_t copy_chunks;
	struct mem_source *verify;
	const struct mem_snapshot *verify_copy;	/* and in this one, with @verify */
	uint64_t verify_anchor, verify_seq;	/* with @verify: the anchor in that reading */
	/* With @verify, if @live_hi is set: every frame that lies in [@live_lo,
	 * @live_hi), the thread's current chunk, must start below @live_below, the lower
	 * of the chunk's tops when the reading began and when it ended; all but the
	 * innermost, unless an entry frame called it (decoder.c: bounded). */
	uint64_t live_lo, live_hi, live_below;
	/* Optional: where the walk read frames that @copy does not hold (a generator's,
	 * an entry frame on the C stack), up to @outside_cap of them, innermost first,
	 * their number in *@noutside. */
	uint64_t *outside;
	uint32_t outside_cap, *noutside;
	int torn;		/* the caller already saw the readings disagree */
	/* One of several readings of this sample: its time is counted, not its outcome,
	 * which the caller counts once with decoder__count(). */
	int attempt;
	/* Optional (NULL: none): the copy of the thread's native stack taken with the
	 * sample, cstack_len bytes from cstack_addr (its RSP) up. 3.11 finds its
	 * eval-loop activations there (decode_runs.c); nothing else reads it. */
	const uint8_t *cstack;
	uint64_t cstack_addr;
	size_t cstack_len;
};

struct decoder;

struct frame_cache;

/* A walk's working space (about 256 KiB). Decoding is single-threaded, so the
 * decoders of a session share one. */
struct decode_scratch {
	struct raw_frame raw[DECODE_MAX_DEPTH];
	struct decoded_frame reused[DECODE_MAX_DEPTH];
};

struct decoder_cfg {
	const struct py_interp *interp;
	struct mem_source *live;
	struct frame_cache *fcache;	/* NULL: --no-frame-cache */
	struct strtab *strs;
	uint32_t code_cache_entries;
	struct code_budget *code_budget;	/* NULL: the code cache's own */
	struct decode_scratch *scratch;		/* NULL: the decoder's own */
	/* Told of the code objects the decoder holds and lets go (code_cache_cfg). */
	void (*code_known)(void *ctx, uint64_t code, uint64_t fp, uint32_t flags);
	void *ctx;
};

int decoder__new(const struct decoder_cfg *cfg, struct decoder **out);
void decoder__free(struct decoder *d);

/* Decodes @rec (@len bytes from the ring buffer) into @st. 0 even for incomplete
 * stacks (see st->gap); -EINVAL only for a record that is not ours. */
int decoder__decode(struct decoder *d, const void *rec, size_t len, struct stack *st);

/* Decodes one thread's stack. Same return convention as decoder__decode(). */
int decoder__decode_thread(struct decoder *d, const struct thread_sample *t, struct stack *st);
/* The addresses and owners of up to @n frames from frame @first on (innermost first)
 * of the stack @d decoded last, as long as it has them: how many. Valid until it
 * decodes again (the decoders of a session share their working space). */
uint32_t decoder__frame_addrs(const struct decoder *d, uint32_t first, uint32_t n,
			      uint64_t *addr, uint8_t *owner);
/* What decoder__frames_kind() tells of a frame. */
enum {
	/* Called from C (an asyncio task's step runs its coroutine so), as 3.12-3.14
	 * mark it: its caller is the eval loop's entry frame (a shim). Never where the
	 * walk shows no caller, nor on 3.11 (which runs even an awaited coroutine in an
	 * activation of its own) and 3.15+, which have no such mark. */
	DECODER_FROM_C = 1,
	/* Its code is an async def's, as the code object said when it was named. */
	DECODER_COROUTINE = 2,
	/* Its code is no longer in the cache: whether it is an async def's is unknown. */
	DECODER_CODE_GONE = 4,
};
/* The same for what is known of each frame of @st, which @d decoded last: DECODER_*. */
uint32_t decoder__frames_kind(const struct decoder *d, const struct stack *st, uint32_t first,
			      uint32_t n, uint8_t *kind);
/*
 * The Python name of the thread whose stack @st @d decoded last, when @st shows it:
 * the name of the Thread object of its frame of threading's Thread._bootstrap_inner,
 * one of its outermost (py_thread_name.h), read through the decoder's memory. 0;
 * -ENOENT when the stack has no such frame, or an error of py_thread_name__of_frame.
 */
int decoder__thread_name(const struct decoder *d, const struct stack *st, char *out,
			 size_t cap);
/* Counts @st as one sample's outcome (complete, or incomplete for st->gap). */
void decoder__count(struct decoder *d, const struct stack *st);

/*
 * Names the one frame at @frame, read through @m: a suspended coroutine's, which no
 * thread's chain reaches. 0; -EFAULT if unreadable; -EINVAL if it holds no code;
 * what code_cache__get() returns.
 */
int decoder__name_frame(struct decoder *d, struct mem_source *m, uint64_t frame,
			struct decoded_frame *f);
const struct decode_stats *decoder__stats(const struct decoder *d);
const struct code_cache_stats *decoder__code_stats(const struct decoder *d);
const struct mem_stats *decoder__mem_stats(const struct decoder *d);
/* Passes every string id the decoder keeps through @map (see strtab.h). */
void decoder__remap_strings(struct decoder *d, struct strtab_remap *map);

#endif
