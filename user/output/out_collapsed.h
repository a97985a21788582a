/* SPDX-License-Identifier: GPL-2.0-only */
/* The collapsed-stack writer (flamegraph.pl / speedscope / inferno input). */
#ifndef PBP_OUT_COLLAPSED_H
#define PBP_OUT_COLLAPSED_H

#include <stdio.h>

#include "profile/profile.h"

/*
 * One line per distinct stack: "frame;frame;...;frame COUNT", root first, most samples
 * first. Threads are merged unless the stacks carry thread frames.
 */
int out_collapsed__write(FILE *f, const struct profile *p);

#endif
