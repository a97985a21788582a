/* SPDX-License-Identifier: GPL-2.0-only */
/* The collapsed-stack writer (flamegraph.pl / speedscope / inferno input). */
#ifndef PBP_OUT_COLLAPSED_H
#define PBP_OUT_COLLAPSED_H

#include <stdio.h>

#include "aggregate.h"
#include "strtab.h"

/* One line per stack: "frame;frame;...;frame COUNT", root first, most samples first. */
int out_collapsed__write(FILE *f, const struct aggregate *a, const struct strtab *strs);

#endif
