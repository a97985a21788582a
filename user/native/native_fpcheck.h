/* SPDX-License-Identifier: GPL-2.0-only */
/* Whether an x86-64 ELF object was built with frame pointers (see native_fpcheck.c). */
#ifndef PBP_NATIVE_FPCHECK_H
#define PBP_NATIVE_FPCHECK_H

#include <stdint.h>

/* Functions sampled at most; fewer than the minimum tell nothing. */
#define NATIVE_FPCHECK_FUNCTIONS 512
#define NATIVE_FPCHECK_MIN 32
/* Share of them that must open with push %rbp; mov %rsp, %rbp: measured 46 % on
 * Debian's 3.15 (shrink-wrapping moves the prologue past fast paths that need no
 * frame), 0-1.6 % on its 3.11, 3.13, 3.14 and glibc. */
#define NATIVE_FPCHECK_PERCENT 20

struct native_fpcheck {
	uint32_t functions; /* defined functions whose first bytes were read */
	uint32_t framed;    /* ... that open with a frame-pointer prologue */
	int frame_pointers; /* the verdict */
};

/* Looks at the ELF object open at @fd (left open): 0 with @out, or -ENOEXEC if it is
 * not a readable x86-64 ELF object. */
int native_fpcheck__file(int fd, struct native_fpcheck *out);

#endif
