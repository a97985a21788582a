/* SPDX-License-Identifier: GPL-2.0-only */
/* asyncio tasks written as a tree of who awaits whom: what `dump --async` prints. */
#ifndef PBP_OUT_TASK_TREE_H
#define PBP_OUT_TASK_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decode/decoder.h"
#include "cpython/py_asyncio.h"
#include "base/strtab.h"

struct tt_task {
	uint32_t tid;			/* the thread it belongs to; 0: none that runs now */
	const struct py_task *task;
	const struct decoded_frame *frames;	/* innermost first */
	uint32_t nframes;
	int incomplete;			/* a frame could not be named */
};

/*
 * Per thread, "Thread TID: N asyncio tasks", then each task that no task awaits, and
 * indented below each task the tasks it awaits: "Task 'NAME' (STATE)" and its
 * coroutine frames at their await points, innermost first, as dump writes frames. A
 * task awaited by several appears under each. The tasks of tid 0 come under
 * "@others: N". Returns 0 or -EIO.
 */
int out_task_tree__write(FILE *f, const struct strtab *strs, const struct tt_task *t, size_t n,
			 const char *others);

#endif
