/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Source file and line of a native PC from the DWARF of its object (or of the separate
 * debug file libdwfl found for it), through libdw: never parsed by hand. The line is
 * the one in the function the PC's symbol names: for code inlined into it, where the
 * outermost inlined call sits, so that "function (file.c:LINE)" never names a line of
 * another function (a header's static inline).
 */
#ifndef PBP_NATIVE_LINE_H
#define PBP_NATIVE_LINE_H

#include <elfutils/libdwfl.h>
#include <stdint.h>

struct native_line {
	const char *file; /* as the CU's line table names it (absolute when the CU says
			   * where it was compiled); valid while the module's Dwarf lives */
	int32_t line;	  /* > 0 */
	int32_t func_line; /* where the function around it is declared; 0: unknown */
};

/*
 * The source of @addr (an address in @mod as the process maps it, a lookup address:
 * a return address minus one). 0; -ENOENT when @mod has no DWARF or no line for @addr;
 * -ENOMEM.
 */
int native_line__find(Dwfl_Module *mod, uint64_t addr, struct native_line *out);

#endif
