# SPDX-License-Identifier: GPL-2.0-only
"""The aggregate's native tables (user/aggregate.c), through tests/unit/test_aggregate.c:
objects found by (pid, base name) and shared by every process that maps the same build,
conflicts refused with the first entry kept, a copy for one process (the agent's
per-process profiles) carrying only that process's objects and function starts, growth
past the first sizes, and native frames that differ only in offset kept apart. Both the
plain and the sanitizer builds run."""

import subprocess

import pytest

from conftest import REPO
from test_sanitizers import SAN_ENV, assert_clean, san_binary


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_aggregate_native_tables_unit_passes(build):
    if build == "sanitizers":
        path = san_binary("tests/test_aggregate")
    else:
        p = subprocess.run(["make", "-C", str(REPO), "build/tests/test_aggregate"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"building test_aggregate failed:\n{p.stderr[-3000:]}"
        path = str(REPO / "build" / "tests" / "test_aggregate")
    p = subprocess.run([path], capture_output=True, text=True, timeout=120,
                       env=SAN_ENV if build == "sanitizers" else None)
    assert_clean(p, "test_aggregate")
    assert "aggregate: ok" in p.stdout
