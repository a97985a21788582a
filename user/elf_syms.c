// SPDX-License-Identifier: GPL-2.0-only
/*
 * ELF symbol look-up. Distribution interpreters are stripped but keep their dynamic
 * symbols (_PyRuntime is exported), so .dynsym is searched when .symtab is absent.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "elf_syms.h"

static int vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *off)
{
	size_t nphdr;

	if (elf_getphdrnum(elf, &nphdr))
		return -EINVAL;
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
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
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count;

	if (!data || !sh->sh_entsize)
		return;
	count = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name)
			continue;
		for (unsigned int k = 0; k < n; k++) {
			if (q[k].found || strcmp(name, q[k].name))
				continue;
			if (vaddr_to_offset(elf, sym.st_value, &q[k].file_offset))
				continue;
			q[k].size = sym.st_size;
			q[k].found = 1;
		}
	}
}

int elf__find_symbols(const char *path, struct elf_sym_query *q, unsigned int n)
{
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;
	int fd, err = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	for (unsigned int k = 0; k < n; k++)
		q[k].found = 0;
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
	close(fd);
	return err;
}
