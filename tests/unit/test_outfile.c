// SPDX-License-Identifier: GPL-2.0-only
/*
 * outfile: content appears under the final name only at commit, and whole; what
 * the name held before is untouched by an abort; a symbolic link, another user's
 * file or FIFO and a directory are refused, also when they appear between open and
 * commit; a device is written in place; no temporary is ever left behind. Run as
 * root (as the suite is), so that refusing is our doing, not the kernel's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "base/outfile.h"

#define OTHER_UID 65534		/* nobody */

static char dir[] = "/tmp/pbp-outfile-XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void put(const char *name, const char *text)
{
	char p[512];
	FILE *f;

	path_of(p, sizeof(p), name);
	f = fopen(p, "w");
	CHECK(f);
	fputs(text, f);
	CHECK(!fclose(f));
}

static int holds(const char *name, const char *text)
{
	char p[512], buf[256] = "";
	FILE *f;
	size_t n;

	path_of(p, sizeof(p), name);
	f = fopen(p, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return !strcmp(buf, text);
}

/* No hidden temporary in the directory. */
static int no_temporaries(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int clean = 1;

	CHECK(d);
	while ((de = readdir(d)))
		if (de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			clean = 0;
	closedir(d);
	return clean;
}

static void clear(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir '%s'", dir, dir);
	CHECK(!system(cmd));
}

static void replaces_at_commit_only(void)
{
	struct outfile of;
	struct stat st;
	char p[512];

	put("own.txt", "old\n");
	path_of(p, sizeof(p), "own.txt");
	CHECK(!chmod(p, 0600));
	CHECK(!outfile__open(&of, p));
	fputs("new\n", of.f);
	CHECK(!fflush(of.f));
	CHECK(holds("own.txt", "old\n"));	/* not before commit */
	CHECK(!outfile__commit(&of, 0));
	CHECK(holds("own.txt", "new\n"));
	CHECK(!stat(p, &st) && (st.st_mode & 0777) == 0600);	/* its mode kept */
	CHECK(no_temporaries());

	/* An abort leaves it be. */
	CHECK(!outfile__open(&of, p));
	fputs("newer\n", of.f);
	outfile__abort(&of);
	outfile__abort(&of);	/* twice is harmless */
	CHECK(holds("own.txt", "new\n"));
	CHECK(no_temporaries());

	/* A new file: 0644 under the umask, durable commit too. */
	path_of(p, sizeof(p), "fresh.txt");
	CHECK(!outfile__open(&of, p));
	fputs("fresh\n", of.f);
	CHECK(!outfile__commit(&of, 1));
	CHECK(holds("fresh.txt", "fresh\n"));
	CHECK(!stat(p, &st) && (st.st_mode & 0777) == 0644);
	CHECK(no_temporaries());
}

static void refuses(void)
{
	struct outfile of;
	char p[512], victim[512];

	put("victim", "precious\n");
	path_of(victim, sizeof(victim), "victim");

	path_of(p, sizeof(p), "link");
	CHECK(!symlink(victim, p));
	CHECK(outfile__open(&of, p) == -ELOOP);

	path_of(p, sizeof(p), "theirs");
	put("theirs", "theirs\n");
	CHECK(!chown(p, OTHER_UID, -1));
	CHECK(outfile__open(&of, p) == -EPERM);
	CHECK(holds("theirs", "theirs\n"));

	path_of(p, sizeof(p), "fifo");
	CHECK(!mkfifo(p, 0666) && !chown(p, OTHER_UID, -1));
	CHECK(outfile__open(&of, p) == -EPERM);
	path_of(p, sizeof(p), "socket-like");
	CHECK(!mknod(p, S_IFSOCK | 0644, 0));
	CHECK(outfile__open(&of, p) == -EEXIST);

	path_of(p, sizeof(p), "sub");
	CHECK(!mkdir(p, 0755));
	CHECK(outfile__open(&of, p) == -EISDIR);
	path_of(p, sizeof(p), "sub/");
	CHECK(outfile__open(&of, p) == -EISDIR);
	path_of(p, sizeof(p), "missing/x.txt");
	CHECK(outfile__open(&of, p) == -ENOENT);
	CHECK(holds("victim", "precious\n"));
	CHECK(no_temporaries());
}

/* What is put under the final name while the run goes on is checked again. */
static void refuses_what_appears_before_commit(void)
{
	struct outfile of;
	char p[512], victim[512];

	path_of(victim, sizeof(victim), "victim");
	path_of(p, sizeof(p), "late-link");
	CHECK(!outfile__open(&of, p));
	fputs("profile\n", of.f);
	CHECK(!symlink(victim, p));
	CHECK(outfile__commit(&of, 0) == -ELOOP);
	CHECK(holds("victim", "precious\n"));
	CHECK(no_temporaries());

	path_of(p, sizeof(p), "late-theirs");
	CHECK(!outfile__open(&of, p));
	fputs("profile\n", of.f);
	put("late-theirs", "theirs\n");
	CHECK(!chown(p, OTHER_UID, -1));
	CHECK(outfile__commit(&of, 0) == -EPERM);
	CHECK(holds("late-theirs", "theirs\n"));
	CHECK(no_temporaries());
}

static void named_later_and_devices(void)
{
	struct outfile of;
	char cwd[512];
	struct stat st;

	CHECK(getcwd(cwd, sizeof(cwd)));
	CHECK(!chdir(dir));
	CHECK(!outfile__open(&of, NULL));
	fputs("later\n", of.f);
	CHECK(outfile__name(&of, "a/b") == -EINVAL);
	CHECK(outfile__name(&of, "link") == -ELOOP);
	CHECK(!outfile__name(&of, "later.txt"));
	CHECK(!outfile__commit(&of, 0));
	CHECK(holds("later.txt", "later\n"));
	CHECK(!chdir(cwd));

	CHECK(!outfile__open(&of, "/dev/null"));
	fputs("nothing\n", of.f);
	CHECK(!outfile__commit(&of, 0));
	CHECK(!lstat("/dev/null", &st) && S_ISCHR(st.st_mode));
	CHECK(no_temporaries());
}

int main(void)
{
	umask(022);
	CHECK(geteuid() == 0);
	CHECK(mkdtemp(dir));
	replaces_at_commit_only();
	refuses();
	refuses_what_appears_before_commit();
	named_later_and_devices();
	clear();
	rmdir(dir);
	printf("test_outfile: ok\n");
	return 0;
}
