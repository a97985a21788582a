/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sampling without BPF: a timer in this process reads every Python thread of the
 * target from live memory at each tick, without stopping it. A wall-clock view: idle
 * threads are seen too, each sample says whether its thread was on a CPU and whether
 * it held the GIL.
 */
#ifndef PBP_SAMPLER_LIVE_H
#define PBP_SAMPLER_LIVE_H

#include <stdint.h>

#include "decode.h"
#include "frame_cache.h"
#include "interp.h"
#include "mem_live.h"

#define LIVE_STACK_BYTES (1u << 20)	/* data stack read per sample, at most */

typedef int (*live_stack_fn)(void *ctx, struct stack *st);

struct live_sampler_cfg {
	const struct py_interp *interp;
	struct mem_live *live;
	struct decoder *dec;
	struct frame_cache *fcache;	/* NULL: --no-frame-cache */
	uint32_t rate_hz;
	uint32_t stack_cap;	/* bytes of the current chunk read per sample */
	int want_idle;		/* also decode threads that are not on a CPU */
	live_stack_fn on_stack;
	void *ctx;
};

struct live_sampler_stats {
	uint64_t ticks, ticks_missed;	/* timer ticks taken, and skipped for overrun */
	uint64_t threads_sampled;	/* thread stacks decoded */
	uint64_t threads_idle_skipped;
	uint64_t torn_retries;		/* second reading disagreed: read again */
	uint64_t walk_failures;		/* the thread list could not be read */
};

struct live_sampler;

int live_sampler__new(const struct live_sampler_cfg *cfg, struct live_sampler **out);
void live_sampler__free(struct live_sampler *ls);

/*
 * Takes every tick that falls due within @timeout_ms, sleeping in between. Returns 0,
 * -EINTR when a signal interrupted the sleep, -ESRCH when the target is gone, or the
 * callback's negative return.
 */
int live_sampler__poll(struct live_sampler *ls, int timeout_ms);

const struct live_sampler_stats *live_sampler__stats(const struct live_sampler *ls);

#endif
