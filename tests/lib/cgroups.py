# SPDX-License-Identifier: GPL-2.0-only
"""cgroup v2 for the tests that narrow to a container: the hierarchy's mount point, a
kubelet-style pod cgroup made here, an interpreter whose processes start in a cgroup,
and its removal once its processes are gone."""

import time
import uuid
from pathlib import Path

import pytest

from .interpreters import make_interp
from .paths import RUN_DIR


def cgroup2_root():
    for line in Path("/proc/self/mounts").read_text().splitlines():
        f = line.split()
        if f[2] == "cgroup2":
            return f[1]
    pytest.fail("no cgroup2 hierarchy mounted (needed to make a kubelet-style cgroup)")


def make_pod_cgroup(pod_uid, container_id):
    """A kubelet (systemd driver) cgroup for a burstable pod's container."""
    base = Path(cgroup2_root())
    parts = ["kubepods.slice", "kubepods-burstable.slice",
             f"kubepods-burstable-pod{pod_uid.replace('-', '_')}.slice",
             f"cri-containerd-{container_id}.scope"]
    made = []
    d = base
    for p in parts:
        d = d / p
        if not d.exists():
            d.mkdir()
            made.append(d)
    return d, made


def remove_cgroups(made):
    for d in reversed(made):
        for _ in range(50):
            try:
                d.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def interp_in_cgroup(version, sid_root, group):
    """(python@version started in cgroup v2 @group (a path) by a shell that moves itself
    there first, a fresh go file for its workload, there as the target sees it)."""
    base = make_interp(version, sid_root)
    interp = type(base)(base.version, base.root,
                        ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$0" "$@"']
                        + base.argv, base.error)
    go = f"{RUN_DIR}/go-{uuid.uuid4().hex[:8]}"
    interp.host_path(go).touch()
    return interp, go
