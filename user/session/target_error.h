/* SPDX-License-Identifier: GPL-2.0-only */
/* The one-line reason a running process cannot be profiled, and its exit status. */
#ifndef PBP_TARGET_ERROR_H
#define PBP_TARGET_ERROR_H

#include <sys/types.h>

#include "cpython/py_interp.h"

/*
 * Reports @err from py_interp__find() for @pid and returns the exit status for it.
 * @bpf_missing names the capabilities BPF lacks, said beside a refusal to read memory
 * (neither way of sampling is then allowed); NULL where BPF is not involved.
 */
int target_error__report(pid_t pid, int err, const struct py_interp *in,
			 const char *bpf_missing);

#endif
