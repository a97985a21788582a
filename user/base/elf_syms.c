// SPDX-License-Identifier: GPL-2.0-only
/*
 * ELF symbol look-up. Distribution interpreters are stripped but keep their dynamic
 * symbols (_PyRuntime is exported), so .dynsym is searched when .symtab is absent.
 *
 * The file is whatever a target mapped, so its owner may change it while we read:
 * libelf reads it with pread (ELF_C_READ), never through a mapping that a truncation
 * would turn into SIGBUS, and nothing it is asked to read is larger than the limits
 * below, which no CPython build comes near, so that a file's headers cannot make us
 * allocate what its size claims.
 */
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "base/elf_syms.h"

#define ELF_MAX_SECTIONS 4096
#define ELF_MAX_SEGMENTS 1024
#define ELF_MAX_SECTION_BYTES (64u << 20)	/* a symbol table or its strings */

/* The section and segment counts, checked before libelf allocates a table for each. */
static int check_header(int fd)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	uint64_t nsec;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOEXEC;
	if (eh.e_shentsize && eh.e_shentsize != sizeof(Elf64_Shdr))
		return -ENOEXEC;
	nsec = eh.e_shnum;
	/* Extended numbering: the count is in section 0's sh_size. */
	if (!nsec && eh.e_shoff) {
		if (pread(fd, &sh0, sizeof(sh0), (off_t)eh.e_shoff) != (ssize_t)sizeof(sh0))
			return -ENOEXEC;
		nsec = sh0.sh_size;
	}
	if (nsec > ELF_MAX_SECTIONS || eh.e_phnum > ELF_MAX_SEGMENTS)
		return -E2BIG;
	return 0;
}

static int vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *off)
{
	size_t nphdr;

	if (elf_getphdrnum(elf, &nphdr))
		return -EINVAL;
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static void scan_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct elf_sym_query *q,
			unsigned int n)
{
	Elf_Scn *strscn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr strsh;
	Elf_Data *data;
	size_t count;

	if (!sh->sh_entsize || sh->sh_size > ELF_MAX_SECTION_BYTES || !strscn ||
	    !gelf_getshdr(strscn, &strsh) || strsh.sh_size > ELF_MAX_SECTION_BYTES)
		return;
	data = elf_getdata(scn, NULL);
	if (!data)
		return;
	count = data->d_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name)
			continue;
		for (unsigned int k = 0; k < n; k++) {
			if (q[k].section || q[k].found || strcmp(name, q[k].name))
				continue;
			if (vaddr_to_offset(elf, sym.st_value, &q[k].file_offset))
				continue;
			q[k].size = sym.st_size;
			q[k].found = 1;
		}
	}
}

/* Queries for allocated sections: a section is placed like a symbol, by the segment
 * that loads its address. */
static void scan_sections(Elf *elf, struct elf_sym_query *q, unsigned int n)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_addr)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		for (unsigned int k = 0; k < n; k++) {
			if (!q[k].section || q[k].found || strcmp(name, q[k].name))
				continue;
			if (vaddr_to_offset(elf, sh.sh_addr, &q[k].file_offset))
				continue;
			q[k].size = sh.sh_size;
			q[k].found = 1;
		}
	}
}

int elf_syms__find(int fd, struct elf_sym_query *q, unsigned int n)
{
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	err = check_header(fd);
	if (err)
		return err;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	for (unsigned int k = 0; k < n; k++)
		q[k].found = 0;
	scan_sections(elf, q, n);
	/* .symtab first: it is the superset when a binary is not stripped. */
	for (int pass = 0; pass < 2; pass++) {
		Elf64_Word want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;

		scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == want)
				scan_symtab(elf, scn, &sh, q, n);
		}
	}
out:
	if (elf)
		elf_end(elf);
	return err;
}
