#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs the Debian packages pybpfprof needs and nothing that is already there.
#   tools/install-deps.sh build   what `make` needs
#   tools/install-deps.sh test    that, plus what the test suite needs, and the
#                                 speedscope app (npm) in .cache-npm/ for the
#                                 browser tests of the output formats
set -euo pipefail
. "$(dirname "$0")/apt.sh"

build=(python3 make gcc clang llvm pkg-config libbpf-dev libelf-dev libdw-dev zlib1g-dev libcurl4-openssl-dev bpftool)
# The real-program corpus (tests/record/test_real_programs.py) runs Django, aiohttp with Jinja2
# templates and CPython's own test suite on the host's 3.11.
test=(python3-pytest python3-pytest-xdist python3.11 python3.11-dev debootstrap util-linux passwd gdb chromium
	protobuf-compiler python3-jsonschema tmux docker.io podman golang-go libclang-rt-14-dev libc6-dbg
	python3-django python3-aiohttp python3-jinja2 libpython3.11-testsuite)

# The speedscope release the browser tests load; its file-format-schema.json is the
# schema the speedscope output is validated against.
SPEEDSCOPE_VERSION=1.25.0
NPM_DIR="$(cd "$(dirname "$0")/.." && pwd)/.cache-npm"

want=("${build[@]}")
[ "${1:-build}" = test ] && want+=("${test[@]}")
# npm comes with some Node.js builds; Debian's own only where none is installed.
[ "${1:-build}" = test ] && ! command -v npm >/dev/null && want+=(npm)

install_speedscope() {
	local pkg="$NPM_DIR/node_modules/speedscope/package.json"

	if [ -f "$pkg" ] && grep -q "\"version\": \"$SPEEDSCOPE_VERSION\"" "$pkg"; then
		return 0
	fi
	echo "install-deps: installing speedscope $SPEEDSCOPE_VERSION into $NPM_DIR"
	mkdir -p "$NPM_DIR"
	npm install --silent --no-audit --no-fund --no-save --prefix "$NPM_DIR" \
		"speedscope@$SPEEDSCOPE_VERSION"
}

# The status is compared whole rather than piped to `grep -q`, which may close the pipe
# while dpkg-query still writes: under pipefail that SIGPIPE would read as "missing".
installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

missing=()
for p in "${want[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#want[@]} packages present"
	[ "${1:-build}" = test ] && install_speedscope
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; rerun as root (sudo)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt_get update -qq
apt_get install -y -qq --no-install-recommends "${missing[@]}"
[ "${1:-build}" = test ] && install_speedscope
exit 0
