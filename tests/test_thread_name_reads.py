# SPDX-License-Identifier: GPL-2.0-only
"""Reading a thread's Python name from its Thread object when the target shapes the
object: tests/unit/test_thread_name.c reads it in each way instances keep their
attributes, and from huge or impossible key tables, keys and names that are no str, and
a frame that runs other code, over a fake memory, checking each answer is the name or
an error in a bounded number of reads. Both the plain and the sanitizer builds run."""

import subprocess

import pytest

from conftest import REPO
from test_sanitizers import SAN_ENV, assert_clean, san_binary


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_thread_name_reads_unit_passes(build):
    if build == "sanitizers":
        path = san_binary("tests/test_thread_name")
    else:
        p = subprocess.run(["make", "-C", str(REPO), "build/tests/test_thread_name"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"building test_thread_name failed:\n{p.stderr[-3000:]}"
        path = str(REPO / "build" / "tests" / "test_thread_name")
    p = subprocess.run([path], capture_output=True, text=True, timeout=120,
                       env=SAN_ENV if build == "sanitizers" else None)
    assert_clean(p, "test_thread_name")
    assert "thread names: ok" in p.stdout
