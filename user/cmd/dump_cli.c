// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof dump`: its options, its --help, and the checks that the options name one
 * process or core; dump.c runs it.
 */
#include <stdio.h>

#include "cmd/cli.h"
#include "dump/dump.h"
#include "base/exitcodes.h"

static const char dump_help[] =
	"Usage:\n"
	"  pybpfprof dump -p PID [--async] [--native | --native-all]\n"
	"  pybpfprof dump --core CORE [--exe PYTHON] [--sysroot DIR] [--native]\n"
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
	"A running process is not stopped (but with --async or --native): its stacks are\n"
	"read twice and read again if they changed in between.\n"
	"\n"
	"With --async, the stacks are followed by every asyncio task of the process (CPython\n"
	"3.11 and later), per thread, as a tree of who awaits whom: each task that no task\n"
	"awaits, and below it the tasks it awaits, each with its state and the coroutine\n"
	"frames it is suspended in (for the running task, down to the coroutine that runs;\n"
	"the thread's stack above shows the rest; 3.11-3.13, which list no thread's tasks,\n"
	"put each under the thread that runs its event loop):\n"
	"\n"
	"  Thread 4242: 3 asyncio tasks\n"
	"    Task 'main' (running)\n"
	"      File \"/srv/app.py\", line 40, in main\n"
	"      Task 'fetch-1' (pending)\n"
	"        File \"/srv/app.py\", line 21, in fetch\n"
	"\n"
	"Target:\n"
	"  -p, --pid PID          a running process (needs ptrace access to it)\n"
	"      --core CORE        an ELF core file (kernel core dump or gdb's gcore); the\n"
	"                         files it maps are read where the core does not hold them\n"
	"      --exe PYTHON       the core's executable on this host, when it is not at the\n"
	"                         path the core names\n"
	"      --sysroot DIR      look up the paths the core names under DIR (a core from a\n"
	"                         container or chroot, or from another machine)\n"
	"      --async            also the asyncio task tree (live processes, 3.11+). The\n"
	"                         process is held (ptrace) while its stacks and its tasks\n"
	"                         are read (ms), so that both describe one moment; one\n"
	"                         that cannot be held is read as it runs, with a notice\n"
	"      --native           also each thread's C frames (a live process, or a core\n"
	"                         with its thread stacks, as the kernel writes them): the C\n"
	"                         code Python calls (an extension, libc, the GIL wait)\n"
	"                         as 'native: function+0xOFF (library)' lines between\n"
	"                         the Python frames that called it and that it calls.\n"
	"                         A live process is held (ptrace) while its threads'\n"
	"                         registers and stacks are copied (ms); that fails\n"
	"                         (status 6) if another tracer (a debugger) has it\n"
	"      --native-all       --native with the interpreter's own frames between\n"
	"                         Python frames, and the thread's start-up, kept\n"
	"  -v, --verbose          more diagnostics (twice: debug)\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 dump written; 2 bad command line; 3 no such process; 4 not a\n"
	"CPython process (or core); 5 unsupported CPython version (with --async: also\n"
	"asyncio without its C tasks on 3.11-3.13); 6 missing privileges (with --native:\n"
	"also a process that another tracer holds; with --core, run as root: files the\n"
	"core's owner may not read, which is whose rights it is read with);\n"
	"8 the core cannot be read, is truncated or is not a core; 9 a binary the core\n"
	"names is not on this host or differs from the one the process ran. See\n"
	"'pybpfprof --help'.\n";

int dump_cli__main(int argc, char **argv)
{
	enum { OPT_CORE = 256, OPT_EXE, OPT_SYSROOT, OPT_ASYNC, OPT_NATIVE, OPT_NATIVE_ALL };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "core", required_argument, NULL, OPT_CORE },
		{ "exe", required_argument, NULL, OPT_EXE },
		{ "sysroot", required_argument, NULL, OPT_SYSROOT },
		{ "async", no_argument, NULL, OPT_ASYNC },
		{ "native", no_argument, NULL, OPT_NATIVE },
		{ "native-all", no_argument, NULL, OPT_NATIVE_ALL },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct dump_opts o = { 0 };
	unsigned long v;
	int opt, verbose = 0, code;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (cli__parse_uint(optarg, 1, 0x7fffffff, &v))
				return cli__usage_error("dump", "invalid PID '%s'", optarg);
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
		case OPT_ASYNC:
			o.async_tasks = 1;
			break;
		case OPT_NATIVE_ALL:
			o.native_all = 1;
			/* fall through */
		case OPT_NATIVE:
			o.native = 1;
			break;
		default:
			code = cli__common_option("dump", dump_help, opt, argv, &verbose);
			if (code != CLI_GO_ON)
				return code;
		}
	}
	code = cli__end_options("dump", argc, argv, verbose);
	if (code)
		return code;
	if (o.pid && o.core)
		return cli__usage_error("dump", "%s",
					"give either -p PID or --core CORE, not both");
	if (!o.pid && !o.core)
		return cli__usage_error("dump", "%s",
					"nothing to dump: give -p PID or --core CORE");
	if (o.core && o.async_tasks)
		return cli__usage_error("dump", "%s",
					"--async reads a live process (-p PID), not a core");
	if (!o.core && (o.exe || o.sysroot))
		return cli__usage_error("dump", "%s",
					"--exe and --sysroot apply to --core only");
	if ((o.core && !*o.core) || (o.exe && !*o.exe) || (o.sysroot && !*o.sysroot))
		return cli__usage_error("dump", "%s", "empty path given");
	return dump__run(&o);
}
