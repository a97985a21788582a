#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make demo`: installs what is missing, builds, profiles the bundled example program
# into an interactive flame graph (build/demo.svg), then once more as text to print
# its hottest stacks. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: profiling needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE); run: sudo make demo" >&2
	exit 1
fi
step "installing missing packages"
bash tools/install-deps.sh build

step "building"
make -j2

svg=build/demo.svg
step "profiling into a flame graph: build/pybpfprof record -r 500 -o $svg -- /usr/bin/python3 tools/demo/app.py 4"
build/pybpfprof record -r 500 -o "$svg" --stats-file build/demo-stats.json -- \
	/usr/bin/python3 tools/demo/app.py 4

out=build/demo.txt
step "profiling as text: build/pybpfprof record -r 500 -o $out -- /usr/bin/python3 tools/demo/app.py 2"
build/pybpfprof record -r 500 -o "$out" -- /usr/bin/python3 tools/demo/app.py 2

step "hottest stacks (samples, then the stack from the root; innermost frame last)"
bash tools/hottest-stacks.sh "$out" 6
echo "flame graph:  $svg (open it in a browser: hover, click to zoom, Ctrl-F to search)"
echo "text profile: $out (collapsed stacks)"
echo "statistics:   build/demo-stats.json"
