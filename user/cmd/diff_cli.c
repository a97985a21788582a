// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof diff BASE.pbp NEW.pbp`: whether a change made a real difference, as a
 * table of the functions that changed most and NEW's flame graph coloured where the
 * change is beyond sampling noise (profile_diff.h, out_diff.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/exitcodes.h"
#include "base/outfile.h"
#include "cmd/cli.h"
#include "output/out_diff.h"
#include "output/profile_file.h"

static const char diff_help[] =
	"Usage:\n"
	"  pybpfprof diff BASE.pbp NEW.pbp [-o DIFF.svg|DIFF.html] [--per-second] [--no-scale]\n"
	"                 [--alpha A] [-l N]\n"
	"\n"
	"Compares two saved profiles (record -o FILE.pbp) of one program, before and after\n"
	"a change, and says what changed beyond sampling noise. Standard output gets the\n"
	"functions that grew or shrank the most, with the time of each in BASE and NEW\n"
	"and a verdict; -o writes NEW's flame graph (widths from NEW) in which a frame is\n"
	"red if it grew, blue if it shrank, the deeper the larger the change, and grey\n"
	"when its change is within noise. A frame that only BASE has is in the table.\n"
	"\n"
	"  pybpfprof record -r 997 -o before.pbp -- python3 bench.py\n"
	"  pybpfprof record -r 997 -o after.pbp -- python3 bench.py\n"
	"  pybpfprof diff before.pbp after.pbp -o diff.svg\n"
	"\n"
	"The test, for each flame-graph node (and each function of the table), with a\n"
	"samples in BASE and b in NEW: under the null hypothesis that its cost changed\n"
	"only as the whole program's speed did, each of its a + b samples is NEW's with\n"
	"a probability p0 that the two profiles' sampling rates give (and their\n"
	"durations, with --per-second) and that speed, so b ~ Binomial(a + b, p0) given\n"
	"a + b. The two-sided exact binomial test rejects it when its p-value is below A\n"
	"divided by the number of nodes compared (Bonferroni: noise alone colours any\n"
	"node at all with a chance below A). The speed is what the code that did not\n"
	"change took in NEW for its time in BASE: the same work takes more CPU time on a\n"
	"busy machine (40% more between two identical runs, measured on a shared VM) in\n"
	"every function alike. It is the median of the nodes' own times' ratios, refined\n"
	"over the nodes it explains, so the functions that changed do not move it; the\n"
	"table's header says it; --no-scale takes it as 1. Wall and off-CPU\n"
	"counts are time: the test counts it in samples of the clock's period (time /\n"
	"(1 / rate)); a wait is measured, not sampled, so there the test is conservative.\n"
	"Shares of each profile (normalised to 100%) are not compared: making one function\n"
	"slower shrinks every other function's share, which would read as faster.\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE      the flame graph: .svg, or an HTML page (.html, .htm). An\n"
	"                         existing FILE is replaced only at the end, and only if it\n"
	"                         is yours; a symbolic link is refused\n"
	"      --per-second       compare time per second of each profile, for a service\n"
	"                         profiled twice for different lengths; by default totals\n"
	"                         are compared, for the same work run to its end (a\n"
	"                         command, a benchmark)\n"
	"      --no-scale         compare times as they are, with no correction for the\n"
	"                         program's speed: for runs on one quiet machine\n"
	"      --alpha A          the chance of any false alarm, 0 < A < 1 (default 0.01)\n"
	"  -l, --limit N          print the first N functions (default 20; 0: all)\n"
	"  -v, --verbose          more diagnostics\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 compared; 1 a file could not be written; 2 bad command line, an\n"
	"output that may not be replaced, or profiles that cannot compare (different\n"
	"modes: cpu, wall, off-cpu; different units); 10 BASE or NEW cannot be read, is\n"
	"not a pybpfprof profile file, is corrupt or is of a later format version.\n";

enum { DIFF_OPT_PER_SECOND = 700, DIFF_OPT_ALPHA, DIFF_OPT_NO_SCALE };

struct diff_args {
	const char *base, *new, *out;
	int html;
	struct diff_opts o;
	size_t limit;
};

static int has_suffix(const char *path, const char *suffix)
{
	size_t n = strlen(path), k = strlen(suffix);

	return n > k && !strcasecmp(path + n - k, suffix);
}

static int parse_option(int opt, struct diff_args *a)
{
	unsigned long v;
	char *end;

	switch (opt) {
	case 'o':
		a->out = optarg;
		a->html = has_suffix(optarg, ".html") || has_suffix(optarg, ".htm");
		if (!a->html && !has_suffix(optarg, ".svg"))
			return cli__usage_error("diff", "-o '%s': a diff is a flame graph, name it "
						".svg or .html", optarg);
		return CLI_GO_ON;
	case DIFF_OPT_PER_SECOND:
		a->o.basis = DIFF_PER_SECOND;
		return CLI_GO_ON;
	case DIFF_OPT_NO_SCALE:
		a->o.raw = 1;
		return CLI_GO_ON;
	case DIFF_OPT_ALPHA:
		errno = 0;
		a->o.alpha = strtod(optarg, &end);
		if (errno || end == optarg || *end || !(a->o.alpha > 0 && a->o.alpha < 1))
			return cli__usage_error("diff", "invalid --alpha '%s': expected a "
						"probability between 0 and 1", optarg);
		return CLI_GO_ON;
	case 'l':
		if (cli__parse_uint(optarg, 0, 1000000000, &v))
			return cli__usage_error("diff", "invalid --limit '%s': expected a number "
						"of rows, 0 for all", optarg);
		a->limit = v;
		return CLI_GO_ON;
	}
	return 0;
}

/* CLI_GO_ON to compare, else the exit status (EXIT_OK after --help). */
static int parse_args(int argc, char **argv, struct diff_args *a)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "per-second", no_argument, NULL, DIFF_OPT_PER_SECOND },
		{ "alpha", required_argument, NULL, DIFF_OPT_ALPHA },
		{ "no-scale", no_argument, NULL, DIFF_OPT_NO_SCALE },
		{ "limit", required_argument, NULL, 'l' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt, verbose = 0, code;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":o:l:vh", longopts, NULL)) != -1) {
		code = parse_option(opt, a);
		if (!code)
			code = cli__common_option("diff", diff_help, opt, argv, &verbose);
		if (code != CLI_GO_ON)
			return code;
	}
	if (argc - optind < 2)
		return cli__usage_error("diff", "%s", "diff compares two profiles: give BASE.pbp "
					"NEW.pbp");
	a->base = argv[optind++];
	a->new = argv[optind++];
	code = cli__end_options("diff", argc, argv, verbose);
	return code ? code : CLI_GO_ON;
}

/* Loads, compares and writes; @of is open when a->out is set. */
static int run(const struct diff_args *a, struct outfile *of)
{
	struct profile_file base = { 0 }, new = { 0 };
	struct profile_diff d = { 0 };
	char why[256];
	int code, err;

	code = cli__load_profile("diff", a->base, &base);
	if (!code)
		code = cli__load_profile("diff", a->new, &new);
	if (code)
		goto cleanup;
	if (profile_diff__check(&base.p, &new.p, a->o.basis, why, sizeof(why))) {
		code = cli__usage_error("diff", "%s", why);
		goto cleanup;
	}
	err = profile_diff__build(&d, &base.p, &new.p, &a->o);
	if (err) {
		fprintf(stderr, "pybpfprof: comparing the profiles: %s\n", strerror(-err));
		code = EXIT_RUNTIME;
		goto cleanup;
	}
	if (out_diff__write_table(stdout, &d, a->limit) || fflush(stdout)) {
		fprintf(stderr, "pybpfprof: writing the table to standard output failed\n");
		code = EXIT_RUNTIME;
		goto cleanup;
	}
	if (a->out) {
		err = out_diff__write_svg(of->f, &d, a->html);
		if (!err && fflush(of->f))
			err = -errno;
		if (err)
			fprintf(stderr, "pybpfprof: writing %s: %s\n", of->path, strerror(-err));
		else
			err = outfile__commit(of, 0);
		code = err ? EXIT_RUNTIME : EXIT_OK;
	}
cleanup:
	profile_diff__free(&d);
	profile_file__free(&new);
	profile_file__free(&base);
	return code;
}

int diff_cli__main(int argc, char **argv)
{
	struct diff_args a = { .o = { .basis = DIFF_TOTALS, .alpha = DIFF_ALPHA_DEFAULT },
			       .limit = REPORT_LIMIT_DEFAULT };
	struct outfile of = { .dirfd = -1 };
	int code = parse_args(argc, argv, &a);

	if (code != CLI_GO_ON)
		return code;
	/* Opened first, as convert does: an output that may not be replaced is found
	 * before any work. */
	if (a.out && outfile__open(&of, a.out))
		return EXIT_USAGE;
	code = run(&a, &of);
	if (!code && a.out)
		fprintf(stderr, "pybpfprof: wrote %s\n", of.path);
	outfile__abort(&of);
	return code;
}
