# SPDX-License-Identifier: GPL-2.0-only
"""The aggregate's native tables (user/profile/aggregate.c), through tests/unit/test_aggregate.c:
objects found by (pid, base name) and shared by every process that maps the same build,
conflicts refused with the first entry kept, a copy for one process (the agent's
per-process profiles) carrying only that process's objects and function starts, growth
past the first sizes, and native frames that differ only in offset kept apart. Both the
plain and the sanitizer builds run."""

import pytest

from test_sanitizers import run_unit


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_aggregate_native_tables_unit_passes(build):
    run_unit("test_aggregate", build, "aggregate: ok")
