#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Prepares the CPython interpreters the functional tests run: Debian's python3.11 on
# the host, and python3.13, 3.14 and 3.15 in a Debian sid chroot, with the real
# programs the corpus tests run there (Django, aiohttp, Jinja2, CPython's own test
# suite). Idempotent: a chroot that already holds every interpreter is reused, and one
# that lacks a corpus package gets it. Prints the chroot path on success.
set -euo pipefail
. "$(dirname "$0")/apt.sh"

root=${PBP_TEST_ROOT:-$(cd "$(dirname "$0")/.." && pwd)/.cache/sid}
versions=(3.13 3.14 3.15)
pkgs=python3.13,python3.14,python3.15,libpython3.13-dev,libpython3.14-dev,libpython3.15-dev
# tests/record/test_real_programs.py: Django and sqlite3, aiohttp with Jinja2, and each
# interpreter's own test suite (test.test_json...). Django, Jinja2 and the test suites
# are pure Python; aiohttp and its helpers (multidict, yarl, frozenlist, propcache)
# carry C extensions only for the versions sid builds them for and fall back to their
# pure-Python code elsewhere.
corpus=(python3-django python3-aiohttp python3-jinja2
	libpython3.13-testsuite libpython3.14-testsuite libpython3.15-testsuite)

have_all() {
	local v
	for v in "${versions[@]}"; do
		[ -x "$root/usr/bin/python$v" ] || return 1
		[ -f "$root/usr/include/python$v/internal/pycore_frame.h" ] || return 1
	done
	[ -f "$root/.pbp-complete" ]
}

# One dpkg-query for every package: milliseconds when all are there.
have_corpus() {
	local n

	n=$(chroot "$root" dpkg-query -W -f='${Status}\n' "${corpus[@]}" 2>/dev/null |
		grep -c '^install ok installed$' || true)
	[ "$n" -eq "${#corpus[@]}" ]
}

# apt inside the chroot resolves names with the host's resolver configuration, which
# may have changed since the chroot was made. Lists older than the mirror's packages
# make the first install fail: then they are refreshed and it is tried once more.
install_corpus() {
	have_corpus && return 0
	echo "test-interpreters: installing ${corpus[*]} into $root" >&2
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	chroot_apt_get "$root" install -y -qq --no-install-recommends "${corpus[@]}" >&2 || {
		chroot_apt_get "$root" update -qq >&2 &&
			chroot_apt_get "$root" install -y -qq --no-install-recommends "${corpus[@]}" >&2
	} || {
		echo "test-interpreters: installing ${corpus[*]} into $root failed" >&2
		exit 1
	}
	have_corpus || { echo "test-interpreters: chroot at $root lacks ${corpus[*]} after set-up" >&2; exit 1; }
}

# The mirror comes from the host's own apt configuration so that the project names no
# registry host of its own.
mirror() {
	local m=""
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		m=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
	fi
	if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
		m=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list)
	fi
	[ -n "$m" ] || { echo "test-interpreters: no Debian mirror found in the apt configuration" >&2; exit 1; }
	echo "$m"
}

if [ ! -x /usr/bin/python3.11 ]; then
	echo "test-interpreters: installing python3.11" >&2
	apt_get install -y -qq python3.11 python3.11-dev >&2
fi

# Checkouts may share one chroot (a symbolic link to the same .cache): one builds it
# while the others wait, and none deletes it under another.
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9

if have_all; then
	echo "test-interpreters: reusing $root" >&2
	install_corpus
	echo "$root"
	exit 0
fi

command -v debootstrap >/dev/null || apt_get install -y -qq debootstrap >&2
echo "test-interpreters: building a Debian sid chroot with CPython ${versions[*]} in $root (about 30 s)" >&2
# A benchmark may have left /proc mounted inside; never recurse into it.
umount "$root/proc" 2>/dev/null || true
rm -rf --one-file-system "$root"
mkdir -p "$(dirname "$root")"
debootstrap --variant=minbase --include="$pkgs" sid "$root" "$(mirror)" >"$root.log" 2>&1 || {
	echo "test-interpreters: debootstrap failed; last lines of $root.log:" >&2
	tail -n 20 "$root.log" >&2
	exit 1
}
touch "$root/.pbp-complete"
install_corpus
have_all || { echo "test-interpreters: chroot at $root lacks an interpreter after set-up" >&2; exit 1; }
echo "$root"
