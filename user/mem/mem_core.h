/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An ELF core file (written by the kernel or by gdb's gcore) as a memory source, plus
 * what the core says about the process it came from: pid, threads, executable and
 * file mappings.
 *
 * Dumpers leave out memory that the mapped files still hold (text, read-only data):
 * reads of such ranges are served from the files named in the core's NT_FILE note,
 * looked up under an optional sysroot, or from an explicit executable override.
 */
#ifndef PBP_MEM_CORE_H
#define PBP_MEM_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "mem/mem.h"
#include "base/proc.h"

struct mem_core;

struct mem_core_opts {
	const char *sysroot;	/* prefix for the paths the core names, or NULL */
	const char *exe;	/* the main executable's file on this host, or NULL */
};

/*
 * Opens the core at @path. Returns 0; -ENOEXEC if it is not an ELF core of this
 * machine's architecture; -EIO if it is truncated; -EINVAL if its notes are malformed
 * or name no thread; -ENOMEM; or the errno of opening it.
 */
int mem_core__open(const char *path, const struct mem_core_opts *opts, struct mem_core **out);
/* Who owns the core file: whose the process was, and whose rights reading it needs. */
void mem_core__owner(const struct mem_core *c, uid_t *uid, gid_t *gid);
void mem_core__close(struct mem_core *c);

/* Reads are all-or-nothing like every mem_source: -EFAULT if any byte is in neither
 * the core nor a readable mapped file. */
struct mem_source *mem_core__mem(struct mem_core *c);

/* The process id (NT_PRPSINFO, else the first thread's). */
pid_t mem_core__pid(const struct mem_core *c);

/* Thread ids, one per NT_PRSTATUS, in the core's order (the dumping thread first). */
unsigned int mem_core__threads(const struct mem_core *c, const pid_t **tids);

/* Thread @tid's user registers as the core saved them. -ESRCH if the core has no such
 * thread, -ENOENT if its note holds none. */
int mem_core__thread_regs(const struct mem_core *c, pid_t tid, struct user_regs_struct *out);

/* 1 if any of [start, end) was mapped executable (a PT_LOAD segment with PF_X): the
 * NT_FILE note gives no permissions. */
int mem_core__executable(const struct mem_core *c, uint64_t start, uint64_t end);

/* The main executable as the core names it (the mapping holding AT_PHDR or AT_ENTRY,
 * else the first mapped file); "" if the core maps no file. */
const char *mem_core__exe(const struct mem_core *c);

/* Calls @fn for each NT_FILE mapping, in address order, until it returns non-zero
 * (which is then returned). m->offset is in bytes. */
int mem_core__maps(const struct mem_core *c, int (*fn)(const struct proc_map *m, void *arg),
		   void *arg);

/*
 * Where the file the core names @path is on this host: the executable override for
 * the executable; else @path under the sysroot (or as is, if it already lies there or
 * no sysroot was given). 0; -ENOENT if that file does not exist (or @path is not a
 * file the core maps); -ESTALE if it differs from the copy of its first page that the
 * core holds. @out names the file looked for, also on failure.
 */
int mem_core__file_path(struct mem_core *c, const char *path, char *out, size_t len);

#endif
