/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The executable mappings of a live process, for native unwinding (--native): where
 * each file-backed executable mapping sits, which file it is (device, inode, build-id)
 * and how to open that very file from here, through /proc/PID/map_files or the
 * process's root. /proc/PID/maps is the target's to shape (file names with spaces,
 * newlines, " (deleted)", a million mappings), so its text is parsed with every line
 * and count bounded, and a file is opened only as hostile_file.c says.
 */
#ifndef PBP_NATIVE_MAPS_H
#define PBP_NATIVE_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The kernel caps a process at 65530 mappings (vm.max_map_count) of at most
 * PATH_MAX-long names: the text is read up to this many bytes, else -E2BIG. */
#define NATIVE_MAPS_MAX_TEXT (8u << 20)
/* A line longer than this (its name escaped by the kernel) is skipped and counted. */
#define NATIVE_MAPS_MAX_LINE 4400
/* Executable file mappings kept: a CPython process has 10-200; more are dropped and
 * counted (their frames then end the walk as "no CFI"). */
#define NATIVE_MAPS_MAX_ENTRIES 4096
/* GNU build-ids are 20 bytes (SHA-1); some linkers make 16 or 32. */
#define NATIVE_BUILD_ID_MAX 32

struct native_map {
	uint64_t start, end; /* [start, end) in the target */
	uint64_t offset;     /* file offset mapped at start */
	uint64_t dev, ino;   /* makedev(major, minor) and inode, as maps gives them */
	char *path;	     /* as we see it in maps; " (deleted)" kept */
	uint8_t build_id[NATIVE_BUILD_ID_MAX];
	uint8_t build_id_len; /* 0: none, or the file could not be read */
	int8_t open_err;      /* 0, or -errno of the last failed open (-ENOENT, -ESTALE...) */
};

struct native_maps {
	pid_t pid;
	struct native_map *maps; /* executable file mappings, by address */
	size_t n, cap;
	uint64_t vdso_start, vdso_end; /* the kernel's [vdso], 0 if none: no file to open,
					 * but the same image as ours (one kernel) */
	char root[4096];	       /* the target's root as we see it; "" if unknown */
	int from_core;		       /* paths are host files a core names (native_core.h):
				        * opened as they are, with no inode to check */
	uint64_t hash;		       /* of every (start, end, offset, dev, ino): tells a change */
	uint32_t skipped_lines;	       /* malformed or too long */
	uint32_t dropped;	       /* past NATIVE_MAPS_MAX_ENTRIES */
};

/*
 * How the native layer opens what a target names: directly, as root, by default
 * (NULL); or, in the parsing worker, by asking the profiler, which checks each ask
 * against the target's maps and opens the file itself (native_worker.h). Each returns
 * a descriptor or a negative errno.
 */
struct native_files {
	/* /proc/@pid/maps */
	int (*maps)(void *arg, pid_t pid);
	/* proc__root() of @pid: 0 with the path in @buf, or a negative errno */
	int (*root)(void *arg, pid_t pid, char *buf, size_t len);
	/* The file @e of @m maps, checked to be its inode (native_maps__open()). */
	int (*mapped)(void *arg, const struct native_maps *m, const struct native_map *e);
	/* A debug-file candidate: @path inside the root of process @pid, or as it is on
	 * this host for a core's files (@in_root 0). */
	int (*debug)(void *arg, pid_t pid, int in_root, const char *path);
	void *arg;
};

int native_files__maps(const struct native_files *f, pid_t pid);
int native_files__root(const struct native_files *f, pid_t pid, char *buf, size_t len);
int native_files__mapped(const struct native_files *f, const struct native_maps *m,
			 const struct native_map *e);
int native_files__debug(const struct native_files *f, pid_t pid, int in_root, const char *path);

/*
 * Build-ids by file identity, so that the ELF notes of a library every process maps
 * are read once. The key is (dev, ino, size, mtime) of the opened file: an inode
 * reused for another file after a delete has another mtime. Bounded in bytes: when
 * full it is emptied (counted as evictions).
 */
struct native_buildid_cache;

struct native_buildid_stats {
	uint64_t hits, misses, evictions;
	size_t bytes;
};

int native_buildid_cache__new(size_t max_bytes, struct native_buildid_cache **out);
void native_buildid_cache__free(struct native_buildid_cache *c);

void native_buildid_cache__stats(const struct native_buildid_cache *c,
				 struct native_buildid_stats *st);

/*
 * Appends the executable file-backed mappings in the maps text @buf (@len bytes, need
 * not be NUL-terminated) to @m, and folds them into m->hash. The [vdso] goes to
 * m->vdso_start/end; anonymous, other special ([stack]...) and non-executable mappings
 * are left out. Malformed lines are
 * skipped and counted, never trusted. 0, or -ENOMEM.
 */
int native_maps__parse(struct native_maps *m, const char *buf, size_t len);

/*
 * Reads /proc/@pid/maps into a new *@out, with build-ids through @cache (may be NULL:
 * no build-ids), files opened through @files (NULL: directly). -ESRCH if the process
 * is gone, -EACCES, -E2BIG past NATIVE_MAPS_MAX_TEXT, -ENOMEM.
 */
int native_maps__read(pid_t pid, const struct native_files *files,
		      struct native_buildid_cache *cache, struct native_maps **out);
void native_maps__free(struct native_maps *m);

/* Appends @e (its path copied from @path), keeping m->hash. 0 or -ENOMEM; past
 * NATIVE_MAPS_MAX_ENTRIES it is dropped and counted. */
int native_maps__add(struct native_maps *m, const struct native_map *e, const char *path,
		     size_t plen);

/* The mapping holding @addr, or NULL. */
const struct native_map *native_maps__find(const struct native_maps *m, uint64_t addr);

/*
 * Opens the file mapped by @e, checked to be the inode maps names: a descriptor, or
 * -ENOENT/-ESTALE/-EACCES... from the best way tried (map_files, then the path inside
 * the target's root, then the path as we see it).
 */
int native_maps__open(const struct native_maps *m, const struct native_map *e);

/* @path (a maps path of @m) as the target names it: without its root's own path. */
const char *native_maps__in_root(const struct native_maps *m, const char *path);

/* The build-id of the ELF file open at @fd: its length (0: none), or -ENOEXEC. */
int native_maps__read_build_id(int fd, uint8_t *id, size_t cap);

#endif
