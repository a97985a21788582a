// SPDX-License-Identifier: GPL-2.0-only
/* Rotated profile files (pprof, or pybpfprof's own) in a directory; see export_files.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/export_files.h"
#include "base/log.h"
#include "base/outfile.h"
#include "base/vec.h"

#define SUFFIX ".pb.gz"
#define SUFFIX_PBP ".pbp"	/* output-format = pbp: the item's file_data */
#define STAMP_LEN 20		/* "YYYYMMDDTHHMMSS.mmmZ" */

struct export_files {
	char *dir;
	char *app_name;
	int dirfd;
	uint64_t max_bytes;
	int fsync;
};

void export_files__free(struct export_files *f)
{
	if (!f)
		return;
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f->dir);
	free(f->app_name);
	free(f);
}

/* mkdir -p: each missing component, mode 0750 (profiles carry command lines). */
static int make_dirs(const char *dir)
{
	char *p = strdup(dir);
	int err = 0;

	if (!p)
		return -ENOMEM;
	for (char *c = p + 1, end; ; c++) {
		if (*c && *c != '/')
			continue;
		end = *c;
		*c = '\0';
		if (mkdir(p, 0750) && errno != EEXIST) {
			err = -errno;
			pr_warn("output directory %s: cannot create %s: %s\n", dir, p,
				strerror(-err));
			break;
		}
		*c = end;
		if (!end)
			break;
	}
	free(p);
	return err;
}

int export_files__new(const char *dir, uint64_t max_bytes, int fsync,
		      const char *app_name, struct export_files **out)
{
	struct export_files *f = calloc(1, sizeof(*f));
	int err;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->dirfd < 0 && errno == ENOENT && *dir) {
		err = make_dirs(dir);
		if (err)
			goto fail;
		f->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (f->dirfd < 0) {
		err = -errno;
		pr_warn("output directory %s: %s\n", dir, strerror(-err));
		goto fail;
	}
	err = -ENOMEM;
	f->dir = strdup(dir);
	f->app_name = strdup(app_name && *app_name ? app_name : "pybpfprof");
	if (!f->dir || !f->app_name)
		goto fail;
	f->max_bytes = max_bytes;
	f->fsync = fsync;
	*out = f;
	return 0;
fail:
	export_files__free(f);
	return err;
}

static int is_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '.' || ch == '-';
}

static int digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int ends_with(const char *name, size_t len, const char *suffix)
{
	size_t s = strlen(suffix);

	return len >= s && !strcmp(name + len - s, suffix);
}

/* Where the UTC stamp of one of our names starts. */
static const char *stamp_of(const char *name)
{
	size_t len = strlen(name);
	size_t s = ends_with(name, len, SUFFIX) ? sizeof(SUFFIX) - 1 : sizeof(SUFFIX_PBP) - 1;

	return name + len - s - STAMP_LEN;
}

/* APP-PID-YYYYMMDDTHHMMSS.mmmZ.pb.gz (or .pbp), APP made of [A-Za-z0-9_.-], not starting
 * with '.': files of either format count against the cap, whichever is written now. */
int export_files__is_ours(const char *name)
{
	size_t len = strlen(name), s;
	const char *stamp, *pid_end, *pid;

	s = ends_with(name, len, SUFFIX) ? sizeof(SUFFIX) - 1 :
	    ends_with(name, len, SUFFIX_PBP) ? sizeof(SUFFIX_PBP) - 1 : 0;
	if (!s || len < 1 + 1 + 1 + 1 + STAMP_LEN + s)
		return 0;
	stamp = stamp_of(name);
	if (!digits(stamp, 8) || stamp[8] != 'T' || !digits(stamp + 9, 6) || stamp[15] != '.' ||
	    !digits(stamp + 16, 3) || stamp[19] != 'Z' || stamp[-1] != '-')
		return 0;
	pid_end = stamp - 1;
	pid = pid_end;
	while (pid > name && pid[-1] >= '0' && pid[-1] <= '9')
		pid--;
	if (pid == pid_end || pid - name < 2 || pid[-1] != '-' || name[0] == '.')
		return 0;
	for (const char *c = name; c < pid - 1; c++)
		if (!is_name_char(*c))
			return 0;
	return 1;
}

struct our_file {
	char name[256];
	struct timespec mtime;
	uint64_t size;
};

static int older(const void *a, const void *b)
{
	const struct our_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	/* Same time: the name's own UTC stamp decides, then the name. */
	int c = strncmp(stamp_of(x->name), stamp_of(y->name), STAMP_LEN);

	return c ? c : strcmp(x->name, y->name);
}

/* Deletes our oldest files while their total is over the cap, sparing @keep. */
static int enforce_cap(struct export_files *f, const char *keep)
{
	struct our_file *files = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	DIR *d;
	int fd, err = 0;

	if (!f->max_bytes)
		return 0;
	fd = openat(f->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!export_files__is_ours(de->d_name) || strlen(de->d_name) >= sizeof(files->name))
			continue;
		if (fstatat(f->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		err = vec__reserve((void **)&files, &cap, n + 1, sizeof(*files), 64);
		if (err)
			goto cleanup;
		snprintf(files[n].name, sizeof(files[n].name), "%s", de->d_name);
		files[n].mtime = st.st_mtim;
		files[n].size = (uint64_t)st.st_size;
		total += files[n].size;
		n++;
	}
	if (total <= f->max_bytes)
		goto cleanup;
	qsort(files, n, sizeof(*files), older);
	for (size_t i = 0; i < n && total > f->max_bytes; i++) {
		if (!strcmp(files[i].name, keep))
			continue;
		if (unlinkat(f->dirfd, files[i].name, 0) && errno != ENOENT) {
			err = -errno;
			pr_warn("output directory %s: deleting %s: %s\n", f->dir, files[i].name,
				strerror(-err));
			goto cleanup;
		}
		total -= files[i].size;
	}
cleanup:
	closedir(d);
	free(files);
	return err;
}

int export_files__write(struct export_files *f, const struct export_item *it, char *path,
			size_t pathlen)
{
	const char *app = it->app_name ? it->app_name : f->app_name;
	int64_t ns = it->end_unix_ns ? it->end_unix_ns : it->start_unix_ns;
	time_t secs = (time_t)(ns / 1000000000LL);
	struct outfile of;
	char name[200];
	struct tm tm;
	size_t n = 0;
	int err;

	/* The app name in a file name: only [A-Za-z0-9_.-], never a leading dot. */
	for (const char *c = app; *c && n < 64; c++)
		name[n++] = is_name_char(*c) ? *c : '_';
	if (!n)
		name[n++] = '_';
	if (name[0] == '.')
		name[0] = '_';
	gmtime_r(&secs, &tm);
	snprintf(name + n, sizeof(name) - n, "-%u-%04d%02d%02dT%02d%02d%02d.%03dZ%s",
		 it->pid, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		 tm.tm_sec, (int)(ns / 1000000 % 1000), it->file_data ? SUFFIX_PBP : SUFFIX);
	/* A hidden temporary (never one of ours, so the cap never counts or deletes
	 * it), renamed into place: readers never see half a file. */
	err = outfile__openat(&of, f->dirfd, f->dir, name);
	if (err)
		return err;
	if (fwrite(it->file_data ? it->file_data : it->data, 1,
		   it->file_data ? it->file_len : it->len, of.f) !=
	    (it->file_data ? it->file_len : it->len)) {
		err = -EIO;
		pr_warn("output directory %s: writing %s: %s\n", f->dir, name, strerror(-err));
		outfile__abort(&of);
		return err;
	}
	err = outfile__commit(&of, f->fsync);
	if (err)
		return err;
	if (path)
		snprintf(path, pathlen, "%s/%s", f->dir, name);
	return enforce_cap(f, name);
}
