/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target for core files (mem_core, and interpreter discovery over one): a
 * core is a file anyone can hand us, so any byte string must give an error or a
 * readable core, never an overread, a hang or undefined behaviour. Input byte 0
 * chooses the form: even, the rest is the whole file; odd, the rest becomes the notes
 * and memory of a well-formed ELF core header built here, so that the fuzzer spends
 * its time in the note parser instead of rediscovering ELF headers. Mapped files are
 * looked up under a root that does not exist: the fuzzer never reads host files.
 *
 * Build: make fuzz (clang -fsanitize=fuzzer,address,undefined).
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpython/py_interp.h"
#include "mem/mem_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_map(const struct proc_map *m, void *arg)
{
	(*(unsigned int *)arg)++;
	return m->end < m->start;	/* never: parsed maps are checked */
}

/* ELF header, a note segment with the input's first half, a loaded segment with its
 * second half and a segment whose bytes the "dumper" left out. */
static size_t wrap(const uint8_t *in, size_t n, uint8_t **out)
{
	size_t half = n / 2, hdr = sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr);
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_CORE,
		.e_machine = EM_X86_64,
		.e_version = EV_CURRENT,
		.e_phoff = sizeof(Elf64_Ehdr),
		.e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr),
		.e_phnum = 3,
	};
	Elf64_Phdr ph[3] = {
		{ .p_type = PT_NOTE, .p_offset = hdr, .p_filesz = half, .p_align = 4 },
		{ .p_type = PT_LOAD, .p_offset = hdr + half, .p_vaddr = 0x400000,
		  .p_filesz = n - half, .p_memsz = n - half + 0x1000 },
		{ .p_type = PT_LOAD, .p_offset = hdr + n, .p_vaddr = 0x800000, .p_memsz = 0x1000 },
	};
	uint8_t *buf = malloc(hdr + n);

	if (!buf)
		return 0;
	memcpy(buf, &eh, sizeof(eh));
	memcpy(buf + sizeof(eh), ph, sizeof(ph));
	memcpy(buf + hdr, in, n);
	*out = buf;
	return hdr + n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_core_opts opts = { .sysroot = "/nonexistent-pybpfprof-fuzz-root" };
	uint8_t *file = NULL, buf[64];
	struct mem_core *core = NULL;
	struct py_interp pi;
	char path[64], missing[256];
	unsigned int nmaps = 0;
	const pid_t *tids;
	size_t len;
	int fd;

	if (!size)
		return 0;
	fd = memfd_create("core", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (data[0] & 1) {
		len = wrap(data + 1, size - 1, &file);
		if (!len || write(fd, file, len) != (ssize_t)len)
			goto out;
	} else if (size > 1 && write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (mem_core__open(path, &opts, &core))
		goto out;
	if (!mem_core__threads(core, &tids))
		abort();	/* a core without threads must not open */
	mem_core__maps(core, count_map, &nmaps);
	(void)mem_core__exe(core);
	for (uint64_t a = 0x3ff000; a < 0x802000; a += 0x7f1)
		mem__read(mem_core__mem(core), a, buf, sizeof(buf));
	py_interp__find_core(core, &pi, missing, sizeof(missing));
out:
	mem_core__close(core);
	free(file);
	close(fd);
	return 0;
}
