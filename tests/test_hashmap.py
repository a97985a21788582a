# SPDX-License-Identifier: GPL-2.0-only
"""The generic index every table uses (user/hashmap.c) and the growable-array helper
(user/vec.h): tests/unit/test_hashmap.c adds, finds and deletes keys whose hashes
collide on purpose, in runs that wrap around the end of the slots, checks each entry
sits in exactly one slot, and that failed allocations leave everything as it was.
Both the plain and the sanitizer builds run."""

import subprocess

import pytest

from conftest import REPO
from test_sanitizers import SAN_ENV, assert_clean, san_binary


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_hashmap_unit_passes(build):
    if build == "sanitizers":
        path = san_binary("tests/test_hashmap")
    else:
        p = subprocess.run(["make", "-C", str(REPO), "build/tests/test_hashmap"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"building test_hashmap failed:\n{p.stderr[-3000:]}"
        path = str(REPO / "build" / "tests" / "test_hashmap")
    p = subprocess.run([path], capture_output=True, text=True, timeout=120,
                       env=SAN_ENV if build == "sanitizers" else None)
    assert_clean(p, "test_hashmap")
    assert "hashmap: ok" in p.stdout
