/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The messages between the profiler and its parsing worker (native_worker.h), over a
 * SOCK_SEQPACKET pair: each a header and its payload. The profiler sends one request
 * at a time; while it is served, the worker may ask for files (NW_ASK_*), each
 * answered by NW_FILE with the descriptor attached (SCM_RIGHTS); it ends with NW_PART
 * messages and one NW_DONE, whose payloads together are the answer. What the worker
 * sends is as hostile as the files it parsed: the profiler checks every field.
 */
#ifndef PBP_NATIVE_WORKER_PROTO_H
#define PBP_NATIVE_WORKER_PROTO_H

#include <stdint.h>

#include "native/native_fpcheck.h"
#include "native/native_maps.h"
#include "native/native_unwind.h"

/* argv[1] the worker is started with: not a command a user types. */
#define NATIVE_WORKER_ARG "__native-worker"
/* Its end of the pair, and the page it writes which file it is parsing on. */
#define NATIVE_WORKER_FD 3
#define NATIVE_WORKER_BOARD_FD 4
/* Its exit status when it cannot confine itself (its stderr is /dev/null). */
#define NATIVE_WORKER_EXIT_UNCONFINED 3
/* Set in the profiler's environment by the tests only: the worker then hangs on,
 * crashes in, or makes a call off its list for, any object holding a section named
 * ".pbp_worker_hang", ".pbp_worker_crash" or ".pbp_worker_socket", and asks for files
 * no target maps on one holding ".pbp_worker_escape": how its limits and the
 * profiler's checks are tested on real files. */
#define NATIVE_WORKER_FAULTS_ENV "PBP_TEST_WORKER_FAULTS"

/* A message's payload at most: a request carries a stack copy (PBP_NATIVE_STACK_MAX)
 * and frame records; an answer comes in parts of this size. */
#define NATIVE_WORKER_MSG_MAX (80u << 10)
/* An answer's parts together, at most. */
#define NATIVE_WORKER_ANSWER_MAX (4u << 20)
/* A stack copy too large for a request (dump's) comes in a sealed memfd, at most this. */
#define NATIVE_WORKER_STACK_MAX (1u << 20)

enum native_worker_type {
	/* profiler -> worker */
	NW_FREE = 1, /* forget the process (no answer) */
	NW_FPCHECK,  /* payload: the object's path; answer: struct native_fpcheck */
	NW_REFRESH,  /* native_proc__refresh(); answer: nothing */
	NW_WALK,     /* struct nw_walk_req, nfp frame records, the stack; answer: nw_walk */
	NW_FILE,     /* the answer to an ask: err, and the descriptor if 0 */
	NW_RING,     /* the samples ring's map (its descriptor attached), payload: its data
		      * bytes (uint32_t); answer: nothing */
	/* worker -> profiler */
	NW_ASK_MAPS,   /* /proc/PID/maps */
	NW_ASK_MAPPED, /* struct nw_ask_mapped and the maps path */
	NW_ASK_DEBUG,  /* a debug-file candidate's path in the target's root */
	NW_ASK_ROOT,   /* the target's root as the profiler sees it: NW_FILE's payload */
	NW_PART,
	NW_DONE,
};

struct nw_header {
	uint32_t type;
	uint32_t seq;	 /* the request's, in everything sent while it is served */
	uint32_t handle; /* the process it is about */
	int32_t err;	 /* NW_FILE, NW_DONE: 0 or a negative errno */
	int32_t pid;	 /* requests: the process, made known to a worker that has not
			  * met the handle (a new worker knows none) */
	uint32_t len;	 /* payload bytes that follow */
	uint64_t now_ns; /* requests: the profiler's monotonic clock */
};

struct nw_ask_mapped {
	uint64_t start, end, offset, dev, ino;
};

struct nw_walk_req {
	uint32_t tid, regs_mask;
	uint64_t regs[NATIVE_NREGS];
	uint32_t max_frames;
	uint32_t nfp, fp_flags; /* frame records (struct pbp_native_fp) after this */
	uint32_t stack_len;	/* stack bytes after them, or in the ring */
	uint32_t fp_walk;	/* BPF walked the frame pointers: the records are its */
	uint32_t from_ring;	/* the stack is not sent: it is at stack_off in the ring's
				 * data (NW_RING), where BPF wrote it */
	uint32_t in_memfd;	/* the stack is not sent: it is in the memfd attached */
	uint32_t pad;
	uint64_t stack_off;
};

/* The answer to NW_WALK: this, then n frames, each followed by its strings. */
struct nw_walk {
	uint32_t n, end, stack_used, guessed_from, fp_first, fp_resumed;
	int32_t fp_dwarf_top;
	uint32_t pad;
};

#define NW_FRAME_KNOWN 1u    /* in a known object (a symbol lookup's 0, not -ENOENT) */
#define NW_FRAME_FUNCTION 2u /* has a function name */
#define NW_FRAME_SOURCE 4u   /* has a source file and lines */
#define NW_FRAME_MAP 8u	     /* in a mapping of the maps: path and build-id */

/* Strings are sent without their NUL, cut to these. */
#define NW_MODULE_MAX 255u
#define NW_FUNCTION_MAX 4095u
#define NW_SOURCE_MAX 1023u
#define NW_PATH_MAX 4095u

struct nw_frame {
	uint64_t pc, lookup, sp;
	uint64_t offset, rel, func_rel;
	int32_t line, func_line;
	uint32_t flags;
	uint16_t module_len, function_len, source_len, path_len;
	uint8_t build_id_len;
	uint8_t build_id[NATIVE_BUILD_ID_MAX];
	uint8_t pad[3];
	/* module, function, source, path follow */
};

/* Where the worker says which file it parses: the mapping's device and inode, 0 when
 * none. */
struct nw_board {
	uint64_t dev, ino;
};

#endif
