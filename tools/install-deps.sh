#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs the Debian packages pybpfprof needs and nothing that is already there.
#   tools/install-deps.sh build   what `make` needs
#   tools/install-deps.sh test    that, plus what the test suite needs
set -euo pipefail

build=(make gcc clang llvm pkg-config libbpf-dev libelf-dev zlib1g-dev bpftool)
test=(python3 python3-pytest python3.11 python3.11-dev debootstrap util-linux passwd gdb chromium tmux)

want=("${build[@]}")
[ "${1:-build}" = test ] && want+=("${test[@]}")

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#want[@]} packages present"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; rerun as root (sudo)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
