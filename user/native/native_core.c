// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "base/hash.h"
#include "base/hostile_file.h"
#include "native/native_core.h"

struct gather {
	struct mem_core *core;
	struct native_maps *m;
	char host[PATH_MAX];
};

/*
 * Whether the file open at @fd maps code at file offset @off: gcore writes no segment
 * for a file's text, so the core's own flags cannot say; the file's program headers
 * can.
 */
static int file_code_at(int fd, uint64_t off)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t n = 0;
	int code = 0;

	if (!elf)
		return 0;
	if (elf_kind(elf) == ELF_K_ELF && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n && !code; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && off >= (ph.p_offset & ~4095ull) &&
			    off < ph.p_offset + ph.p_filesz)
				code = 1;
		}
	}
	elf_end(elf);
	return code;
}

static int add_map(const struct proc_map *pm, void *arg)
{
	struct gather *g = arg;
	struct native_map e = {
		.start = pm->start,
		.end = pm->end,
		.offset = pm->offset,
	};
	const struct native_map *prev = g->m->n ? &g->m->maps[g->m->n - 1] : NULL;
	int err, fd, n;

	err = mem_core__file_path(g->core, pm->path, g->host, sizeof(g->host));
	/* A core names no inode: the file's identity for the unwinder (which tells the
	 * mappings of one file by it) is its name. */
	e.ino = hash_bytes(pm->path, strlen(pm->path)) | 1;
	if (err) {
		/* Kept, if the core says it was code, so that its frames end walks. */
		if (!mem_core__executable(g->core, pm->start, pm->end))
			return 0;
		e.open_err = (int8_t)(err < -127 ? -EIO : err);
		return native_maps__add(g->m, &e, pm->path, strlen(pm->path));
	}
	fd = hostile_file__open(AT_FDCWD, g->host, 0, NULL, NULL);
	if (fd < 0) {
		if (!mem_core__executable(g->core, pm->start, pm->end))
			return 0;
		e.open_err = (int8_t)(fd < -127 ? -EIO : fd);
		return native_maps__add(g->m, &e, g->host, strlen(g->host));
	}
	if (!mem_core__executable(g->core, pm->start, pm->end) && !file_code_at(fd, pm->offset)) {
		close(fd);
		return 0;
	}
	/* Mappings of one file follow each other: its build-id is read once. */
	if (prev && !strcmp(prev->path, g->host)) {
		memcpy(e.build_id, prev->build_id, sizeof(e.build_id));
		e.build_id_len = prev->build_id_len;
	} else {
		n = native_maps__read_build_id(fd, e.build_id, sizeof(e.build_id));
		if (n > 0)
			e.build_id_len = (uint8_t)n;
	}
	close(fd);
	return native_maps__add(g->m, &e, g->host, strlen(g->host));
}

int native_core__maps(struct mem_core *c, struct native_maps **out)
{
	struct gather *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return -ENOMEM;
	g->core = c;
	g->m = calloc(1, sizeof(*g->m));
	if (!g->m) {
		err = -ENOMEM;
		goto cleanup;
	}
	g->m->pid = mem_core__pid(c);
	g->m->from_core = 1;
	err = mem_core__maps(c, add_map, g);
	if (!err && !g->m->n)
		err = -ENOENT;
	if (!err) {
		*out = g->m;
		g->m = NULL;
	}
cleanup:
	native_maps__free(g->m);
	free(g);
	return err;
}
