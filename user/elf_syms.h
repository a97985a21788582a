/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbol look-up in ELF files through libelf: .symtab when present, else .dynsym. */
#ifndef PBP_ELF_SYMS_H
#define PBP_ELF_SYMS_H

#include <stdint.h>

struct elf_sym_query {
	const char *name;
	uint64_t file_offset;	/* where the symbol's bytes sit in the file */
	uint64_t size;
	int found;
};

/*
 * Resolves each query in @q by name. A symbol is reported by its file offset (through
 * the PT_LOAD segment holding it) so that callers can place it with /proc/PID/maps,
 * whatever the load address. Returns 0 (check ->found), or a negative errno if the
 * file is not a readable ELF object.
 */
int elf__find_symbols(const char *path, struct elf_sym_query *q, unsigned int n);

#endif
