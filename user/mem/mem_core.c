// SPDX-License-Identifier: GPL-2.0-only
/*
 * Core files as memory. libelf reads the headers and notes once at open; memory reads
 * then pread the core (or a mapped file) directly, so a core of any size costs only
 * its tables in memory.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/hashmap.h"
#include "base/hostile_file.h"
#include "base/log.h"
#include "mem/mem_core.h"
#include "base/vec.h"

#if defined(__x86_64__)
#define CORE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define CORE_MACHINE EM_AARCH64
#else
#define CORE_MACHINE EM_NONE	/* notes and registers not known here: refuse every core */
#endif

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif

/* Files opened at once for reads the core cannot serve; only the interpreter's own
 * files are ever needed, so running out means something else is being read. */
#define CORE_MAX_OPEN 32
#define CORE_MAX_THREADS (1u << 20)
#define CORE_CHECK_BYTES 4096
/* A PT_NOTE segment's bytes: a thread's notes take a few KiB (registers, the extended
 * state), the mapped-files note some per mapping. */
#define CORE_NOTES_MAX (64u << 20)

struct core_seg {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;		/* PF_* */
};

struct core_map {
	uint64_t start, end, offset;
	unsigned int file;
};

struct core_file {
	const char *name;	/* as the core names it */
	char *host;		/* where it is on this host, once resolved */
	int fd;
	int err;		/* resolution result, once resolved */
	int resolved;
};

struct mem_core {
	struct mem_source base;
	int fd;
	uint64_t size;
	uid_t uid;		/* the core file's owner */
	gid_t gid;
	char *sysroot, *sysroot_real, *exe_override;
	struct core_seg *segs;
	unsigned int nsegs;
	struct core_map *maps;
	unsigned int nmaps;
	struct core_file *files;
	unsigned int nfiles, nopen;
	struct hashmap file_names;	/* files by name: a core may name millions */
	char *names;
	pid_t pid;
	pid_t *tids;
	struct user_regs_struct *regs;	/* each thread's, from its NT_PRSTATUS */
	unsigned int ntids;
	size_t cap_tids, cap_regs;
	uint64_t at_phdr, at_entry;
	int exe_file;		/* index into files, -1 if none */
};

static int pread_all(int fd, void *dst, size_t len, uint64_t off)
{
	uint8_t *p = dst;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EFAULT;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct core_seg *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int cmp_map(const void *a, const void *b)
{
	const struct core_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Index of the last segment starting at or below @addr, or -1. */
static long seg_below(const struct mem_core *c, uint64_t addr)
{
	long lo = 0, hi = (long)c->nsegs - 1, found = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (c->segs[mid].vaddr <= addr) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

static const struct core_map *find_map(const struct mem_core *c, uint64_t addr)
{
	long lo = 0, hi = (long)c->nmaps - 1, found = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (c->maps[mid].start <= addr) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	if (found < 0 || addr >= c->maps[found].end)
		return NULL;
	return &c->maps[found];
}

/* Bytes the core itself holds, all within one segment. */
static int core_bytes(struct mem_core *c, uint64_t addr, void *dst, size_t len)
{
	long i = seg_below(c, addr);
	const struct core_seg *s;

	if (i < 0)
		return -EFAULT;
	s = &c->segs[i];
	if (addr - s->vaddr >= s->filesz || len > s->filesz - (addr - s->vaddr))
		return -EFAULT;
	return pread_all(c->fd, dst, len, s->offset + (addr - s->vaddr));
}

static int under(const char *path, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;

	return n && !strncmp(path, dir, n) && path[n] == '/';
}

/* Whether @path has a ".." component: a core's names must not climb out of --sysroot. */
static int climbs(const char *path)
{
	for (const char *p = strstr(path, ".."); p; p = strstr(p + 1, ".."))
		if ((p == path || p[-1] == '/') && (p[2] == '/' || !p[2]))
			return 1;
	return 0;
}

static int candidate_path(const struct mem_core *c, unsigned int idx, char *out, size_t len)
{
	const char *name = c->files[idx].name;
	int w;

	if (!(c->exe_override && (int)idx == c->exe_file) && climbs(name))
		return -EINVAL;

	/* gcore names files as the host sees them, already under the sysroot (with its
	 * symbolic links resolved); the kernel names them as the process saw them. */
	if (c->exe_override && (int)idx == c->exe_file)
		w = snprintf(out, len, "%s", c->exe_override);
	else if (c->sysroot && !under(name, c->sysroot) && !under(name, c->sysroot_real))
		w = snprintf(out, len, "%s%s", c->sysroot, name);
	else
		w = snprintf(out, len, "%s", name);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/*
 * A file on this host may not be the one the process mapped (upgraded package, wrong
 * sysroot or --exe). When the core holds the file's first page (dumpers keep ELF
 * headers), compare it: the header, program headers and build-id note live there.
 */
static int check_file(struct mem_core *c, unsigned int idx, int fd)
{
	uint8_t *mine = NULL, *theirs = NULL;
	const struct core_map *m = NULL;
	size_t len;
	int err = 0;

	for (unsigned int i = 0; i < c->nmaps && !m; i++)
		if (c->maps[i].file == idx && c->maps[i].offset == 0)
			m = &c->maps[i];
	if (!m)
		return 0;
	len = m->end - m->start < CORE_CHECK_BYTES ? m->end - m->start : CORE_CHECK_BYTES;
	mine = malloc(len);
	theirs = malloc(len);
	if (!mine || !theirs) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (core_bytes(c, m->start, mine, len))
		goto cleanup;	/* nothing to compare with */
	if (pread_all(fd, theirs, len, 0) || memcmp(mine, theirs, len)) {
		pr_debug("core: %s differs from the file the process mapped\n",
			 c->files[idx].host);
		err = -ESTALE;
	}
cleanup:
	free(mine);
	free(theirs);
	return err;
}

static int resolve_file(struct mem_core *c, unsigned int idx)
{
	struct core_file *f = &c->files[idx];
	char path[PATH_MAX];
	int fd = -1, err;

	if (f->resolved)
		return f->err;
	f->resolved = 1;
	err = candidate_path(c, idx, path, sizeof(path));
	if (err)
		goto cleanup;
	f->host = strdup(path);
	if (!f->host) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* A core names any path it likes: never block on a FIFO or open a device. A
	 * sysroot's or --exe's symbolic links are the user's own and are followed. */
	fd = hostile_file__open(AT_FDCWD, path, 0, NULL, NULL);
	if (fd < 0) {
		err = fd == -EINVAL ? -ENOENT : fd;
		pr_debug("core: cannot open %s for %s: %s\n", path, f->name,
			 fd == -EINVAL ? "not a regular file" : strerror(-err));
		goto cleanup;
	}
	err = check_file(c, idx, fd);
	if (err)
		goto cleanup;
	if (c->nopen < CORE_MAX_OPEN) {
		f->fd = fd;
		fd = -1;
		c->nopen++;
	}
cleanup:
	if (fd >= 0)
		close(fd);
	f->err = err;
	return err;
}

/* Bytes of a file-backed range the core left out, from the file itself. */
static int file_bytes(struct mem_core *c, const struct core_map *m, uint64_t addr, void *dst,
		      size_t len)
{
	struct core_file *f = &c->files[m->file];

	if (resolve_file(c, m->file) || f->fd < 0)
		return -EFAULT;
	c->base.stats.reads++;
	return pread_all(f->fd, dst, len, m->offset + (addr - m->start));
}

static int core_read(struct mem_source *base, uint64_t addr, void *dst, size_t len)
{
	struct mem_core *c = (struct mem_core *)base;
	uint8_t *p = dst;
	int err = 0;

	if (!len)
		return 0;
	if (!addr || addr + len < addr)
		return -EFAULT;
	while (len && !err) {
		long i = seg_below(c, addr);
		const struct core_seg *s = i >= 0 ? &c->segs[i] : NULL;
		uint64_t limit, n;

		if (s && addr - s->vaddr < s->filesz) {
			n = s->filesz - (addr - s->vaddr);
			n = n < len ? n : len;
			base->stats.reads++;
			err = pread_all(c->fd, p, n, s->offset + (addr - s->vaddr));
		} else {
			const struct core_map *m = find_map(c, addr);

			/* The core's own bytes win wherever it has them. */
			if (s && addr - s->vaddr < s->memsz)
				limit = s->vaddr + s->memsz;
			else
				limit = c->segs && (unsigned long)(i + 1) < c->nsegs ?
					c->segs[i + 1].vaddr : UINT64_MAX;
			if (!m) {
				err = -EFAULT;
				break;
			}
			limit = m->end < limit ? m->end : limit;
			n = limit - addr < len ? limit - addr : len;
			err = file_bytes(c, m, addr, p, n);
		}
		p += n;
		addr += n;
		len -= n;
	}
	if (err) {
		if (!base->stats.failures++)
			pr_debug("core: %#llx not in the core or its files\n", (unsigned long long)addr);
		return -EFAULT;
	}
	base->stats.bytes += p - (uint8_t *)dst;
	return 0;
}

static const struct mem_ops core_ops = { .read = core_read };

static int add_thread(struct mem_core *c, pid_t tid, const struct user_regs_struct *regs)
{
	int err;

	if (c->ntids == CORE_MAX_THREADS)
		return -EINVAL;
	err = vec__reserve((void **)&c->tids, &c->cap_tids, c->ntids + 1, sizeof(*c->tids), 16);
	if (!err)
		err = vec__reserve((void **)&c->regs, &c->cap_regs, c->ntids + 1, sizeof(*c->regs),
				   16);
	if (err)
		return err;
	c->regs[c->ntids] = *regs;
	c->tids[c->ntids++] = tid;
	return 0;
}

static uint64_t file_hash(uint32_t idx, const void *ctx)
{
	const struct mem_core *c = ctx;

	return hash_bytes(c->files[idx].name, strlen(c->files[idx].name));
}

static bool file_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct mem_core *c = ctx;

	return !strcmp(c->files[idx].name, key);
}

/* The index of the file named @name, added if new; -ENOMEM. */
static int file_index(struct mem_core *c, const char *name)
{
	size_t slot;

	if (c->nfiles && !strcmp(c->files[c->nfiles - 1].name, name))
		return (int)c->nfiles - 1;
	if (hashmap__grow(&c->file_names, 64, file_hash, c))
		return -ENOMEM;
	slot = hashmap__probe(&c->file_names, hash_bytes(name, strlen(name)), file_equal, name, c);
	if (hashmap__used(&c->file_names, slot))
		return (int)hashmap__at(&c->file_names, slot);
	c->files[c->nfiles] = (struct core_file){ .name = name, .fd = -1 };
	hashmap__set(&c->file_names, slot, c->nfiles);
	return (int)c->nfiles++;
}

/* NT_FILE: count, page size, count x (start, end, page offset), count paths. */
static int parse_nt_file(struct mem_core *c, const uint8_t *desc, size_t len)
{
	uint64_t count, page;
	const char *s, *end;
	size_t names;
	int err;

	if (c->maps)
		return 0;	/* one per core; ignore repeats */
	if (len < 16)
		return -EINVAL;
	memcpy(&count, desc, 8);
	memcpy(&page, desc + 8, 8);
	if (!page || (page & (page - 1)) || count > (len - 16) / 24)
		return -EINVAL;
	names = len - 16 - count * 24;
	c->names = malloc(names + 1);
	c->maps = calloc(count ? count : 1, sizeof(*c->maps));
	c->files = calloc(count ? count : 1, sizeof(*c->files));
	if (!c->names || !c->maps || !c->files)
		return -ENOMEM;
	memcpy(c->names, desc + 16 + count * 24, names);
	c->names[names] = '\0';
	s = c->names;
	end = c->names + names;
	for (uint64_t i = 0; i < count; i++) {
		struct core_map *m = &c->maps[i];
		uint64_t pgoff;
		size_t n;

		if (s >= end)
			return -EINVAL;
		n = strnlen(s, end - s);
		if (s + n == end)
			return -EINVAL;	/* unterminated */
		memcpy(&m->start, desc + 16 + i * 24, 8);
		memcpy(&m->end, desc + 24 + i * 24, 8);
		memcpy(&pgoff, desc + 32 + i * 24, 8);
		if (m->end <= m->start || pgoff > UINT64_MAX / page)
			return -EINVAL;
		m->offset = pgoff * page;
		err = file_index(c, s);
		if (err < 0)
			return err;
		m->file = (unsigned int)err;
		s += n + 1;
	}
	c->nmaps = (unsigned int)count;	/* below 2^32 / 24: a note's size is 32-bit */
	return 0;
}

static void parse_auxv(struct mem_core *c, const uint8_t *desc, size_t len)
{
	for (size_t off = 0; off + 16 <= len; off += 16) {
		uint64_t type, val;

		memcpy(&type, desc + off, 8);
		memcpy(&val, desc + off + 8, 8);
		if (type == AT_NULL)
			break;
		if (type == AT_PHDR)
			c->at_phdr = val;
		else if (type == AT_ENTRY)
			c->at_entry = val;
	}
}

static int parse_note(struct mem_core *c, const GElf_Nhdr *nh, const char *name,
		      const uint8_t *desc)
{
	int32_t pid;

	if (nh->n_namesz != 5 || memcmp(name, "CORE", 5))
		return 0;
	switch (nh->n_type) {
	case NT_PRSTATUS: {
		struct user_regs_struct regs = { 0 };

		if (nh->n_descsz < offsetof(struct elf_prstatus, pr_pid) + sizeof(pid))
			return -EINVAL;
		memcpy(&pid, desc + offsetof(struct elf_prstatus, pr_pid), sizeof(pid));
		/* pr_reg is the user_regs_struct the kernel saved at the thread's entry. */
		if (nh->n_descsz >= offsetof(struct elf_prstatus, pr_reg) + sizeof(regs))
			memcpy(&regs, desc + offsetof(struct elf_prstatus, pr_reg), sizeof(regs));
		return add_thread(c, pid, &regs);
	}
	case NT_PRPSINFO:
		if (nh->n_descsz < offsetof(struct elf_prpsinfo, pr_pid) + sizeof(pid))
			return -EINVAL;
		memcpy(&pid, desc + offsetof(struct elf_prpsinfo, pr_pid), sizeof(pid));
		c->pid = pid;
		return 0;
	case NT_AUXV:
		parse_auxv(c, desc, nh->n_descsz);
		return 0;
	case NT_FILE:
		return parse_nt_file(c, desc, nh->n_descsz);
	}
	return 0;
}

static int parse_notes(struct mem_core *c, Elf *elf, const GElf_Phdr *ph)
{
	/* libelf reads a chunk into memory of the size the header claims. */
	Elf_Data *data = ph->p_filesz <= CORE_NOTES_MAX
		? elf_getdata_rawchunk(elf, ph->p_offset, ph->p_filesz, ELF_T_NHDR) : NULL;
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;
	int err;

	if (!data)
		return -EIO;
	while (off < data->d_size &&
	       (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		err = parse_note(c, &nh, (const char *)data->d_buf + name_off,
				 (const uint8_t *)data->d_buf + desc_off);
		if (err)
			return err;
	}
	return 0;
}

static int fits(const struct mem_core *c, uint64_t off, uint64_t len)
{
	return off <= c->size && len <= c->size - off;
}

static int read_headers(struct mem_core *c)
{
	unsigned char ident[EI_NIDENT];
	size_t nphdr;
	GElf_Ehdr eh;
	Elf *elf = NULL;
	int err = 0;

	if (pread_all(c->fd, ident, SELFMAG, 0) || memcmp(ident, ELFMAG, SELFMAG))
		return -ENOEXEC;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	/* From here on the file claims to be ELF: what libelf cannot read was cut short. */
	elf = elf_begin(c->fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = -EIO;
		goto cleanup;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_type != ET_CORE || eh.e_machine != CORE_MACHINE) {
		pr_debug("core: ELF class %d, data %d, type %d, machine %d is not a core of "
			 "this machine\n", eh.e_ident[EI_CLASS], eh.e_ident[EI_DATA], eh.e_type,
			 eh.e_machine);
		err = -ENOEXEC;
		goto cleanup;
	}
	if (elf_getphdrnum(elf, &nphdr) || nphdr > INT_MAX) {
		err = -EIO;
		goto cleanup;
	}
	c->segs = calloc(nphdr ? nphdr : 1, sizeof(*c->segs));
	if (!c->segs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			err = -EIO;
			goto cleanup;
		}
		if (ph.p_type != PT_LOAD && ph.p_type != PT_NOTE)
			continue;
		if (!fits(c, ph.p_offset, ph.p_filesz)) {
			pr_debug("core: segment %zu ends at %#llx, past the end of the file\n", i,
				 (unsigned long long)(ph.p_offset + ph.p_filesz));
			err = -EIO;
			goto cleanup;
		}
		if (ph.p_type == PT_NOTE) {
			err = parse_notes(c, elf, &ph);
			if (err)
				goto cleanup;
		} else if (ph.p_memsz) {
			c->segs[c->nsegs++] = (struct core_seg){
				.vaddr = ph.p_vaddr,
				.memsz = ph.p_memsz,
				.offset = ph.p_offset,
				.filesz = ph.p_filesz < ph.p_memsz ? ph.p_filesz : ph.p_memsz,
				.flags = ph.p_flags,
			};
		}
	}
	if (!c->ntids) {
		pr_debug("core: no NT_PRSTATUS note\n");
		err = -EINVAL;
	}
cleanup:
	if (elf)
		elf_end(elf);
	return err;
}

static void find_exe(struct mem_core *c)
{
	const struct core_map *m = NULL;

	if (c->at_phdr)
		m = find_map(c, c->at_phdr);
	if (!m && c->at_entry)
		m = find_map(c, c->at_entry);
	if (!m && c->nmaps)
		m = &c->maps[0];
	c->exe_file = m ? (int)m->file : -1;
}

static int set_string(char **dst, const char *src)
{
	size_t n;

	if (!src || !*src)
		return 0;
	*dst = strdup(src);
	if (!*dst)
		return -ENOMEM;
	n = strlen(*dst);
	while (n > 0 && (*dst)[n - 1] == '/')
		(*dst)[--n] = '\0';
	if (!n) {
		/* A sysroot of "/" is no sysroot at all. */
		free(*dst);
		*dst = NULL;
	}
	return 0;
}

int mem_core__open(const char *path, const struct mem_core_opts *opts, struct mem_core **out)
{
	struct mem_core *c;
	struct stat st;
	int err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base.ops = &core_ops;
	c->exe_file = -1;
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (fstat(c->fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	c->size = st.st_size;
	c->uid = st.st_uid;
	c->gid = st.st_gid;
	err = set_string(&c->sysroot, opts ? opts->sysroot : NULL);
	if (!err && c->sysroot)
		c->sysroot_real = realpath(c->sysroot, NULL);
	if (!err)
		err = set_string(&c->exe_override, opts ? opts->exe : NULL);
	if (!err)
		err = read_headers(c);
	if (err)
		goto cleanup;
	/* An empty array is NULL, which qsort may not be given even with no elements. */
	if (c->nsegs)
		qsort(c->segs, c->nsegs, sizeof(*c->segs), cmp_seg);
	if (c->nmaps)
		qsort(c->maps, c->nmaps, sizeof(*c->maps), cmp_map);
	find_exe(c);
	if (!c->pid)
		c->pid = c->tids[0];
	*out = c;
	return 0;
cleanup:
	mem_core__close(c);
	return err;
}

void mem_core__close(struct mem_core *c)
{
	if (!c)
		return;
	for (unsigned int i = 0; i < c->nfiles; i++) {
		if (c->files[i].fd >= 0)
			close(c->files[i].fd);
		free(c->files[i].host);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c->files);
	hashmap__free(&c->file_names);
	free(c->maps);
	free(c->names);
	free(c->segs);
	free(c->tids);
	free(c->regs);
	free(c->sysroot);
	free(c->sysroot_real);
	free(c->exe_override);
	free(c);
}

void mem_core__owner(const struct mem_core *c, uid_t *uid, gid_t *gid)
{
	*uid = c->uid;
	*gid = c->gid;
}

struct mem_source *mem_core__mem(struct mem_core *c)
{
	return &c->base;
}

pid_t mem_core__pid(const struct mem_core *c)
{
	return c->pid;
}

unsigned int mem_core__threads(const struct mem_core *c, const pid_t **tids)
{
	*tids = c->tids;
	return c->ntids;
}

const char *mem_core__exe(const struct mem_core *c)
{
	return c->exe_file >= 0 ? c->files[c->exe_file].name : "";
}

int mem_core__thread_regs(const struct mem_core *c, pid_t tid, struct user_regs_struct *out)
{
	for (unsigned int i = 0; i < c->ntids; i++) {
		if (c->tids[i] != tid)
			continue;
		if (!c->regs[i].rsp || !c->regs[i].rip)
			return -ENOENT;
		*out = c->regs[i];
		return 0;
	}
	return -ESRCH;
}

int mem_core__executable(const struct mem_core *c, uint64_t start, uint64_t end)
{
	for (unsigned int i = 0; i < c->nsegs; i++) {
		const struct core_seg *s = &c->segs[i];

		if ((s->flags & PF_X) && s->vaddr < end && start < s->vaddr + s->memsz)
			return 1;
	}
	return 0;
}

int mem_core__maps(const struct mem_core *c, int (*fn)(const struct proc_map *m, void *arg),
		   void *arg)
{
	struct proc_map pm;
	int ret = 0;

	for (unsigned int i = 0; i < c->nmaps && !ret; i++) {
		const struct core_map *m = &c->maps[i];

		pm.start = m->start;
		pm.end = m->end;
		pm.offset = m->offset;
		pm.dev = pm.inode = 0;	/* an NT_FILE note names no inode */
		snprintf(pm.path, sizeof(pm.path), "%s", c->files[m->file].name);
		ret = fn(&pm, arg);
	}
	return ret;
}

int mem_core__file_path(struct mem_core *c, const char *path, char *out, size_t len)
{
	for (unsigned int i = 0; i < c->nfiles; i++) {
		int err;

		if (strcmp(c->files[i].name, path))
			continue;
		err = resolve_file(c, i);
		/* The path looked for, also on failure, for the caller's message. */
		if (snprintf(out, len, "%s", c->files[i].host ? c->files[i].host : path) >= (int)len)
			return err ? err : -ENAMETOOLONG;
		return err;
	}
	return -ENOENT;
}
