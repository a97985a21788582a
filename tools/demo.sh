#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make demo`: installs what is missing, builds, profiles the bundled example program
# once into a profile file and an interactive flame graph, prints its report, then
# reads the same recording again by line and converts it to another format.
# Idempotent.
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

pbp=build/demo.pbp
svg=build/demo.svg
step "profiling, with its report: build/pybpfprof record -r 500 -o $pbp -o $svg --report -- /usr/bin/python3 tools/demo/app.py 4"
build/pybpfprof record -r 500 -o "$pbp" -o "$svg" --stats-file build/demo-stats.json \
	--report -l 8 -- /usr/bin/python3 tools/demo/app.py 4

step "the same recording by line: build/pybpfprof report $pbp --by line -l 8"
build/pybpfprof report "$pbp" --by line -l 8

step "and in speedscope's format: build/pybpfprof convert $pbp -o build/demo.speedscope.json"
build/pybpfprof convert "$pbp" -o build/demo.speedscope.json

echo
echo "flame graph:  $svg (open it in a browser: hover, click to zoom, Ctrl-F to search)"
echo "recording:    $pbp ('pybpfprof report' and 'pybpfprof convert' read it)"
echo "statistics:   build/demo-stats.json"
