/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sampling without BPF: a timer in this process reads every Python thread of the
 * target from live memory at each tick, without stopping it (but, with cfg.hold, a
 * thread whose every reading was torn). A wall-clock view: idle threads are seen too,
 * each sample says whether its thread was on a CPU and whether it held the GIL.
 */
#ifndef PBP_SAMPLER_LIVE_H
#define PBP_SAMPLER_LIVE_H

#include <stdint.h>

#include "decode/decoder.h"
#include "decode/frame_cache.h"
#include "cpython/py_interp.h"
#include "mem/mem_live.h"

#define LIVE_STACK_BYTES (1u << 20)	/* data stack read per sample, at most */

typedef int (*live_stack_fn)(void *ctx, struct stack *st);

struct sampler_live_cfg {
	const struct py_interp *interp;
	struct mem_live *live;
	struct decoder *dec;
	struct frame_cache *fcache;	/* NULL: --no-frame-cache */
	uint32_t rate_hz;
	uint32_t stack_cap;	/* bytes of the current chunk read per sample */
	int want_idle;		/* also decode threads that are not on a CPU */
	int host_tids;		/* stacks carry the host's thread ids, as BPF records do */
	/* A running thread whose readings all found its stack changing is held still
	 * (thread_hold.h) and read once more, rather than reported torn. */
	int hold;
	live_stack_fn on_stack;
	void *ctx;
};

struct sampler_live_stats {
	uint64_t ticks, ticks_missed;	/* timer ticks taken, and skipped for overrun */
	uint64_t threads_sampled;	/* thread stacks decoded */
	uint64_t threads_idle_skipped;
	uint64_t torn_retries;		/* second reading disagreed: read again */
	uint64_t slow_readings;		/* took too long to be trusted: read again */
	uint64_t walk_failures;		/* the thread list could not be read */
	uint64_t holds;			/* threads held still for a reading */
	uint64_t holds_late;		/* ... that had not stopped within the wait */
	uint64_t holds_refused;		/* ... that could not be seized */
	uint64_t hold_ns;		/* from seize to release, summed over holds */
	uint64_t hold_wait_ns;		/* ... of which until the thread had stopped */
};

struct sampler_live;

int sampler_live__new(const struct sampler_live_cfg *cfg, struct sampler_live **out);
void sampler_live__free(struct sampler_live *ls);

/*
 * Takes every tick that falls due within @timeout_ms, sleeping in between. Returns 0,
 * -EINTR when a signal interrupted the sleep, -ESRCH when the target is gone, or the
 * callback's negative return.
 */
int sampler_live__poll(struct sampler_live *ls, int timeout_ms);

/* One sample of every thread, now, whatever the rate; returns as a tick would. */
int sampler_live__sample_now(struct sampler_live *ls);

/*
 * --async on 3.14+: each sample also reads the thread state's running task, at @off in
 * it (PBP_OFF_NONE: not), in the same reading as the current frame, right after it,
 * and copies the task's first @task_size bytes just after the reading
 * (stack->task_mem). Its coroutine's code is not read: that is the reader's
 * (stack->task_fp stays 0).
 */
void sampler_live__task_at(struct sampler_live *ls, uint64_t off, uint64_t task_size);

/*
 * Lets go a thread held since a reading that had not stopped in time, if it has
 * stopped since. 1 while one is still seized: until then a wait of this thread for
 * the target's main thread must not take its stop (__WNOTHREAD does not help: this is
 * the thread that seized it).
 */
int sampler_live__let_go_late(struct sampler_live *ls);

const struct sampler_live_stats *sampler_live__stats(const struct sampler_live *ls);

#endif
