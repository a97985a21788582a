# SPDX-License-Identifier: GPL-2.0-only
"""What reading an asyncio task costs when the target decides the size of its awaiters'
set: tests/unit/test_asyncio_reads.c fills a 4096-slot set with objects that are no
task, and checks the scan stops after a few (12 reads, where every slot was read before,
over 8,000), that awaiters among fewer strangers are all found, and that a read budget
(user/mem/mem_budget.c) ends a walk once spent. Both the plain and the sanitizer builds
run."""

import pytest

from test_sanitizers import run_unit


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_asyncio_reads_unit_passes(build):
    run_unit("test_asyncio_reads", build, "asyncio reads: ok")
