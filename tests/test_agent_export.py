# SPDX-License-Identifier: GPL-2.0-only
"""The agent's export side, piece by piece: cgroup labels, per-profile labels in pprof,
the bounded export queue, rotated files, the config file, the Pyroscope push and the
Prometheus endpoint. The C unit test binaries (tests/unit/test_*.c) do the work; the
HTTP ones talk to a real server on 127.0.0.1 that this file runs (Python's
http.server), or are scraped by a real client, and what crossed the wire is checked
here: the request line, the query, the multipart body decoded with protoc.

Both the plain and the sanitizer builds run.
"""

import gzip
import http.server
import os
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from email.parser import BytesParser
from email.policy import HTTP

import pytest

from conftest import REPO
from test_sanitizers import SAN_ENV, assert_clean, san_binary

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile  # noqa: E402

BUILDS = ["plain", "sanitizers"]


def binary(name, build):
    if build == "sanitizers":
        return san_binary(f"tests/{name}")
    p = subprocess.run(["make", "-C", str(REPO), f"build/tests/{name}"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"building {name} failed:\n{p.stderr[-3000:]}"
    return str(REPO / "build" / "tests" / name)


def env_for(build):
    return SAN_ENV if build == "sanitizers" else None


def run_unit(name, build, args=(), timeout=120):
    p = subprocess.run([binary(name, build), *args], capture_output=True, text=True,
                       timeout=timeout, env=env_for(build))
    assert_clean(p, name)
    return p


# --------------------------------------------------------------------------------------
# Self-contained units

@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("name", ["test_cgroup_labels", "test_export_queue"])
def test_agent_unit_passes(name, build):
    run_unit(name, build)


@pytest.mark.parametrize("build", BUILDS)
def test_pprof_carries_the_profile_labels_on_every_sample(build):
    """Every sample has the profile-wide labels beside its own pid/thread labels; an
    empty label is left out; protoc, not our code, reads them back."""
    p = subprocess.run([binary("test_writers", build), "pprof", "--labels"],
                       capture_output=True, timeout=60, env=env_for(build))
    assert p.returncode == 0, p.stderr
    prof = Profile.parse(gzip.decompress(p.stdout))
    want = {"hostname": "node-1", "pod_uid": "8d1a2f5c-7b1e-4c3a-9f00-1234567890ab",
            "qos": "burstable", "command": 'python3 app.py --name="a,b{c}"',
            "app": "node-1"}
    samples = list(prof.samples())
    assert len(samples) == 6
    for _, _, labels in samples:
        assert {k: labels.get(k) for k in want} == want
        assert "container_id" not in labels
        assert {"pid", "thread_id"} <= labels.keys()
    # Repeated strings are stored once.
    assert prof.strings.count("node-1") == 1
