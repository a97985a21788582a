// SPDX-License-Identifier: GPL-2.0-only
/* The table of output formats; see writers.h. */
#include <stdio.h>
#include <string.h>

#include "out_chrome.h"
#include "out_collapsed.h"
#include "out_svg.h"
#include "out_pprof.h"
#include "out_speedscope.h"
#include "writers.h"

/* Longer suffixes first: "x.speedscope.json" must not be taken for "x.json". */
static const struct writer writers[] = {
	{ "collapsed", ".txt", 0, out_collapsed__write },
	{ "svg", ".svg", 0, out_svg__write },
	{ "speedscope", ".speedscope.json", 1, out_speedscope__write },
	{ "pprof", ".pb.gz", 0, out_pprof__write },
	{ "chrome", ".trace.json", 1, out_chrome__write },
};

#define NWRITERS (sizeof(writers) / sizeof(writers[0]))

const struct writer *writers__find(const char *name)
{
	for (size_t i = 0; i < NWRITERS; i++)
		if (!strcmp(writers[i].name, name))
			return &writers[i];
	return NULL;
}

const struct writer *writers__for_path(const char *path)
{
	size_t len = strlen(path);

	for (size_t i = 0; i < NWRITERS; i++) {
		size_t n = strlen(writers[i].suffix);

		if (len > n && !strcmp(path + len - n, writers[i].suffix))
			return &writers[i];
	}
	return NULL;
}

void writers__names(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < NWRITERS && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s", i ? ", " : "", writers[i].name);
}
