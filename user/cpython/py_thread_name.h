/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The name Python gives a thread (threading.Thread's name: "MainThread",
 * "ThreadPoolExecutor-0_1"), where the kernel's is "python3" or, on 3.14+, that name
 * cut to 15 bytes. Read from the thread's own Thread object: threading runs every
 * thread it starts under Thread._bootstrap_inner(self), whose frame holds the object
 * in its first local, and the name is the object's _name attribute. Every read is
 * bounded and checked: the thread may end, and its memory be reused, while we read.
 */
#ifndef PBP_PY_THREAD_NAME_H
#define PBP_PY_THREAD_NAME_H

#include <stddef.h>
#include <stdint.h>

#include "mem/mem.h"
#include "cpython/py_offsets.h"

/* The qualified name of the frame whose first local is the thread's Thread object,
 * and the file that must define it. */
#define PY_THREAD_NAME_FRAME "Thread._bootstrap_inner"
#define PY_THREAD_NAME_FILE "threading.py"
/* What threading names the main thread. */
#define PY_THREAD_NAME_MAIN "MainThread"

/* How far from the outermost frame the thread's Thread._bootstrap_inner may be
 * (below it: _bootstrap and, under a profiler or debugger, a few more). */
#define PY_THREAD_NAME_DEPTH 4
/* The longest name kept, in bytes with its NUL. */
#define PY_THREAD_NAME_MAX 128

/*
 * The name of the thread whose frame of PY_THREAD_NAME_FRAME is at @frame, in UTF-8
 * into @out (@cap bytes, NUL-terminated). 0; -ENOENT when the frame no longer runs
 * that code or the object has no such attribute, -EINVAL for memory that does not
 * hold together, -EFAULT when unreadable.
 */
int py_thread_name__of_frame(struct mem_source *m, const struct py_offsets *o, uint64_t frame,
			     char *out, size_t cap);

/* The same from the Thread object at @thread. */
int py_thread_name__of_object(struct mem_source *m, const struct py_offsets *o,
			      uint64_t thread, char *out, size_t cap);

#endif
