/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A decoded Python frame as the session's options show it (its line, the function's
 * first line, or none). Every file that builds a stack for the aggregate names its
 * Python frames here, so that --nolineno and --function-lines read the same in a
 * thread's stack, a task's chain and a native walk.
 */
#ifndef PBP_SESSION_FRAME_H
#define PBP_SESSION_FRAME_H

#include "decode/decoder.h"
#include "profile/aggregate.h"
#include "session/session.h"

struct agg_frame session_frame__python(const struct session_opts *o,
				       const struct decoded_frame *f);

#endif
