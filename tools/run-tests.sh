#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The whole test suite: installs what is missing, builds (plain and with the address
# and undefined-behaviour sanitizers), prepares the test interpreters and runs every
# test. Idempotent; safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
	echo "run-tests: the tests load BPF programs and profile other processes; run as root (sudo make test)" >&2
	exit 1
fi

# What the machine must allow, checked before anything is built, each with the reason:
# a failure here is the machine's, not the code's.
preflight() {
	local major minor
	[ -r /sys/kernel/btf/vmlinux ] || {
		echo "run-tests: this kernel has no BTF (/sys/kernel/btf/vmlinux); the BPF tests need it" >&2
		return 1
	}
	IFS=. read -r major minor _ <<<"$(uname -r)"
	if [ "$major" -lt 5 ] || { [ "$major" -eq 5 ] && [ "${minor%%[!0-9]*}" -lt 17 ]; }; then
		echo "run-tests: Linux $(uname -r) is older than 5.17, which the BPF sampler needs (bpf_loop)" >&2
		return 1
	fi
	grep -q ' cgroup2 ' /proc/self/mounts || {
		echo "run-tests: no cgroup v2 hierarchy is mounted; the container and agent tests make cgroups in one (mount -t cgroup2 none /sys/fs/cgroup/unified)" >&2
		return 1
	}
	unshare --pid --mount --fork true 2>/dev/null || {
		echo "run-tests: cannot create PID and mount namespaces (unshare --pid --mount --fork); the namespace tests need to" >&2
		return 1
	}
}
preflight

step "installing missing packages"
bash tools/install-deps.sh test

step "building"
make -j2
make -j2 unit-tests
make check-layers

step "building with -fsanitize=address,undefined"
make -j2 OUT=build/san SAN=address,undefined build/san/pybpfprof build/san/tests/test_linetable build/san/tests/test_offsets \
	build/san/tests/test_field_bounds build/san/tests/test_writers \
	build/san/tests/test_json build/san/tests/test_top_view build/san/tests/test_cgroup_labels \
	build/san/tests/test_export_queue build/san/tests/test_agent_config \
	build/san/tests/test_export_files build/san/tests/test_export_http build/san/tests/test_outfile \
	build/san/tests/test_agent_procs build/san/tests/test_descendants build/san/tests/test_code_cache \
	build/san/tests/test_frame_cache build/san/tests/test_hashmap build/san/tests/test_native_unwind \
	build/san/tests/test_aggregate build/san/tests/test_native_merge build/san/tests/test_decode_runs \
	build/san/tests/test_native_live build/san/tests/test_live_verify

step "preparing CPython 3.11 (host) and 3.13, 3.14, 3.15 (Debian sid chroot)"
bash tools/test-interpreters.sh >/dev/null

step "running the tests"
if [ -x "${PBP_PY312_HOME:-/root/.pyenv/versions/3.12.1}/bin/python3.12" ]; then
	echo "CPython 3.12: ${PBP_PY312_HOME:-/root/.pyenv/versions/3.12.1} (in the interpreter matrix)"
else
	echo "CPython 3.12: no build at ${PBP_PY312_HOME:-/root/.pyenv/versions/3.12.1}; left out of the matrix"
fi
# Two tests at a time (pytest-xdist), a test file's tests on one worker so that its
# module fixtures are made once. The tests marked `alone` see the whole machine (the
# agent, `record -a`, container runtimes); they run after, one at a time with nothing
# beside them, and find the container images that the first part built. Both parts
# always run; either failing fails the suite.
pytest_part() {
	local rc=0
	/usr/bin/python3 -m pytest -v -p no:cacheprovider "$@" || rc=$?
	# 5: this part selected no test (arguments naming only the other part's tests).
	[ "$rc" -eq 5 ] && rc=0
	return "$rc"
}
status=0
step "running the tests, two at a time"
pytest_part -n 2 --dist loadfile -m "not alone" --durations=30 tests "$@" || status=1
step "running the tests that see the whole machine, one at a time"
pytest_part -m alone --durations=10 tests "$@" || status=1
exit "$status"
