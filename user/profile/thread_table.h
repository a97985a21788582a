/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The threads a profile has seen, in the order they were first seen, each named by
 * the kernel's name for it (/proc/PID/task/TID/comm) until its Python name is found.
 */
#ifndef PBP_THREAD_TABLE_H
#define PBP_THREAD_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "base/strtab.h"

struct thread_table;

struct thread_table *thread_table__new(void);
void thread_table__free(struct thread_table *t);
/* Records (@pid, @tid), naming it in @strs the first time by the kernel's name, and
 * gives its @slot; 0 or -ENOMEM. */
int thread_table__see(struct thread_table *t, struct strtab *strs, uint32_t pid, uint32_t tid,
		      uint32_t *slot);
/* The thread in @slot was last seen on a CPU in aggregated stack @index, placed at
 * @timeline in the timeline (SIZE_MAX: not placed). */
void thread_table__set_tick(struct thread_table *t, uint32_t slot, uint32_t index,
			    size_t timeline);
/* Where (@pid, @tid) was last seen on a CPU: 0, or -ENOENT before any tick. */
int thread_table__tick(const struct thread_table *t, uint32_t pid, uint32_t tid, uint32_t *index,
		       size_t *timeline);
/* Wall mode: the thread in @slot last had time stolen by the hypervisor (a tick's
 * stack under its stolen leaf) in aggregated stack @index. */
void thread_table__set_stolen(struct thread_table *t, uint32_t slot, uint32_t index);
/* Where (@pid, @tid) last had time stolen: 0, or -ENOENT if it never had. */
int thread_table__stolen(const struct thread_table *t, uint32_t pid, uint32_t tid,
			 uint32_t *index);
/* Stacks of a thread looked at for its Python name before the kernel's is kept. */
#define THREAD_NAME_LOOKS 8
/* Whether the thread in @slot still wants its Python name (py_thread_name.h) looked
 * for: not named yet, and fewer than THREAD_NAME_LOOKS looks. Counts this one. */
bool thread_table__wants_name(struct thread_table *t, uint32_t slot);
/* Names the thread in @slot by the strtab id @name, for good; 0 or -ENOMEM. */
int thread_table__name(struct thread_table *t, struct strtab *strs, uint32_t slot,
			uint32_t name);
const struct profile_thread *thread_table__all(const struct thread_table *t, size_t *n);

#endif
