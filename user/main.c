// SPDX-License-Identifier: GPL-2.0-only
/*
 * Command line: subcommand dispatch, option parsing and --help. Everything after
 * parsing happens in the subcommand's own file.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_config.h"
#include "dump.h"
#include "exitcodes.h"
#include "log.h"
#include "pbp_abi.h"
#include "proc_filter.h"
#include "record.h"
#include "top.h"

#define PBP_VERSION "0.1.0"
#define STR_(x) #x
#define STR(x) STR_(x)

static const char main_help[] =
	"pybpfprof " PBP_VERSION " - a sampling profiler for CPython, built on eBPF\n"
	"\n"
	"Usage:\n"
	"  pybpfprof record -p PID [options]          profile a running process\n"
	"  pybpfprof record [options] -- CMD [ARG...]  run a command and profile it\n"
	"  pybpfprof -a [options]                     profile every Python process on the\n"
	"                                             host (same as record -a)\n"
	"  pybpfprof top -p PID | -a [options]        a live view of one or all processes\n"
	"  pybpfprof agent [options]                  profile every Python process\n"
	"                                             without end, a profile per process\n"
	"  pybpfprof dump -p PID                      print every Python thread's stack\n"
	"  pybpfprof dump --core CORE [--exe PYTHON] [--sysroot DIR]\n"
	"                                             the same from a core file\n"
	"  pybpfprof --help | --version\n"
	"\n"
	"Each sample is taken by a BPF program on the CPU the Python thread runs on, while\n"
	"the thread is interrupted, so stacks are consistent without pausing the target.\n"
	"See 'pybpfprof record --help', 'pybpfprof top --help' and 'pybpfprof dump\n"
	"--help' for options.\n"
	"\n"
	"Supported interpreters: CPython " PBP_SUPPORTED_VERSIONS " (GIL builds).\n"
	"\n"
	"Privileges: root, or the capabilities CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE,\n"
	"e.g. sudo setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep ./pybpfprof\n"
	"The kernel needs BTF (/sys/kernel/btf/vmlinux) and Linux 5.17 or later (bpf_loop).\n"
	"Without them, pybpfprof samples from user space (--no-bpf) when it may read the\n"
	"target's memory: a process of the same user (ptrace allowed), or CAP_SYS_PTRACE.\n"
	"\n"
	"Exit status:\n"
	"  0    profile written (also after Ctrl-C, SIGTERM, SIGHUP, -d expiring or the\n"
	"       target exiting)\n"
	"       top: ended by q, Ctrl-C, SIGTERM or the target exiting\n"
	"  1    unexpected failure while profiling\n"
	"  2    bad command line, or an output file that cannot be written or may not be\n"
	"       replaced (-o, --stats-file), found before profiling; agent: bad config\n"
	"  3    no such process, or it exited before profiling began; -a: no Python\n"
	"       process ran, or none passed --pid-filter/--container/--exclude, during\n"
	"       the whole run (nothing is written but --stats-file)\n"
	"  4    the target is not a CPython process\n"
	"  5    unsupported CPython version\n"
	"  6    missing privileges: BPF is not allowed and neither is reading the\n"
	"       target's memory, or the file holding its interpreter cannot be opened\n"
	"  7    the kernel lacks BTF, BPF or perf-event support, or a BPF feature\n"
	"       the sampler uses (Linux 5.17+; the message names it)\n"
	"  8    dump: the core file cannot be read, is truncated or is not a core\n"
	"  9    dump: a binary the core names is not on this host, or is not the one the\n"
	"       process ran (give --exe or --sysroot)\n"
	"  126  the command after -- is not executable\n"
	"  127  the command after -- was not found\n";

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
	"                         have exited\n"
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
	"                         " STR(PBP_TARGETS_MAX) "); a notice says when it is reached\n"
	"\n"
	"Sampling:\n"
	"  -r, --rate HZ          samples per second per CPU (default 100, 1-10000)\n"
	"  -d, --duration SECS    stop after SECS seconds (default: until the target\n"
	"                         exits)\n"
	"      --stack-bytes N    data-stack bytes copied per sample (default 122880,\n"
	"                         max 131071); deeper frames are read from live memory\n"
	"      --ringbuf-mb N     ring buffer size in MiB, a power of two (default 16)\n"
	"      --no-bpf           sample from user space: every Python thread at each\n"
	"                         tick (wall clock), read from live memory without\n"
	"                         stopping the target; needs no BPF privileges. Chosen\n"
	"                         automatically, with a notice, when BPF is unavailable\n"
	"      --idle             keep samples of threads that are not on a CPU\n"
	"                         (--no-bpf only: BPF sees only threads on a CPU)\n"
	"      --gil              keep only samples of the thread holding the GIL\n"
	"      --no-frame-cache   decode every frame of every sample afresh (see\n"
	"                         docs/frame-cache.md); for comparison and debugging\n"
	"\n"
	"Output:\n"
	"  -o, --output FILE      where to write the profile ('-' = standard output);\n"
	"                         default: pybpfprof-COMM-PID-DATE-TIME plus the format's\n"
	"                         suffix. Without -f, the suffix of FILE picks the\n"
	"                         format. The profile goes to a new hidden file beside\n"
	"                         FILE, renamed over FILE at the end: an existing FILE is\n"
	"                         left as it was until then, and if the run fails.\n"
	"                         Another user's FILE (by real uid: under sudo, that is\n"
	"                         root), a symbolic link or a directory that cannot be\n"
	"                         written is refused (exit 2) before profiling\n"
	"  -f, --format FORMAT    collapsed (.txt, the default): one line per distinct\n"
	"                         stack, 'frame;frame;...;frame COUNT', root first, each\n"
	"                         Python frame 'QUALNAME (FILENAME:LINE)'; for\n"
	"                         flamegraph.pl, inferno or speedscope\n"
	"                         svg (.svg): an interactive flame graph in one file that\n"
	"                         works offline in any browser: hover, click to zoom,\n"
	"                         Ctrl-F to search; colours tell your code, the standard\n"
	"                         library and third-party packages apart\n"
	"                         speedscope (.speedscope.json): speedscope's own format,\n"
	"                         one profile per thread, samples in time order\n"
	"                         pprof (.pb.gz): gzip-compressed profile.proto for go\n"
	"                         tool pprof, Pyroscope, Parca, Grafana; samples and CPU\n"
	"                         time, with thread id, thread name and pid labels\n"
	"                         chrome (.trace.json): Chrome trace events, a track per\n"
	"                         thread (Perfetto UI, chrome://tracing, speedscope)\n"
	"                         Stacks whose walk did not reach the thread's first\n"
	"                         frame start with '[incomplete]'\n"
	"      --threads          start each stack with a frame 'thread TID'\n"
	"      --nolineno         one frame per function, not per line: no line numbers\n"
	"      --function         show each frame at its function's first line instead of\n"
	"                         the line it was at (still one frame per function)\n"
	"      --stats-file FILE  write run statistics as JSON (samples expected,\n"
	"                         delivered, decoded, incomplete, drops, costs, ...);\n"
	"                         written as -o is\n"
	"  -v, --verbose          more diagnostics (twice: debug, including libbpf)\n"
	"  -h, --help             this help\n"
	"\n"
	"Privileges: root, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE; without BPF\n"
	"privileges, the process's own user (see --no-bpf).\n"
	"Exit status: see 'pybpfprof --help'.\n"
	"\n"
	"Examples:\n"
	"  sudo pybpfprof record -p 1234 -d 30 -o app.txt\n"
	"  sudo pybpfprof -a -d 60 -o host.svg --exclude '*supervisord*'\n"
	"  sudo pybpfprof record -r 1000 --threads -o - -- python3 app.py --workers 4\n";

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
	"process is a row too, 'process PID COMMAND', whose %Total is its share.\n"
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
	"  -r, --rate HZ          samples per second per CPU (default 100, 1-10000)\n"
	"      --no-bpf           sample from user space, as for record (see 'pybpfprof\n"
	"                         record --help'); chosen with a notice when BPF is\n"
	"                         unavailable\n"
	"      --idle             count threads that are not on a CPU too (--no-bpf only)\n"
	"      --gil              count only the thread holding the GIL\n"
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

static const char dump_help[] =
	"Usage:\n"
	"  pybpfprof dump -p PID\n"
	"  pybpfprof dump --core CORE [--exe PYTHON] [--sysroot DIR]\n"
	"\n"
	"Prints the current stack of every Python thread once, like a traceback but most\n"
	"recent call first:\n"
	"\n"
	"  Thread 4242 (idle, holds the GIL):\n"
	"    File \"/srv/app.py\", line 12, in Worker.poll\n"
	"    File \"/srv/app.py\", line 30, in main\n"
	"\n"
	"Each thread is 'on CPU' (running or runnable) or 'idle', as /proc says; a core\n"
	"does not record it. '(no Python frames)' is a thread outside Python code; a last\n"
	"line '[incomplete: WHY]' marks a stack that could not be read to its first frame.\n"
	"A running process is not stopped: its stacks are read twice and read again if\n"
	"they changed in between.\n"
	"\n"
	"Target:\n"
	"  -p, --pid PID          a running process (needs ptrace access to it)\n"
	"      --core CORE        an ELF core file (kernel core dump or gdb's gcore); the\n"
	"                         files it maps are read where the core does not hold them\n"
	"      --exe PYTHON       the core's executable on this host, when it is not at the\n"
	"                         path the core names\n"
	"      --sysroot DIR      look up the paths the core names under DIR (a core from a\n"
	"                         container or chroot, or from another machine)\n"
	"  -v, --verbose          more diagnostics (twice: debug)\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 dump written; 2 bad command line; 3 no such process; 4 not a\n"
	"CPython process (or core); 5 unsupported CPython version; 6 missing privileges;\n"
	"8 the core cannot be read, is truncated or is not a core; 9 a binary the core\n"
	"names is not on this host or differs from the one the process ran. See\n"
	"'pybpfprof --help'.\n";

static const char agent_help[] =
	"Usage:\n"
	"  pybpfprof agent [--config FILE] [options]\n"
	"\n"
	"Profiles every CPython process on the host, as 'record -a' does, for as long as\n"
	"it runs. Every period it cuts one pprof profile per process that ran Python code\n"
	"and exports it, labelled host_name, pid, command, python_version and, from the\n"
	"process's cgroup, container_id, pod_uid and qos_class (Kubernetes); the labels\n"
	"are pprof sample labels too. For a DaemonSet or a systemd unit: see deploy/.\n"
	"\n"
	"Every option can also be a 'key = value' line of the config file, the key being\n"
	"the option's name without '--' (e.g. 'period = 30s'); the command line wins.\n"
	"\n"
	"Where profiles go (at least one):\n"
	"      --pyroscope-url URL        push to Pyroscope's /ingest (Grafana Pyroscope,\n"
	"                                 Grafana Cloud Profiles): http:// or https://\n"
	"      --app-name NAME            the application name there (default pybpfprof)\n"
	"      --pyroscope-token-file FILE  bearer token: FILE's one line, read again on\n"
	"                                 SIGHUP (or $PYBPFPROF_PYROSCOPE_TOKEN);\n"
	"      --pyroscope-user USER      or basic auth, with\n"
	"      --pyroscope-password-file FILE  (or $PYBPFPROF_PYROSCOPE_PASSWORD)\n"
	"      --pyroscope-token TOKEN, --pyroscope-password PASSWORD  work too, with a\n"
	"                                 warning: every user of the host can read a\n"
	"                                 command line. As config file keys they are\n"
	"                                 fine in a file only root can read (else a\n"
	"                                 warning). Control characters are refused.\n"	"      --pyroscope-header 'NAME: VALUE'  an extra header, e.g. X-Scope-OrgID\n"
	"                                 (repeatable)\n"
	"      --output-dir DIR           write APP-PID-TIME.pb.gz files into DIR, made\n"
	"                                 if missing (parents too, mode 0750)\n"
	"      --output-max-mb N          keep our files in DIR under N MiB, deleting the\n"
	"                                 oldest (default 1024)\n"
	"A push that fails is retried, backing off from 1 s to 60 s; profiles wait in a\n"
	"queue of at most --queue-max profiles (default 64) and --queue-max-mb MiB\n"
	"(default 256); when it is full the oldest is dropped and counted.\n"
	"\n"
	"Sampling and labels:\n"
	"      --period DURATION  how often to cut profiles: 10s (default), 1m, 500ms\n"
	"      --rate HZ          samples per second per CPU (default 100)\n"
	"      --label KEY=VALUE  a label for every profile, e.g. cluster=prod\n"
	"                         (repeatable)\n"
	"      --host-name NAME   the host_name label (default: the host name; in a\n"
	"                         DaemonSet, the node's name)\n"
	"      --exclude PATTERN  leave out processes whose command line matches\n"
	"      --container ID     only processes whose cgroup path holds ID\n"
	"\n"
	"Operation:\n"
	"      --config FILE      read settings from FILE, and again on SIGHUP\n"
	"      --metrics-addr HOST:PORT  serve GET /metrics (Prometheus text) and\n"
	"                         /healthz there (default 127.0.0.1:9464; ':PORT' for\n"
	"                         every address)\n"
	"  -v, --verbose          more diagnostics (twice: debug)\n"
	"  -h, --help             this help\n"
	"\n"
	"Signals: SIGHUP reloads the config file (the rate and the metrics address need a\n"
	"restart); SIGTERM or Ctrl-C cuts the current period short, sends what is queued\n"
	"for up to 3.5 s and exits 0 within 5 s.\n"
	"\n"
	"Exit status: 0 stopped by a signal; 1 unexpected failure; 2 bad command line or\n"
	"config, or an output directory that cannot be made; 6 missing privileges;\n"
	"7 the kernel lacks BTF or BPF support.\n"
	"\n"
	"Example:\n"
	"  sudo pybpfprof agent --pyroscope-url http://pyroscope:4040 --label env=prod\n";

static int usage_error_in(const char *cmd, const char *fmt, const char *arg)
{
	fputs("pybpfprof: ", stderr);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see 'pybpfprof %s --help')\n", cmd);
	return EXIT_USAGE;
}

static int usage_error(const char *fmt, const char *arg)
{
	return usage_error_in("record", fmt, arg);
}

static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno || end == s || *end || *s == '-' || *v < min || *v > max ? -EINVAL : 0;
}

/* -a and what narrows it: the same options for record and top. */
enum { OPT_PID_FILTER = 512, OPT_CONTAINER, OPT_EXCLUDE, OPT_MAX_PROCESSES };
#define SELECT_LONGOPTS \
	{ "all", no_argument, NULL, 'a' }, \
	{ "pid-filter", required_argument, NULL, OPT_PID_FILTER }, \
	{ "container", required_argument, NULL, OPT_CONTAINER }, \
	{ "exclude", required_argument, NULL, OPT_EXCLUDE }, \
	{ "max-processes", required_argument, NULL, OPT_MAX_PROCESSES }

struct select {
	int all;
	unsigned long max_processes;
	struct proc_filter filter;
};

/* 1 if @opt was one of SELECT_LONGOPTS (taken), 0 if not, or an exit status (> 1). */
static int select_option(const char *cmd, int opt, struct select *sel)
{
	int err = 0;

	switch (opt) {
	case 'a':
		sel->all = 1;
		return 1;
	case OPT_PID_FILTER:
		err = proc_filter__add_pids(&sel->filter, optarg);
		if (err == -EINVAL)
			return usage_error_in(cmd, "invalid --pid-filter '%s': expected PID[,PID...]",
					      optarg);
		break;
	case OPT_CONTAINER:
		err = proc_filter__add_container(&sel->filter, optarg);
		if (err == -EINVAL)
			return usage_error_in(cmd, "invalid --container '%s': expected a container "
					      "id (4 characters or more), a pod UID or a cgroup name",
					      optarg);
		break;
	case OPT_EXCLUDE:
		err = proc_filter__add_exclude(&sel->filter, optarg);
		if (err == -EINVAL)
			return usage_error_in(cmd, "%s", "empty --exclude pattern");
		break;
	case OPT_MAX_PROCESSES:
		if (parse_uint(optarg, 1, PBP_TARGETS_MAX, &sel->max_processes))
			return usage_error_in(cmd, "invalid --max-processes '%s': expected 1 to "
					      STR(PBP_TARGETS_MAX), optarg);
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

/* The narrowing options mean nothing without -a. */
static int select_check(const char *cmd, const struct select *sel)
{
	if (!sel->all && (!proc_filter__empty(&sel->filter) || sel->max_processes))
		return usage_error_in(cmd, "%s", "--pid-filter, --container, --exclude and "
				      "--max-processes narrow -a: add -a");
	return 0;
}

static int record_with(int argc, char **argv, struct select *sel)
{
	enum { OPT_THREADS = 256, OPT_STATS, OPT_STACK, OPT_RINGBUF, OPT_NO_BPF, OPT_IDLE,
	       OPT_GIL, OPT_NO_FCACHE, OPT_NOLINENO, OPT_FUNCTION,
	       OPT_SUBPROCESSES };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "threads", no_argument, NULL, OPT_THREADS },
		{ "nolineno", no_argument, NULL, OPT_NOLINENO },
		{ "function", no_argument, NULL, OPT_FUNCTION },
		{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
		{ "stats-file", required_argument, NULL, OPT_STATS },
		{ "stack-bytes", required_argument, NULL, OPT_STACK },
		{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
		{ "no-bpf", no_argument, NULL, OPT_NO_BPF },
		{ "idle", no_argument, NULL, OPT_IDLE },
		{ "gil", no_argument, NULL, OPT_GIL },
		{ "no-frame-cache", no_argument, NULL, OPT_NO_FCACHE },
		SELECT_LONGOPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct record_opts o = {
		.session = {
			.rate_hz = 100,
			.stack_cap = PBP_STACK_DEFAULT,
			.ringbuf_mb = 16,
		},
	};
	const char *format = NULL;
	char names[128];
	unsigned long v;
	int opt, verbose = 0, code;
	char *end;

	/* '+': stop at the first non-option so the command's own options stay its own;
	 * ':': report a missing argument apart from an unknown option. */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:ap:r:d:o:f:vh", longopts, NULL)) != -1) {
		code = select_option("record", opt, sel);
		if (code > 1)
			return code;
		if (code)
			continue;
		switch (opt) {
		case 'p':
			if (parse_uint(optarg, 1, 0x7fffffff, &v))
				return usage_error("invalid PID '%s'", optarg);
			o.session.pid = (pid_t)v;
			break;
		case 'r':
			if (parse_uint(optarg, 1, 10000, &v))
				return usage_error("invalid rate '%s': expected 1 to 10000 Hz", optarg);
			o.session.rate_hz = (uint32_t)v;
			break;
		case 'd':
			errno = 0;
			o.duration_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o.duration_s > 0))
				return usage_error("invalid duration '%s': expected seconds > 0", optarg);
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case OPT_THREADS:
			o.session.threads = 1;
			break;
		case OPT_NOLINENO:
			o.session.nolineno = 1;
			break;
		case OPT_FUNCTION:
			o.session.function_lines = 1;
			break;
		case OPT_SUBPROCESSES:
			o.session.subprocesses = 1;
			break;
		case OPT_STATS:
			o.stats_file = optarg;
			break;
		case OPT_STACK:
			if (parse_uint(optarg, 4096, PBP_STACK_MAX - 1, &v))
				return usage_error("invalid --stack-bytes '%s': expected 4096 to 131071",
						   optarg);
			o.session.stack_cap = (uint32_t)v;
			break;
		case OPT_RINGBUF:
			if (parse_uint(optarg, 1, 1024, &v) || (v & (v - 1)))
				return usage_error("invalid --ringbuf-mb '%s': expected a power of two "
						   "from 1 to 1024", optarg);
			o.session.ringbuf_mb = (uint32_t)v;
			break;
		case OPT_NO_BPF:
			o.session.no_bpf = 1;
			break;
		case OPT_IDLE:
			o.session.idle = 1;
			break;
		case OPT_GIL:
			o.session.gil = 1;
			break;
		case OPT_NO_FCACHE:
			o.session.no_frame_cache = 1;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			fputs(record_help, stdout);
			return EXIT_OK;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	log__set_level(verbose >= 2 ? LOG_DEBUG : verbose ? LOG_INFO : LOG_WARN);
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--"))
			return usage_error("unexpected argument '%s' (put a command after '--')",
					   argv[optind]);
		o.session.cmd = &argv[optind];
	}
	if (o.session.pid && o.session.cmd)
		return usage_error("%s", "give either -p PID or a command after --, not both");
	code = select_check("record", sel);
	if (code)
		return code;
	if (sel->all) {
		if (o.session.pid || o.session.cmd)
			return usage_error("%s", "-a profiles every process: give -a, -p PID or a "
					   "command after --, one of them");
		if (o.session.no_bpf)
			return usage_error("%s", "-a needs BPF: one program samples every process; "
					   "--no-bpf cannot do that");
		if (o.session.subprocesses)
			return usage_error("%s", "-a already follows every process: drop "
					   "--subprocesses");
		o.session.system_wide = 1;
		o.session.filter = &sel->filter;
		o.session.max_processes = (uint32_t)sel->max_processes;
	}
	/* -f wins; else the output's suffix says; else collapsed. */
	o.writer = format ? writer__find(format) : o.output ? writer__for_path(o.output) : NULL;
	if (format && !o.writer) {
		writer__names(names, sizeof(names));
		fprintf(stderr, "pybpfprof: unknown format '%s': one of %s (see 'pybpfprof "
			"record --help')\n", format, names);
		return EXIT_USAGE;
	}
	if (!o.writer)
		o.writer = writer__find("collapsed");
	o.session.timeline = o.writer->timeline;
	if (o.session.nolineno && o.session.function_lines)
		return usage_error("%s", "--nolineno and --function both say which line to "
				   "show: give one");
	if (!o.session.pid && !o.session.cmd && !o.session.system_wide)
		return usage_error("%s", "nothing to profile: give -p PID, -a or a command after "
				   "--");
	return record__run(&o);
}

static int cmd_record(int argc, char **argv)
{
	struct select sel = { 0 };
	int code = record_with(argc, argv, &sel);

	proc_filter__free(&sel.filter);
	return code;
}

static int top_with(int argc, char **argv, struct select *sel)
{
	enum { OPT_NO_BPF = 256, OPT_IDLE, OPT_GIL };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "rate", required_argument, NULL, 'r' },
		{ "no-bpf", no_argument, NULL, OPT_NO_BPF },
		{ "idle", no_argument, NULL, OPT_IDLE },
		{ "gil", no_argument, NULL, OPT_GIL },
		SELECT_LONGOPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct top_opts o = { .rate_hz = 100 };
	unsigned long v;
	int opt, verbose = 0, code;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ap:r:vh", longopts, NULL)) != -1) {
		code = select_option("top", opt, sel);
		if (code > 1)
			return code;
		if (code)
			continue;
		switch (opt) {
		case 'p':
			if (parse_uint(optarg, 1, 0x7fffffff, &v))
				return usage_error_in("top", "invalid PID '%s'", optarg);
			o.pid = (pid_t)v;
			break;
		case 'r':
			if (parse_uint(optarg, 1, 10000, &v))
				return usage_error_in("top", "invalid rate '%s': expected 1 to "
						      "10000 Hz", optarg);
			o.rate_hz = (uint32_t)v;
			break;
		case OPT_NO_BPF:
			o.no_bpf = 1;
			break;
		case OPT_IDLE:
			o.idle = 1;
			break;
		case OPT_GIL:
			o.gil = 1;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			fputs(top_help, stdout);
			return EXIT_OK;
		case ':':
			return usage_error_in("top", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error_in("top", "unknown option '%s'", argv[optind - 1]);
		}
	}
	log__set_level(verbose >= 2 ? LOG_DEBUG : verbose ? LOG_INFO : LOG_WARN);
	if (optind < argc)
		return usage_error_in("top", "unexpected argument '%s'", argv[optind]);
	code = select_check("top", sel);
	if (code)
		return code;
	if (sel->all && o.pid)
		return usage_error_in("top", "%s", "give either -a or -p PID, not both");
	if (sel->all && o.no_bpf)
		return usage_error_in("top", "%s", "-a needs BPF; --no-bpf cannot do that");
	o.system_wide = sel->all;
	o.filter = &sel->filter;
	o.max_processes = (uint32_t)sel->max_processes;
	if (!o.pid && !o.system_wide)
		return usage_error_in("top", "%s", "nothing to watch: give -p PID or -a");
	return top__run(&o);
}

static int cmd_top(int argc, char **argv)
{
	struct select sel = { 0 };
	int code = top_with(argc, argv, &sel);

	proc_filter__free(&sel.filter);
	return code;
}

static int cmd_dump(int argc, char **argv)
{
	enum { OPT_CORE = 256, OPT_EXE, OPT_SYSROOT };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "core", required_argument, NULL, OPT_CORE },
		{ "exe", required_argument, NULL, OPT_EXE },
		{ "sysroot", required_argument, NULL, OPT_SYSROOT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct dump_opts o = { 0 };
	unsigned long v;
	int opt, verbose = 0;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_uint(optarg, 1, 0x7fffffff, &v))
				return usage_error_in("dump", "invalid PID '%s'", optarg);
			o.pid = (pid_t)v;
			break;
		case OPT_CORE:
			o.core = optarg;
			break;
		case OPT_EXE:
			o.exe = optarg;
			break;
		case OPT_SYSROOT:
			o.sysroot = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			fputs(dump_help, stdout);
			return EXIT_OK;
		case ':':
			return usage_error_in("dump", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error_in("dump", "unknown option '%s'", argv[optind - 1]);
		}
	}
	log__set_level(verbose >= 2 ? LOG_DEBUG : verbose ? LOG_INFO : LOG_WARN);
	if (optind < argc)
		return usage_error_in("dump", "unexpected argument '%s'", argv[optind]);
	if (o.pid && o.core)
		return usage_error_in("dump", "%s", "give either -p PID or --core CORE, not both");
	if (!o.pid && !o.core)
		return usage_error_in("dump", "%s", "nothing to dump: give -p PID or --core CORE");
	if (!o.core && (o.exe || o.sysroot))
		return usage_error_in("dump", "%s", "--exe and --sysroot apply to --core only");
	if ((o.core && !*o.core) || (o.exe && !*o.exe) || (o.sysroot && !*o.sysroot))
		return usage_error_in("dump", "%s", "empty path given");
	return dump__run(&o);
}

/* Every local user can read /proc/PID/cmdline: say so, and blank the copy there (it
 * was readable until now all the same). */
static void secret_on_argv(const char *name, char *arg)
{
	fprintf(stderr, "pybpfprof: warning: --%s on the command line can be read by every "
		"user of this host; use --%s-file or $PYBPFPROF_%s\n", name, name,
		strcmp(name, "pyroscope-token") ? "PYROSCOPE_PASSWORD" : "PYROSCOPE_TOKEN");
	memset(arg, '*', strlen(arg));
}

static int agent_with(int argc, char **argv, struct agent_config *cli)
{
	enum { OPT_CONFIG = 1024 };
	struct option longopts[AK_COUNT + 4];
	const char *config = NULL;
	char why[160];
	int opt, idx, verbose = 0, n = 0;

	for (int k = 0; k < AK_COUNT; k++)
		longopts[n++] = (struct option){ agent_config__name(k), required_argument, NULL, 0 };
	longopts[n++] = (struct option){ "config", required_argument, NULL, OPT_CONFIG };
	longopts[n++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	longopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[n] = (struct option){ 0 };
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":vh", longopts, &idx)) != -1) {
		switch (opt) {
		case 0:
			if (agent_config__set(cli, longopts[idx].name, optarg, why, sizeof(why))) {
				fprintf(stderr, "pybpfprof: --%s (see 'pybpfprof agent --help')\n",
					why);
				return EXIT_USAGE;
			}
			if (idx == AK_PYROSCOPE_TOKEN || idx == AK_PYROSCOPE_PASSWORD)
				secret_on_argv(longopts[idx].name, optarg);
			break;
		case OPT_CONFIG:
			config = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			fputs(agent_help, stdout);
			return EXIT_OK;
		case ':':
			return usage_error_in("agent", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error_in("agent", "unknown option '%s'", argv[optind - 1]);
		}
	}
	log__set_level(verbose >= 2 ? LOG_DEBUG : verbose ? LOG_INFO : LOG_WARN);
	if (optind < argc)
		return usage_error_in("agent", "unexpected argument '%s'", argv[optind]);
	return agent__run(cli, config);
}

static int cmd_agent(int argc, char **argv)
{
	struct agent_config cli;
	int code;

	if (agent_config__init(&cli)) {
		fputs("pybpfprof: out of memory\n", stderr);
		return EXIT_RUNTIME;
	}
	code = agent_with(argc, argv, &cli);
	agent_config__free(&cli);
	return code;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(main_help, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(main_help, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("pybpfprof %s\n", PBP_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	/* 'pybpfprof -a ...' is 'pybpfprof record -a ...'. */
	if (!strcmp(argv[1], "-a") || !strcmp(argv[1], "--all"))
		return cmd_record(argc, argv);
	if (!strcmp(argv[1], "top"))
		return cmd_top(argc - 1, argv + 1);
	if (!strcmp(argv[1], "dump"))
		return cmd_dump(argc - 1, argv + 1);
	if (!strcmp(argv[1], "agent"))
		return cmd_agent(argc - 1, argv + 1);
	fprintf(stderr, "pybpfprof: unknown command '%s' (see 'pybpfprof --help')\n", argv[1]);
	return EXIT_USAGE;
}
