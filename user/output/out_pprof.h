/* SPDX-License-Identifier: GPL-2.0-only */
/* The pprof writer: gzip-compressed perftools.profiles.Profile (profile.proto). */
#ifndef PBP_OUT_PPROF_H
#define PBP_OUT_PPROF_H

#include <stdio.h>

#include "profile/profile.h"

/*
 * One Sample per aggregate stack with values [count, count * period_ns] of types
 * samples/count and cpu/nanoseconds, labels pid, thread_id and (where known)
 * thread_name; one Location per distinct frame with one Line, one Function per
 * distinct (name, file). Frames other than Python's are functions with no file.
 */
int out_pprof__write(FILE *f, const struct profile *p);

#endif
