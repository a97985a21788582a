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

step "installing missing packages"
bash tools/install-deps.sh test

step "building"
make -j2
make -j2 unit-tests

step "building with -fsanitize=address,undefined"
make -j2 OUT=build/san SAN=address,undefined build/san/pybpfprof build/san/tests/test_linetable build/san/tests/test_offsets build/san/tests/test_writers \
	build/san/tests/test_json_out build/san/tests/test_top_view build/san/tests/test_cgroup_labels \
	build/san/tests/test_export_queue build/san/tests/test_agent_config \
	build/san/tests/test_export_files build/san/tests/test_export_http build/san/tests/test_code_cache build/san/tests/test_frame_cache

step "preparing CPython 3.11 (host) and 3.13, 3.14, 3.15 (Debian sid chroot)"
bash tools/test-interpreters.sh >/dev/null

step "running the tests"
exec /usr/bin/python3 -m pytest -v -p no:cacheprovider tests "$@"
