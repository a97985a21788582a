/* SPDX-License-Identifier: GPL-2.0-only */
/* The speedscope writer (https://www.speedscope.app/file-format-schema.json). */
#ifndef PBP_OUT_SPEEDSCOPE_H
#define PBP_OUT_SPEEDSCOPE_H

#include <stdio.h>

#include "profile/profile.h"

/*
 * One "sampled" profile per thread, samples in time order, each weighing the CPU time
 * it stands for (period_ns) in nanoseconds, with empty samples for the time a thread
 * was not sampled, so that speedscope's time-order view puts every sample where it
 * happened. Without a timeline, each distinct stack is one sample of its total weight.
 */
int out_speedscope__write(FILE *f, const struct profile *p);

#endif
