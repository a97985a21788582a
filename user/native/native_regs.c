// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>

#include "native/native_regs.h"

uint32_t native_regs__from_user(const struct user_regs_struct *r, uint64_t out[NATIVE_NREGS])
{
	const uint64_t v[NATIVE_NREGS] = {
		[NATIVE_REG_RAX] = r->rax, [NATIVE_REG_RDX] = r->rdx, [NATIVE_REG_RCX] = r->rcx,
		[NATIVE_REG_RBX] = r->rbx, [NATIVE_REG_RSI] = r->rsi, [NATIVE_REG_RDI] = r->rdi,
		[NATIVE_REG_RBP] = r->rbp, [NATIVE_REG_RSP] = r->rsp, [NATIVE_REG_R8] = r->r8,
		[NATIVE_REG_R9] = r->r9, [NATIVE_REG_R10] = r->r10, [NATIVE_REG_R11] = r->r11,
		[NATIVE_REG_R12] = r->r12, [NATIVE_REG_R13] = r->r13, [NATIVE_REG_R14] = r->r14,
		[NATIVE_REG_R15] = r->r15, [NATIVE_REG_RIP] = r->rip,
	};

	memcpy(out, v, sizeof(v));
	return (1u << NATIVE_NREGS) - 1;
}
