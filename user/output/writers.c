// SPDX-License-Identifier: GPL-2.0-only
/* The table of output formats; see writers.h. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "output/out_chrome.h"
#include "output/out_collapsed.h"
#include "output/out_heatmap.h"
#include "output/out_svg.h"
#include "output/out_pprof.h"
#include "output/out_speedscope.h"
#include "output/profile_file.h"
#include "output/writers.h"

/* Longer suffixes first: "x.speedscope.json" must not be taken for "x.json". */
static const struct writer writers[] = {
	/* inferno and flamegraph.pl name collapsed stacks .folded or .collapsed */
	{ "collapsed", ".txt", { ".folded", ".collapsed" }, 0, out_collapsed__write },
	{ "svg", ".svg", { 0 }, 0, out_svg__write },
	/* every sampled source file, each line shaded by its share */
	{ "heatmap", ".heatmap.html", { 0 }, 0, out_heatmap__write, 1 },
	{ "html", ".html", { ".htm" }, 0, out_svg__write_html },
	{ "speedscope", ".speedscope.json", { 0 }, 1, out_speedscope__write },
	{ "pprof", ".pb.gz", { 0 }, 0, out_pprof__write },
	{ "chrome", ".trace.json", { 0 }, 1, out_chrome__write },
	/* everything the profile holds, for convert, report and diff (profile_file.h) */
	{ "pbp", ".pbp", { 0 }, 1, profile_file__write, 1 },
};

#define NWRITERS (sizeof(writers) / sizeof(writers[0]))

const struct writer *writers__find(const char *name)
{
	for (size_t i = 0; i < NWRITERS; i++)
		if (!strcmp(writers[i].name, name))
			return &writers[i];
	return NULL;
}

static int ends_with(const char *path, size_t len, const char *suffix)
{
	size_t n = suffix ? strlen(suffix) : 0;

	return n && len > n && !strcasecmp(path + len - n, suffix);
}

const struct writer *writers__for_path(const char *path)
{
	size_t len = strlen(path);

	for (size_t i = 0; i < NWRITERS; i++) {
		const struct writer *w = &writers[i];

		if (ends_with(path, len, w->suffix))
			return w;
		for (size_t k = 0; k < sizeof(w->also) / sizeof(w->also[0]); k++)
			if (ends_with(path, len, w->also[k]))
				return w;
	}
	return NULL;
}

int writers__has_suffix(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	const char *dot = strrchr(base, '.');

	if (!dot || dot == base)
		return 0;
	for (const char *c = dot + 1; *c; c++)
		if (isalpha((unsigned char)*c))
			return 1;
	return 0;
}

void writers__names(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < NWRITERS && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s", i ? ", " : "", writers[i].name);
}

void writers__suffixes(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < NWRITERS && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s", i ? ", " : "", writers[i].suffix);
}
