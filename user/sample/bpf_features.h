/* SPDX-License-Identifier: GPL-2.0-only */
/* Whether the running kernel has every BPF feature the sampling program uses. */
#ifndef PBP_BPF_FEATURES_H
#define PBP_BPF_FEATURES_H

#include <stddef.h>

/* Writes why this kernel cannot run the sampling program ("the kernel lacks the
 * bpf_loop helper (Linux 5.17+); this is Linux 5.15.0") into @buf and returns it, or
 * returns NULL when every feature is there (or could not be probed: the load then
 * says what went wrong). Probing loads tiny programs, so it needs the BPF
 * capabilities already checked. When bpf() itself is refused in spite of them (a
 * seccomp filter), the text starts "missing permission": privileges, not the kernel. */
const char *bpf_features__missing(char *buf, size_t len);

#endif
