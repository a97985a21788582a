/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The threads a profile has seen, each named once by the kernel's name for it
 * (/proc/PID/task/TID/comm, which Python's threading sets from the thread's name on
 * 3.14+), in the order they were first seen.
 */
#ifndef PBP_THREAD_TABLE_H
#define PBP_THREAD_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "strtab.h"

struct thread_table;

struct thread_table *thread_table__new(void);
void thread_table__free(struct thread_table *t);
/* Records (@pid, @tid), naming it in @strs the first time; 0 or -ENOMEM. */
int thread_table__see(struct thread_table *t, struct strtab *strs, uint32_t pid, uint32_t tid);
const struct profile_thread *thread_table__all(const struct thread_table *t, size_t *n);

#endif
