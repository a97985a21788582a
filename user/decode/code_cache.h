/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Code objects read from the target, cached by (address, fingerprint).
 *
 * Code objects are freed and their addresses reused (exec'd functions, lambdas,
 * reloads), so an address alone never identifies one. The fingerprint is a value the
 * object carries for its whole life and that a successor at the same address almost
 * surely lacks: co_version on 3.13+ (a per-interpreter counter bumped for every new
 * code object) with the cached hash of co_qualname, since a successor still being
 * built bears the old version under its own name (pbp_abi.h, PBP_FP_U32_HASH); the
 * cached hash of co_name with the co_filename pointer before 3.13 (every module body
 * has the same name). The decoder gets it from the BPF record (read while the thread
 * was stopped or copied with it), or from live memory; an entry is used only when
 * both address and fingerprint match, and a fresh read is accepted only if the live
 * fingerprint still equals the one wanted.
 */
#ifndef PBP_CODE_CACHE_H
#define PBP_CODE_CACHE_H

#include <stdint.h>

#include "mem/mem.h"
#include "cpython/py_offsets.h"
#include "base/strtab.h"

#define CODE_LINE_SLOTS 8

struct code_info {
	uint64_t addr;
	uint64_t fp;
	uint32_t qualname;	/* strtab ids */
	uint32_t filename;
	int32_t firstlineno;
	uint32_t ncodeunits;
	uint8_t *linetable;
	uint32_t linetable_len;
	uint32_t bytes;		/* what the entry costs, counted against the budget */
	uint8_t used;		/* looked up since the clock hand last passed */
	uint8_t once;		/* a module's or class's body, or exec'd: runs once */
	uint8_t hidden;		/* the interpreter's own, never shown (3.13+ __init__) */
	uint8_t checked;	/* BPF checks its fingerprint in every frame */
	uint8_t coroutine;	/* an async def's (CO_COROUTINE) */
	uint32_t seen;		/* samples it ran in while checked */
	/* instruction -> line memo: call sites of parent frames repeat sample after sample */
	uint32_t memo_instr[CODE_LINE_SLOTS];
	int32_t memo_line[CODE_LINE_SLOTS];
};

/* Counters, summed over targets; the bytes held now are the budget's. */
struct code_cache_stats {
	uint64_t hits, misses, stale, evictions, invalid;
	uint64_t copied;	/* misses read from a record's copies */
};

/*
 * The bytes code caches may hold: each cache on its own, and all the caches of a
 * session together. An entry counts its line table (up to 1 MiB each), its names and
 * its bookkeeping, a cache its index and entry array. Over a limit, entries not looked
 * up lately go first (a clock): hot code stays, and a target that keeps making code
 * costs at most its share.
 */
struct code_budget {
	size_t per_cache;	/* 0: no limit */
	size_t total;		/* 0: no limit */
	size_t bytes;		/* held now by every cache counting against it */
	size_t entries;
	struct code_cache *caches;	/* every such cache, to take from the largest */
};

#define CODE_CACHE_BYTES_DEFAULT (16u << 20)
#define CODE_CACHE_TOTAL_DEFAULT (48u << 20)

struct code_cache_cfg {
	const struct py_offsets *off;
	uint64_t code_type;	/* &PyCode_Type in the target, 0 if unknown */
	struct mem_source *live;
	struct strtab *strs;
	uint32_t max_entries;
	struct code_budget *budget;	/* NULL: the cache's own, with the defaults */
	/* Told of each entry kept (@flags PBP_CK_HELD, with PBP_CK_CHECK for code that
	 * runs once) and let go (0): the sampler copies the code objects the cache does
	 * not hold with each sample. May be NULL. */
	void (*known)(void *ctx, uint64_t addr, uint64_t fp, uint32_t flags);
	void *ctx;
};

struct code_cache;

int code_cache__new(const struct code_cache_cfg *cfg, struct code_cache **out);
void code_cache__free(struct code_cache *c);

/* Reads the fingerprint of the code object at @addr through @m; 0 = unknown. */
int code_cache__fp(struct code_cache *c, struct mem_source *m, uint64_t addr, uint64_t *fp);

/*
 * The code object at @addr with fingerprint @fp (non-zero). One the cache does not
 * hold is read from @copies (a record's copies of target memory only; may be NULL)
 * when they hold all of it with that fingerprint, else live. Returns 0 with *@out,
 * -ESTALE if the object now at @addr has another fingerprint (the sampled one is
 * gone), -EINVAL if @addr does not hold a code object, -EFAULT if unreadable.
 */
int code_cache__get(struct code_cache *c, struct mem_source *copies, uint64_t addr, uint64_t fp,
		    const struct code_info **out);

/* The entry the cache holds for (@addr, @fp), with no read and no count; NULL if none. */
const struct code_info *code_cache__held(const struct code_cache *c, uint64_t addr, uint64_t fp);

/* Line of the instruction at code-unit index @instr, -1 if none or out of range. */
int code_cache__line(const struct code_info *ci, uint32_t instr);

const struct code_cache_stats *code_cache__stats(const struct code_cache *c);

/* Rewrites the string ids every entry holds through @map (see strtab.h). */
void code_cache__remap_strings(struct code_cache *c, struct strtab_remap *map);

#endif
