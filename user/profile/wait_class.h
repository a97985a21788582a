/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a sample's time was spent on, in the few classes a reader compares (the report's
 * columns, the heatmap's shades): on a CPU, or off it for one of a handful of reasons,
 * read from the leaf frame that wall and off-CPU modes put under a wait.
 */
#ifndef PBP_WAIT_CLASS_H
#define PBP_WAIT_CLASS_H

#include "profile/profile.h"

enum wait_class {
	WAIT_ON_CPU,		/* no wait frame: running Python (or C) code */
	WAIT_RUNNABLE,		/* ready, but every CPU was busy */
	WAIT_STOLEN,		/* on a CPU the hypervisor gave to something else */
	WAIT_GIL,
	WAIT_LOCK,		/* a futex: locks, conditions, queues, events */
	WAIT_IO,		/* read, write, poll/select, accept/connect */
	WAIT_SLEEP,
	WAIT_OTHER,		/* a child, a page fault or the disk, other calls, unexplained */
	WAIT_CLASSES,
};

/* The column heading of @c ("on-CPU", "GIL", ...). */
const char *wait_class__name(enum wait_class c);
/* The class of stack @st: by its wait frame, the innermost AGG_WAIT, if any. */
enum wait_class wait_class__of(const struct profile *p, const struct agg_stack *st);

#endif
