# SPDX-License-Identifier: GPL-2.0-only
# apt_get: apt-get that waits for another package manager's lock instead of failing;
# chroot_apt_get ROOT: the same inside the Debian tree at ROOT. Sourced by the set-up
# scripts.

# Another apt (unattended upgrades, a second terminal) may hold dpkg's lock or the
# lists' lock for minutes: wait for it rather than fail. DPkg::Lock::Timeout covers
# dpkg's locks; the retry covers `update`'s lists lock, which that option does not.
apt__run() {
	local log rc tries=0

	log=$(mktemp)
	while :; do
		# apt-get's own status, whether or not the caller set pipefail.
		{ "$@" 2>&1 | tee "$log"; rc=${PIPESTATUS[0]}; } || true
		if [ "$rc" -eq 0 ]; then
			rm -f "$log"
			return 0
		fi
		if ! grep -qE 'Could not get lock|Unable to lock' "$log" || [ $((++tries)) -ge 60 ]; then
			rm -f "$log"
			return 1
		fi
		echo "apt: another package manager holds apt's lock; retrying in 10 s" >&2
		sleep 10
	done
}

apt_get() {
	apt__run apt-get -o DPkg::Lock::Timeout=600 "$@"
}

chroot_apt_get() {
	local root=$1

	shift
	# A chroot has no /dev/pts for dpkg's pseudo-terminal log: without one, apt says
	# "E: Can not write log" though nothing failed.
	DEBIAN_FRONTEND=noninteractive apt__run chroot "$root" apt-get -o DPkg::Lock::Timeout=600 \
		-o Dpkg::Use-Pty=0 "$@"
}
