# SPDX-License-Identifier: GPL-2.0-only
"""The images the container tests run, built by tools/test-containers.sh: a Debian 12
base with python3 (debootstrap), the sid chroot, and the agent's image from
deploy/Dockerfile FROM that base, in docker and copied into podman.

Building them takes minutes the first time (the base, the Dockerfile's apt steps and its
build of pybpfprof), mostly waiting on the mirror and the compiler. This file sees no
other process, so `make test` runs it beside the other tests; test_containers.py, which
runs alone, then finds every layer in docker's cache."""

import pytest

from lib.containers import DOCKER, PODMAN, PODMAN_LIMITS, prepared_images, sh

pytestmark = [pytest.mark.containers, pytest.mark.bpf]


def run(rt):
    return [rt, "run", "--rm", "--network", "none"] + (PODMAN_LIMITS if rt == PODMAN else [])


def test_the_agents_image_builds_and_runs_the_profiler_in_both_runtimes(tmp_path):
    with prepared_images(tmp_path) as images:
        assert sorted(images) == ["agent", "base", "sid"], images
        for rt, name in ((DOCKER, images["agent"]), (PODMAN, f"localhost/{images['agent']}")):
            p = sh(run(rt) + [name, "--version"], check=False, timeout=120)
            assert p.returncode == 0 and p.stdout.startswith("pybpfprof "), \
                (rt, p.returncode, p.stdout, p.stderr[-2000:])
        for rt, name in ((DOCKER, images["base"]), (PODMAN, f"localhost/{images['base']}"),
                         (DOCKER, images["sid"])):
            p = sh(run(rt) + [name, "python3", "-c", "print(1 + 1)"], check=False,
                   timeout=120)
            assert p.returncode == 0 and p.stdout.strip() == "2", \
                (rt, name, p.returncode, p.stdout, p.stderr[-2000:])
