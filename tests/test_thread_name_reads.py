# SPDX-License-Identifier: GPL-2.0-only
"""Reading a thread's Python name from its Thread object when the target shapes the
object: tests/unit/test_thread_name.c reads it in each way instances keep their
attributes, and from huge or impossible key tables, keys and names that are no str, and
a frame that runs other code, over a fake memory, checking each answer is the name or
an error in a bounded number of reads. Both the plain and the sanitizer builds run."""

import pytest

from test_sanitizers import run_unit


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_thread_name_reads_unit_passes(build):
    run_unit("test_thread_name", build, "thread names: ok")
