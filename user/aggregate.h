/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stack -> sample count. Writers read the aggregate through this interface only and
 * never reach back into decoding.
 */
#ifndef PBP_AGGREGATE_H
#define PBP_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

enum agg_frame_kind {
	AGG_PYTHON,	/* name = co_qualname, file = co_filename, line */
	AGG_THREAD,	/* name = "thread TID" */
	AGG_MARKER,	/* name = a note such as "[incomplete]" */
	AGG_PROCESS,	/* name = "process PID COMMAND" */
	AGG_WAIT,	/* name = why the thread was off the CPU: "[off-CPU: sleep]" */
	AGG_TASK,	/* name = "task NAME": an asyncio task (--async) */
};

struct agg_frame {
	uint32_t kind;
	uint32_t name;		/* strtab ids */
	uint32_t file;
	int32_t line;		/* -1: unknown */
};

/*
 * A stack is keyed by its process, its thread and its frames: writers that show
 * threads apart (speedscope, pprof labels, chrome) need them, and writers that merge
 * threads do so themselves.
 */
struct agg_stack {
	uint64_t count;
	uint32_t pid, tid;
	uint32_t depth;
	struct agg_frame *frames;	/* root first */
};

struct aggregate;

struct aggregate *aggregate__new(void);
void aggregate__free(struct aggregate *a);
/* Adds @count samples of a stack; *@index (if given) is its aggregate__stack() index,
 * which never changes. */
int aggregate__add(struct aggregate *a, uint32_t pid, uint32_t tid,
		   const struct agg_frame *frames, uint32_t depth, uint64_t count,
		   uint32_t *index);
/* Adds @count to stack @index, which aggregate__add() gave. */
void aggregate__add_to(struct aggregate *a, uint32_t index, uint64_t count);
size_t aggregate__count(const struct aggregate *a);
/* Stacks in insertion order; valid until the next aggregate__add. */
const struct agg_stack *aggregate__stack(const struct aggregate *a, size_t i);
uint64_t aggregate__total(const struct aggregate *a);

#endif
