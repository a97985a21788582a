// SPDX-License-Identifier: GPL-2.0-only
/*
 * cgroup.c's path rules on /proc/PID/cgroup texts as hosts write them (v2 alone, v2
 * beside v1) and as a cgroup namespace or a creator of cgroups can make them (a path
 * out of the namespace, dot components, no newline, too long); and the scope rules
 * (within, widen). Exits non-zero on the first mismatch, naming it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/cgroup.h"

struct parse_case {
	const char *name, *text;
	int err;
	const char *path;
};

static const struct parse_case parses[] = {
	{ "v2 alone", "0::/system.slice/app.service\n", 0, "/system.slice/app.service" },
	{ "root", "0::/\n", 0, "/" },
	{ "v2 after v1", "12:pids:/user.slice\n1:name=systemd:/x\n0::/a/b\n", 0, "/a/b" },
	{ "v1 only", "4:memory:/a\n1:cpu:/\n", -ENOENT, NULL },
	{ "outside the namespace", "0::/../../other.slice/x.scope\n", -ENOENT, NULL },
	{ "dot-dot inside", "0::/a/../b\n", -ENOENT, NULL },
	{ "dot component", "0::/a/./b\n", -ENOENT, NULL },
	{ "dot-dot at the end", "0::/a/..\n", -ENOENT, NULL },
	{ "names with dots", "0::/a..b/.c/d.\n", 0, "/a..b/.c/d." },
	{ "relative", "0::a/b\n", -ENOENT, NULL },
	{ "empty", "0::\n", -ENOENT, NULL },
	{ "no newline (cut short)", "0::/a/b", -ENOENT, NULL },
	{ "nothing", "", -ENOENT, NULL },
};

struct scope_case {
	const char *path, *scope;
	int within;
	const char *widened;
};

static const struct scope_case scopes[] = {
	{ "/a/b", "/a", 1, "/a" },
	{ "/a", "/a", 1, "/a" },
	{ "/ab", "/a", 0, "/" },
	{ "/a/b/c", "/a/x", 0, "/a" },
	{ "/x", "/", 1, "/" },
	{ "/", "/a", 0, "/" },
	{ "/a/b", "/a/b/c", 0, "/a/b" },
};

int main(void)
{
	char path[64], scope[64], big[2 * CGROUP_PATH_MAX];
	int fails = 0;

	for (size_t i = 0; i < sizeof(parses) / sizeof(parses[0]); i++) {
		const struct parse_case *c = &parses[i];
		int err = cgroup__parse(c->text, path, sizeof(path));

		if (err != c->err || (!err && strcmp(path, c->path))) {
			fprintf(stderr, "parse %s: got %d '%s', want %d '%s'\n", c->name, err,
				err ? "" : path, c->err, c->path ? c->path : "");
			fails++;
		}
	}
	/* A path longer than the caller's buffer is refused, not cut. */
	snprintf(big, sizeof(big), "0::/%0*d\n", (int)sizeof(path), 7);
	if (cgroup__parse(big, path, sizeof(path)) != -ENOENT) {
		fprintf(stderr, "parse: a path longer than the buffer was taken\n");
		fails++;
	}
	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		const struct scope_case *c = &scopes[i];

		if (cgroup__within(c->path, c->scope) != c->within) {
			fprintf(stderr, "within(%s, %s): want %d\n", c->path, c->scope, c->within);
			fails++;
		}
		strcpy(scope, c->scope);
		cgroup__widen(scope, c->path);
		if (strcmp(scope, c->widened)) {
			fprintf(stderr, "widen(%s, %s): got %s, want %s\n", c->scope, c->path,
				scope, c->widened);
			fails++;
		}
	}
	if (!fails)
		printf("test_cgroup: ok\n");
	return fails ? 1 : 0;
}
