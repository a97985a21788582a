// SPDX-License-Identifier: GPL-2.0-only
/*
 * The command-line parsing every subcommand shares (cli.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "base/exitcodes.h"
#include "base/log.h"
#include "pbp_abi.h"
#include "output/profile_file.h"
#include "sample/perf_clock.h"

int cli__usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fputs("pybpfprof: ", stderr);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see 'pybpfprof %s --help')\n", cmd);
	return EXIT_USAGE;
}

int cli__parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno || end == s || *end || *s == '-' || *v < min || *v > max ? -EINVAL : 0;
}

int cli__parse_rate(const char *cmd, const char *s, uint32_t *rate)
{
	uint32_t max = perf_clock__max_rate();
	unsigned long v;

	if (!cli__parse_uint(s, 1, max, &v)) {
		*rate = (uint32_t)v;
		return 0;
	}
	fprintf(stderr, "pybpfprof: invalid rate '%s': expected 1 to %u Hz, the kernel's "
		"limit (kernel.perf_event_max_sample_rate) (see 'pybpfprof %s --help')\n", s,
		max, cmd);
	return EXIT_USAGE;
}

int cli__common_option(const char *cmd, const char *help, int opt, char **argv, int *verbose)
{
	switch (opt) {
	case 'v':
		(*verbose)++;
		return CLI_GO_ON;
	case 'h':
		fputs(help, stdout);
		return EXIT_OK;
	case ':':
		return cli__usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
	default:
		return cli__usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
	}
}

void cli__set_verbosity(int verbose)
{
	log__set_level(verbose >= 2 ? LOG_DEBUG : verbose ? LOG_INFO : LOG_WARN);
}

int cli__end_options(const char *cmd, int argc, char **argv, int verbose)
{
	cli__set_verbosity(verbose);
	if (optind < argc)
		return cli__usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int cli__select_option(const char *cmd, int opt, struct cli_select *sel)
{
	int err = 0;

	switch (opt) {
	case 'a':
		sel->all = 1;
		return 1;
	case CLI_OPT_PID_FILTER:
		err = proc_filter__add_pids(&sel->filter, optarg);
		if (err == -EINVAL)
			return cli__usage_error(cmd, "invalid --pid-filter '%s': expected "
						"PID[,PID...]", optarg);
		break;
	case CLI_OPT_CONTAINER:
		err = proc_filter__add_container(&sel->filter, optarg);
		if (err == -EINVAL)
			return cli__usage_error(cmd, "invalid --container '%s': expected a "
						"container id (4 characters or more), a pod UID "
						"or a cgroup name", optarg);
		break;
	case CLI_OPT_EXCLUDE:
		err = proc_filter__add_exclude(&sel->filter, optarg);
		if (err == -EINVAL)
			return cli__usage_error(cmd, "%s", "empty --exclude pattern");
		break;
	case CLI_OPT_MAX_PROCESSES:
		if (cli__parse_uint(optarg, 1, PBP_TARGETS_MAX, &sel->max_processes))
			return cli__usage_error(cmd, "invalid --max-processes '%s': expected 1 to "
						CLI_STR(PBP_TARGETS_MAX), optarg);
		return 1;
	default:
		return 0;
	}
	if (err) {
		fprintf(stderr, "pybpfprof: %s\n", strerror(-err));
		return EXIT_RUNTIME;
	}
	return 1;
}

int cli__select_check(const char *cmd, const struct cli_select *sel)
{
	if (!sel->all && (!proc_filter__empty(&sel->filter) || sel->max_processes))
		return cli__usage_error(cmd, "%s", "--pid-filter, --container, --exclude and "
					"--max-processes narrow -a: add -a");
	return 0;
}

int cli__run_selecting(int argc, char **argv,
		       int (*with)(int argc, char **argv, struct cli_select *sel))
{
	struct cli_select sel = { 0 };
	int code = with(argc, argv, &sel);

	proc_filter__free(&sel.filter);
	return code;
}

int cli__sampling_option(const char *cmd, int opt, struct session_opts *s)
{
	int bad = 0;

	switch (opt) {
	case 'r':
		bad = cli__parse_rate(cmd, optarg, &s->rate_hz);
		break;
	case CLI_OPT_NO_BPF:
		s->no_bpf = 1;
		break;
	case CLI_OPT_NO_HOLD:
		s->no_hold = 1;
		break;
	case CLI_OPT_IDLE:
		s->idle = 1;
		break;
	case CLI_OPT_GIL:
		s->gil = 1;
		break;
	case CLI_OPT_ASYNC:
		s->async_tasks = 1;
		break;
	case CLI_OPT_THREADS:
		s->threads = 1;
		break;
	case CLI_OPT_NATIVE_ALL:
		s->native_all = 1;
		/* fall through */
	case CLI_OPT_NATIVE:
		s->native = 1;
		break;
	case CLI_OPT_NATIVE_STACK:
		bad = cli__parse_native_stack(cmd, optarg, &s->native_stack);
		break;
	case CLI_OPT_NATIVE_UNWIND:
		bad = cli__parse_native_unwind(cmd, optarg, &s->native_unwind);
		break;
	case CLI_OPT_CLOCK:
		bad = cli__parse_clock(cmd, optarg, &s->clock);
		break;
	case CLI_OPT_MODE:
		bad = cli__parse_mode(cmd, optarg, &s->mode);
		break;
	case CLI_OPT_MIN_BLOCK:
		bad = cli__parse_min_block(cmd, optarg, &s->min_block_us);
		break;
	default:
		return 0;
	}
	return bad ? EXIT_USAGE : 1;
}

int cli__sampling_check(const char *cmd, struct session_opts *s, int all)
{
	int code;

	if (s->gil && s->mode == SESSION_OFF_CPU)
		return cli__usage_error(cmd, "%s", "--gil keeps on-CPU samples, which --mode "
					"off-cpu has none of: use --mode wall");
	if (s->no_bpf && s->mode == SESSION_WALL)
		s->idle = 1;
	code = cli__clock_check(cmd, s->clock, s->no_bpf, s->mode, all);
	if (code)
		return code;
	return cli__native_check(cmd, s->native, s->native_stack, s->native_unwind, s->no_bpf);
}

int cli__parse_mode(const char *cmd, const char *arg, enum session_mode *mode)
{
	if (session__parse_mode(arg, mode))
		return cli__usage_error(cmd, "invalid --mode '%s': expected cpu, wall or off-cpu",
					arg);
	return 0;
}

int cli__parse_native_stack(const char *cmd, const char *arg, uint32_t *bytes)
{
	if (session__parse_native_stack(arg, bytes))
		return cli__usage_error(cmd, "invalid --native-stack '%s': expected 4K to 64K "
					"(bytes, or with K)", arg);
	return 0;
}

int cli__parse_clock(const char *cmd, const char *arg, enum sampler_clock *c)
{
	if (sampler__parse_clock(arg, c))
		return cli__usage_error(cmd, "invalid --clock '%s': expected timer, thread or "
					"tick", arg);
	return 0;
}

int cli__clock_check(const char *cmd, enum sampler_clock c, int no_bpf, enum session_mode mode,
		     int system_wide)
{
	if (c == SAMPLER_CLOCK_THREAD && system_wide)
		return cli__usage_error(cmd, "%s", "--clock thread gives each thread of a target "
					"a clock; -a ticks every CPU: use timer or tick");
	if (c != SAMPLER_CLOCK_TIMER && no_bpf)
		return cli__usage_error(cmd, "%s", "--clock chooses what runs the BPF program; "
					"--no-bpf samples on a timer of its own");
	if (c != SAMPLER_CLOCK_TIMER && mode == SESSION_OFF_CPU)
		return cli__usage_error(cmd, "%s", "--clock times on-CPU samples; "
					"--mode off-cpu takes none");
	return 0;
}

int cli__parse_native_unwind(const char *cmd, const char *arg, enum session_native_unwind *u)
{
	if (session__parse_native_unwind(arg, u))
		return cli__usage_error(cmd, "invalid --native-unwind '%s': expected auto, dwarf "
					"or fp", arg);
	return 0;
}

int cli__native_check(const char *cmd, int native, uint32_t native_stack,
		      enum session_native_unwind unwind, int no_bpf)
{
	if (native_stack && !native)
		return cli__usage_error(cmd, "%s", "--native-stack sizes what --native copies: "
					"add --native");
	if (unwind != SESSION_UNWIND_DEFAULT && !native)
		return cli__usage_error(cmd, "%s", "--native-unwind says how --native finds C "
					"frames: add --native");
	if (native && no_bpf)
		return cli__usage_error(cmd, "%s", "--native needs BPF: the registers and stack "
					"are copied while the thread is stopped; --no-bpf cannot do "
					"that");
	return 0;
}

int cli__parse_min_block(const char *cmd, const char *arg, uint32_t *us)
{
	unsigned long v;

	if (cli__parse_uint(arg, 0, SESSION_MIN_BLOCK_MAX_US, &v))
		return cli__usage_error(cmd, "invalid --min-block '%s': expected 0 to 1000000 "
					"microseconds", arg);
	*us = (uint32_t)v;
	return 0;
}

int cli__load_profile(const char *cmd, const char *path, struct profile_file *pf)
{
	char why[160];

	if (!profile_file__load(path, pf, why, sizeof(why)))
		return 0;
	fprintf(stderr, "pybpfprof: %s: %s (see 'pybpfprof %s --help')\n",
		path[0] == '-' && !path[1] ? "standard input" : path, why, cmd);
	return EXIT_BAD_PROFILE;
}
