/* SPDX-License-Identifier: GPL-2.0-only */
/* A thread's registers as ptrace and cores give them, in the DWARF order the unwinder
 * takes (native_unwind.h). */
#ifndef PBP_NATIVE_REGS_H
#define PBP_NATIVE_REGS_H

#include <stdint.h>
#include <sys/user.h>

#include "native/native_unwind.h"

/* @r into @out; returns the mask of the registers set (all of them). */
uint32_t native_regs__from_user(const struct user_regs_struct *r, uint64_t out[NATIVE_NREGS]);

#endif
