/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The worker's answer to a walk (native_worker_proto.h: struct nw_walk, then each
 * frame's struct nw_frame and strings), read as hostile as the files the worker parsed:
 * every count, length and end is checked, and the strings are copied out.
 */
#ifndef PBP_NATIVE_WORKER_ANSWER_H
#define PBP_NATIVE_WORKER_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "native/native_worker.h"

/* Where an answer's strings go, NUL-terminated: grown as needed, freed by the caller. */
struct native_worker_arena {
	char *strs;
	size_t cap;
};

/*
 * The walk of @len bytes at @ans, of at most @max_frames frames, into @out and
 * @names[0 .. out->n) (room for @max_frames), whose strings point into @arena until
 * the next call. 0, -EPROTO for an answer that breaks a rule (@out is then empty), or
 * -ENOMEM.
 */
int native_worker_answer__walk(const uint8_t *ans, size_t len, unsigned int max_frames,
			       struct native_worker_arena *arena, struct native_stack *out,
			       struct native_worker_name *names);

#endif
