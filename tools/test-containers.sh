#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Prepares the images the container tests run, with no image registry: a Debian 12
# base with python3 (debootstrap, imported into docker and podman), the sid chroot's
# CPython 3.13-3.15 as a second image (docker), and the agent's image built from
# deploy/Dockerfile on that base (docker, copied into podman). Needs a running dockerd
# (tests/containers/test_containers.py starts one). Idempotent: what is already there and current
# is reused. Prints the image names, one per line, as NAME=IMAGE.
set -euo pipefail
cd "$(dirname "$0")/.."

docker=/usr/bin/docker	# Debian's client; another may sit earlier in PATH
base_root=${PBP_CONTAINER_ROOT:-$PWD/.cache/bookworm}
sid_root=${PBP_TEST_ROOT:-$PWD/.cache/sid}
base=local/bookworm-python
sid=local/sid-python
agent=pybpfprof-agent:test

say() { echo "test-containers: $*" >&2; }
die() { say "$*"; exit 1; }

# The mirror comes from the host's apt configuration, as in test-interpreters.sh.
mirror() {
	local m=""
	[ -f /etc/apt/sources.list.d/debian.sources ] &&
		m=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
	[ -z "$m" ] && [ -f /etc/apt/sources.list ] &&
		m=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list)
	[ -n "$m" ] || die "no Debian mirror found in the apt configuration"
	echo "$m"
}

# The stamp a directory tree was finished with: an image records the one it was made
# from, so that a rebuilt tree is imported again.
stamp() { stat -c %Y "$1/.pbp-complete"; }

$docker info >/dev/null 2>&1 || die "dockerd is not running (docker info fails)"
command -v podman >/dev/null || die "podman is not installed (tools/install-deps.sh test)"

if [ ! -f "$base_root/.pbp-complete" ]; then
	say "building a Debian 12 base with python3 in $base_root (about 80 s)"
	rm -rf --one-file-system "$base_root"
	mkdir -p "$(dirname "$base_root")"
	debootstrap --variant=minbase --include=python3 bookworm "$base_root" "$(mirror)" \
		>"$base_root.log" 2>&1 || {
		say "debootstrap failed; last lines of $base_root.log:"
		tail -n 20 "$base_root.log" >&2
		exit 1
	}
	touch "$base_root/.pbp-complete"
fi
[ -f "$sid_root/.pbp-complete" ] || die "no sid chroot at $sid_root (tools/test-interpreters.sh)"

# import RUNTIME IMAGE ROOT: RUNTIME's IMAGE made from the tree at ROOT, unless current.
import() {
	local rt=$1 image=$2 root=$3 want have
	want=$(stamp "$root")
	have=$($rt image inspect --format '{{ index .Config.Labels "pbp.stamp" }}' "$image" \
		2>/dev/null || true)
	[ "$have" = "$want" ] && return 0
	say "importing $root as $rt image $image"
	tar -C "$root" --exclude=./proc --exclude=./sys --exclude=./dev -c . |
		$rt import --change "LABEL pbp.stamp=$want" - "$image" >/dev/null
}
import "$docker" "$base" "$base_root"
import podman "$base" "$base_root"
import "$docker" "$sid" "$sid_root"

# The agent's image, the way a platform team builds it, FROM the local base; docker's
# layer cache makes this quick when nothing changed.
say "building $agent from deploy/Dockerfile"
$docker build -q -f deploy/Dockerfile --build-arg BUILD_IMAGE="$base" \
	--build-arg RUNTIME_IMAGE="$base" -t "$agent" . >/dev/null ||
	die "docker build of deploy/Dockerfile failed"
id=$($docker image inspect --format '{{.Id}}' "$agent")
if [ "$(podman image inspect --format '{{.Id}}' "localhost/$agent" 2>/dev/null || true)" != \
	"${id#sha256:}" ]; then
	say "copying $agent into podman"
	$docker save "$agent" | podman load -q >/dev/null
fi

echo "base=$base"
echo "sid=$sid"
echo "agent=$agent"
