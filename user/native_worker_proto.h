/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The messages between the profiler and its parsing worker (native_worker.h): one
 * request, with the descriptor of the file to parse attached (SCM_RIGHTS), answered by
 * one answer, over a SOCK_SEQPACKET pair. The worker's answer is as hostile as the
 * file it parsed: the parent checks every field.
 */
#ifndef PBP_NATIVE_WORKER_PROTO_H
#define PBP_NATIVE_WORKER_PROTO_H

#include <stdint.h>

#include "native_fpcheck.h"
#include "native_maps.h"

/* argv[1] the worker is started with: not a command a user types. */
#define NATIVE_WORKER_ARG "__native-worker"
/* The descriptor of its end of the pair in the worker. */
#define NATIVE_WORKER_FD 3
/* Set in the profiler's environment by the tests only: the worker then hangs on, or
 * crashes in, or tries to open a file from, any object holding a section named
 * ".pbp_worker_hang", ".pbp_worker_crash" or ".pbp_worker_open": how its limits are
 * tested on real files. */
#define NATIVE_WORKER_FAULTS_ENV "PBP_TEST_WORKER_FAULTS"

/* The worker's exit status when it cannot confine itself (its stderr is /dev/null). */
#define NATIVE_WORKER_EXIT_UNCONFINED 3

enum native_worker_op {
	NATIVE_WORKER_BUILD_ID = 1, /* native_maps__read_build_id() */
	NATIVE_WORKER_FPCHECK,	    /* native_fpcheck__file() */
};

struct native_worker_req {
	uint32_t op;
	uint32_t seq;
};

struct native_worker_ans {
	uint32_t op, seq;
	int32_t err; /* 0 or a negative errno; for BUILD_ID, the length if >= 0 */
	uint32_t pad;
	union {
		uint8_t build_id[NATIVE_BUILD_ID_MAX];
		struct native_fpcheck fpcheck;
	};
};

#endif
