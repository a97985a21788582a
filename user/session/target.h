/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One profiled process: its interpreter, its memory, the decoder and frame cache that
 * serve its samples, and the root frame its stacks carry.
 */
#ifndef PBP_TARGET_H
#define PBP_TARGET_H

#include <stdint.h>

#include "decode/decoder.h"
#include "decode/frame_cache.h"
#include "cpython/py_asyncio.h"
#include "session/task_index.h"
#include "decode/tid_map.h"
#include "cpython/py_interp.h"
#include "mem/mem_live.h"
#include "native/native_worker.h"
#include "base/proc.h"
#include "sample/sampler_live.h"
#include "session/stats.h"
#include "base/strtab.h"

struct session;
struct target;

/* What the targets of a session share (decoding is single-threaded): the strings, the
 * code and frame caches' byte budgets, and the decoder's working space. */
struct target_shared {
	struct strtab *strs;
	struct code_budget *codes;
	struct frame_cache_budget *frames;
	struct decode_scratch *scratch;
};

/* Hands a frame-cache entry of thread @tid of target @t to the sampler (NULL @fc: drop
 * it). */
typedef int (*target_publish_fn)(struct target *t, uint32_t tid, const struct pbp_fcache *fc);
/* Tells the sampler that @t's decoder holds (@known) or let go of the code object at
 * @code with fingerprint @fp: it copies the others with each sample. */
typedef void (*target_code_fn)(struct target *t, uint64_t code, uint64_t fp, uint32_t flags);

/* Event loops of a target whose threads are remembered (3.11-3.13, --async). */
#define TARGET_LOOPS_MAX 8

struct target {
	struct session *session;	/* the owner, for the callbacks */
	struct py_interp interp;	/* found before target__prepare() */
	struct proc_identity ident;	/* the process and program it was adopted as */
	struct mem_live live;
	struct decoder *dec;
	struct frame_cache *fcache;	/* NULL: --no-frame-cache */
	struct sampler_live *sampler_live;	/* --no-bpf */
	target_publish_fn publish;
	target_code_fn code_known;
	int anchors;		/* this target uses (and resets) last_profiled_frame */
	uint32_t root_name;	/* strtab id of "process PID COMMAND" */
	uint64_t cpu0, cpu;	/* its CPU time at the start, and as last seen */
	uint64_t found_ns;	/* when its interpreter was looked for (CLOCK_MONOTONIC) */
	uint64_t gil;		/* as given to sampler__add_target() */
	/* --async: its asyncio layout, once it has imported asyncio */
	enum {
		TARGET_ASYNCIO_LOOK,	/* not found yet: looked for again now and then */
		TARGET_ASYNCIO_FOUND,
		TARGET_ASYNCIO_NONE,	/* never: refused, or not wanted */
	} asyncio_state;
	uint64_t asyncio_next_ns, asyncio_wait_ns;
	uint64_t tasks_swept_ns;	/* its suspended tasks are charged up to here */
	struct py_asyncio asyncio;
	struct tid_map *tids;	/* its thread ids as ours, for the wall-mode task sweep */
	struct task_index tasks;	/* --async: its tasks by coroutine, for eager ones */
	/* ... 3.11-3.13: the weak references (in .coro) those were read through, so
	 * that a look for new tasks reads only theirs; and when one last looked. */
	struct task_index task_refs;
	uint64_t tasks_added_ns;
	/* ... and the event loops its samples showed running, each with the thread that
	 * ran it (as the samples name it), newest first: whose a suspended task's wait is. */
	struct target_loop {
		uint64_t loop;
		uint32_t tid;
	} loops[TARGET_LOOPS_MAX];
	unsigned int nloops;
	struct native_worker_proc *native; /* --native: its maps and unwinder */
	int native_fp;			/* ... and BPF walks its frame pointers */
	char cmd[128];
};


/*
 * Readies @t, whose interpreter was found, to be sampled: names it, and makes its
 * decoder and (with @frame_cache) its frame cache, clearing any anchors left behind.
 */
int target__prepare(struct target *t, const struct target_shared *shared, int frame_cache,
		    target_publish_fn publish, target_code_fn code_known);
/* Notes which process and program @t's PID names, before its interpreter is looked
 * for; every later write into it and every "is it still there" compares against it. */
int target__identify(struct target *t);
/* 0 if @t's PID still names the process and program it was adopted as; -ESRCH if it is
 * gone or the PID was reused, -ENOEXEC if it exec'd another program. */
int target__same(const struct target *t);
/* Passes every string id the target keeps through @map (see strtab.h). */
void target__remap_strings(struct target *t, struct strtab_remap *map);
/* Leaves no anchor behind in the target's thread states. */
void target__clear_anchors(struct target *t);
/* Adds the target's decoding, cache and live-sampling counters to @sum. */
void target__add_stats(const struct target *t, struct run_stats *sum);
void target__free(struct target *t);

#endif
