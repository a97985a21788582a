// SPDX-License-Identifier: GPL-2.0-only
/*
 * Frame classes by file name; see frame_class.h. Only the path is looked at, never the
 * file system: the profile may be written on another machine than the one it ran on,
 * and the target's files live under /proc/PID/root anyway.
 */
#include <ctype.h>
#include <string.h>

#include "profile/frame_class.h"

/*
 * Does @s start with "pythonX.Y/" (or "pythonX.Yt/", the free-threaded build)? The
 * version is required so that a user's own directory called "python" is not taken
 * for the standard library.
 */
static int is_versioned_python_dir(const char *s)
{
	if (strncmp(s, "python", 6))
		return 0;
	s += 6;
	if (!isdigit((unsigned char)*s))
		return 0;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s++ != '.' || !isdigit((unsigned char)*s))
		return 0;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s == 't')
		s++;
	return *s == '/';
}

/* A "lib/pythonX.Y/" or "lib64/pythonX.Y/" component (Fedora and SUSE use lib64). */
static int under_stdlib_dir(const char *file)
{
	for (const char *s = file; (s = strstr(s, "lib")); s++) {
		const char *rest = s + 3;

		if (s != file && s[-1] != '/')
			continue;
		if (!strncmp(rest, "64", 2))
			rest += 2;
		if (*rest == '/' && is_versioned_python_dir(rest + 1))
			return 1;
	}
	return 0;
}

enum frame_class frame_class__of(const char *file)
{
	if (!file)
		return FRAME_OTHER;
	/* Installed packages live below lib/pythonX.Y/ too: test for them first. */
	if (strstr(file, "site-packages/") || strstr(file, "dist-packages/"))
		return FRAME_THIRD_PARTY;
	if (!strncmp(file, "<frozen ", 8) || under_stdlib_dir(file))
		return FRAME_STDLIB;
	return FRAME_USER;
}
