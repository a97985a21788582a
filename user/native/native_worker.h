/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The parsing worker: the objects that targets map (and so control: a file can be
 * crafted to fault, loop or blow up a parser, and elfutils has a long record of such
 * bugs) are parsed by a separate process that runs as nobody, with no capabilities,
 * no_new_privs, a seccomp allow-list and limits on memory, CPU and descriptors
 * (native_worker_serve.c). It keeps each target's maps and libdwfl unwinder, unwinds
 * the stack copies BPF takes and names the frames; the profiler keeps its Python side,
 * merges, demangles (native_demangle.h) and writes.
 *
 * The worker opens nothing itself: it asks, and the profiler checks each ask against
 * its own read of the target's maps (a mapped file by address, device, inode and
 * path; a debug-file candidate under /usr/lib/debug or beside a mapped object, in the
 * target's root), opens the file as hostile_file.c says and passes the descriptor.
 *
 * A request that takes longer than NATIVE_WORKER_DEADLINE_MS, or that the worker dies
 * in, costs the file it was parsing (the worker writes which, on a page the profiler
 * reads): the worker is killed, the file (device, inode) quarantined for the rest of
 * the run (never handed to the worker again: its frames are in no object,
 * "[unknown]") with one warning naming it, and the next request starts a new worker,
 * which learns the targets again as requests name them.
 */
#ifndef PBP_NATIVE_WORKER_H
#define PBP_NATIVE_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "native/native_fp.h"
#include "native/native_fpcheck.h"
#include "native/native_maps.h"
#include "native/native_sym.h"
#include "native/native_unwind.h"

/* A walk and its names take microseconds to milliseconds; the first of a process
 * loads its objects' tables (tens of ms, DWARF lines of a large debug file a few
 * hundred); a busy host stretches that many times. */
#define NATIVE_WORKER_DEADLINE_MS 5000
/* Files quarantined at most; past it a file that fails again costs another restart. */
#define NATIVE_WORKER_QUARANTINE_MAX 1024
/* Failures in a row with no answer between them, after which no worker is started
 * again in this run (a worker that cannot confine itself, a host without uid 65534). */
#define NATIVE_WORKER_FAILURES_MAX 8
/* Workers started in a run, at most: each failure that quarantines a file costs one. */
#define NATIVE_WORKER_STARTS_MAX 64

struct native_worker;
/* One target process, as the worker knows it. */
struct native_worker_proc;

/* A walked frame's names; strings valid until the next call. */
struct native_worker_name {
	struct native_symbol sym; /* sym.function as the object has it: mangled */
	int known;		  /* in a known object */
	const char *path;	  /* the mapping's path as the maps give it; NULL: none */
	uint8_t build_id[NATIVE_BUILD_ID_MAX];
	uint8_t build_id_len;
};

struct native_worker_stats {
	uint64_t requests;    /* answered */
	uint64_t starts;      /* workers started */
	uint64_t timeouts;    /* requests past the deadline (worker killed) */
	uint64_t deaths;      /* workers that died in a request */
	uint64_t quarantined; /* files quarantined */
	uint64_t refused;     /* asks for a quarantined file, or not the target's */
	uint64_t ring_walks;  /* walks of a stack the worker read in the ring itself */
};

/* Starts the worker now, before the caller loads BPF or opens targets. 0, or a
 * negative errno (no worker could be started). */
int native_worker__new(struct native_worker **out);
/* Stops the worker; its processes' handles stay valid, and fail. */
void native_worker__free(struct native_worker *w);

int native_worker__proc(struct native_worker *w, pid_t pid, struct native_worker_proc **out);
/* A core's process, whose maps @maps (native_core__maps(); taken, even on failure) are
 * all there is: every file the worker asks for is the host's, checked against them. */
int native_worker__core_proc(struct native_worker *w, struct native_maps *maps,
			    struct native_worker_proc **out);
void native_worker__proc_free(struct native_worker_proc *p);

/*
 * native_proc__walk_fp() of @s (with BPF's frame records @c, or NULL) in the worker,
 * and each frame's names into @names[0..out->n). A stack copy too large for a message
 * (up to NATIVE_WORKER_STACK_MAX, dump's) goes in a sealed memfd. 0, or a negative
 * errno: -ETIMEDOUT or -ECHILD when the worker failed (a file quarantined), -EPROTO
 * when its answer made no sense, -E2BIG for a larger copy, or the walk's own.
 */
int native_worker__walk(struct native_worker_proc *p, const struct native_snapshot *s,
			const struct native_fp_chain *c, unsigned int max_frames,
			uint64_t now_ns, struct native_stack *out,
			struct native_worker_name *names);
/*
 * Lets the worker read stack copies where BPF wrote them, rather than be sent a copy:
 * the samples ring, a BPF ring buffer map open at @fd (duplicated here) of @bytes of
 * data, which this process maps at @data (twice over). A walk whose stack lies there
 * sends its offset; the worker maps the ring read-only. The record must stay in the
 * ring until the walk returns, as it does while the sampler's callback runs. The ring
 * given already is kept (nothing is done). 0 or a negative errno.
 */
int native_worker__ring(struct native_worker *w, int fd, uint32_t bytes, const uint8_t *data);

/* native_fpcheck__file() of the object @p maps from @path (native_proc__open_object()). */
int native_worker__fpcheck(struct native_worker_proc *p, const char *path,
			   struct native_fpcheck *out);
/* native_proc__refresh() in the worker. */
int native_worker__refresh(struct native_worker_proc *p, uint64_t now_ns);

void native_worker__stats(const struct native_worker *w, struct native_worker_stats *st);

#endif
