# SPDX-License-Identifier: GPL-2.0-only
"""What reading an asyncio task costs when the target decides the size of its awaiters'
set: tests/unit/test_asyncio_reads.c fills a 4096-slot set with objects that are no
task, and checks the scan stops after a few (12 reads, where every slot was read before,
over 8,000), that awaiters among fewer strangers are all found, and that a read budget
(user/mem_budget.c) ends a walk once spent. Both the plain and the sanitizer builds
run."""

import subprocess

import pytest

from conftest import REPO
from test_sanitizers import SAN_ENV, assert_clean, san_binary


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_asyncio_reads_unit_passes(build):
    if build == "sanitizers":
        path = san_binary("tests/test_asyncio_reads")
    else:
        p = subprocess.run(["make", "-C", str(REPO), "build/tests/test_asyncio_reads"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"building test_asyncio_reads failed:\n{p.stderr[-3000:]}"
        path = str(REPO / "build" / "tests" / "test_asyncio_reads")
    p = subprocess.run([path], capture_output=True, text=True, timeout=120,
                       env=SAN_ENV if build == "sanitizers" else None)
    assert_clean(p, "test_asyncio_reads")
    assert "asyncio reads: ok" in p.stdout
