// SPDX-License-Identifier: GPL-2.0-only
/*
 * Interpreter discovery, over the mappings of a live process or of a core. A live
 * process's files are opened through /proc/PID/root so that a process in a chroot or
 * container is resolved against its own file system, and through /proc/PID/map_files
 * when the file was replaced or deleted since it was mapped. A core's files are the
 * ones it names, found as mem_core resolves them (sysroot, --exe).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_syms.h"
#include "interp.h"
#include "log.h"
#include "mem_core.h"
#include "proc.h"

enum { SYM_RUNTIME, SYM_VERSION, SYM_CODE_TYPE, NSYMS };

struct find_ctx;

/* Where mappings and their files come from. */
struct map_source {
	int (*maps)(struct find_ctx *c, int (*fn)(const struct proc_map *m, void *arg));
	/* Host path of the @i-th way (of ntries) to open the file behind @m. */
	int (*path)(struct find_ctx *c, const struct proc_map *m, unsigned int i, char *buf,
		    size_t len);
	unsigned int ntries;
};

struct find_ctx {
	const struct map_source *src;
	pid_t pid;
	struct mem_core *core;
	char exe[PATH_MAX];
	char tried[8][PATH_MAX];	/* files already searched */
	unsigned int ntried;
	struct elf_sym_query q[NSYMS];
	char found_path[PATH_MAX];
	uint64_t addr[NSYMS];
	int err;
	char missing[PATH_MAX];		/* first candidate file that could not be found */
	int missing_err;
};

/* Only files that can plausibly hold an interpreter are opened: the executable and
 * anything named like python or libpython. */
static int is_candidate(const struct find_ctx *c, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(path, c->exe) || strstr(base, "python");
}

static int already_tried(struct find_ctx *c, const char *path)
{
	for (unsigned int i = 0; i < c->ntried; i++)
		if (!strcmp(c->tried[i], path))
			return 1;
	if (c->ntried < 8)
		snprintf(c->tried[c->ntried++], PATH_MAX, "%s", path);
	return 0;
}

static int search_file(const struct proc_map *m, void *arg)
{
	struct find_ctx *c = arg;
	char file[PATH_MAX + 64] = "";
	int err = -ENOENT;

	if (!is_candidate(c, m->path) || already_tried(c, m->path))
		return 0;
	for (unsigned int i = 0; i < c->src->ntries && err; i++) {
		err = c->src->path(c, m, i, file, sizeof(file));
		if (!err)
			err = elf__find_symbols(file, c->q, NSYMS);
	}
	if (err) {
		pr_debug("cannot read %s: %s\n", m->path, strerror(-err));
		if (err == -EACCES || err == -EPERM) {
			c->err = err;
		} else if ((err == -ENOENT || err == -ESTALE) && !c->missing[0]) {
			snprintf(c->missing, sizeof(c->missing), "%s", file[0] ? file : m->path);
			c->missing_err = err;
		}
		return 0;
	}
	if (!c->q[SYM_RUNTIME].found)
		return 0;
	snprintf(c->found_path, sizeof(c->found_path), "%s", m->path);
	return 1;
}

/* Places the file offsets of the found symbols in the address space via the maps. */
static int place_symbol(const struct proc_map *m, void *arg)
{
	struct find_ctx *c = arg;

	if (strcmp(m->path, c->found_path))
		return 0;
	for (int k = 0; k < NSYMS; k++) {
		uint64_t off = c->q[k].file_offset;

		if (c->q[k].found && !c->addr[k] && off >= m->offset &&
		    off < m->offset + (m->end - m->start))
			c->addr[k] = m->start + (off - m->offset);
	}
	return 0;
}

/* 0 with c->addr filled; -ENOENT if no candidate file exports _PyRuntime (c->err and
 * c->missing say why, if a file could not be read); or what the maps source returns. */
static int find_runtime(struct find_ctx *c)
{
	int err;

	c->q[SYM_RUNTIME].name = "_PyRuntime";
	c->q[SYM_VERSION].name = "Py_Version";
	c->q[SYM_CODE_TYPE].name = "PyCode_Type";
	err = c->src->maps(c, search_file);
	if (err < 0)
		return err;
	if (!c->found_path[0])
		return -ENOENT;
	err = c->src->maps(c, place_symbol);
	if (err < 0)
		return err;
	return c->addr[SYM_RUNTIME] ? 0 : -ENOENT;
}

static int read_version(struct mem_source *mem, struct find_ctx *c, uint32_t *hex)
{
	uint64_t v = 0;
	char cookie[8];

	if (c->addr[SYM_VERSION]) {
		/* Py_Version is a const unsigned long (3.11+). */
		if (mem__read_u64(mem, c->addr[SYM_VERSION], &v))
			return -EFAULT;
		*hex = (uint32_t)v;
		return 0;
	}
	/* Without Py_Version, a 3.13+ runtime still names its version in the debug
	 * offsets; anything else is older than 3.11. */
	if (mem__read(mem, c->addr[SYM_RUNTIME], cookie, sizeof(cookie)) ||
	    memcmp(cookie, "xdebugpy", 8) ||
	    mem__read_u64(mem, c->addr[SYM_RUNTIME] + 8, &v))
		v = 0;
	*hex = (uint32_t)v;
	return 0;
}

static int load_offsets(struct mem_source *mem, struct py_interp *out)
{
	uint8_t buf[PBP_DEBUG_OFFSETS_MAX];
	size_t len = sizeof(buf);

	if (out->version_hex < 0x030b0000)
		return -ENOTSUP;
	if (out->version_hex < 0x030d0000)
		return offsets__builtin(out->version_hex, &out->off);
	/* The table may sit near the end of a mapping: shrink the read until it fits. */
	while (len >= 512 && mem__read(mem, out->runtime, buf, len))
		len /= 2;
	if (len < 512)
		return -EFAULT;
	return offsets__from_debug(buf, len, &out->off);
}

/* Fills @out from what find_runtime() found. 0; -EFAULT if the runtime cannot be read;
 * -ENOTSUP for a version, layout or build this build does not read. */
static int read_interp(struct find_ctx *c, struct mem_source *mem, struct py_interp *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	out->pid = c->pid;
	snprintf(out->path, sizeof(out->path), "%s", c->found_path);
	out->runtime = c->addr[SYM_RUNTIME];
	out->code_type = c->addr[SYM_CODE_TYPE];
	err = read_version(mem, c, &out->version_hex);
	if (err)
		return -EFAULT;
	err = load_offsets(mem, out);
	if (err == -EINVAL)
		return -ENOTSUP;
	if (!err && out->off.free_threaded)
		return -ENOTSUP;
	return err;
}

static int live_maps(struct find_ctx *c, int (*fn)(const struct proc_map *m, void *arg))
{
	return proc__maps(c->pid, fn, c);
}

static int live_path(struct find_ctx *c, const struct proc_map *m, unsigned int i, char *buf,
		     size_t len)
{
	struct stat st;

	if (i == 0)
		return proc__root_path(c->pid, m->path, buf, len);
	/* The maps name files as seen from our own root: for a chroot in our mount
	 * namespace that path works as it is, and unlike map_files it needs no
	 * CAP_SYS_ADMIN. The inode proves it is the mapped file. */
	if (i == 1) {
		if (stat(m->path, &st) || st.st_ino != m->inode)
			return -ENOENT;
		snprintf(buf, len, "%s", m->path);
		return 0;
	}
	snprintf(buf, len, "/proc/%d/map_files/%llx-%llx", (int)c->pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	return 0;
}

static const struct map_source live_source = {
	.maps = live_maps,
	.path = live_path,
	.ntries = 3,
};

int interp__find(pid_t pid, struct mem_source *mem, struct py_interp *out)
{
	struct find_ctx *c;
	char link[64];
	ssize_t n;
	int err;

	if (proc__alive(pid))
		return -ESRCH;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->src = &live_source;
	c->pid = pid;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, c->exe, sizeof(c->exe) - 1);
	if (n > 0)
		c->exe[n] = '\0';

	err = find_runtime(c);
	if (err == -ENOENT && !c->found_path[0])
		err = proc__alive(pid) ? -ESRCH : c->err ? c->err : -ENOENT;
	if (err)
		goto out;
	err = read_interp(c, mem, out);
	if (err == -EFAULT)
		err = proc__alive(pid) ? -ESRCH : -EACCES;
out:
	free(c);
	return err;
}

static int core_maps(struct find_ctx *c, int (*fn)(const struct proc_map *m, void *arg))
{
	return mem_core__maps(c->core, fn, c);
}

static int core_path(struct find_ctx *c, const struct proc_map *m, unsigned int i, char *buf,
		     size_t len)
{
	(void)i;
	return mem_core__file_path(c->core, m->path, buf, len);
}

static const struct map_source core_source = {
	.maps = core_maps,
	.path = core_path,
	.ntries = 1,
};

int interp__find_core(struct mem_core *core, struct py_interp *out, char *missing, size_t len)
{
	struct find_ctx *c;
	int err;

	if (missing && len)
		missing[0] = '\0';
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->src = &core_source;
	c->core = core;
	c->pid = mem_core__pid(core);
	snprintf(c->exe, sizeof(c->exe), "%s", mem_core__exe(core));

	err = find_runtime(c);
	if (err == -ENOENT && !c->found_path[0]) {
		/* A file we could not look into may be the interpreter: say which. */
		if (c->missing[0]) {
			err = c->missing_err;
			if (missing && len)
				snprintf(missing, len, "%s", c->missing);
		} else if (c->err) {
			err = c->err;
		}
	}
	if (err)
		goto out;
	err = read_interp(c, mem_core__mem(core), out);
	if (err == -EFAULT)
		err = -EIO;
out:
	free(c);
	return err;
}

void interp__version_str(uint32_t hex, char *buf, size_t len)
{
	unsigned int major = hex >> 24, minor = (hex >> 16) & 0xff, micro = (hex >> 8) & 0xff;
	unsigned int level = (hex >> 4) & 0xf, serial = hex & 0xf;
	const char *tag = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : NULL;

	if (tag)
		snprintf(buf, len, "%u.%u.%u%s%u", major, minor, micro, tag, serial);
	else
		snprintf(buf, len, "%u.%u.%u", major, minor, micro);
}
