#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Prints the N hottest stacks of a collapsed-stacks profile (default 6), each as its
# sample count and its frames from the root down, innermost last.
#   tools/hottest-stacks.sh FILE [N]
set -euo pipefail

file=${1:?usage: tools/hottest-stacks.sh FILE [N]}
n=${2:-6}
# Every stage reads its input to the end: a `head` here would close the pipe while
# `sort` or `cut` still writes, and under pipefail that SIGPIPE fails the caller.
awk '{ print $NF "\t" $0 }' "$file" | sort -nr | cut -f2- | awk -v n="$n" 'NR > n { next } {
	c = $NF; $NF = ""; sub(/ $/, "");
	k = split($0, f, ";"); s = f[1];
	for (i = 2; i <= k; i++) s = s "\n        -> " f[i];
	printf "%6d  %s\n\n", c, s
}'
