/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Opening a file whose name someone else chose: a path from /proc/PID/maps, a core's
 * NT_FILE note or a sysroot. The name may lead to a FIFO, a device, a symbolic link out
 * of the target's root, or another file than the one mapped; see hostile_file.c.
 */
#ifndef PBP_HOSTILE_FILE_H
#define PBP_HOSTILE_FILE_H

#include <stdint.h>
#include <sys/stat.h>

/* The file a mapping is of, as /proc/PID/maps gives it. */
struct hostile_file_id {
	uint64_t dev;		/* makedev(major, minor) */
	uint64_t ino;
};

/* Refuse a symbolic link as the last component (an intermediate one is followed). */
#define HOSTILE_FILE_NOFOLLOW 1u
/* Resolve @path as if @dirfd were the root (openat2's RESOLVE_IN_ROOT): an absolute
 * symbolic link or ".." inside a target's root stays inside it, as it does for the
 * target, instead of leading into ours. No magic links (/proc/PID/...) are followed. */
#define HOSTILE_FILE_IN_ROOT 2u
/* With HOSTILE_FILE_IN_ROOT: no symbolic link at all, in any component (a source file
 * a target names is read only at the path it names). */
#define HOSTILE_FILE_NO_LINKS 4u

/*
 * Opens @path (relative to @dirfd, or AT_FDCWD) for reading, close-on-exec. Magic
 * links (/proc/PID/exe, /proc/PID/map_files/...) are followed unless
 * HOSTILE_FILE_NOFOLLOW. Returns the descriptor, with its stat in @st if given; or
 * -EINVAL if the path is not a regular file (nothing but a path look-up was done on
 * it), -ESTALE if it is not the file @want names (when @want is given), or the errno
 * of the look-up or open.
 */
int hostile_file__open(int dirfd, const char *path, unsigned int flags,
		       const struct hostile_file_id *want, struct stat *st);

/* Files larger than this are not copied (hostile_file__copy()). */
#define HOSTILE_FILE_COPY_MAX (256u << 20)

/*
 * For a library that maps the file (libdwfl does): a private copy of @fd's contents
 * in a memfd, which it replaces (@fd is closed either way). A mapping of the file
 * itself turns its truncation by its owner, or by a target in a container that holds
 * it, into SIGBUS in whoever reads the mapping; the copy cannot change. Returns the
 * memfd; -EFBIG past HOSTILE_FILE_COPY_MAX, or the errno of the copy.
 */
int hostile_file__copy(int fd);

#endif
