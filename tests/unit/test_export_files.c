// SPDX-License-Identifier: GPL-2.0-only
/*
 * Rotated profile files: names of the documented form (and only those are ours),
 * content written whole, no temporary left behind, the directory's total of our
 * files kept under the cap by deleting the oldest, and other files never touched.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/export_files.h"
#include "check.h"


static void names(void)
{
	static const char *const ours[] = {
		"app-1-20231114T221320.123Z.pb.gz", "my.app_x-2-99991231T235959.999Z.pb.gz",
		"a-b-c-4194304-20240101T000000.000Z.pb.gz",
	};
	static const char *const not_ours[] = {
		"app-1-20231114T221320Z.pb.gz", "app-20231114T221320.123Z.pb.gz",
		".app-1-20231114T221320.123Z.pb.gz", ".app-1-20231114T221320.123Z.pb.gz.tmp",
		"app-1-20231114T221320.123Z.pb", "app-x-20231114T221320.123Z.pb.gz",
		"a p-1-20231114T221320.123Z.pb.gz", "notes.txt", "profile.pb.gz", "",
		"-1-20231114T221320.123Z.pb.gz",
	};

	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		CHECK(export_files__is_ours(ours[i]));
	for (size_t i = 0; i < sizeof(not_ours) / sizeof(not_ours[0]); i++)
		CHECK(!export_files__is_ours(not_ours[i]));
}

static void touch(const char *dir, const char *name, size_t size)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f);
	for (size_t i = 0; i < size; i++)
		fputc('x', f);
	fclose(f);
}

static int exists(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* Our files in @dir and their total size. */
static size_t ours_in(const char *dir, uint64_t *total)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	CHECK(d);
	*total = 0;
	while ((de = readdir(d))) {
		char path[512];
		struct stat st;

		CHECK(!strstr(de->d_name, ".tmp"));
		if (!export_files__is_ours(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		CHECK(!stat(path, &st));
		*total += (uint64_t)st.st_size;
		n++;
	}
	closedir(d);
	return n;
}

static void rotation(void)
{
	char dir[] = "/tmp/pbp-agent-files-XXXXXX";
	static uint8_t data[1000];
	struct export_files *f;
	char path[512], first[512] = "";
	uint64_t total;

	CHECK(mkdtemp(dir));
	/* Not ours, though close: must survive every rotation. */
	touch(dir, "notes.txt", 5000);
	touch(dir, "other-1-20000101T000000Z.pb.gz", 5000);
	/* Nothing can be made under a regular file. */
	snprintf(path, sizeof(path), "%s/notes.txt/sub", dir);
	CHECK(export_files__new(path, 0, 0, NULL, &f) == -ENOTDIR);
	CHECK(!export_files__new(dir, 3500, 1, "my app", &f));
	for (uint32_t i = 0; i < 10; i++) {
		struct export_profile p = { .data = data, .len = sizeof(data), .pid = 7,
					    .end_unix_ns = 1700000000000000000LL +
							   i * 10000000000LL };
		struct export_item *it = export_queue__item_new(&p);
		struct stat st;

		CHECK(it);
		memset(data, 'a' + (int)i, sizeof(data));
		memset(it->data, 'a' + (int)i, it->len);
		CHECK(!export_files__write(f, it, path, sizeof(path)));
		export_queue__item_free(it);
		CHECK(!stat(path, &st) && st.st_size == sizeof(data));
		if (!i)
			snprintf(first, sizeof(first), "%s", path);
		CHECK(ours_in(dir, &total) <= 3 && total <= 3500);
	}
	CHECK(strstr(first, "/my_app-7-20231114T221320.000Z.pb.gz"));
	CHECK(access(first, F_OK) != 0);	/* the oldest went */
	CHECK(strstr(path, "/my_app-7-20231114T221450.000Z.pb.gz"));
	CHECK(ours_in(dir, &total) == 3 && total == 3000);
	CHECK(exists(dir, "notes.txt") && exists(dir, "other-1-20000101T000000Z.pb.gz"));
	export_files__free(f);
	printf("rotation kept 3 files, %llu bytes\n", (unsigned long long)total);
	unlink(path);
	{
		DIR *d = opendir(dir);
		struct dirent *de;

		while ((de = readdir(d))) {
			if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

static void remove_tree(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(!system(cmd));
}

/* A missing directory is made, parents too, mode 0750. */
static void creates_dir(void)
{
	char dir[] = "/tmp/pbp-agent-mkdir-XXXXXX", sub[600];
	struct export_files *f;
	struct stat st;

	umask(022);
	CHECK(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/a/b/", dir);
	CHECK(!export_files__new(sub, 0, 0, NULL, &f));
	export_files__free(f);
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	CHECK(!stat(sub, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0750);
	snprintf(sub, sizeof(sub), "%s/a", dir);
	CHECK(!stat(sub, &st) && (st.st_mode & 0777) == 0750);
	remove_tree(dir);
}

/*
 * The temporary is a new file: a name someone guessed in advance, here a hard link
 * to another file under the name a profile's temporary once had, is neither
 * truncated nor written through.
 */
static void temporary_is_new(void)
{
	char dir[] = "/tmp/pbp-agent-tmp-XXXXXX", path[600], victim[600], planted[600];
	static uint8_t data[100];
	struct export_profile p = { .data = data, .len = sizeof(data), .pid = 7,
				    .end_unix_ns = 1700000000000000000LL };
	struct export_item *it;
	struct export_files *f;
	struct stat st;

	CHECK(mkdtemp(dir));
	touch(dir, "victim", 42);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(planted, sizeof(planted), "%s/.app-7-20231114T221320.000Z.pb.gz.tmp", dir);
	CHECK(!link(victim, planted));
	CHECK(!export_files__new(dir, 0, 0, "app", &f));
	memset(data, 'p', sizeof(data));
	it = export_queue__item_new(&p);
	CHECK(it);
	CHECK(!export_files__write(f, it, path, sizeof(path)));
	export_queue__item_free(it);
	export_files__free(f);
	CHECK(!stat(path, &st) && st.st_size == sizeof(data));
	CHECK(!stat(victim, &st) && st.st_size == 42 && st.st_nlink == 2);
	remove_tree(dir);
}

int main(void)
{
	names();
	rotation();
	creates_dir();
	temporary_is_new();
	printf("test_export_files: ok\n");
	return 0;
}
