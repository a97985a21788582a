// SPDX-License-Identifier: GPL-2.0-only
/* `pybpfprof report`: a profile file as a table in the terminal (out_report.h). */
#include <stdio.h>
#include <string.h>

#include "base/exitcodes.h"
#include "cmd/cli.h"
#include "output/out_report.h"
#include "output/profile_file.h"

static const char report_help[] =
	"Usage:\n"
	"  pybpfprof report PROFILE.pbp [--by WHAT] [--sort self|total] [-l N]\n"
	"\n"
	"Prints a saved profile (record -o FILE.pbp, or the agent's) as a table, hottest\n"
	"first: one row per function with its share of the samples, self (the samples in\n"
	"which it was the innermost frame running) and total (those in which it was on\n"
	"the stack at all, once however deep its recursion):\n"
	"\n"
	"   self% total%     self    total  function\n"
	"   61.0%  61.0%      305      305  burn (app.py:12)\n"
	"    0.0% 100.0%        0      500  main (app.py:30)\n"
	"\n"
	"A function's place is its hottest line. Counts are samples; in wall and off-CPU\n"
	"profiles they are seconds of thread time, and each row's total is split into\n"
	"time on a CPU and time in each kind of wait: runnable (ready, no CPU free), GIL,\n"
	"lock, I/O (read, write, poll, accept), sleep and other. 'record --report' prints\n"
	"the same table at the end of a run.\n"
	"\n"
	"PROFILE may be '-' (standard input).\n"
	"\n"
	"Options:\n"
	"      --by WHAT          function (the default), line, file (a source file or C\n"
	"                         object), thread, or task (asyncio tasks: a profile\n"
	"                         recorded with --async)\n"
	"      --sort KEY         self (the default) or total\n"
	"  -l, --limit N          print the first N rows (default 20; 0: all)\n"
	"  -v, --verbose          more diagnostics\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 printed; 1 standard output could not be written; 2 bad command\n"
	"line; 10 PROFILE cannot be read, is not a pybpfprof profile file, is corrupt or is\n"
	"of a later format version.\n";

int report_cli__parse_option(const char *cmd, int opt, struct report_opts *o)
{
	unsigned long v;

	switch (opt) {
	case CLI_OPT_REPORT_BY:
		if (out_report__parse_by(optarg, &o->by))
			return cli__usage_error(cmd, "unknown --by '%s': function, line, file, "
						"thread or task", optarg);
		return CLI_GO_ON;
	case CLI_OPT_REPORT_SORT:
		if (out_report__parse_sort(optarg, &o->sort))
			return cli__usage_error(cmd, "unknown --sort '%s': self or total", optarg);
		return CLI_GO_ON;
	case 'l':
		if (cli__parse_uint(optarg, 0, 1000000000, &v))
			return cli__usage_error(cmd, "invalid --limit '%s': expected a number of "
						"rows, 0 for all", optarg);
		o->limit = v;
		return CLI_GO_ON;
	}
	return 0;
}

int report_cli__main(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_REPORT_LONGOPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct report_opts o = { .limit = REPORT_LIMIT_DEFAULT };
	struct profile_file pf = { 0 };
	const char *input;
	int opt, verbose = 0, code;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":l:vh", longopts, NULL)) != -1) {
		code = report_cli__parse_option("report", opt, &o);
		if (!code)
			code = cli__common_option("report", report_help, opt, argv, &verbose);
		if (code != CLI_GO_ON)
			return code;
	}
	if (optind == argc)
		return cli__usage_error("report", "%s", "no profile to report: give PROFILE.pbp");
	input = argv[optind++];
	code = cli__end_options("report", argc, argv, verbose);
	if (!code)
		code = cli__load_profile("report", input, &pf);
	if (!code && (out_report__write(stdout, &pf.p, &o) || fflush(stdout))) {
		fprintf(stderr, "pybpfprof: writing the report to standard output failed\n");
		code = EXIT_RUNTIME;
	}
	profile_file__free(&pf);
	return code;
}
