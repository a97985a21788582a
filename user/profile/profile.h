/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A finished (or in-progress) profile as every writer sees it: the aggregate, the
 * strings it refers to, the threads it saw, optionally the samples in time order, and
 * what the run was. Writers read this and nothing else.
 */
#ifndef PBP_PROFILE_H
#define PBP_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "profile/aggregate.h"
#include "base/strtab.h"

struct profile_thread {
	uint32_t pid, tid;
	uint32_t name;		/* strtab id of its Python name, else of the kernel's;
				 * PROFILE_NO_NAME if unknown */
	uint32_t label;		/* "thread TID (NAME)": what its --threads frame reads */
};

#define PROFILE_NO_NAME UINT32_MAX

/* One sample of the timeline: when, which aggregate stack it added to, and how long
 * it stands for (a tick's period, or a wait's length). */
struct profile_sample {
	uint64_t t_ns;		/* since the profile's start */
	uint64_t weight_ns;
	uint32_t stack;		/* aggregate__stack() index */
	uint32_t _pad;
};

/* A label every sample of a profile carries: where it ran (host, pod, container). */
struct profile_label {
	const char *key, *value;
};

/* What a stack's count is. */
enum profile_unit {
	PROFILE_TICKS,	/* ticks of the clock, period_ns each */
	PROFILE_NS,	/* nanoseconds (wall and off-CPU modes); period_ns is 1 */
};

/* The text of a source file that sampled Python frames name, as it was when sampled:
 * what a heatmap shades, kept with the profile so that a later edit shifts no line. */
struct profile_source {
	uint32_t pid;		/* whose file it is (paths are per mount namespace) */
	uint32_t file;		/* strtab id of the co_filename the frames carry */
	const char *text;
	size_t len;
};

struct profile {
	const struct aggregate *agg;
	const struct strtab *strs;
	const struct profile_thread *threads;
	size_t nthreads;
	/* Samples in the order taken; NULL unless the format asked for a timeline. */
	const struct profile_sample *timeline;
	size_t ntimeline;
	const char *target;	/* "pid 123 (python3 app.py)": titles and file names */
	int64_t start_unix_ns;	/* wall-clock time of the first sample window */
	uint64_t duration_ns;
	uint32_t rate_hz;
	uint64_t period_ns;	/* time one count stands for: 1e9 / rate_hz, or 1 */
	enum profile_unit unit;
	const char *mode;	/* "cpu", "wall" or "off-cpu" (--mode) */
	/* Labels that apply to every sample; writers that have labels (pprof) add them
	 * to each sample. None when nlabels is 0. */
	const struct profile_label *labels;
	size_t nlabels;
	const struct profile_source *sources;
	size_t nsources;
};

/* The clock's period: what one on-CPU sample stands for, in every unit. */
static inline uint64_t profile__tick_ns(const struct profile *p)
{
	return p->unit == PROFILE_NS && p->rate_hz ? 1000000000ull / p->rate_hz : p->period_ns;
}

/* The name a writer prints for @fr: "QUALNAME" / "thread TID (NAME)" / "process PID
 * CMD" ... A thread's frame keeps the thread's slot in p->threads in its line, and
 * reads as the thread's label: its name may be learned after its first stacks. */
static inline const char *profile__name(const struct profile *p, const struct agg_frame *fr)
{
	if (fr->kind == AGG_THREAD && fr->line >= 0 && (size_t)fr->line < p->nthreads &&
	    p->threads[fr->line].label != PROFILE_NO_NAME)
		return strtab__get(p->strs, p->threads[fr->line].label);
	return strtab__get(p->strs, fr->name);
}

/* The file of a Python frame, NULL for any other kind. */
static inline const char *profile__file(const struct profile *p, const struct agg_frame *fr)
{
	return fr->kind == AGG_PYTHON ? strtab__get(p->strs, fr->file) : NULL;
}

/* The object of a native frame ("libc.so.6"), NULL for any other kind. A native frame
 * reads "FUNCTION+0xOFF (OBJECT)" in every writer that shows text, unless it has a
 * source (below). */
static inline const char *profile__lib(const struct profile *p, const struct agg_frame *fr)
{
	return fr->kind == AGG_NATIVE ? strtab__get(p->strs, fr->file) : NULL;
}

/* The source file of a native frame that DWARF line info named ("/src/ext.c"), NULL
 * for any other frame: such a frame's line is a source line, not an offset, and it
 * reads "FUNCTION (ext.c:LINE)" in every writer that shows text (aggregate.h). */
static inline const char *profile__source(const struct profile *p, const struct agg_frame *fr)
{
	return fr->kind == AGG_NATIVE ? strtab__second(p->strs, fr->name) : NULL;
}

/* The last part of a source path, which text writers show, as perf's srcline does:
 * build directories are long and say little in a flame graph; pprof keeps the path. */
static inline const char *profile__base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

#endif
