# SPDX-License-Identifier: GPL-2.0-only
"""The generic index every table uses (user/base/hashmap.c) and the growable-array helper
(user/base/vec.h): tests/unit/test_hashmap.c adds, finds and deletes keys whose hashes
collide on purpose, in runs that wrap around the end of the slots, checks each entry
sits in exactly one slot, and that failed allocations leave everything as it was.
Both the plain and the sanitizer builds run."""

import pytest

from test_sanitizers import run_unit


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_hashmap_unit_passes(build):
    run_unit("test_hashmap", build, "hashmap: ok")
