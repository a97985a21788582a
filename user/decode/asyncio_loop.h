/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where asyncio's event loop runs on a decoded stack: the frame of asyncio's
 * BaseEventLoop._run_once, which runs every step of every task and every callback.
 * On 3.11-3.13 it is the way in to a thread's tasks (py_asyncio.h, PY_ASYNCIO_MODULE):
 * its globals lead to asyncio's sets of tasks, its `self` is the loop they name.
 */
#ifndef PBP_ASYNCIO_LOOP_H
#define PBP_ASYNCIO_LOOP_H

#include <stdint.h>

#include "decode/decoder.h"
#include "base/strtab.h"

/* The index in @st->frames (innermost first) of the event loop's frame, whose names
 * are in @strs; -1 if @st has none. */
int32_t asyncio_loop__frame(const struct strtab *strs, const struct stack *st);

#endif
