/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the subcommands' command lines share: the usage error, numbers, -v, -h and
 * getopt's complaints, and -a with the options that narrow it (record and top). Each
 * subcommand's own options and --help live in its *_cli.c, beside nothing else.
 */
#ifndef PBP_CLI_H
#define PBP_CLI_H

#include <stdint.h>

#include <getopt.h>

#include "session/proc_filter.h"
#include "session/session.h"

#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

/* What an option handler returns when the option was taken and parsing goes on. */
#define CLI_GO_ON (-1)

/* Prints "pybpfprof: " @fmt (with @arg) and where @cmd's help is; returns EXIT_USAGE. */
int cli__usage_error(const char *cmd, const char *fmt, const char *arg);
/* A decimal in [@min, @max]; 0 or -EINVAL. */
int cli__parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *v);
/* -r/--rate: 1 to the kernel's limit for a perf clock. 0, or EXIT_USAGE with the error
 * written. */
int cli__parse_rate(const char *cmd, const char *s, uint32_t *rate);
/*
 * The options every subcommand has, -v and -h, and getopt's complaints about the
 * others (its '+:' / ':' optstring, opterr 0): CLI_GO_ON after -v, EXIT_OK once
 * @help is printed, EXIT_USAGE after a message naming the option.
 */
int cli__common_option(const char *cmd, const char *help, int opt, char **argv, int *verbose);
/* -v given @verbose times: warnings, then information, then debug. */
void cli__set_verbosity(int verbose);
/*
 * After the option loop of a subcommand that takes no operands: sets the verbosity;
 * 0, or EXIT_USAGE naming the first operand left in @argv.
 */
int cli__end_options(const char *cmd, int argc, char **argv, int verbose);

/*
 * --mode cpu|wall|off-cpu and --min-block US: the same for record, top and the agent.
 * 0, or EXIT_USAGE after a message.
 */
int cli__parse_mode(const char *cmd, const char *arg, enum session_mode *mode);
int cli__parse_min_block(const char *cmd, const char *arg, uint32_t *us);
/* --native-stack SIZE, and --native's checks against the other options (record, top). */
int cli__parse_native_stack(const char *cmd, const char *arg, uint32_t *bytes);
/* --clock timer|tick. */
int cli__parse_clock(const char *cmd, const char *arg, enum sampler_clock *c);
/* --clock tick with --no-bpf or --mode off-cpu: a usage error's exit status, else 0. */
int cli__clock_check(const char *cmd, enum sampler_clock c, int no_bpf, enum session_mode mode,
		     int system_wide);
/* --native-unwind auto|dwarf|fp. */
int cli__parse_native_unwind(const char *cmd, const char *arg, enum session_native_unwind *u);
int cli__native_check(const char *cmd, int native, uint32_t native_stack,
		      enum session_native_unwind unwind, int no_bpf);
#define CLI_NATIVE_HELP \
	"      --native           C frames too, in call order with the Python ones:\n" \
	"                         'handler (app.py:12);my_ext_fn+0x1f (my_ext.so);\n" \
	"                         callback (app.py:30)'. BPF copies each sample's user\n" \
	"                         registers and C stack; pybpfprof unwinds them with\n" \
	"                         the objects' DWARF CFI and names frames from their\n" \
	"                         symbols (separate debug files by build-id under\n" \
	"                         /usr/lib/debug); a stripped object's frames read\n" \
	"                         'lib.so+0xSTART'. The interpreter's own C frames\n" \
	"                         between two Python frames are left out. Needs BPF,\n" \
	"                         which copies the C stack at each sample: refused\n" \
	"                         with --no-bpf (exit 2) or where BPF cannot run\n" \
	"                         (exit 6 or 7), never sampled without C frames\n" \
	"      --native-all       --native, keeping the interpreter's own frames too\n" \
	"                         (the eval loop, calls into C, start-up)\n" \
	"      --native-stack SIZE  bytes of C stack copied from the stack pointer up\n" \
	"                         (4K to 64K, bytes or K; default 16K): about 1.7 KiB\n" \
	"                         reach _start from a CPython loop, and each\n" \
	"                         Python->C->Python re-entry (sorted() with a key, a C\n" \
	"                         callback) adds 5-7 KiB; a deeper stack keeps its\n" \
	"                         innermost frames. With --native\n" \
	"      --native-unwind HOW  how C frames are found (default auto):\n" \
	"                         dwarf: BPF copies the C stack (--native-stack) and\n" \
	"                         it is unwound with CFI: exact for any code, but the\n" \
	"                         copy (1.4-7 KiB a sample) costs the target most;\n" \
	"                         fp: BPF walks the frame pointers (16 bytes a frame)\n" \
	"                         beside a 1K stack copy (4K in a system call; or\n" \
	"                         --native-stack) for top frames without them (libc);\n" \
	"                         each frame is\n" \
	"                         checked against its code's CFI, and a walk ends at\n" \
	"                         the first function that keeps no frame pointer (libc,\n" \
	"                         most wheels: qsort, a ctypes callback's libffi) unless\n" \
	"                         the copy holds its stack (then CFI goes on), the\n" \
	"                         Python frames outside it following without their C\n" \
	"                         callers, after a frame \"[native walk cut: WHY]\";\n" \
	"                         never a wrong order;\n" \
	"                         auto: fp for an interpreter built with frame\n" \
	"                         pointers (CPython 3.15, PEP 831, as Debian builds\n" \
	"                         it: seen in its code), dwarf otherwise. With --native\n"

#define CLI_CLOCK_HELP \
	"      --clock HOW        what times the samples (default timer):\n" \
	"                         timer: a clock of the profiler's own on each CPU,\n" \
	"                         for any rate; each of its ticks is an interrupt.\n" \
	"                         With -p or a command it ticks only while a task of\n" \
	"                         the target's cgroup runs there (every task with -a),\n" \
	"                         so threads of any length are sampled as their CPU\n" \
	"                         time says;\n" \
	"                         thread (-p or a command): a clock per thread of the\n" \
	"                         target, inherited by the threads it starts, which\n" \
	"                         ticks for nothing else but starts each thread afresh:\n" \
	"                         threads shorter than a period are sampled too little;\n" \
	"                         the target is held a moment (ptrace) as they open.\n" \
	"                         Chosen for a target whose cgroup cannot be used;\n" \
	"                         tick: the kernel's scheduler tick, which interrupts\n" \
	"                         each busy CPU HZ times a second anyway (250 on most\n" \
	"                         distributions): no interrupt of the profiler's own,\n" \
	"                         rates up to HZ. Each sample counts the CPU time its\n" \
	"                         thread used since its last, so threads add up to\n" \
	"                         their CPU time; within a thread, code that often\n" \
	"                         blocks between ticks is seen less than it runs.\n" \
	"                         Exit 7, saying why, where the tick cannot be used\n"

#define CLI_MODE_HELP \
	"      --mode MODE        what the profile measures (default cpu):\n" \
	"                         cpu: on-CPU samples, counted\n" \
	"                         wall: on-CPU samples and every interval a thread\n" \
	"                         spends off the CPU, measured by the scheduler to the\n" \
	"                         nanosecond and charged to the Python stack it blocked\n" \
	"                         in, under a leaf frame naming why (WAITS below): each\n" \
	"                         thread's time adds up to its wall-clock time. Counts\n" \
	"                         are then time: microseconds in collapsed, seconds in\n" \
	"                         svg and speedscope, nanoseconds in pprof (sample types\n" \
	"                         cpu, off_cpu and wall)\n" \
	"                         off-cpu: the waits alone\n" \
	"                         With --no-bpf, wall is --idle (every thread at each\n" \
	"                         tick) and the waits are '[off-CPU]', unexplained\n" \
	"      --min-block US     wall, off-cpu: a wait shorter than US microseconds\n" \
	"                         (default " CLI_STR(SESSION_MIN_BLOCK_DEFAULT_US) ") is kept by a random draw, with\n" \
	"                         probability length/US, and then counts US: the total\n" \
	"                         stays right on average while a thread that switches\n" \
	"                         tens of thousands of times a second costs a stack read\n" \
	"                         at most every US, and at most 1000 a second (past that\n" \
	"                         its threshold rises). 0 keeps every wait. Waits still\n" \
	"                         open at the end count up to it\n"
#define CLI_WAITS_HELP \
	"Waits (the leaf frame of an off-CPU interval):\n" \
	"  [off-CPU: GIL wait]          waiting to take the GIL\n" \
	"  [off-CPU: lock (futex)]      a lock, condition, queue or event (threading,\n" \
	"                               queue, concurrent.futures)\n" \
	"  [off-CPU: sleep]             time.sleep and other nanosleeps\n" \
	"  [off-CPU: read(KIND)]        a read or recv blocked; KIND is socket, pipe,\n" \
	"  [off-CPU: write(KIND)]       tty, file or event when it can be told\n" \
	"  [off-CPU: poll / select]     select, poll, epoll: an event loop waiting\n" \
	"  [off-CPU: accept / connect]  a server waiting for a client, or a connect\n" \
	"  [off-CPU: waiting for a child]  os.wait, subprocess.wait\n" \
	"  [off-CPU: page fault / disk] uninterruptible: reading a page or the disk\n" \
	"  [runnable: waiting for a CPU]  preempted: ready, but the CPUs were busy\n" \
	"  [stolen: the hypervisor took the CPU]  on a CPU of a virtual machine while\n" \
	"                               the host ran something else (steal time)\n" \
	"  [off-CPU: other]             any other system call\n"

/* -f FORMAT: the writers of record and convert. */
#define CLI_FORMATS_HELP \
	"  -f, --format FORMAT    collapsed (.txt, .folded, .collapsed; the default):\n" \
	"                         one line per distinct stack, 'frame;frame;...;frame\n" \
	"                         COUNT', root first, each Python frame 'QUALNAME\n" \
	"                         (FILENAME:LINE)'; for flamegraph.pl, inferno or\n" \
	"                         speedscope\n" \
	"                         svg (.svg): an interactive flame graph in one file that\n" \
	"                         works offline in any browser: hover, click to zoom,\n" \
	"                         Ctrl-F to search; colours tell your code, the standard\n" \
	"                         library and third-party packages apart\n" \
	"                         html (.html, .htm): the same flame graph in a web\n" \
	"                         page of its own, as interactive and as offline\n" \
	"                         heatmap (.heatmap.html): every sampled source file in\n" \
	"                         one page, each line shaded by its share (self and\n" \
	"                         total; in wall mode split into on-CPU time and each\n" \
	"                         kind of wait), its text as it was when sampled\n" \
	"                         speedscope (.speedscope.json): speedscope's own format,\n" \
	"                         one profile per thread, samples in time order\n" \
	"                         pprof (.pb.gz): gzip-compressed profile.proto for go\n" \
	"                         tool pprof, Pyroscope, Parca, Grafana; samples and CPU\n" \
	"                         time, with thread id, thread name and pid labels\n" \
	"                         chrome (.trace.json): Chrome trace events, a track per\n" \
	"                         thread (Perfetto UI, chrome://tracing, speedscope)\n" \
	"                         pbp (.pbp): everything the profile holds, stacks with\n" \
	"                         their lines, each sample's time, threads, waits,\n" \
	"                         tasks, native objects: 'pybpfprof convert' makes any\n" \
	"                         format above from it, 'pybpfprof report' a table\n" \
	"                         (docs/profile-format.md)\n" \
	"                         Stacks whose walk did not reach the thread's first\n" \
	"                         frame start with '[incomplete]'\n"

/* -a and what narrows it: the same options for record and top. */
enum { CLI_OPT_PID_FILTER = 512, CLI_OPT_CONTAINER, CLI_OPT_EXCLUDE, CLI_OPT_MAX_PROCESSES };
#define CLI_SELECT_LONGOPTS \
	{ "all", no_argument, NULL, 'a' }, \
	{ "pid-filter", required_argument, NULL, CLI_OPT_PID_FILTER }, \
	{ "container", required_argument, NULL, CLI_OPT_CONTAINER }, \
	{ "exclude", required_argument, NULL, CLI_OPT_EXCLUDE }, \
	{ "max-processes", required_argument, NULL, CLI_OPT_MAX_PROCESSES }

struct cli_select {
	int all;
	unsigned long max_processes;
	struct proc_filter filter;
};

/* 1 if @opt was one of CLI_SELECT_LONGOPTS (taken), 0 if not, or an exit status (> 1). */
int cli__select_option(const char *cmd, int opt, struct cli_select *sel);
/* The narrowing options mean nothing without -a: 0, or EXIT_USAGE after a message. */
int cli__select_check(const char *cmd, const struct cli_select *sel);
/* @with(argc, argv, sel)'s exit status, with a selection that is freed after it:
 * the entry point of a subcommand that takes the options above. */
int cli__run_selecting(int argc, char **argv,
		       int (*with)(int argc, char **argv, struct cli_select *sel));

/* How samples are taken and what they keep: the same options for record and top. */
enum { CLI_OPT_NO_BPF = 528, CLI_OPT_NO_HOLD, CLI_OPT_IDLE, CLI_OPT_GIL, CLI_OPT_ASYNC,
       CLI_OPT_THREADS, CLI_OPT_NATIVE, CLI_OPT_NATIVE_ALL, CLI_OPT_NATIVE_STACK,
       CLI_OPT_NATIVE_UNWIND, CLI_OPT_CLOCK, CLI_OPT_MODE, CLI_OPT_MIN_BLOCK };
#define CLI_SAMPLING_LONGOPTS \
	{ "no-bpf", no_argument, NULL, CLI_OPT_NO_BPF }, \
	{ "no-hold", no_argument, NULL, CLI_OPT_NO_HOLD }, \
	{ "idle", no_argument, NULL, CLI_OPT_IDLE }, \
	{ "gil", no_argument, NULL, CLI_OPT_GIL }, \
	{ "async", no_argument, NULL, CLI_OPT_ASYNC }, \
	{ "threads", no_argument, NULL, CLI_OPT_THREADS }, \
	{ "native", no_argument, NULL, CLI_OPT_NATIVE }, \
	{ "native-all", no_argument, NULL, CLI_OPT_NATIVE_ALL }, \
	{ "native-stack", required_argument, NULL, CLI_OPT_NATIVE_STACK }, \
	{ "native-unwind", required_argument, NULL, CLI_OPT_NATIVE_UNWIND }, \
	{ "clock", required_argument, NULL, CLI_OPT_CLOCK }, \
	{ "mode", required_argument, NULL, CLI_OPT_MODE }, \
	{ "min-block", required_argument, NULL, CLI_OPT_MIN_BLOCK }

/* 1 if @opt was -r or one of CLI_SAMPLING_LONGOPTS (taken into @s), 0 if not, or an
 * exit status (> 1). */
int cli__sampling_option(const char *cmd, int opt, struct session_opts *s);
/* After the options: whether they go together, for -a (@all) or one target; 0, or
 * EXIT_USAGE after a message. A wall profile from user space keeps idle threads. */
int cli__sampling_check(const char *cmd, struct session_opts *s, int all);

struct profile_file;
/* Reads the profile file @path for @cmd: 0, or EXIT_BAD_PROFILE after a one-line
 * message saying why. */
int cli__load_profile(const char *cmd, const char *path, struct profile_file *pf);

/* The subcommands: each parses its arguments (argv[0] is the subcommand, or "-a"
 * for record), runs, and returns the exit status. */
int record_cli__main(int argc, char **argv);
int top_cli__main(int argc, char **argv);
int dump_cli__main(int argc, char **argv);
int agent_cli__main(int argc, char **argv);
int convert_cli__main(int argc, char **argv);
int report_cli__main(int argc, char **argv);
int diff_cli__main(int argc, char **argv);

/* --by, --sort and -l of report, also record's with --report. */
enum { CLI_OPT_REPORT_BY = 600, CLI_OPT_REPORT_SORT };
#define CLI_REPORT_LONGOPTS \
	{ "by", required_argument, NULL, CLI_OPT_REPORT_BY }, \
	{ "sort", required_argument, NULL, CLI_OPT_REPORT_SORT }, \
	{ "limit", required_argument, NULL, 'l' }
#define REPORT_LIMIT_DEFAULT 20
struct report_opts;
/* CLI_GO_ON if @opt was one of CLI_REPORT_LONGOPTS (taken), 0 if not, or EXIT_USAGE. */
int report_cli__parse_option(const char *cmd, int opt, struct report_opts *o);

#endif
