/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The processes our targets start, watched until they show a CPython interpreter (then
 * they are offered to the caller) or have given no sign of one for a while. An exec'd
 * Python needs a moment to start its runtime, a fork is one at once, and a shell in
 * between is followed to whatever it runs.
 */
#ifndef PBP_DESCENDANTS_H
#define PBP_DESCENDANTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct descendants;

/* Says whether @pid is already a target. */
typedef int (*descendants_known_fn)(pid_t pid, void *arg);
/* Tries to make @pid a target: 1 if it is one now, 0 if not (yet), or a negative
 * errno that ends the watch. */
typedef int (*descendants_adopt_fn)(pid_t pid, void *arg);

/* @scan_children: find the children of watched processes by reading /proc; without
 * it, only processes given to descendants__watch() are watched. */
struct descendants *descendants__new(descendants_known_fn known, descendants_adopt_fn adopt,
				     void *arg, int scan_children);
void descendants__free(struct descendants *d);
/* Watches the children of @parent (and, through later scans, theirs). */
int descendants__scan(struct descendants *d, pid_t parent);
/* Watches @pid itself, which was just started or exec'd. */
int descendants__watch(struct descendants *d, pid_t pid);
/* Scans the watched processes' own children, then offers each one due another look
 * to the adopt callback; forgets those that exited or became targets. */
int descendants__step(struct descendants *d);
/* How many looks for an interpreter were made, and how many put off for the budget. */
void descendants__counts(const struct descendants *d, uint64_t *looks, uint64_t *deferred);
/* Processes that may yet become targets: watched, and not given up on. */
size_t descendants__pending(const struct descendants *d);

#endif
