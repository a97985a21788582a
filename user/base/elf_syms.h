/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbol look-up in ELF files through libelf: .symtab when present, else .dynsym. */
#ifndef PBP_ELF_SYMS_H
#define PBP_ELF_SYMS_H

#include <stdint.h>

struct elf_sym_query {
	const char *name;
	int section;		/* @name is a section's (SHF_ALLOC), not a symbol's */
	uint64_t file_offset;	/* where the symbol's bytes sit in the file */
	uint64_t size;
	int found;
};

/*
 * Resolves each query in @q by name, reading the ELF file open at @fd (left open; see
 * hostile_file.h for opening a file someone else names). A symbol is reported by its
 * file offset (through the PT_LOAD segment holding it) so that callers can place it
 * with /proc/PID/maps, whatever the load address. Returns 0 (check ->found); -ENOEXEC if the file is not
 * a readable 64-bit ELF object; -E2BIG if its headers claim more sections or segments
 * than any interpreter has.
 */
int elf_syms__find(int fd, struct elf_sym_query *q, unsigned int n);

#endif
