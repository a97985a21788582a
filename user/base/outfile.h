/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Files written to a path someone named (record's -o and --stats-file, the agent's
 * profiles), so that nothing the user keeps is lost and a root process never writes
 * into a file of someone else's choosing.
 *
 * The content goes to a new hidden file beside the final one (created O_EXCL |
 * O_NOFOLLOW, so no link is followed and no existing inode is reused) and is renamed
 * over the final name only at commit; until then an existing file is untouched, so a
 * run that fails or is killed leaves it as it was. The final name may be replaced
 * only when it is absent or a regular file owned by the caller's real uid: a symbolic
 * link, someone else's file or a directory is refused with a one-line message. A
 * character device or FIFO owned by the caller or root (/dev/null) is written in place.
 */
#ifndef PBP_OUTFILE_H
#define PBP_OUTFILE_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

struct outfile {
	FILE *f;		/* write here between open and commit/abort */
	int dirfd;		/* the directory of both names */
	int own_dirfd;		/* dirfd was opened here */
	int in_place;		/* a device or FIFO: no temporary, no rename */
	char name[NAME_MAX + 1];	/* final name in dirfd; "" until outfile__name() */
	char tmp[48];		/* the temporary's name in dirfd */
	char path[PATH_MAX];	/* the final path, for messages */
};

/* Opens a temporary file beside @path and checks that @path may be replaced; @path
 * itself is not touched. @path NULL: a file in the current directory, named later
 * with outfile__name(). Errors are reported (one line) and returned as -errno. */
int outfile__open(struct outfile *of, const char *path);
/* The same for @name (no '/') in the directory @dirfd, which the caller keeps open
 * until commit or abort; @dir is its path, for messages. */
int outfile__openat(struct outfile *of, int dirfd, const char *dir, const char *name);
/* Names the final file (no '/', same directory) when outfile__open() had none. */
int outfile__name(struct outfile *of, const char *name);
/* Puts the content in place under the final name: checks the name again, renames the
 * temporary over it (@durable: fsync the file before and the directory after). On
 * any error the temporary is removed and the final name left as it was. */
int outfile__commit(struct outfile *of, int durable);
/* Drops the temporary; the final name stays as it was. Safe after commit too. */
void outfile__abort(struct outfile *of);

#endif
