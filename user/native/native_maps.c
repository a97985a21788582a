// SPDX-License-Identifier: GPL-2.0-only
/*
 * The executable mappings of a live process and the identity of their files; see
 * native_maps.h. The maps text is read whole (bounded) and parsed line by line from a
 * bounded copy, so that no line the target shapes can make us read past it; each file
 * is opened as hostile_file.c says and must be the inode the line names.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <elfutils/libdwelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "base/hostile_file.h"
#include "native/native_maps.h"
#include "base/proc.h"
#include "base/vec.h"

struct buildid_entry {
	uint64_t dev, ino, size, mtime_ns;
	uint8_t id[NATIVE_BUILD_ID_MAX];
	uint8_t len;
};

struct native_buildid_cache {
	struct buildid_entry *e;
	size_t n, cap;
	struct hashmap index;
	size_t max_bytes;
	struct native_buildid_stats st;
};

static uint64_t entry_key_hash(const struct buildid_entry *e)
{
	return hash_u64(e->dev ^ hash_u64(e->ino ^ hash_u64(e->size ^ e->mtime_ns)));
}

static uint64_t bid_hash(uint32_t idx, const void *ctx)
{
	const struct native_buildid_cache *c = ctx;

	return entry_key_hash(&c->e[idx]);
}

static bool bid_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct native_buildid_cache *c = ctx;
	const struct buildid_entry *a = &c->e[idx], *b = key;

	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
		a->mtime_ns == b->mtime_ns;
}

int native_buildid_cache__new(size_t max_bytes, struct native_buildid_cache **out)
{
	struct native_buildid_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->max_bytes = max_bytes;
	*out = c;
	return 0;
}

void native_buildid_cache__free(struct native_buildid_cache *c)
{
	if (!c)
		return;
	hashmap__free(&c->index);
	free(c->e);
	free(c);
}

static size_t cache_bytes(const struct native_buildid_cache *c)
{
	return c->cap * sizeof(*c->e) + hashmap__bytes(&c->index);
}

void native_buildid_cache__stats(const struct native_buildid_cache *c,
				 struct native_buildid_stats *st)
{
	*st = c->st;
	st->bytes = cache_bytes(c);
}

/* Adds @key; when the cache would grow past its budget it is emptied first (the
 * entries are cheap to find again; a cache that only ever grows is not). An entry in
 * use costs its array slot and two hash slots (the index is at most half full); the
 * array's doubling may take up to twice that, which the factor 2 allows for. */
static void cache_add(struct native_buildid_cache *c, const struct buildid_entry *key)
{
	size_t slot;

	if (c->n && (c->n + 1) * (sizeof(*c->e) + 2 * sizeof(uint32_t)) * 2 > c->max_bytes) {
		c->st.evictions += c->n;
		c->n = 0;
		hashmap__clear(&c->index);
	}
	if (vec__reserve((void **)&c->e, &c->cap, c->n + 1, sizeof(*c->e), 16) ||
	    hashmap__grow(&c->index, 32, bid_hash, c))
		return; /* not cached: found again next time */
	c->e[c->n] = *key;
	slot = hashmap__probe(&c->index, entry_key_hash(key), bid_equal, key, c);
	hashmap__set(&c->index, slot, (uint32_t)c->n);
	c->n++;
}

int native_maps__read_build_id(int fd, uint8_t *id, size_t cap)
{
	const void *bits;
	ssize_t n;
	Elf *elf;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	/* dwelf walks the PT_NOTE segments (else SHT_NOTE sections) within the file's
	 * size; a note that claims more is rejected by libelf's own bounds. */
	n = dwelf_elf_gnu_build_id(elf, &bits);
	if (n < 0) {
		err = -ENOEXEC;
		goto cleanup;
	}
	if (n == 0 || (size_t)n > cap) {
		err = 0; /* none, or one no linker makes: treated as none */
		goto cleanup;
	}
	memcpy(id, bits, (size_t)n);
	err = (int)n;
cleanup:
	if (elf)
		elf_end(elf);
	return err;
}

/* The build-id of @e's file, through @cache. */
static void map_build_id(const struct native_maps *m, const struct native_files *files,
			 struct native_map *e, struct native_buildid_cache *cache)
{
	struct buildid_entry key = { 0 };
	struct stat st;
	uint32_t idx;
	int fd, n;

	fd = native_files__mapped(files, m, e);
	if (fd < 0) {
		e->open_err = (int8_t)(fd < -127 ? -EIO : fd);
		return;
	}
	if (fstat(fd, &st)) {
		e->open_err = (int8_t)-EIO;
		goto cleanup;
	}
	key.dev = (uint64_t)st.st_dev;
	key.ino = (uint64_t)st.st_ino;
	key.size = (uint64_t)st.st_size;
	key.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	if (cache->n &&
	    !hashmap__find(&cache->index, entry_key_hash(&key), bid_equal, &key, cache, &idx)) {
		cache->st.hits++;
		memcpy(e->build_id, cache->e[idx].id, cache->e[idx].len);
		e->build_id_len = cache->e[idx].len;
		goto cleanup;
	}
	cache->st.misses++;
	n = native_maps__read_build_id(fd, key.id, sizeof(key.id));
	if (n > 0) {
		key.len = (uint8_t)n;
		memcpy(e->build_id, key.id, key.len);
		e->build_id_len = key.len;
	}
	cache_add(cache, &key);
cleanup:
	close(fd);
}

static int parse_u64_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int digits = 0;

	for (; s < end && digits <= 16; s++, digits++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else
			break;
		x = x << 4 | (uint64_t)d;
	}
	if (!digits || digits > 16)
		return -EINVAL;
	*p = s;
	*v = x;
	return 0;
}

static int parse_u64_dec(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (s >= end || *s < '0' || *s > '9')
		return -EINVAL;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (x > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*v = x;
	return 0;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

/*
 * One line, "start-end perms offset major:minor inode   path", into @e (path not
 * copied: *@path, *@path_len point into the line). 1 if it is an executable file
 * mapping, 0 if it is another kind, -EINVAL if malformed. Strict by hand rather than
 * sscanf: the fields' widths are checked and nothing is read past @end.
 */
static int parse_line(const char *s, const char *end, struct native_map *e, const char **path,
		      size_t *path_len)
{
	uint64_t major, minor;
	char perms[4];

	if (parse_u64_hex(&s, end, &e->start) || expect(&s, end, '-') ||
	    parse_u64_hex(&s, end, &e->end) || expect(&s, end, ' ') || end - s < 5)
		return -EINVAL;
	memcpy(perms, s, 4);
	s += 4;
	if (expect(&s, end, ' ') || parse_u64_hex(&s, end, &e->offset) || expect(&s, end, ' ') ||
	    parse_u64_hex(&s, end, &major) || expect(&s, end, ':') ||
	    parse_u64_hex(&s, end, &minor) || expect(&s, end, ' ') ||
	    parse_u64_dec(&s, end, &e->ino))
		return -EINVAL;
	if (e->end <= e->start || major > 0xfff || minor > 0xfffff)
		return -EINVAL;
	e->dev = makedev((unsigned int)major, (unsigned int)minor);
	while (s < end && *s == ' ')
		s++;
	*path = s;
	*path_len = (size_t)(end - s);
	return perms[2] == 'x' && e->ino && *path_len && **path == '/';
}

int native_maps__parse(struct native_maps *m, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct native_map e = { 0 };
		const char *path;
		size_t plen;
		int r;

		if ((size_t)(eol - p) > NATIVE_MAPS_MAX_LINE) {
			m->skipped_lines++;
			goto next;
		}
		r = parse_line(p, eol, &e, &path, &plen);
		if (r < 0)
			m->skipped_lines++;
		if (r == 0 && plen == 6 && !memcmp(path, "[vdso]", 6) && !m->vdso_start) {
			m->vdso_start = e.start;
			m->vdso_end = e.end;
			m->hash ^= hash_u64(e.start ^ 0x7664736full);
		}
		if (r > 0 && native_maps__add(m, &e, path, plen))
			return -ENOMEM;
	next:
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int native_maps__add(struct native_maps *m, const struct native_map *e, const char *path,
		     size_t plen)
{
	struct native_map *d;

	if (m->n >= NATIVE_MAPS_MAX_ENTRIES) {
		m->dropped++;
		return 0;
	}
	/* Kept by address: the kernel lists them in order, and a text that is not (never
	 * seen) only costs lookups a linear fallback. */
	if (vec__reserve((void **)&m->maps, &m->cap, m->n + 1, sizeof(*m->maps), 64))
		return -ENOMEM;
	d = &m->maps[m->n];
	*d = *e;
	d->path = strndup(path, plen);
	if (!d->path)
		return -ENOMEM;
	m->n++;
	m->hash = hash_u64(m->hash ^ e->start) ^ hash_u64(e->end ^ hash_u64(e->offset)) ^
		  hash_u64(e->ino + 0x9e3779b97f4a7c15ull * e->dev);
	return 0;
}

/* The whole of /proc/PID/maps, up to NATIVE_MAPS_MAX_TEXT. */
static int read_maps_text(pid_t pid, const struct native_files *files, char **out,
			  size_t *len)
{
	size_t cap = 64 << 10, n = 0;
	char *buf = NULL;
	int fd, err;

	fd = native_files__maps(files, pid);
	if (fd < 0)
		return fd;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if (cap >= NATIVE_MAPS_MAX_TEXT) {
				err = -E2BIG;
				goto cleanup;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
			cap *= 2;
		}
		r = fd__read(fd, buf + n, cap - n);
		if (r < 0) {
			/* A process that exits while we read: its maps read empty or ESRCH. */
			err = (int)r;
			goto cleanup;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	buf = NULL;
	err = 0;
cleanup:
	free(buf);
	close(fd);
	return err;
}

int native_maps__read(pid_t pid, const struct native_files *files,
		      struct native_buildid_cache *cache, struct native_maps **out)
{
	struct native_maps *m = calloc(1, sizeof(*m));
	char *text = NULL;
	size_t len = 0;
	int err;

	if (!m)
		return -ENOMEM;
	m->pid = pid;
	if (native_files__root(files, pid, m->root, sizeof(m->root)))
		m->root[0] = '\0';
	err = read_maps_text(pid, files, &text, &len);
	if (err)
		goto cleanup;
	err = native_maps__parse(m, text, len);
	if (err)
		goto cleanup;
	if (!m->n && proc__alive(pid)) {
		err = -ESRCH; /* an exited process reads as an empty maps file */
		goto cleanup;
	}
	for (size_t i = 0; cache && i < m->n; i++) {
		/* Mappings of one file follow each other: its build-id is read once. */
		if (i && m->maps[i - 1].ino == m->maps[i].ino &&
		    m->maps[i - 1].dev == m->maps[i].dev) {
			memcpy(m->maps[i].build_id, m->maps[i - 1].build_id, NATIVE_BUILD_ID_MAX);
			m->maps[i].build_id_len = m->maps[i - 1].build_id_len;
			m->maps[i].open_err = m->maps[i - 1].open_err;
			continue;
		}
		map_build_id(m, files, &m->maps[i], cache);
	}
	*out = m;
	m = NULL;
cleanup:
	free(text);
	native_maps__free(m);
	return err;
}

void native_maps__free(struct native_maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->maps[i].path);
	free(m->maps);
	free(m);
}

const struct native_map *native_maps__find(const struct native_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < m->maps[mid].start)
			hi = mid;
		else if (addr >= m->maps[mid].end)
			lo = mid + 1;
		else
			return &m->maps[mid];
	}
	/* Out-of-order text (never seen from the kernel): a linear look. */
	for (size_t i = 0; i < m->n; i++)
		if (addr >= m->maps[i].start && addr < m->maps[i].end)
			return &m->maps[i];
	return NULL;
}

/* @path (as we see it) inside the target's root: the root's path taken off the front,
 * so that a chroot's files resolve through /proc/PID/root; @path itself otherwise. */
const char *native_maps__in_root(const struct native_maps *m, const char *path)
{
	size_t n = strlen(m->root);

	if (n > 1 && !strncmp(path, m->root, n) && path[n] == '/')
		return path + n;
	return path;
}

int native_maps__open(const struct native_maps *m, const struct native_map *e)
{
	const struct hostile_file_id id = { .dev = e->dev, .ino = e->ino };
	char buf[4096 + 64];
	int fd, best;

	/* mem_core__file_path() found it and matched its first page against the core. */
	if (m->from_core)
		return e->open_err ? e->open_err : hostile_file__open(AT_FDCWD, e->path, 0, NULL,
								      NULL);

	/* The mapped inode itself, whatever its name now (CAP_SYS_ADMIN or
	 * CAP_CHECKPOINT_RESTORE). */
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)m->pid, e->start,
		 e->end);
	fd = hostile_file__open(AT_FDCWD, buf, 0, &id, NULL);
	if (fd >= 0)
		return fd;
	best = fd;
	/* The maps path is the one the kernel resolved: a symbolic link in its place now
	 * was put there since, so the last one is not followed. The open is checked to be
	 * the mapped inode, so a name that now leads elsewhere is refused (-ESTALE). */
	if (snprintf(buf, sizeof(buf), "/proc/%d/root%s", (int)m->pid,
		     native_maps__in_root(m, e->path)) < (int)sizeof(buf)) {
		fd = hostile_file__open(AT_FDCWD, buf, HOSTILE_FILE_NOFOLLOW, &id, NULL);
		if (fd >= 0)
			return fd;
		if (fd != -ENOENT)
			best = fd;
	}
	fd = hostile_file__open(AT_FDCWD, e->path, HOSTILE_FILE_NOFOLLOW, &id, NULL);
	if (fd >= 0)
		return fd;
	return best == -ENOENT ? fd : best;
}

/* ---- Opening directly ---- */

static int direct_maps(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

/* .build-id entries are symbolic links, followed inside the target's root as the
 * target would follow them (an absolute one too: HOSTILE_FILE_IN_ROOT). */
static int direct_debug(pid_t pid, int in_root, const char *path)
{
	char root[64];
	int rfd, fd;

	if (!in_root)
		return hostile_file__open(AT_FDCWD, path, 0, NULL, NULL);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = hostile_file__open(rfd, path, HOSTILE_FILE_IN_ROOT, NULL, NULL);
	close(rfd);
	return fd;
}

int native_files__maps(const struct native_files *f, pid_t pid)
{
	return f ? f->maps(f->arg, pid) : direct_maps(pid);
}

int native_files__root(const struct native_files *f, pid_t pid, char *buf, size_t len)
{
	return f ? f->root(f->arg, pid, buf, len) : proc__root(pid, buf, len);
}

int native_files__mapped(const struct native_files *f, const struct native_maps *m,
			 const struct native_map *e)
{
	return f ? f->mapped(f->arg, m, e) : native_maps__open(m, e);
}

int native_files__debug(const struct native_files *f, pid_t pid, int in_root, const char *path)
{
	return f ? f->debug(f->arg, pid, in_root, path) : direct_debug(pid, in_root, path);
}
