// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cgroup.h"
#include "base/proc.h"

/* Where systemd mounts cgroup v2: alone, or beside the v1 hierarchies. */
static const char *const mounts[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };

/* Every line of /proc/PID/cgroup, v1 hierarchies first, each path up to PATH_MAX. */
#define CGROUP_FILE_MAX (4 * CGROUP_PATH_MAX)

/* A path the kernel wrote, but of names whoever made the cgroups chose: it must be
 * absolute, and stay below the namespace's root. */
static bool path_ok(const char *p, size_t n)
{
	if (!n || p[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t end = i + 1;

		if (p[i] != '/')
			continue;
		while (end < n && p[end] != '/')
			end++;
		if ((end - i == 2 && p[i + 1] == '.') ||
		    (end - i == 3 && p[i + 1] == '.' && p[i + 2] == '.'))
			return false;
	}
	return true;
}

int cgroup__parse(const char *text, char *path, size_t len)
{
	const char *line, *end;

	for (line = text; line && *line; line = end ? end + 1 : NULL) {
		size_t n;

		end = strchr(line, '\n');
		n = end ? (size_t)(end - line) : strlen(line);
		if (n < 3 || strncmp(line, "0::", 3))
			continue;
		line += 3;
		n -= 3;
		/* Cut short, or not a path this process can open. */
		if (!end || n >= len || !path_ok(line, n))
			return -ENOENT;
		memcpy(path, line, n);
		path[n] = '\0';
		return 0;
	}
	return -ENOENT;
}

int cgroup__of(pid_t pid, char *path, size_t len)
{
	char *buf = malloc(CGROUP_FILE_MAX);
	int err;

	if (!buf)
		return -ENOMEM;
	err = proc__cgroup(pid, buf, CGROUP_FILE_MAX);
	if (!err)
		err = cgroup__parse(buf, path, len);
	free(buf);
	return err;
}

static int open_below(int mount_fd, const char *rel)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_XDEV,
	};
	int fd = (int)syscall(SYS_openat2, mount_fd, rel, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = openat(mount_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static bool is_cgroup2(int fd)
{
	struct statfs st;

	return !fstatfs(fd, &st) && st.f_type == CGROUP2_SUPER_MAGIC;
}

int cgroup__open(const char *path)
{
	const char *rel = path[1] ? path + 1 : ".";

	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		int mount_fd = open(mounts[i], O_PATH | O_DIRECTORY | O_CLOEXEC), fd;

		if (mount_fd < 0)
			continue;
		if (!is_cgroup2(mount_fd)) {
			close(mount_fd);
			continue;
		}
		fd = open_below(mount_fd, rel);
		close(mount_fd);
		if (fd >= 0 && !is_cgroup2(fd)) {
			close(fd);
			fd = -ENOENT;
		}
		return fd;
	}
	return -ENOENT;
}

bool cgroup__within(const char *path, const char *scope)
{
	size_t n = strlen(scope);

	if (!strcmp(scope, "/"))
		return true;
	return !strncmp(path, scope, n) && (path[n] == '\0' || path[n] == '/');
}

void cgroup__widen(char *scope, const char *path)
{
	while (!cgroup__within(path, scope)) {
		char *slash = strrchr(scope, '/');

		if (!slash || slash == scope) {
			strcpy(scope, "/");
			return;
		}
		*slash = '\0';
	}
}
