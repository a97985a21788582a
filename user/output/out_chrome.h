/* SPDX-License-Identifier: GPL-2.0-only */
/* The Chrome trace-event writer (chrome://tracing, Perfetto UI, speedscope). */
#ifndef PBP_OUT_CHROME_H
#define PBP_OUT_CHROME_H

#include <stdio.h>

#include "profile/profile.h"

/*
 * {"traceEvents": [...]}: a track per thread (process_name and thread_name metadata)
 * and one complete ("X") event per frame for each run of consecutive samples that
 * share it and the frames above it. A sample lasts until the thread's next sample, at
 * most one period; timestamps are microseconds since the profile's start.
 */
int out_chrome__write(FILE *f, const struct profile *p);

#endif
