/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --async: a target's tasks by the address of their coroutine, as its task lists held
 * them when last read. A task started eagerly runs its first step inside the step of
 * the task that started it, whose coroutine's frame is then on the stack: this finds
 * that task. Entries may be stale (the task ended, its memory reused): the caller
 * checks a task found against live memory.
 */
#ifndef PBP_TASK_INDEX_H
#define PBP_TASK_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct task_index_entry {
	uint64_t coro, task;
};

struct task_index {
	struct task_index_entry *v;
	size_t n, cap;
	uint64_t built_ns;	/* CLOCK_MONOTONIC of the last rebuild; 0: never */
};

/* Empties it for a rebuild at @now. */
void task_index__reset(struct task_index *x, uint64_t now);
/* Adds task @task whose coroutine is at @coro; 0 or -ENOMEM. */
int task_index__add(struct task_index *x, uint64_t coro, uint64_t task);
/* Sorts what was added, for task_index__find(). */
void task_index__done(struct task_index *x);
/* The task whose coroutine is at @coro: 0 with *@task, or -ENOENT. */
int task_index__find(const struct task_index *x, uint64_t coro, uint64_t *task);
/* The same for the @k-th of the tasks the index holds for @coro (from 0): the memory
 * of an ended task's coroutine may hold a later one's. */
int task_index__find_at(const struct task_index *x, uint64_t coro, size_t k, uint64_t *task);
void task_index__free(struct task_index *x);

#endif
