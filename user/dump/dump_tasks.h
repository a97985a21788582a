/* SPDX-License-Identifier: GPL-2.0-only */
/* `pybpfprof dump --async`: every asyncio task of a live process, as a tree. */
#ifndef PBP_DUMP_TASKS_H
#define PBP_DUMP_TASKS_H

#include <stdio.h>

#include "decode/decoder.h"
#include "mem/mem.h"
#include "cpython/py_interp.h"
#include "cpython/py_threads.h"
#include "base/strtab.h"

struct dump_tasks_in {
	struct mem_source *mem;
	const struct py_interp *interp;
	struct decoder *dec;
	struct strtab *strs;
	const struct py_thread *threads;	/* the interpreter's Python threads */
	unsigned int nthreads;
	/* Each thread's event-loop frame, 0 where it runs none (asyncio_loop.h): 3.11-3.13
	 * publish no list of a thread's tasks, and are read from there. */
	const uint64_t *loop_frames;
};

/* Reads the tasks and writes their tree to @f; returns the process exit status
 * (exitcodes.h), having said why on stderr if it is not EXIT_OK. */
int dump_tasks__run(const struct dump_tasks_in *in, FILE *f);

#endif
