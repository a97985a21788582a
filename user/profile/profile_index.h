/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the writers that show threads apart and name frames by number (speedscope,
 * pprof, chrome) build over a profile before writing: its threads, each with its
 * samples in time order, and its distinct frames with the frame numbers of every
 * stack. Built once, read-only afterwards.
 */
#ifndef PBP_PROFILE_INDEX_H
#define PBP_PROFILE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

struct pi_thread {
	uint32_t pid, tid;
	const char *name;	/* the OS thread name, NULL if unknown */
	uint32_t name_id;	/* its strtab id, PROFILE_NO_NAME if unknown */
	size_t first, n;	/* its samples: samples[first .. first + n) */
};

/*
 * One sample of a thread: a stack seen at t_ns that stands for weight_ns of CPU time.
 * From the timeline, one per sample with weight_ns = period_ns. A profile without a
 * timeline gives one per aggregate stack instead, laid end to end in the order first
 * seen, with weight_ns = count * period_ns.
 */
struct pi_sample {
	uint64_t t_ns, weight_ns;
	uint32_t stack;		/* aggregate__stack() index */
	uint32_t _pad;
};

struct profile_index {
	struct pi_thread *threads;	/* ordered by pid, then tid */
	size_t nthreads;
	struct pi_sample *samples;	/* grouped by thread, each group in time order */
	size_t nsamples;
	uint32_t *thread_of;		/* aggregate stack -> threads[] index */
	struct aggregate *frames;	/* distinct frames: each a stack of depth 1 */
	uint32_t *frame_ids;		/* frame numbers of stack i, root first, ... */
	size_t *frame_start;		/* ... at frame_ids + frame_start[i] */
};

/* 0, -ENOMEM, or -EINVAL for a timeline that refers to a stack the aggregate lacks. */
int profile_index__build(struct profile_index *ix, const struct profile *p);
/* Only threads and thread_of, for a writer that needs no more: the rest stays empty. */
int profile_index__build_threads(struct profile_index *ix, const struct profile *p);
void profile_index__free(struct profile_index *ix);

/* The thread of pid/tid, NULL if no stack is of it. */
const struct pi_thread *profile_index__thread(const struct profile_index *ix, uint32_t pid,
					     uint32_t tid);

/* Distinct frames are numbered 0 .. nframes - 1, in the order first seen. */
static inline size_t profile_index__nframes(const struct profile_index *ix)
{
	return aggregate__count(ix->frames);
}

static inline const struct agg_frame *profile_index__frame(const struct profile_index *ix,
							   uint32_t id)
{
	return aggregate__stack(ix->frames, id)->frames;
}

static inline const uint32_t *profile_index__stack_frames(const struct profile_index *ix,
							  uint32_t stack)
{
	return ix->frame_ids + ix->frame_start[stack];
}

#endif
