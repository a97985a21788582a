/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The BPF side's lifecycle: load the program, attach it to a clock (the scheduler's
 * tick, or software clocks per CPU or per thread), register targets, and hand each
 * ring-buffer record to a callback.
 */
#ifndef PBP_SAMPLER_H
#define PBP_SAMPLER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "base/names.h"
#include "cpython/py_asyncio.h"
#include "cpython/py_interp.h"
#include "pbp_abi.h"

/* What drives on-CPU sampling (--clock). */
enum sampler_clock {
	SAMPLER_CLOCK_TIMER,	/* cpu-clock events per CPU (per_target: of the targets'
				 * cgroup, sampler_cgroup.h) */
	SAMPLER_CLOCK_TICK,	/* the scheduler tick, or fail (tick_clock.h) */
	SAMPLER_CLOCK_THREAD,	/* cpu-clock events per thread of each target
				 * (sampler_tasks.h); per_target only */
};

static inline int sampler__parse_clock(const char *name, enum sampler_clock *c)
{
	static const char *const names[] = { "timer", "tick", "thread" };
	int i = names__index(names, NAMES_N(names), name);

	if (i < 0)
		return i;
	*c = (enum sampler_clock)i;
	return 0;
}

typedef int (*sampler_fn)(void *ctx, const void *rec, size_t len);
typedef int (*sampler_event_fn)(void *ctx, const struct pbp_event *ev);

struct sampler_cfg {
	uint32_t rate_hz;
	uint32_t stack_cap;	/* bytes of data stack copied per sample */
	uint32_t ringbuf_bytes;	/* power of two */
	int wake_each;		/* wake user space for every record, not when a quarter
				 * of the ring buffer is full: decoded before its task
				 * can end (--async on 3.11-3.13) */
	int frame_cache;	/* copy only above the anchor where the cache allows */
	int every_exec;		/* report every exec on the host, not just targets' */
	int on_cpu;		/* sample at rate_hz: */
	enum sampler_clock clock;	/* ... on the scheduler's tick, or on timers */
	int per_target;		/* ... timers opened for each target as it comes, not on
				 * every CPU (-a) */
	int off_cpu;		/* record target threads' off-CPU intervals */
	uint64_t min_block_ns;	/* off-CPU: shorter intervals are sampled (see BPF) */
	uint32_t native_stack;	/* --native: user stack bytes copied per sample; 0: off */
	uint32_t native_fp_stack;	/* ... beside a frame-pointer walk, for the top frames */
	uint32_t threads_max;	/* threads whose state and frame-cache anchor BPF keeps at
				 * once (least recently used go first); 0: the most, for -a */
	sampler_fn on_sample;
	sampler_event_fn on_event;	/* process events; NULL: none wanted */
	void *ctx;
};

/* threads_max for the targets of one command or -p: LRU maps are allocated whole at
 * load, and the most took tens of milliseconds of start-up (hundreds on a busy host). */
#define SAMPLER_THREADS_TARGETED 8192

struct sampler;

/* Returns -EPERM when privileges are missing, -ENOSYS/-EOPNOTSUPP when the kernel
 * cannot do it, another negative errno otherwise. */
int sampler__new(const struct sampler_cfg *cfg, struct sampler **out);
void sampler__free(struct sampler *s);

/* @gil: address of the GIL's state in the target (py_threads__gil), 0 if unknown.
 * Where each interpreter points at its own (3.12+), non-zero only says the GIL can be
 * read: the program follows each sampled thread's interpreter to its GIL. */
/* @a: the target's asyncio layout, to send each sample's running task (--async);
 * NULL: none. @native_fp: with --native, walk its frame pointers in BPF (and copy
 * native_fp_stack bytes) rather than copy native_stack bytes. Called again for a known
 * target, it replaces what was set. */
int sampler__add_target(struct sampler *s, const struct py_interp *in, uint64_t gil,
			const struct py_asyncio *a, int native_fp);

/* Stops sampling process @pid; its records already in the ring buffer stay there. */
int sampler__remove_target(struct sampler *s, pid_t pid);
/* Tells BPF that user space holds (@flags PBP_CK_HELD, and PBP_CK_CHECK) or no longer
 * holds (0) the code object at @code of process @pid, with fingerprint @fp (0: whatever
 * it is): it copies those it does not with each sample (PBP_CODES_MAX). */
int sampler__code_known(struct sampler *s, uint32_t pid, uint64_t code, uint64_t fp,
			uint32_t flags);
/* Sets or (with @fc NULL) removes the frame-cache anchor of thread @tid. */
int sampler__set_anchor(struct sampler *s, uint32_t tid, const struct pbp_fcache *fc);

/* Entries in the BPF maps that hold per-process and per-thread state, for checking
 * that nothing is left behind by processes that have gone. */
struct sampler_maps {
	uint32_t targets, threads, fcache;
};
int sampler__map_entries(struct sampler *s, struct sampler_maps *out);

/* How long one sampler__poll() delivers records before it returns with some left. */
#define SAMPLER_POLL_BUDGET_NS 50000000ull

/* Waits up to @timeout_ms for records and delivers those that are ready, for up to
 * SAMPLER_POLL_BUDGET_NS. Returns how many were delivered (0 if the budget ran out
 * first) or a negative errno (-EINTR on a signal). It also lets go the
 * threads an attach left held (sampler_tasks.h), so it runs on the thread that added
 * the targets. */
int sampler__poll(struct sampler *s, int timeout_ms);
/* Threads left held by an attach (in an uninterruptible wait) over the run, and those
 * still held now. */
void sampler__late_threads(const struct sampler *s, uint32_t *late, uint32_t *held);
/* What sampler__poll() does for them, also once stopped; returns how many are still
 * held. */
uint32_t sampler__let_go_late(struct sampler *s);

/* Delivers whatever is left without waiting. */
int sampler__drain(struct sampler *s);

/* The scheduler tick's rate when sampling rides it, else 0 (timers). */
uint32_t sampler__tick_hz(const struct sampler *s);

/* The samples ring: its map's descriptor, its data size, and where its data is mapped
 * here (twice over: a record that wraps reads on). -EAGAIN until the first record has
 * shown where, or if it could not be told. */
int sampler__ring(const struct sampler *s, int *fd, uint32_t *bytes, const uint8_t **data);

/* Stops the perf events: nothing new enters the ring buffer after this. */
void sampler__stop(struct sampler *s);

void sampler__counters(struct sampler *s, uint64_t out[PBP_C_MAX]);

/* The kernel's own accounting of the program: total run time and invocations. */
int sampler__prog_stats(struct sampler *s, uint64_t *run_ns, uint64_t *run_cnt);
/* The same for the two programs on the scheduler, summed; zero without off_cpu. */
int sampler__switch_stats(struct sampler *s, uint64_t *run_ns, uint64_t *run_cnt);
/*
 * Off-CPU sampling: every target thread's wait still open now, into *@out (@n of them,
 * to be freed), each taken off what its end will report (struct pbp_open_wait).
 * *@out is NULL and @n 0 in other modes.
 */
int sampler__open_waits(struct sampler *s, struct pbp_open_wait **out, size_t *n);

#endif
