// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof convert`: a profile file (.pbp) written out again in other formats, with
 * the bytes `record` would have written in them.
 */
#include <stdio.h>

#include "base/exitcodes.h"
#include "cmd/cli.h"
#include "cmd/outputs.h"
#include "output/profile_file.h"

static const char convert_help[] =
	"Usage:\n"
	"  pybpfprof convert PROFILE.pbp -o OUT [-o OUT...] [-f FORMAT]\n"
	"\n"
	"Writes a profile that record (-o FILE.pbp) or the agent saved in other formats,\n"
	"as many as -o names, each in the format its suffix says: the same bytes record\n"
	"would have written in that format, so one recording serves every viewer:\n"
	"\n"
	"  pybpfprof record -p 1234 -d 30 -o app.pbp\n"
	"  pybpfprof convert app.pbp -o app.svg -o app.speedscope.json\n"
	"  pybpfprof report app.pbp\n"
	"\n"
	"PROFILE may be '-' (standard input).\n"
	"\n"
	"Output:\n"
	"  -o, --output FILE      where to write ('-' = standard output); repeatable, up to\n"
	"                         8. An existing FILE is replaced only at the end, and\n"
	"                         only if it is yours; a symbolic link is refused\n"
	CLI_FORMATS_HELP
	"  -v, --verbose          more diagnostics\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 written; 1 a file could not be written; 2 bad command line, or an\n"
	"output that may not be replaced; 10 PROFILE cannot be read, is not a pybpfprof\n"
	"profile file, is corrupt or is of a later format version.\n";

int convert_cli__main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct outputs outs = { 0 };
	struct profile_file pf = { 0 };
	const char *format = NULL, *input;
	int opt, verbose = 0, code;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":o:f:vh", longopts, NULL)) != -1) {
		if (opt == 'o')
			code = outputs__add(&outs, "convert", optarg) ? EXIT_USAGE : CLI_GO_ON;
		else if (opt == 'f')
			format = optarg, code = CLI_GO_ON;
		else
			code = cli__common_option("convert", convert_help, opt, argv, &verbose);
		if (code != CLI_GO_ON)
			return code;
	}
	if (optind == argc)
		return cli__usage_error("convert", "%s", "no profile to convert: give PROFILE.pbp");
	input = argv[optind++];
	code = cli__end_options("convert", argc, argv, verbose);
	if (!code)
		code = outputs__choose(&outs, "convert", format, 1);
	if (!code && outputs__open(&outs))
		code = EXIT_USAGE;
	if (!code)
		code = cli__load_profile("convert", input, &pf);
	if (!code && outputs__write(&outs, &pf.p))
		code = EXIT_RUNTIME;
	if (!code)
		outputs__say_written(&outs);
	outputs__abort(&outs);
	profile_file__free(&pf);
	return code;
}
