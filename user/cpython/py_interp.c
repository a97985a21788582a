// SPDX-License-Identifier: GPL-2.0-only
/*
 * Interpreter discovery, over the mappings of a live process or of a core.
 *
 * A live process's files are named by /proc/PID/maps as we see them, and whoever runs
 * the process chooses them: every one is opened as hostile_file.c says and must be the
 * inode the maps line names. The ways to it, best first: /proc/PID/map_files (the
 * mapped inode itself; needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE); the path
 * inside the process's root, found by taking the root's path as we see it off the
 * front, so that a chroot resolves even where its path on the host is not ours to
 * walk; /proc/PID/exe for the executable (open to the same user); and the path as we
 * see it. A core's files are the ones it names, found as mem_core resolves them
 * (sysroot, --exe).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/elf_syms.h"
#include "base/hostile_file.h"
#include "cpython/py_interp.h"
#include "base/log.h"
#include "mem/mem_core.h"
#include "base/proc.h"

enum { SYM_RUNTIME, SYM_VERSION, SYM_CODE_TYPE, SYM_GET_VERSION, NSYMS };

struct find_ctx;

/* Where mappings and their files come from. */
struct map_source {
	int (*maps)(struct find_ctx *c, int (*fn)(const struct proc_map *m, void *arg));
	/* Opens the file behind @m the @i-th way (of ntries): a descriptor, or a negative
	 * errno (-ENOENT also when that way does not apply). @buf names what was tried. */
	int (*open)(struct find_ctx *c, const struct proc_map *m, unsigned int i, char *buf,
		    size_t len);
	unsigned int ntries;
	/* Bit i: the i-th way needs privileges that a user profiling their own process
	 * lacks, so its refusal alone does not make the file unreadable. */
	unsigned int privileged;
};

struct find_ctx {
	const struct map_source *src;
	pid_t pid;
	struct mem_core *core;
	char exe[PATH_MAX];
	char root[PATH_MAX];		/* the target's root as we see it; "" if unknown */
	char tried[8][PATH_MAX];	/* files already searched */
	unsigned int ntried;
	struct elf_sym_query q[NSYMS];
	char found_path[PATH_MAX];
	int found_py_version;		/* found_path exports Py_Version (3.11+) */
	/* The first candidate that exports Py_GetVersion but no _PyRuntime: a CPython
	 * older than 3.7, whose runtime this build has no way to read. */
	char old_path[PATH_MAX];
	uint64_t addr[NSYMS];
	int err;
	char missing[PATH_MAX];		/* first candidate file that could not be found */
	int missing_err;
	char unreadable[PATH_MAX];	/* first one that could not be opened (c->err) */
};

/* How much an error says about a file that cannot be opened: a way that failed for
 * want of permission tells more than one that did not apply or found nothing. */
static int err_rank(int err, int privileged_way)
{
	if (err == -EACCES || err == -EPERM)
		return privileged_way ? 1 : 3;
	return err == -ENOENT ? 0 : 2;
}

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

/* @path (as we see it) inside the target's root; @path itself if the root is ours or
 * unknown, or the file lies outside it. */
static const char *in_root(const struct find_ctx *c, const char *path)
{
	size_t n = strlen(c->root);

	if (n > 1 && !strncmp(path, c->root, n) && path[n] == '/')
		return path + n;
	return path;
}

static int search_file(const struct proc_map *m, void *arg)
{
	struct find_ctx *c = arg;
	char file[PATH_MAX + 64] = "", tried[PATH_MAX + 64];
	int err = -ENOENT, best = -ENOENT, rank = -1;

	if (!is_candidate(c, m->path) || already_tried(c, m->path))
		return 0;
	for (unsigned int i = 0; i < c->src->ntries && err; i++) {
		int fd;

		tried[0] = '\0';
		fd = c->src->open(c, m, i, tried, sizeof(tried));
		if (fd < 0) {
			err = fd;
			if (err_rank(err, c->src->privileged >> i & 1) > rank) {
				rank = err_rank(err, c->src->privileged >> i & 1);
				best = err;
				snprintf(file, sizeof(file), "%s", tried);
			}
			continue;
		}
		err = elf_syms__find(fd, c->q, NSYMS);
		close(fd);
		if (err) {
			best = err;
			snprintf(file, sizeof(file), "%s", tried);
			break;	/* the mapped file itself is no ELF we read */
		}
	}
	if (err) {
		err = best;
		pr_debug("cannot read %s (%s): %s\n", m->path, file, strerror(-err));
		if (err == -EACCES || err == -EPERM) {
			c->err = err;
			if (!c->unreadable[0])
				snprintf(c->unreadable, sizeof(c->unreadable), "%s",
					 c->core ? file : in_root(c, m->path));
		} else if ((err == -ENOENT || err == -ESTALE) && !c->missing[0]) {
			snprintf(c->missing, sizeof(c->missing), "%s", file[0] ? file : m->path);
			c->missing_err = err;
		}
		return 0;
	}
	if (!c->q[SYM_RUNTIME].found) {
		if (c->q[SYM_GET_VERSION].found && !c->old_path[0])
			snprintf(c->old_path, sizeof(c->old_path), "%s", m->path);
		return 0;
	}
	snprintf(c->found_path, sizeof(c->found_path), "%s", m->path);
	c->found_py_version = c->q[SYM_VERSION].found;
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

/*
 * 0 with c->addr filled; -ENOENT if no candidate file exports _PyRuntime (c->err and
 * c->missing say why, if a file could not be read); -ENOTSUP for a CPython older than
 * 3.11 whose runtime has no bytes in its file (3.7 to 3.9 keep it in .bss, 2.7 to
 * 3.6 have none); or what the maps source returns.
 */
static int find_runtime(struct find_ctx *c)
{
	int err;

	c->q[SYM_RUNTIME].name = "_PyRuntime";
	c->q[SYM_VERSION].name = "Py_Version";
	c->q[SYM_CODE_TYPE].name = "PyCode_Type";
	/* In every CPython's API since 2.0: what tells an old one from a stranger. */
	c->q[SYM_GET_VERSION].name = "Py_GetVersion";
	err = c->src->maps(c, search_file);
	if (err < 0)
		return err;
	if (!c->found_path[0])
		return c->old_path[0] ? -ENOTSUP : -ENOENT;
	err = c->src->maps(c, place_symbol);
	if (err < 0)
		return err;
	if (c->addr[SYM_RUNTIME])
		return 0;
	/* Without Py_Version it is older than 3.11 wherever the runtime lies; with it,
	 * the file is still being mapped (a loader at work), or is not what it says. */
	return c->found_py_version ? -ENOENT : -ENOTSUP;
}

/* X.Y at the start of @s, as a version_hex with only those two, if they name a CPython
 * older than 3.11 (the only ones named this way); else 0. */
static uint32_t version_at(const char *s)
{
	unsigned int major = 0, minor = 0, n = 0;

	if (*s != '2' && *s != '3')
		return 0;
	major = (unsigned int)(*s++ - '0');
	if (*s++ != '.')
		return 0;
	while (*s >= '0' && *s <= '9' && n++ < 2)
		minor = minor * 10 + (unsigned int)(*s++ - '0');
	if (!n || (*s >= '0' && *s <= '9'))
		return 0;
	return major << 24 | minor << 16;
}

/*
 * A CPython older than 3.11 has no Py_Version: its version is read off its file's
 * name, libpython3.9.so.1.0 (the soname, as a loader needs it) or an executable
 * python3.9. The name only names it: whatever it says, the interpreter stays
 * unsupported, and a name claiming 3.11 or later is not believed.
 */
static uint32_t version_named(const struct find_ctx *c, const char *path)
{
	const char *names[] = { path, c->exe };

	for (unsigned int i = 0; i < 2; i++) {
		const char *base = strrchr(names[i], '/');
		uint32_t v;

		base = base ? base + 1 : names[i];
		if (!strncmp(base, "libpython", 9))
			v = version_at(base + 9);
		else if (!strncmp(base, "python", 6))
			v = version_at(base + 6);
		else
			continue;
		if (v && v < 0x030b0000)
			return v;
	}
	return 0;
}

/* @out for a CPython older than 3.11, which find_runtime() found. */
static void old_interp(const struct find_ctx *c, struct py_interp *out)
{
	const char *path = c->found_path[0] ? c->found_path : c->old_path;

	memset(out, 0, sizeof(*out));
	out->pid = c->pid;
	snprintf(out->path, sizeof(out->path), "%s", path);
	out->version_hex = version_named(c, path);
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
		return py_offsets__builtin(out->version_hex, &out->off);
	/* The table may sit near the end of a mapping: shrink the read until it fits. */
	while (len >= 512 && mem__read(mem, out->runtime, buf, len))
		len /= 2;
	if (len < 512)
		return -EFAULT;
	return py_offsets__from_debug(buf, len, &out->off);
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
	if (err == -ENOTSUP && !out->version_hex)
		out->version_hex = version_named(c, c->found_path);
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

static int live_open(struct find_ctx *c, const struct proc_map *m, unsigned int i, char *buf,
		     size_t len)
{
	const struct hostile_file_id id = { .dev = m->dev, .ino = m->inode };

	switch (i) {
	case 0:
		snprintf(buf, len, "/proc/%d/map_files/%llx-%llx", (int)c->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		return hostile_file__open(AT_FDCWD, buf, 0, &id, NULL);
	case 1:
		/* The maps path is the one the kernel resolved: a symbolic link in its
		 * place now was put there since, so the last one is not followed. */
		if (snprintf(buf, len, "/proc/%d/root%s", (int)c->pid,
			     in_root(c, m->path)) >= (int)len)
			return -ENAMETOOLONG;
		return hostile_file__open(AT_FDCWD, buf, HOSTILE_FILE_NOFOLLOW, &id, NULL);
	case 2:
		/* The executable opens through /proc/PID/exe for the same user even where
		 * no path to it can be walked. */
		if (strcmp(m->path, c->exe))
			return -ENOENT;
		snprintf(buf, len, "/proc/%d/exe", (int)c->pid);
		return hostile_file__open(AT_FDCWD, buf, 0, &id, NULL);
	default:
		/* As we see it: a file mapped from outside the target's root. */
		snprintf(buf, len, "%s", m->path);
		return hostile_file__open(AT_FDCWD, buf, HOSTILE_FILE_NOFOLLOW, &id, NULL);
	}
}

static const struct map_source live_source = {
	.maps = live_maps,
	.open = live_open,
	.ntries = 4,
	.privileged = 1u << 0,	/* map_files */
};

/* @c set up to read live process @pid: its executable and root as we see them. */
static void live_ctx(struct find_ctx *c, pid_t pid)
{
	char link[64];
	ssize_t n;

	c->src = &live_source;
	c->pid = pid;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, c->exe, sizeof(c->exe) - 1);
	if (n > 0)
		c->exe[n] = '\0';
	if (proc__root(pid, c->root, sizeof(c->root)))
		c->root[0] = '\0';
}

int py_interp__find(pid_t pid, struct mem_source *mem, struct py_interp *out)
{
	struct find_ctx *c;
	int err;

	out->unopened = 0;
	if (proc__alive(pid))
		return -ESRCH;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	live_ctx(c, pid);

	err = find_runtime(c);
	if (err == -ENOTSUP)
		old_interp(c, out);
	if (err == -ENOENT && !c->found_path[0])
		err = proc__alive(pid) ? -ESRCH : c->err ? c->err : -ENOENT;
	if (err && c->err && err == c->err) {
		/* Say which file: the process's memory may be readable all the same. */
		snprintf(out->path, sizeof(out->path), "%s", c->unreadable);
		out->unopened = 1;
	}
	if (err)
		goto out;
	err = read_interp(c, mem, out);
	if (err == -EFAULT)
		err = proc__alive(pid) ? -ESRCH : -EACCES;
out:
	free(c);
	return err;
}

/* A section looked for by py_interp__find_section(). */
struct section_find {
	struct find_ctx c;
	const char *interp_path;
	const char *prefix;
	struct elf_sym_query q;
	char found[PATH_MAX];
	uint64_t addr;
};

static int search_section(const struct proc_map *m, void *arg)
{
	struct section_find *f = arg;
	const char *base = strrchr(m->path, '/');
	char tried[PATH_MAX + 64];

	base = base ? base + 1 : m->path;
	if ((strcmp(m->path, f->interp_path) && strncmp(base, f->prefix, strlen(f->prefix))) ||
	    already_tried(&f->c, m->path))
		return 0;
	for (unsigned int i = 0; i < f->c.src->ntries; i++) {
		int fd = f->c.src->open(&f->c, m, i, tried, sizeof(tried));

		if (fd < 0)
			continue;
		if (!elf_syms__find(fd, &f->q, 1) && f->q.found) {
			snprintf(f->found, sizeof(f->found), "%s", m->path);
			close(fd);
			return 1;
		}
		close(fd);
		break;	/* read, and not there */
	}
	return 0;
}

static int place_section(const struct proc_map *m, void *arg)
{
	struct section_find *f = arg;
	uint64_t off = f->q.file_offset;

	if (strcmp(m->path, f->found) || off < m->offset || off >= m->offset + (m->end - m->start))
		return 0;
	f->addr = m->start + (off - m->offset);
	return 1;
}

int py_interp__find_section(const struct py_interp *in, const char *prefix, const char *section,
			    uint64_t *addr, uint64_t *size)
{
	struct section_find *f = calloc(1, sizeof(*f));
	int err;

	if (!f)
		return -ENOMEM;
	live_ctx(&f->c, in->pid);
	f->interp_path = in->path;
	f->prefix = prefix;
	f->q.name = section;
	f->q.section = 1;
	err = proc__maps(in->pid, search_section, f);
	if (err >= 0 && f->found[0])
		err = proc__maps(in->pid, place_section, f);
	if (err >= 0)
		err = f->addr ? 0 : proc__alive(in->pid) ? -ESRCH : -ENOENT;
	if (!err) {
		*addr = f->addr;
		*size = f->q.size;
	}
	free(f);
	return err;
}

static int core_maps(struct find_ctx *c, int (*fn)(const struct proc_map *m, void *arg))
{
	return mem_core__maps(c->core, fn, c);
}

static int core_open(struct find_ctx *c, const struct proc_map *m, unsigned int i, char *buf,
		     size_t len)
{
	int err;

	(void)i;
	err = mem_core__file_path(c->core, m->path, buf, len);
	return err ? err : hostile_file__open(AT_FDCWD, buf, 0, NULL, NULL);
}

static const struct map_source core_source = {
	.maps = core_maps,
	.open = core_open,
	.ntries = 1,
};

int py_interp__find_core(struct mem_core *core, struct py_interp *out, char *missing, size_t len)
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
	if (err == -ENOTSUP)
		old_interp(c, out);
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

void py_interp__version_str(uint32_t hex, char *buf, size_t len)
{
	unsigned int major = hex >> 24, minor = (hex >> 16) & 0xff, micro = (hex >> 8) & 0xff;
	unsigned int level = (hex >> 4) & 0xf, serial = hex & 0xf;
	const char *tag = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : NULL;

	/* No release has level 0: this is a version known by its major and minor only. */
	if (!(hex & 0xffff))
		snprintf(buf, len, "%u.%u", major, minor);
	else if (tag)
		snprintf(buf, len, "%u.%u.%u%s%u", major, minor, micro, tag, serial);
	else
		snprintf(buf, len, "%u.%u.%u", major, minor, micro);
}
