# SPDX-License-Identifier: GPL-2.0-only
"""--native, part 2: which eval-loop activation ran which Python frames, and one stack
of native and Python frames.

tests/unit/test_decode_runs.c decodes fake targets of every layout (3.11's is_entry and
_PyCFrame chain read from a copy of the native stack; 3.12-3.15's entry frames; 3.15's
base frame) and checks the runs of frames per activation and their C-stack addresses;
tests/unit/test_native_merge.c checks native_merge__interleave() on stacks written out
by hand (plumbing dropped, other objects kept, cut and inconsistent walks) and on random
ones checked against the rules. Both run plain and under ASan/UBSan.
"""

import subprocess

import pytest

from conftest import REPO
from test_sanitizers import SAN_ENV, assert_clean, san_binary


def unit_binary(build, name):
    if build == "sanitizers":
        return san_binary(f"tests/{name}")
    p = subprocess.run(["make", "-C", str(REPO), f"build/tests/{name}"], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, f"building {name} failed:\n{p.stderr[-3000:]}"
    return str(REPO / "build" / "tests" / name)


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
@pytest.mark.parametrize("name", ["test_decode_runs", "test_native_merge"])
def test_unit(build, name):
    p = subprocess.run([unit_binary(build, name)], capture_output=True, text=True, timeout=300,
                       env=SAN_ENV if build == "sanitizers" else None)
    assert_clean(p, name)
    assert f"{name}: all passed" in p.stdout, p.stdout
