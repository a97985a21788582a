// SPDX-License-Identifier: GPL-2.0-only
/*
 * Whether an x86-64 ELF object was built with frame pointers, from its own code: --native-
 * unwind auto walks frame pointers in BPF only for an interpreter built that way (CPython
 * 3.15 as Debian builds it: -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer, PEP
 * 831), and copies the stack for the others.
 *
 * Why the code and not the build flags: the flags live in _sysconfigdata, a Python file
 * beside the interpreter that a container may not ship or may have changed, while a
 * function GCC compiles with frame pointers opens with `push %rbp; mov %rsp, %rbp` (55
 * 48 89 e5, after an `endbr64` with CET) unless shrink-wrapping moved that past a fast
 * path that needs no frame (about half of them on Debian's 3.15). Without, almost none
 * does (a function with alloca or a VLA: 0-1.6 %). The exported functions are sampled:
 * a stripped interpreter keeps its dynamic symbols.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "native/native_fpcheck.h"

static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
static const unsigned char push_mov[4] = { 0x55, 0x48, 0x89, 0xe5 };

/* The file offset of vaddr @v through the executable PT_LOAD holding it; 0: none. */
static uint64_t file_offset(Elf *elf, size_t phnum, uint64_t v)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (v >= ph.p_vaddr && v - ph.p_vaddr + 8 <= ph.p_filesz)
			return ph.p_offset + (v - ph.p_vaddr);
	}
	return 0;
}

/* Counts the functions of symbol table @scn that open with a frame-pointer prologue. */
static void count_prologues(int fd, Elf *elf, size_t phnum, Elf_Scn *scn, const GElf_Shdr *sh,
			    struct native_fpcheck *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n && out->functions < NATIVE_FPCHECK_FUNCTIONS; i++) {
		unsigned char code[8];
		const unsigned char *p = code;
		GElf_Sym sym;
		uint64_t off;

		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx == SHN_UNDEF || sym.st_size < 16)
			continue;
		off = file_offset(elf, phnum, sym.st_value);
		if (!off || pread(fd, code, sizeof(code), (off_t)off) != (ssize_t)sizeof(code))
			continue;
		if (!memcmp(p, endbr64, sizeof(endbr64)))
			p += sizeof(endbr64);
		out->functions++;
		out->framed += !memcmp(p, push_mov, sizeof(push_mov));
	}
}

int native_fpcheck__file(int fd, struct native_fpcheck *out)
{
	Elf_Scn *scn = NULL, *dynsym = NULL, *symtab = NULL;
	GElf_Shdr dsh, ssh, sh;
	GElf_Ehdr eh;
	size_t phnum;
	Elf *elf;
	int err = -ENOEXEC;

	*out = (struct native_fpcheck){ 0 };
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_machine != EM_X86_64 || elf_getphdrnum(elf, &phnum) || phnum > 4096)
		goto cleanup;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM && !dynsym) {
			dynsym = scn;
			dsh = sh;
		} else if (sh.sh_type == SHT_SYMTAB && !symtab) {
			symtab = scn;
			ssh = sh;
		}
	}
	/* The dynamic symbols first: what a stripped object keeps. */
	if (dynsym)
		count_prologues(fd, elf, phnum, dynsym, &dsh, out);
	if (symtab && out->functions < NATIVE_FPCHECK_FUNCTIONS)
		count_prologues(fd, elf, phnum, symtab, &ssh, out);
	out->frame_pointers = out->functions >= NATIVE_FPCHECK_MIN &&
		out->framed * 100 >= out->functions * NATIVE_FPCHECK_PERCENT;
	err = 0;
cleanup:
	if (elf)
		elf_end(elf);
	return err;
}
