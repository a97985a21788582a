/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target for profile_file__parse(): a profile file comes from whoever wrote
 * it, and convert, report and diff read it as root as readily as as its owner. Any byte
 * string must be refused with a reason, or give a profile that every writer and every
 * report can write (to /dev/null) without reading out of bounds. The input is the
 * inflated file: gzip is zlib's to check.
 */
#include <stdio.h>
#include <stdlib.h>

#include "output/out_report.h"
#include "output/profile_file.h"
#include "output/writers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const formats[] = { "collapsed", "svg", "html", "heatmap", "speedscope", "pprof",
				       "chrome", "pbp" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct profile_file pf;
	char why[160];

	if (!null)
		null = fopen("/dev/null", "w");
	if (profile_file__parse(data, size, &pf, why, sizeof(why))) {
		if (!why[0])
			abort();	/* every refusal says why */
		return 0;
	}
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		writers__find(formats[i])->write(null, &pf.p);
	for (int by = REPORT_BY_FUNCTION; by <= REPORT_BY_TASK; by++) {
		struct report_opts o = { .by = (enum report_by)by, .limit = 5 };

		out_report__write(null, &pf.p, &o);
	}
	profile_file__free(&pf);
	return 0;
}
