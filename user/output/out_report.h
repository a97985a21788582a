/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The report: a profile as a table for the terminal, one row per function (or line,
 * file, thread, task) with its self and total share, hottest first. In wall and
 * off-CPU modes the counts are time, and each row's total is split into time on a
 * CPU and time in each class of wait (wait_class.h).
 */
#ifndef PBP_OUT_REPORT_H
#define PBP_OUT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "profile/profile.h"

enum report_by {
	REPORT_BY_FUNCTION,	/* a Python function (name, file), a C function (name, object) */
	REPORT_BY_LINE,		/* one line of a function */
	REPORT_BY_FILE,		/* a source file, or a C object */
	REPORT_BY_THREAD,
	REPORT_BY_TASK,		/* an asyncio task by name (--async) */
};

enum report_sort {
	REPORT_SORT_SELF,
	REPORT_SORT_TOTAL,
};

struct report_opts {
	enum report_by by;
	enum report_sort sort;
	size_t limit;		/* rows shown; 0: all */
};

/* 0 with *@by, or -EINVAL: "function", "line", "file", "thread", "task". */
int out_report__parse_by(const char *s, enum report_by *by);
/* 0 with *@sort, or -EINVAL: "self", "total". */
int out_report__parse_sort(const char *s, enum report_sort *sort);

/* Writes the report of @p to @f: 0, -ENOMEM or -EIO. */
int out_report__write(FILE *f, const struct profile *p, const struct report_opts *o);

#endif
