/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Finding a process's CPython, live or in a core: which mapped file holds _PyRuntime,
 * where it is loaded, the interpreter version and the offsets that go with it.
 */
#ifndef PBP_PY_INTERP_H
#define PBP_PY_INTERP_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "mem/mem.h"
#include "cpython/py_offsets.h"

struct py_interp {
	pid_t pid;
	char path[PATH_MAX];	/* the file holding _PyRuntime, as the target sees it */
	uint64_t runtime;	/* address of _PyRuntime */
	uint64_t code_type;	/* address of PyCode_Type, 0 if not found */
	uint32_t version_hex;	/* 0 if no version could be read; for one older than
				 * 3.11, only major and minor (from its file's name) */
	int unopened;		/* on -EACCES/-EPERM: @path is a file that could not be
				 * opened (not the process's memory that could not be read) */
	struct py_offsets off;
};

/*
 * Fills @out for @pid, reading the target through @mem. Returns 0; -ESRCH if the
 * process is gone; -ENOENT if no mapped file exports _PyRuntime, nor Py_GetVersion
 * (not CPython); -ENOTSUP if the version is not supported (out->version_hex says
 * which; 0 if older than 3.11 and its files' names do not say; out->path names the
 * file); -EACCES/-EPERM if the target's memory or files cannot be read (a file:
 * out->unopened is set and out->path names it as the target sees it).
 */
int py_interp__find(pid_t pid, struct mem_source *mem, struct py_interp *out);

struct mem_core;

/*
 * The same from a core file, reading through the core's memory and the files it maps
 * (resolved as mem_core__file_path() says). out->pid is the core's process. Returns 0;
 * -ENOENT if no mapped file exports _PyRuntime: then @missing (if given) is "" when
 * every candidate file was read (the core is not of a CPython process), else the file
 * that was not found; -ESTALE if a candidate file differs from the one the process
 * mapped (@missing names it); -ENOTSUP as above; -EIO if the core lacks the runtime's
 * memory; -EACCES/-EPERM if a file cannot be read.
 */
int py_interp__find_core(struct mem_core *core, struct py_interp *out, char *missing,
		      size_t missing_len);

/*
 * Where the allocated section @section of the interpreter's file, or of a file mapped by
 * live process in->pid whose name starts with @prefix (an extension module), is loaded:
 * 0 with @addr and @size; -ENOENT if no such file has it; -ESRCH if the process is gone.
 */
int py_interp__find_section(const struct py_interp *in, const char *prefix, const char *section,
			    uint64_t *addr, uint64_t *size);

/* "3.13.1", "3.15.0a7", ... */
void py_interp__version_str(uint32_t hex, char *buf, size_t len);

/* The versions this build reads, for error messages. */
#define PBP_SUPPORTED_VERSIONS "3.11, 3.12, 3.13, 3.14, 3.15"

#endif
