/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One target process's native unwinding (--native): its executable mappings and the
 * unwinder over them. The maps are read when the first sample needs them, and again
 * when a walk meets code in none of them (a library loaded since, JIT code): at once
 * up to NATIVE_PROC_REREAD_BURST times, as a program starting up loads its extensions
 * one import after another and each is met in a sample soon after, then once per
 * NATIVE_PROC_REREAD_NS, so that a process that keeps mapping code cannot make every
 * sample cost a read of /proc.
 */
#ifndef PBP_NATIVE_PROC_H
#define PBP_NATIVE_PROC_H

#include <stdint.h>
#include <sys/types.h>

#include "native/native_maps.h"
#include "native/native_unwind.h"

#define NATIVE_PROC_REREAD_NS 1000000000ull
#define NATIVE_PROC_REREAD_BURST 16

struct native_proc;

struct native_proc_stats {
	uint64_t maps_reads, maps_read_errors;
	uint64_t outside;	/* walks that met a PC in no mapping */
};

/* Files are opened through @files (NULL: directly), build-ids read through @ids (NULL:
 * none); both are kept, not copied. */
int native_proc__new(pid_t pid, const struct native_files *files,
		     struct native_buildid_cache *ids, struct native_proc **out);
void native_proc__free(struct native_proc *p);

/*
 * Unwinds @s (at most @max_frames) into @out, over BPF's frame records @c (native_fp.h)
 * or NULL, reading the maps first if due. 0 (see out->end), or a negative errno when
 * the process's maps cannot be had at all (-EAGAIN: not again so soon after a read
 * that failed).
 */
struct native_fp_chain;
int native_proc__walk_fp(struct native_proc *p, const struct native_snapshot *s,
			 const struct native_fp_chain *c, unsigned int max_frames,
			 uint64_t now_ns, struct native_stack *out);

/*
 * Opens the object mapped from @path (as the target sees it: the end of a maps path),
 * as the process's files are opened: a descriptor, -ENOENT if no executable mapping is
 * of it, or the errno of reading the maps or opening it. Reads the maps now if the
 * process has none yet.
 */
int native_proc__open_object(struct native_proc *p, const char *path);

/*
 * Reads the maps again if walks used them and they are NATIVE_PROC_REREAD_NS old. The
 * session's loop calls it while the process lives: a consumer running behind its
 * samples walks them later, possibly after the process ended and its maps with it,
 * and would then not know the libraries it loaded since. The old maps stay on error.
 */
int native_proc__refresh(struct native_proc *p, uint64_t now_ns);

/* The maps the last walk used (NULL before one), and its unwinder. */
const struct native_maps *native_proc__maps(const struct native_proc *p);
const struct native_unwind *native_proc__unwind(const struct native_proc *p);

/* native_unwind__watch() of its unwinder. */
void native_proc__watch(struct native_proc *p, native_unwind_watch_fn fn, void *arg);

void native_proc__stats(const struct native_proc *p, struct native_proc_stats *st);

#endif
