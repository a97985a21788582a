// SPDX-License-Identifier: GPL-2.0-only
/* Output files written through a temporary and a rename; see outfile.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/outfile.h"

/* What the final name holds now. */
enum final_kind {
	FINAL_ABSENT,
	FINAL_OURS,		/* a regular file of the caller: may be replaced */
	FINAL_DEVICE,		/* a device or FIFO of the caller or root: written in place */
};

/*
 * Whether the final name may be written, and how. The owner is compared with the
 * real uid: under sudo that is root, so a file another user put in a shared
 * directory under the name root is about to use is theirs, and stays.
 */
static int check_final(struct outfile *of, struct stat *st)
{
	uid_t me = getuid();

	if (fstatat(of->dirfd, of->name, st, AT_SYMLINK_NOFOLLOW)) {
		int err = -errno;

		if (err == -ENOENT)
			return FINAL_ABSENT;
		pr_warn("cannot write %s: %s\n", of->path, strerror(-err));
		return err;
	}
	if (S_ISLNK(st->st_mode)) {
		pr_warn("%s is a symbolic link: not written through it (name the file it "
			"points to)\n", of->path);
		return -ELOOP;
	}
	if (S_ISDIR(st->st_mode)) {
		pr_warn("cannot write %s: %s\n", of->path, strerror(EISDIR));
		return -EISDIR;
	}
	/* The system's devices are root's; a FIFO someone else made is theirs. */
	if ((S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode)) && (st->st_uid == me || !st->st_uid))
		return FINAL_DEVICE;
	if (st->st_uid != me) {
		pr_warn("%s belongs to uid %u, not to uid %u that runs pybpfprof: not "
			"replaced (remove it or choose another name)\n", of->path,
			(unsigned)st->st_uid, (unsigned)me);
		return -EPERM;
	}
	if (!S_ISREG(st->st_mode)) {
		pr_warn("%s exists and is not a regular file: not replaced\n", of->path);
		return -EEXIST;
	}
	return FINAL_OURS;
}

static void reset(struct outfile *of)
{
	memset(of, 0, sizeof(*of));
	of->dirfd = -1;
}

/* A fresh hidden name; O_EXCL makes a guess by someone else harmless, this only
 * makes a clash unlikely. */
static void tmp_name(char *buf, size_t len)
{
	unsigned long long r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (unsigned long long)ts.tv_nsec * 2654435761u ^ (unsigned long long)getpid() << 32;
	}
	snprintf(buf, len, ".pybpfprof-%016llx.tmp", r);
}

static int create_tmp(struct outfile *of)
{
	int fd = -1, err = -EEXIST;

	for (int tries = 0; tries < 16 && err == -EEXIST; tries++) {
		tmp_name(of->tmp, sizeof(of->tmp));
		fd = openat(of->dirfd, of->tmp,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644);
		err = fd < 0 ? -errno : 0;
	}
	if (err) {
		of->tmp[0] = '\0';
		return err;
	}
	of->f = fdopen(fd, "w");
	if (!of->f) {
		err = -errno;
		close(fd);
		unlinkat(of->dirfd, of->tmp, 0);
		of->tmp[0] = '\0';
	}
	return err;
}

static int open_in_place(struct outfile *of, const struct stat *want)
{
	struct stat st;
	int fd, err;

	fd = openat(of->dirfd, of->name, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* The same node that was checked, not one swapped in since. */
	if (fstat(fd, &st) || st.st_dev != want->st_dev || st.st_ino != want->st_ino) {
		close(fd);
		return -EAGAIN;
	}
	of->f = fdopen(fd, "w");
	if (!of->f) {
		err = -errno;
		close(fd);
		return err;
	}
	of->in_place = 1;
	return 0;
}

static int valid_name(const char *name)
{
	return *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..") &&
	       strlen(name) <= NAME_MAX;
}

static int start(struct outfile *of)
{
	struct stat st;
	int kind = FINAL_ABSENT, err;

	if (of->name[0]) {
		kind = check_final(of, &st);
		if (kind < 0)
			return kind;
	}
	err = kind == FINAL_DEVICE ? open_in_place(of, &st) : create_tmp(of);
	if (err)
		pr_warn("cannot write %s: %s\n", of->path, strerror(-err));
	return err;
}

int outfile__openat(struct outfile *of, int dirfd, const char *dir, const char *name)
{
	int err;

	reset(of);
	of->dirfd = dirfd;
	snprintf(of->path, sizeof(of->path), "%s/%s", dir, name);
	if (!valid_name(name)) {
		pr_warn("cannot write %s: %s\n", of->path, strerror(EINVAL));
		return -EINVAL;
	}
	snprintf(of->name, sizeof(of->name), "%s", name);
	err = start(of);
	if (err)
		outfile__abort(of);
	return err;
}

int outfile__open(struct outfile *of, const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	const char *base = slash ? slash + 1 : path;
	char dir[PATH_MAX];
	int err;

	reset(of);
	if (!path)
		of->path[0] = '.';	/* reset() left the rest zero */
	else
		snprintf(of->path, sizeof(of->path), "%s", path);
	if (path && (strlen(path) >= sizeof(of->path) || !valid_name(base))) {
		err = !*base || !strcmp(base, ".") || !strcmp(base, "..") ? -EISDIR :
									    -ENAMETOOLONG;
		pr_warn("cannot write %s: %s\n", of->path, strerror(-err));
		return err;
	}
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	of->own_dirfd = 1;
	of->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Writable but not readable is enough to make files there. */
	if (of->dirfd < 0 && errno == EACCES)
		of->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (of->dirfd < 0) {
		err = -errno;
		pr_warn("cannot write %s: %s\n", of->path, strerror(-err));
		goto fail;
	}
	if (base)
		snprintf(of->name, sizeof(of->name), "%s", base);
	err = start(of);
	if (err)
		goto fail;
	return 0;
fail:
	outfile__abort(of);
	return err;
}

int outfile__name(struct outfile *of, const char *name)
{
	struct stat st;
	int kind;

	if (!valid_name(name) || of->in_place)
		return -EINVAL;
	snprintf(of->name, sizeof(of->name), "%s", name);
	snprintf(of->path, sizeof(of->path), "%s", name);
	kind = check_final(of, &st);
	if (kind == FINAL_DEVICE) {
		pr_warn("%s exists and is not a regular file: not replaced\n", of->path);
		return -EEXIST;
	}
	return kind < 0 ? kind : 0;
}

/* Renames the temporary over the final name, checking that name again just before.
 * What is left between the check and the rename is harmless: rename replaces a
 * directory entry and never writes into the inode it held, and where another user
 * could swap that entry (a directory they may write, not sticky) they could have
 * removed the file anyway. Every error is reported here. */
static int place(struct outfile *of)
{
	struct stat st;
	int kind, err = -EEXIST;

	for (int tries = 0; tries < 3 && err == -EEXIST; tries++) {
		kind = check_final(of, &st);
		if (kind < 0)
			return kind;
		if (kind == FINAL_DEVICE) {
			pr_warn("%s exists and is not a regular file: not replaced\n", of->path);
			return -EEXIST;
		}
		if (kind == FINAL_OURS) {
			err = renameat(of->dirfd, of->tmp, of->dirfd, of->name) ? -errno : 0;
			break;
		}
		/* Absent: make sure it still is when the rename lands. */
		err = renameat2(of->dirfd, of->tmp, of->dirfd, of->name, RENAME_NOREPLACE) ?
			      -errno : 0;
		if (err == -EINVAL || err == -ENOSYS)	/* a file system without it */
			err = renameat(of->dirfd, of->tmp, of->dirfd, of->name) ? -errno : 0;
	}
	if (err)
		pr_warn("cannot write %s: %s\n", of->path, strerror(-err));
	return err;
}

int outfile__commit(struct outfile *of, int durable)
{
	struct stat st;
	int fd, kind, err = 0;

	if (!of->f)
		return -EBADF;
	fd = fileno(of->f);
	errno = 0;
	if (fflush(of->f) || ferror(of->f))
		err = errno ? -errno : -EIO;
	if (!err && !of->in_place && !of->name[0])
		err = -EINVAL;
	if (!err && !of->in_place) {
		kind = check_final(of, &st);
		if (kind < 0) {
			outfile__abort(of);	/* reported */
			return kind;
		}
		/* Keep the permissions of a file replaced: a profile kept private
		 * (command lines, paths) stays private. */
		if (kind == FINAL_OURS && fchmod(fd, st.st_mode & 0777))
			err = -errno;
	}
	if (!err && durable && !of->in_place && fsync(fd))
		err = -errno;
	if (fclose(of->f) && !err)
		err = -errno;
	of->f = NULL;
	if (err)
		pr_warn("writing %s: %s\n", of->path, strerror(-err));
	else if (!of->in_place)
		err = place(of);
	if (!err) {
		of->tmp[0] = '\0';	/* it is the final file now */
		/* The rename itself; a directory opened O_PATH cannot, and then waits. */
		if (durable && !of->in_place)
			fsync(of->dirfd);
	}
	outfile__abort(of);
	return err;
}

void outfile__abort(struct outfile *of)
{
	if (of->f)
		fclose(of->f);
	of->f = NULL;
	if (of->tmp[0] && of->dirfd >= 0)
		unlinkat(of->dirfd, of->tmp, 0);
	of->tmp[0] = '\0';
	if (of->own_dirfd && of->dirfd >= 0)
		close(of->dirfd);
	of->dirfd = -1;
	of->own_dirfd = 0;
}
