// SPDX-License-Identifier: GPL-2.0-only
/* Messages for a process whose interpreter cannot be read; see target_error.h. */
#include <errno.h>
#include <string.h>

#include "base/exitcodes.h"
#include "base/log.h"
#include "session/target_error.h"

int target_error__report(pid_t pid, int err, const struct py_interp *in,
			 const char *bpf_missing)
{
	char ver[32];

	switch (err) {
	case -ESRCH:
		pr_warn("no such process: %d\n", (int)pid);
		return EXIT_NO_PROCESS;
	case -ENOENT:
		pr_warn("process %d is not a CPython process (no _PyRuntime symbol in its "
			"executable or libpython)\n", (int)pid);
		return EXIT_NOT_PYTHON;
	case -ENOTSUP:
		if (in->version_hex && in->version_hex < 0x030b0000) {
			py_interp__version_str(in->version_hex, ver, sizeof(ver));
			pr_warn("process %d runs CPython %s (%s), older than 3.11, which is not "
				"supported; supported: " PBP_SUPPORTED_VERSIONS "\n", (int)pid,
				ver, in->path);
		} else if (in->version_hex) {
			py_interp__version_str(in->version_hex, ver, sizeof(ver));
			pr_warn("process %d runs CPython %s%s, which is not supported; supported: "
				PBP_SUPPORTED_VERSIONS "\n", (int)pid, ver,
				in->off.free_threaded ? " (free-threaded)" : "");
		} else {
			pr_warn("process %d runs a CPython older than 3.11, which is not "
				"supported; supported: " PBP_SUPPORTED_VERSIONS "\n", (int)pid);
		}
		return EXIT_UNSUPPORTED;
	case -EACCES:
	case -EPERM:
		if (in->unopened) {
			pr_warn("cannot open %s, which process %d maps, to look for its "
				"interpreter: %s (needs read access to it, or CAP_SYS_ADMIN for "
				"/proc/%d/map_files)\n", in->path, (int)pid, strerror(-err),
				(int)pid);
			return EXIT_PRIVILEGES;
		}
		if (bpf_missing)
			pr_warn("missing privileges: cannot read the memory of process %d "
				"(needs CAP_SYS_PTRACE, or the same user with ptrace allowed), and "
				"BPF needs %s\n", (int)pid, bpf_missing);
		else
			pr_warn("cannot read the memory of process %d: permission denied (needs "
				"CAP_SYS_PTRACE or the same user with ptrace allowed)\n",
				(int)pid);
		return EXIT_PRIVILEGES;
	default:
		pr_warn("cannot inspect process %d: %s\n", (int)pid, strerror(-err));
		return EXIT_RUNTIME;
	}
}
