/* SPDX-License-Identifier: GPL-2.0-only */
/* Names of the reasons a stack is incomplete: one table for every place that says. */
#ifndef PBP_DECODE_GAP_H
#define PBP_DECODE_GAP_H

#include "decode/decoder.h"

/* A short key for machines (stats JSON): "torn_live_read". */
const char *decode_gap__key(enum decode_gap g);
/* A phrase for people (dump): "the stack kept changing while it was read". */
const char *decode_gap__text(enum decode_gap g);

#endif
