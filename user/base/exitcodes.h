/* SPDX-License-Identifier: GPL-2.0-only */
/* Exit statuses, documented in --help; scripts rely on them, so never renumber. */
#ifndef PBP_EXITCODES_H
#define PBP_EXITCODES_H

enum pbp_exit {
	EXIT_OK = 0,
	EXIT_RUNTIME = 1,	/* unexpected failure while profiling */
	EXIT_USAGE = 2,		/* bad command line */
	EXIT_NO_PROCESS = 3,	/* no such process, or it exited before profiling began */
	EXIT_NOT_PYTHON = 4,	/* the target is not a CPython process */
	EXIT_UNSUPPORTED = 5,	/* a CPython version this build cannot read */
	EXIT_PRIVILEGES = 6,	/* missing capabilities, or an interpreter file we may not open */
	EXIT_KERNEL = 7,	/* the kernel lacks BTF, BPF or perf events */
	EXIT_BAD_CORE = 8,	/* the core file cannot be read, is truncated or is no core */
	EXIT_NO_BINARY = 9,	/* the binary a core names is not on this host (or differs) */
	EXIT_BAD_PROFILE = 10,	/* a profile file cannot be read, or is none, or is corrupt */
	EXIT_CMD_NOEXEC = 126,	/* command after -- is not executable */
	EXIT_CMD_NOTFOUND = 127,	/* command after -- does not exist */
};

#endif
