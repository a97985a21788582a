// SPDX-License-Identifier: GPL-2.0-only
/*
 * Opening files named by a target or a core without letting the name choose what the
 * open does. A plain open of a FIFO blocks until a writer comes, and an open of a
 * device runs its driver (a watchdog arms, a tty becomes the controlling terminal), so
 * the name is first looked up with O_PATH, which opens nothing; only once fstat says it
 * is a regular file (and, if asked, the very inode a mapping is of) is it opened for
 * reading, through /proc/self/fd so that the inode opened is the one checked even if
 * the name is replaced in between.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/hostile_file.h"

/*
 * Whether @st is the file @want names. Overlayfs and btrfs report an anonymous device
 * (major 0) of their own through stat while /proc/PID/maps gives the device of the
 * inode behind it, so a device on either side that is anonymous is not compared.
 */
static int same_file(const struct stat *st, const struct hostile_file_id *want)
{
	if ((uint64_t)st->st_ino != want->ino)
		return 0;
	if (!major(st->st_dev) || !major(want->dev))
		return 1;
	return (uint64_t)st->st_dev == want->dev;
}

int hostile_file__open(int dirfd, const char *path, unsigned int flags,
		       const struct hostile_file_id *want, struct stat *st)
{
	int pfd, fd = -1, oflags = O_PATH | O_CLOEXEC;
	struct stat pst, fst;
	char self[64];
	int err;

	if (flags & HOSTILE_FILE_NOFOLLOW)
		oflags |= O_NOFOLLOW;
	if (flags & HOSTILE_FILE_IN_ROOT) {
		struct open_how how = { .flags = (uint64_t)oflags,
					.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS |
						   (flags & HOSTILE_FILE_NO_LINKS ?
						    RESOLVE_NO_SYMLINKS : 0) };

		pfd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	} else {
		pfd = openat(dirfd, path, oflags);
	}
	if (pfd < 0)
		return errno == ENOTDIR ? -ENOENT : -errno;
	if (fstat(pfd, &pst)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(pst.st_mode)) {
		err = -EINVAL;
		goto cleanup;
	}
	if (want && !same_file(&pst, want)) {
		err = -ESTALE;
		goto cleanup;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	/* The same inode by construction; a check costs nothing. */
	if (fstat(fd, &fst) || fst.st_ino != pst.st_ino || fst.st_dev != pst.st_dev) {
		err = -ESTALE;
		goto cleanup;
	}
	if (st)
		*st = fst;
	err = 0;
cleanup:
	close(pfd);
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

int hostile_file__copy(int fd)
{
	struct stat st;
	off_t at = 0;
	int mfd = -1, err;

	if (fstat(fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (st.st_size > (off_t)HOSTILE_FILE_COPY_MAX) {
		err = -EFBIG;
		goto cleanup;
	}
	mfd = memfd_create("pbp-object", MFD_CLOEXEC);
	if (mfd < 0) {
		err = -errno;
		goto cleanup;
	}
	/* The kernel copies through the page cache, never through a mapping; what a
	 * truncation leaves is what is copied: reading past the end stops it. */
	while (at < (off_t)HOSTILE_FILE_COPY_MAX) {
		ssize_t n = sendfile(mfd, fd, &at, HOSTILE_FILE_COPY_MAX - (size_t)at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto cleanup;
		}
		if (!n)
			break;
	}
	close(fd);
	return mfd;
cleanup:
	if (mfd >= 0)
		close(mfd);
	close(fd);
	return err;
}
