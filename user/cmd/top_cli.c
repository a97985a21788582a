// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof top`: its options, its --help, and the checks that the options make one
 * view; top.c runs it.
 */
#include <stdio.h>

#include "cmd/cli.h"
#include "base/exitcodes.h"
#include "ui/top.h"

static const char top_help[] =
	"Usage:\n"
	"  pybpfprof top -p PID [options]\n"
	"  pybpfprof top -a [options]\n"
	"\n"
	"Shows, refreshed every second, the functions a running Python process spends its\n"
	"time in, busiest first:\n"
	"\n"
	"    %Own %Total   Own(s) Total(s)  Function (file)\n"
	"    74.8   74.8    22.41    22.41  fa (/srv/ratio.py)\n"
	"     0.0  100.0     0.00    29.96  parent (/srv/ratio.py)\n"
	"\n"
	"%Own is the share of the last second's samples in which the function itself ran,\n"
	"%Total the share in which it was anywhere on the stack (once per sample, however\n"
	"deep it recurses); Own(s) and Total(s) add up the sampled time since the start.\n"
	"A function is a qualified name in a file, whatever the line. With -a, each\n"
	"process is a row too, 'process PID COMMAND', whose %Total is its share; with\n"
	"--threads, so is each thread, 'thread TID (NAME)', named as Python names it.\n"
	"With --mode wall the shares are of wall-clock time, the threads' time on and\n"
	"off the CPU, and each kind of wait ('[off-CPU: sleep]', ...) is a row whose %Own\n"
	"is the share of time spent in it.\n"
	"\n"
	"Keys: o or 1 sort by %Own (the default), t or 2 by %Total, Tab switches;\n"
	"q or Ctrl-C quits, Ctrl-Z suspends, Ctrl-L redraws. The view fits the terminal\n"
	"and follows its size; 80x24 is enough.\n"
	"\n"
	"When standard output is not a terminal, top prints a plain block every second\n"
	"instead: a time stamp line, the counts and the 20 busiest functions, with no\n"
	"escape codes.\n"
	"\n"
	"top ends on q, Ctrl-C, SIGTERM or when the target exits, then prints one line on\n"
	"stderr: the samples taken and the function with the most own time.\n"
	"\n"
	"Options:\n"
	"  -p, --pid PID          the running process to watch\n"
	"  -a, --all              every CPython process on the host instead; narrowed by\n"
	"                         --pid-filter, --container, --exclude and\n"
	"                         --max-processes as for 'record -a'\n"
	"  -r, --rate HZ          samples per second of CPU time (default 100; at most\n"
	"                         kernel.perf_event_max_sample_rate)\n"
	"      --no-bpf           sample from user space, as for record (see 'pybpfprof\n"
	"                         record --help'); chosen with a notice when BPF is\n"
	"                         unavailable\n"
	"      --no-hold          --no-bpf: never stop a thread (as for record)\n"
	"      --idle             count threads that are not on a CPU too (--no-bpf only)\n"
	"      --gil              count only the thread holding the GIL\n"
	"      --threads          each thread as a row, 'thread TID (NAME)', its %Total\n"
	"                         its share (NAME: threading's name for it, else the\n"
	"                         kernel's)\n"
	"      --async            asyncio tasks as rows, 'task NAME', each with the time\n"
	"                         of the samples in it or in tasks it awaits (as for\n"
	"                         record --async; CPython 3.11+)\n"
	"      --clock HOW        timer (default) or tick, as for record\n"
	"      --native, --native-stack SIZE, --native-unwind HOW  C frames too, as for\n"
	"                         record (see 'pybpfprof record --help')\n"
	"      --mode MODE        cpu (default), wall or off-cpu, as for record\n"
	"      --min-block US     as for record (default " CLI_STR(SESSION_MIN_BLOCK_DEFAULT_US) ")\n"
	"  -v, --verbose          more diagnostics, shown after the view closes\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 ended by q, Ctrl-C, SIGTERM or the target's exit; 1 unexpected\n"
	"failure; 2 bad command line; 3 no such process; 4 not a CPython process;\n"
	"5 unsupported CPython version; 6 missing privileges; 7 the kernel lacks BPF\n"
	"support. See 'pybpfprof --help'.\n"
	"\n"
	"Example:\n"
	"  sudo pybpfprof top -p 1234\n";

static int top_with(int argc, char **argv, struct cli_select *sel)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "rate", required_argument, NULL, 'r' },
		CLI_SAMPLING_LONGOPTS,
		CLI_SELECT_LONGOPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct top_opts o = {
		.session = { .rate_hz = 100, .min_block_us = SESSION_MIN_BLOCK_DEFAULT_US },
	};
	struct session_opts *s = &o.session;
	unsigned long v;
	int opt, verbose = 0, code;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ap:r:vh", longopts, NULL)) != -1) {
		code = cli__select_option("top", opt, sel);
		if (!code)
			code = cli__sampling_option("top", opt, s);
		if (code > 1)
			return code;
		if (code)
			continue;
		if (opt == 'p') {
			if (cli__parse_uint(optarg, 1, 0x7fffffff, &v))
				return cli__usage_error("top", "invalid PID '%s'", optarg);
			s->pid = (pid_t)v;
			continue;
		}
		code = cli__common_option("top", top_help, opt, argv, &verbose);
		if (code != CLI_GO_ON)
			return code;
	}
	code = cli__end_options("top", argc, argv, verbose);
	if (code)
		return code;
	code = cli__select_check("top", sel);
	if (code)
		return code;
	if (sel->all && s->pid)
		return cli__usage_error("top", "%s", "give either -a or -p PID, not both");
	if (sel->all && s->no_bpf)
		return cli__usage_error("top", "%s", "-a needs BPF; --no-bpf cannot do that");
	code = cli__sampling_check("top", s, sel->all);
	if (code)
		return code;
	s->system_wide = sel->all;
	s->filter = &sel->filter;
	s->max_processes = (uint32_t)sel->max_processes;
	if (!s->pid && !s->system_wide)
		return cli__usage_error("top", "%s", "nothing to watch: give -p PID or -a");
	return top__run(&o);
}

int top_cli__main(int argc, char **argv)
{
	return cli__run_selecting(argc, argv, top_with);
}
