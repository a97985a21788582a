// SPDX-License-Identifier: GPL-2.0-only
/*
 * Interpreter discovery. Files are opened through /proc/PID/root so that a process in
 * a chroot or container is resolved against its own file system, and through
 * /proc/PID/map_files when the file was replaced or deleted since it was mapped.
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
#include "proc.h"

enum { SYM_RUNTIME, SYM_VERSION, SYM_CODE_TYPE, NSYMS };

struct find_ctx {
	pid_t pid;
	char exe[PATH_MAX];
	char tried[8][PATH_MAX];	/* files already searched */
	unsigned int ntried;
	struct elf_sym_query q[NSYMS];
	char found_path[PATH_MAX];
	uint64_t addr[NSYMS];
	int err;
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
	char file[PATH_MAX + 64];
	struct stat st;
	int err;

	if (!is_candidate(c, m->path) || already_tried(c, m->path))
		return 0;
	err = proc__root_path(c->pid, m->path, file, sizeof(file));
	if (!err)
		err = elf__find_symbols(file, c->q, NSYMS);
	/* The maps name files as seen from our own root: for a chroot in our mount
	 * namespace that path works as it is, and unlike map_files it needs no
	 * CAP_SYS_ADMIN. The inode proves it is the mapped file. */
	if (err && !stat(m->path, &st) && st.st_ino == m->inode)
		err = elf__find_symbols(m->path, c->q, NSYMS);
	if (err) {
		snprintf(file, sizeof(file), "/proc/%d/map_files/%llx-%llx", (int)c->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		err = elf__find_symbols(file, c->q, NSYMS);
	}
	if (err) {
		pr_debug("cannot read %s: %s\n", m->path, strerror(-err));
		if (err == -EACCES || err == -EPERM)
			c->err = err;
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
	c->pid = pid;
	c->q[SYM_RUNTIME].name = "_PyRuntime";
	c->q[SYM_VERSION].name = "Py_Version";
	c->q[SYM_CODE_TYPE].name = "PyCode_Type";
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, c->exe, sizeof(c->exe) - 1);
	if (n > 0)
		c->exe[n] = '\0';

	err = proc__maps(pid, search_file, c);
	if (err < 0)
		goto out;
	if (!c->found_path[0]) {
		err = proc__alive(pid) ? -ESRCH : c->err ? c->err : -ENOENT;
		goto out;
	}
	err = proc__maps(pid, place_symbol, c);
	if (err < 0)
		goto out;
	if (!c->addr[SYM_RUNTIME]) {
		err = -ENOENT;
		goto out;
	}

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	snprintf(out->path, sizeof(out->path), "%s", c->found_path);
	out->runtime = c->addr[SYM_RUNTIME];
	out->code_type = c->addr[SYM_CODE_TYPE];
	err = read_version(mem, c, &out->version_hex);
	if (err) {
		err = proc__alive(pid) ? -ESRCH : -EACCES;
		goto out;
	}
	err = load_offsets(mem, out);
	if (err == -EFAULT)
		err = proc__alive(pid) ? -ESRCH : -EACCES;
	else if (err == -EINVAL)
		err = -ENOTSUP;
	else if (!err && out->off.free_threaded)
		err = -ENOTSUP;
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
