/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The frame cache: per thread, the last decoded chain (frame addresses, raw frame
 * headers, decoded names), so that the unchanged parents of a deep stable stack are
 * neither copied, read nor decoded again. docs/frame-cache.md gives the design and why
 * it cannot splice parents from another call chain.
 *
 * Two ways to know the parents are unchanged:
 * - 3.15+, the anchor: the interpreter keeps last_profiled_frame / _seq for us. An
 *   entry (path[], seq) is established only from a complete sample in which the anchor
 *   named a live thread-owned frame, so its return bumps the sequence; a later
 *   (anchor, seq) == (path[j], seq + j) proves path[j] is the same activation and
 *   everything below it is as decoded.
 * - every version, validation: a fully copied chain is compared frame by frame, from
 *   the bottom, with the cached one (address, code, previous, owner, instruction);
 *   the identical bottom part keeps its decoded names.
 */
#ifndef PBP_FRAME_CACHE_H
#define PBP_FRAME_CACHE_H

#include <stdint.h>

#include "decode/decoder.h"
#include "cpython/py_offsets.h"
#include "pbp_abi.h"

/* How the cache reaches the outside world: the BPF map and the target's memory. */
struct frame_cache_hooks {
	/* Makes @fc the anchor entry BPF sees for @tid; NULL removes it. */
	int (*publish)(void *ctx, uint32_t tid, const struct pbp_fcache *fc);
	/* Writes @frame into the last_profiled_frame of thread state @tstate, which the
	 * thread @ns_tid (its native_thread_id) owned when sampled; -ESRCH, writing
	 * nothing, unless the state is still that thread's and alive; -EPERM, for good,
	 * if it is one CPython may free. */
	int (*write_anchor)(void *ctx, uint32_t ns_tid, uint64_t tstate, uint64_t frame);
	void *ctx;
};

struct frame_cache_stats {
	uint64_t hits;			/* cached parents below an unchanged anchor/top */
	uint64_t partial_hits;		/* cached parents below a lower point */
	uint64_t misses;
	uint64_t invalidations;		/* entries found no longer true and dropped */
	uint64_t anchor_writes;
	uint64_t anchor_writes_stale;	/* refused: the record was too old to act on */
	uint64_t anchor_writes_refused;	/* refused: the thread state was no longer live */
	uint64_t threads_unanchored;	/* never written: their state is one CPython frees */
	uint64_t anchors_established;
};

struct frame_cache;

/*
 * The bytes frame caches may hold: each on its own and all of a session's together.
 * An entry costs up to 3 chains x 4096 frames x 64 bytes; past a limit, new threads
 * and longer chains go uncached (decoded in full, as with --no-frame-cache) until
 * entries expire.
 */
struct frame_cache_budget {
	size_t per_cache, total;	/* 0: no limit */
	size_t bytes;			/* held now by every cache counting against it */
};

#define FRAME_CACHE_BYTES_DEFAULT (8u << 20)
#define FRAME_CACHE_TOTAL_DEFAULT (32u << 20)

/* @anchors: the interpreter keeps last_profiled_frame (3.15+) and the hooks may write
 * it; otherwise only validation is used. @budget: NULL for the cache's own, with the
 * defaults. */
int frame_cache__new(const struct py_offsets *off, int anchors,
		     const struct frame_cache_hooks *hooks, struct frame_cache_budget *budget,
		     struct frame_cache **out);
void frame_cache__free(struct frame_cache *fc);

/*
 * For a sample copied down to the anchor: the address where the walk must stop (the
 * anchor frame itself is read from the sample), or 0 if the entry the copy relied on
 * is gone.
 */
uint64_t frame_cache__stop(struct frame_cache *fc, const struct thread_sample *t);

/* Appends the cached frames below @stop (an address of the entry's chain): raw frames
 * to @raw (room @nraw_room) and decoded ones to @dec (room @ndec_room). Returns the
 * numbers appended through @nraw and @ndec; -ENOENT if the entry changed. */
int frame_cache__splice(struct frame_cache *fc, const struct thread_sample *t, uint64_t stop,
			struct raw_frame *raw, uint32_t nraw_room, uint32_t *nraw,
			struct decoded_frame *dec, uint32_t ndec_room, uint32_t *ndec);

/*
 * For a fully walked chain raw[0..n) (innermost first): how many of its outermost
 * frames are identical to the cached chain's (the return value), and the decoded
 * Python frames among them, outermost last, in @dec (room for n; *@ndec of them).
 * Frames whose code BPF fingerprinted must also carry the same fingerprint.
 */
uint32_t frame_cache__reuse(struct frame_cache *fc, const struct thread_sample *t,
			    const struct raw_frame *raw, uint32_t n, struct decoded_frame *dec,
			    uint32_t *ndec);

/*
 * Remembers a complete chain and its decoded frames (@dec: one per Python frame,
 * innermost first), and moves the thread's anchor along: establishes an entry when
 * the sample proves one, or writes a new anchor when there is none.
 */
void frame_cache__store(struct frame_cache *fc, const struct thread_sample *t,
			const struct raw_frame *raw, uint32_t n,
			const struct decoded_frame *dec, uint32_t ndec);

/* After a sample copied down to the anchor: re-anchors higher when the copy above the
 * anchor has grown long (@walked frames). */
void frame_cache__after_hit(struct frame_cache *fc, const struct thread_sample *t,
			    const struct raw_frame *raw, uint32_t walked);

/* 3.15+ live sampling: whether (@anchor, @seq) hits thread @tid's entry, and how. */
int frame_cache__anchor_hit(struct frame_cache *fc, uint32_t tid, uint64_t tstate,
			    uint64_t anchor, uint64_t seq, uint32_t *gen, uint32_t *depth);

/* Forgets every entry of threads not seen since @before_ns. */
void frame_cache__expire(struct frame_cache *fc, uint64_t before_ns);

const struct frame_cache_stats *frame_cache__stats(const struct frame_cache *fc);

/* Passes every string id the cached decoded frames hold through @map (strtab.h). */
void frame_cache__remap_strings(struct frame_cache *fc, struct strtab_remap *map);

#endif
