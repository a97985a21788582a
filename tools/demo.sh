#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make demo`: installs what is missing, builds, profiles the bundled example program
# for a few seconds and prints its hottest stacks. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: profiling needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE); run: sudo make demo" >&2
	exit 1
fi
step "installing missing packages"
bash tools/install-deps.sh build
dpkg-query -W -f='${Status}' python3 2>/dev/null | grep -q "install ok installed" ||
	apt-get install -y -qq python3

step "building"
make -j2

out=build/demo.txt
step "profiling: build/pybpfprof record -r 500 -o $out -- /usr/bin/python3 tools/demo/app.py 4"
build/pybpfprof record -r 500 -o "$out" --stats-file build/demo-stats.json -- \
	/usr/bin/python3 tools/demo/app.py 4

step "hottest stacks (samples, then the stack from the root; innermost frame last)"
awk '{ print $NF "\t" $0 }' "$out" | sort -nr | cut -f2- | head -n 6 | awk '{
	n = $NF; $NF = ""; sub(/ $/, "");
	k = split($0, f, ";"); s = f[1];
	for (i = 2; i <= k; i++) s = s "\n        -> " f[i];
	printf "%6d  %s\n\n", n, s
}'
echo "full profile: $out (collapsed stacks; feed it to flamegraph.pl or speedscope)"
echo "statistics:   build/demo-stats.json"
