# SPDX-License-Identifier: GPL-2.0-only
"""--no-bpf's check of one reading (docs/live-sampling.md) on fake targets of every
layout with entry frames: tests/unit/test_live_verify.c, plain and under ASan/UBSan.
Callers above the chunk's top at either end are refused; the innermost frame may have
been pushed during the reading only under a Python caller the two copies agree on;
frames read outside the copies are reported for the next reading. The live targets of
tests/record/test_frame_cache_stress.py and tests/record/test_real_programs.py check the same rules
against workloads that know their stacks."""

import subprocess

import pytest

from lib.units import SAN_ENV, assert_clean, unit_binary


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_live_verify(build):
    p = subprocess.run([unit_binary("test_live_verify", build)], capture_output=True,
                       text=True, timeout=300, env=SAN_ENV if build == "sanitizers" else None)
    assert_clean(p, "test_live_verify")
    assert "test_live_verify: all passed" in p.stdout, p.stdout
