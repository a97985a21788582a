// SPDX-License-Identifier: GPL-2.0-only
/*
 * Command line: the overall --help, --version, and dispatch to the subcommand, whose
 * options and help are in its own *_cli.c.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "base/exitcodes.h"
#include "native/native_worker_proto.h"
#include "native/native_worker_serve.h"
#include "cpython/py_interp.h"

#define PBP_VERSION "0.1.0"

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
	"  pybpfprof report PROFILE.pbp               a saved profile as a table\n"
	"  pybpfprof convert PROFILE.pbp -o OUT       a saved profile in another format\n"
	"  pybpfprof diff BASE.pbp NEW.pbp [-o D.svg] what changed beyond sampling noise:\n"
	"                                             a table, a differential flame graph\n"
	"  pybpfprof --help | --version\n"
	"\n"
	"Each sample is taken by a BPF program on the CPU the Python thread runs on, while\n"
	"the thread is interrupted, so stacks are consistent without pausing the target.\n"
	"With --mode wall it also follows each thread through the scheduler and charges\n"
	"every wait to the Python stack it blocked in, naming why (record, top, agent).\n"
	"Each subcommand explains its options: 'pybpfprof record --help', and so on for\n"
	"top, agent, dump, report, convert and diff.\n"
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
	"       replaced (-o, --stats-file), found before profiling; agent: bad config;\n"
	"       diff: profiles that cannot compare (other modes or units)\n"
	"  3    no such process, or it exited before profiling began; -a: no Python\n"
	"       process ran, or none passed --pid-filter/--container/--exclude, during\n"
	"       the whole run; --subprocesses: neither the target nor any process it\n"
	"       started ran Python during the run (nothing is written but --stats-file)\n"
	"  4    the target is not a CPython process; a command: it ran no CPython code\n"
	"       before it exited, -d ended or a signal stopped the run\n"
	"  5    unsupported CPython version\n"
	"  6    missing privileges: BPF is not allowed and neither is reading the\n"
	"       target's memory, or the file holding its interpreter cannot be opened;\n"
	"       -a or --native without BPF privileges\n"
	"  7    the kernel lacks BTF, BPF or perf-event support, or a BPF feature\n"
	"       the sampler uses (Linux 5.17+; the message names it), with -a or\n"
	"       --native, which need BPF; --clock tick\n"
	"       where the scheduler's tick cannot time the samples\n"
	"  8    dump: the core file cannot be read, is truncated or is not a core\n"
	"  9    dump: a binary the core names is not on this host, or is not the one the\n"
	"       process ran (give --exe or --sysroot)\n"
	"  10   convert, report, diff: a profile file cannot be read, is not a pybpfprof\n"
	"       profile (.pbp), is corrupt or is of a later format version\n"
	"  126  the command after -- is not executable\n"
	"  127  the command after -- was not found\n";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(main_help, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], NATIVE_WORKER_ARG))
		return native_worker_serve__main();
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(main_help, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("pybpfprof %s\n", PBP_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "record"))
		return record_cli__main(argc - 1, argv + 1);
	/* 'pybpfprof -a ...' is 'pybpfprof record -a ...'. */
	if (!strcmp(argv[1], "-a") || !strcmp(argv[1], "--all"))
		return record_cli__main(argc, argv);
	if (!strcmp(argv[1], "top"))
		return top_cli__main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "dump"))
		return dump_cli__main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return report_cli__main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diff"))
		return diff_cli__main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "convert"))
		return convert_cli__main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "agent"))
		return agent_cli__main(argc - 1, argv + 1);
	fprintf(stderr, "pybpfprof: unknown command '%s' (see 'pybpfprof --help')\n", argv[1]);
	return EXIT_USAGE;
}
