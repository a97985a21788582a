// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof record` (and `pybpfprof -a`): its options, its --help, and the checks
 * that the options make one run; record.c runs it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "base/exitcodes.h"
#include "pbp_abi.h"
#include "cmd/record.h"

static const char record_help[] =
	"Usage:\n"
	"  pybpfprof record -p PID [options]\n"
	"  pybpfprof record [options] -- CMD [ARG...]\n"
	"  pybpfprof record -a [options]     (or: pybpfprof -a [options])\n"
	"\n"
	"Samples the Python stacks of one process and writes them when profiling ends:\n"
	"after -d, when the target exits, or on Ctrl-C, SIGTERM or SIGHUP (a terminal or\n"
	"SSH session going away). Whatever was sampled is always written and the exit\n"
	"status is then 0.\n"
	"While a running process (-p) is profiled with stderr on a terminal, a status\n"
	"line there shows elapsed time, samples, threads and drops.\n"
	"\n"
	"Target:\n"
	"  -p, --pid PID          profile the running process PID\n"
	"  -- CMD [ARG...]        run CMD and profile it from its first Python code to\n"
	"                         its exit (wrappers such as env or chroot are followed);\n"
	"                         its exit status is reported at the end\n"
	"      --subprocesses     also profile the Python processes the target forks or\n"
	"                         execs (children, grandchildren...), each found within\n"
	"                         about 20 ms of its start; every stack then starts with\n"
	"                         a frame 'process PID COMMAND'. Profiling ends when all\n"
	"                         have exited. A target that is no Python (a shell, a\n"
	"                         supervisor) is a parent to watch: its Python\n"
	"                         descendants are profiled, and if none ran Python by the\n"
	"                         end, nothing is written (exit 3)\n"
	"  -a, --all              every CPython process on the host, in every container,\n"
	"                         those running now and those that start later (found\n"
	"                         at their exec or fork); each stack starts with a frame\n"
	"                         'process PID COMMAND'. Runs until -d, Ctrl-C or\n"
	"                         SIGTERM. Needs BPF; other processes cost one lookup\n"
	"                         per tick\n"
	"      --pid-filter PID[,PID...]  with -a: only these processes\n"
	"      --container ID     with -a: only processes whose cgroup path holds ID: a\n"
	"                         container id or its first characters, a pod UID, or\n"
	"                         any cgroup name (repeatable: any of them)\n"
	"      --exclude PATTERN  with -a: leave out processes whose command line or\n"
	"                         name matches the shell pattern, e.g. '*celery*'\n"
	"                         (repeatable)\n"
	"      --max-processes N  with -a: profile at most N at once (default and most:\n"
	"                         " CLI_STR(PBP_TARGETS_MAX) "); a notice says when it is reached\n"
	"\n"
	"Sampling:\n"
	"  -r, --rate HZ          samples per second of each thread's CPU time (default\n"
	"                         100; at most kernel.perf_event_max_sample_rate, 100000\n"
	"                         unless lowered; the kernel lowers it, and throttles\n"
	"                         faster clocks, when its perf interrupts take too\n"
	"                         long); --no-bpf: ticks per second of wall-clock time\n"
	"  -d, --duration SECS    profile for SECS seconds from when sampling starts\n"
	"                         (default: until the target exits); the wait for a\n"
	"                         command's first Python code is bounded by SECS too.\n"
	"                         A command runs on to its end, and\n"
	"                         its status is reported then; if it ran no Python by\n"
	"                         then, nothing is written (exit 4)\n"
	"      --stack-bytes N    data-stack bytes copied per sample (default 122880,\n"
	"                         max 131071); deeper frames are read from live memory\n"
	"      --ringbuf-mb N     ring buffer size in MiB, a power of two (default 16)\n"
	"      --no-bpf           sample from user space: every Python thread at each\n"
	"                         tick (wall clock), read from live memory without\n"
	"                         stopping the target; needs no BPF privileges. Chosen\n"
	"                         automatically, with a notice, when BPF is unavailable\n"
	"      --no-hold          --no-bpf: never stop a thread. By default a running\n"
	"                         thread whose stack changed under 16 readings in a row\n"
	"                         is held still (ptrace) for one more, some 50 us; with\n"
	"                         this its sample is reported [incomplete] instead\n"
	"      --idle             keep samples of threads that are not on a CPU\n"
	"                         (--no-bpf only: BPF sees only threads on a CPU)\n"
	"      --gil              keep only samples of the thread holding the GIL (on-CPU\n"
	"                         samples: in wall mode the waits stay)\n"
	"      --async            a sample of a thread running an asyncio task shows the\n"
	"                         task: its coroutines, then 'task NAME' and the tasks\n"
	"                         awaiting it, each at its await, in place of the event\n"
	"                         loop's frames (CPython 3.11+; the tasks that wait are\n"
	"                         charged in wall mode on 3.14+)\n"
	CLI_CLOCK_HELP
	CLI_NATIVE_HELP
	CLI_MODE_HELP
	"      --no-frame-cache   decode every frame of every sample afresh (see\n"
	"                         docs/frame-cache.md); for comparison and debugging\n"
	"\n"
	"Output:\n"
	"  -o, --output FILE      where to write the profile ('-' = standard output);\n"
	"                         default: pybpfprof-COMM-PID-DATE-TIME plus the format's\n"
	"                         suffix. Repeatable (up to 8): every file holds the\n"
	"                         same samples, e.g. -o app.pbp -o app.svg, each in\n"
	"                         the format its suffix names. Without -f, the suffix\n"
	"                         of FILE picks the format (in any case); FILE without\n"
	"                         one ('-',\n"
	"                         /dev/stdout, 'profile') gets collapsed text, and a\n"
	"                         suffix no format has (.json, .png) is refused (exit\n"
	"                         2). The profile goes to a new hidden file beside\n"
	"                         FILE, renamed over FILE at the end: an existing FILE is\n"
	"                         left as it was until then, and if the run fails.\n"
	"                         Another user's FILE (by real uid: under sudo, that is\n"
	"                         root), a symbolic link or a directory that cannot be\n"
	"                         written is refused (exit 2) before profiling\n"
CLI_FORMATS_HELP
	"      --threads          start each stack with a frame 'thread TID (NAME)', NAME\n"
	"                         being Python's name for the thread (MainThread, ...)\n"
	"      --nolineno         one frame per function, not per line: no line numbers\n"
	"      --function         show each frame at its function's first line instead of\n"
	"                         the line it was at (still one frame per function)\n"
	"      --stats-file FILE  write run statistics as JSON (samples expected,\n"
	"                         delivered, decoded, incomplete, drops, costs, ...);\n"
	"                         written as -o is\n"
	"      --report           at the end, print the profile as a table by function\n"
	"                         ('pybpfprof report --help' explains it), on standard\n"
	"                         output (standard error with -o -); --by WHAT, --sort\n"
	"                         KEY and -l/--limit N shape it as they do there\n"
	"  -v, --verbose          more diagnostics (twice: debug, including libbpf)\n"
	"  -h, --help             this help\n"
	"\n"
	CLI_WAITS_HELP
	"\n"
	"Privileges: root, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE; without BPF\n"
	"privileges, the process's own user (see --no-bpf).\n"
	"Exit status: see 'pybpfprof --help'.\n"
	"\n"
	"Examples:\n"
	"  sudo pybpfprof record -p 1234 -d 30 -o app.txt\n"
	"  sudo pybpfprof -a -d 60 -o host.svg --exclude '*supervisord*'\n"
	"  sudo pybpfprof record -r 1000 --threads -o - -- python3 app.py --workers 4\n"
	"  sudo pybpfprof record -p 1234 --mode wall --threads -d 30 -o waits.svg\n";

enum { OPT_STATS = 256, OPT_STACK, OPT_RINGBUF, OPT_NO_FCACHE, OPT_NOLINENO, OPT_FUNCTION,
       OPT_SUBPROCESSES, OPT_REPORT };

static const struct option longopts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "rate", required_argument, NULL, 'r' },
	{ "duration", required_argument, NULL, 'd' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "nolineno", no_argument, NULL, OPT_NOLINENO },
	{ "function", no_argument, NULL, OPT_FUNCTION },
	{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
	{ "stats-file", required_argument, NULL, OPT_STATS },
	{ "report", no_argument, NULL, OPT_REPORT },
	CLI_REPORT_LONGOPTS,
	{ "stack-bytes", required_argument, NULL, OPT_STACK },
	{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
	{ "no-frame-cache", no_argument, NULL, OPT_NO_FCACHE },
	CLI_SAMPLING_LONGOPTS,
	CLI_SELECT_LONGOPTS,
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static int usage_error(const char *fmt, const char *arg)
{
	return cli__usage_error("record", fmt, arg);
}

/* One option that is record's alone, into @o (-f into @format): CLI_GO_ON, or an exit
 * status. */
static int record_option(int opt, char **argv, struct record_opts *o, const char **format,
			 int *verbose)
{
	unsigned long v;
	char *end;

	switch (opt) {
	case 'p':
		if (cli__parse_uint(optarg, 1, 0x7fffffff, &v))
			return usage_error("invalid PID '%s'", optarg);
		o->session.pid = (pid_t)v;
		break;
	case 'd':
		errno = 0;
		o->duration_s = strtod(optarg, &end);
		if (errno || end == optarg || *end || !(o->duration_s > 0))
			return usage_error("invalid duration '%s': expected seconds > 0", optarg);
		break;
	case 'o':
		if (outputs__add(&o->outputs, "record", optarg))
			return EXIT_USAGE;
		break;
	case 'f':
		*format = optarg;
		break;
	case OPT_NOLINENO:
		o->session.nolineno = 1;
		break;
	case OPT_FUNCTION:
		o->session.function_lines = 1;
		break;
	case OPT_SUBPROCESSES:
		o->session.subprocesses = 1;
		break;
	case OPT_STATS:
		o->stats_file = optarg;
		break;
	case OPT_REPORT:
		o->report = 1;
		break;
	case OPT_STACK:
		if (cli__parse_uint(optarg, 4096, PBP_STACK_MAX - 1, &v))
			return usage_error("invalid --stack-bytes '%s': expected 4096 to 131071",
					   optarg);
		o->session.stack_cap = (uint32_t)v;
		break;
	case OPT_RINGBUF:
		if (cli__parse_uint(optarg, 1, 1024, &v) || (v & (v - 1)))
			return usage_error("invalid --ringbuf-mb '%s': expected a power of two "
					   "from 1 to 1024", optarg);
		o->session.ringbuf_mb = (uint32_t)v;
		break;
	case OPT_NO_FCACHE:
		o->session.no_frame_cache = 1;
		break;
	default:
		v = (unsigned long)report_cli__parse_option("record", opt, &o->report_opts);
		if (v)
			return (int)v;
		return cli__common_option("record", record_help, opt, argv, verbose);
	}
	return CLI_GO_ON;
}

/* What to profile: a PID, the command after "--" or every process (-a), one of them. */
static int record_target(int argc, char **argv, struct cli_select *sel, struct record_opts *o)
{
	int code;

	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--"))
			return usage_error("unexpected argument '%s' (put a command after '--')",
					   argv[optind]);
		o->session.cmd = &argv[optind];
	}
	if (o->session.pid && o->session.cmd)
		return usage_error("%s", "give either -p PID or a command after --, not both");
	code = cli__select_check("record", sel);
	if (!code)
		code = cli__sampling_check("record", &o->session, sel->all);
	if (code)
		return code;
	if (sel->all) {
		if (o->session.pid || o->session.cmd)
			return usage_error("%s", "-a profiles every process: give -a, -p PID or a "
					   "command after --, one of them");
		if (o->session.no_bpf)
			return usage_error("%s", "-a needs BPF: one program samples every process; "
					   "--no-bpf cannot do that");
		if (o->session.subprocesses)
			return usage_error("%s", "-a already follows every process: drop "
					   "--subprocesses");
		o->session.system_wide = 1;
		o->session.filter = &sel->filter;
		o->session.max_processes = (uint32_t)sel->max_processes;
	}
	return 0;
}

static int record_with(int argc, char **argv, struct cli_select *sel)
{
	struct record_opts o = {
		.session = {
			.rate_hz = 100,
			.stack_cap = PBP_STACK_DEFAULT,
			.ringbuf_mb = 16,
			.min_block_us = SESSION_MIN_BLOCK_DEFAULT_US,
		},
	};
	const char *format = NULL;
	int opt, verbose = 0, code;

	o.report_opts.limit = REPORT_LIMIT_DEFAULT;

	/* '+': stop at the first non-option so the command's own options stay its own;
	 * ':': report a missing argument apart from an unknown option. */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:ap:r:d:o:f:l:vh", longopts, NULL)) != -1) {
		code = cli__select_option("record", opt, sel);
		if (!code)
			code = cli__sampling_option("record", opt, &o.session);
		if (code > 1)
			return code;
		if (code)
			continue;
		code = record_option(opt, argv, &o, &format, &verbose);
		if (code != CLI_GO_ON)
			return code;
	}
	cli__set_verbosity(verbose);
	code = record_target(argc, argv, sel, &o);
	if (!code)
		code = outputs__choose(&o.outputs, "record", format, 0);
	if (code)
		return code;
	o.session.timeline = outputs__timeline(&o.outputs);
	o.session.sources = outputs__sources(&o.outputs);
	if (!o.report && (o.report_opts.by || o.report_opts.sort ||
			  o.report_opts.limit != REPORT_LIMIT_DEFAULT))
		return usage_error("%s", "--by, --sort and --limit shape --report's table: give "
				   "--report too");
	if (o.session.nolineno && o.session.function_lines)
		return usage_error("%s", "--nolineno and --function both say which line to "
				   "show: give one");
	if (!o.session.pid && !o.session.cmd && !o.session.system_wide)
		return usage_error("%s", "nothing to profile: give -p PID, -a or a command after "
				   "--");
	return record__run(&o);
}

int record_cli__main(int argc, char **argv)
{
	return cli__run_selecting(argc, argv, record_with);
}
