# SPDX-License-Identifier: GPL-2.0-only
"""Every writer on one fixed profile (tests/unit/test_writers.c), byte for byte against
tests/golden/. The fixed profile holds two processes, named and unnamed threads,
markers, a frame without a line, and names that need escaping in every format.

A deliberate change of a format is recorded with PBP_UPDATE_GOLDEN=1, and the diff of
tests/golden/ is then reviewed like code. Both the plain and the sanitizer builds run.
"""

import os

import pytest

from lib.units import SAN_ENV, san_binary
from lib.writers import FORMATS, GOLDEN, build_plain, writer_output


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_writer_matches_golden_file(fmt, build):
    if build == "plain":
        out = writer_output(build_plain(), fmt)
    else:
        out = writer_output(san_binary("tests/test_writers"), fmt, env=SAN_ENV)
    golden = GOLDEN / FORMATS[fmt]
    if os.environ.get("PBP_UPDATE_GOLDEN") == "1" and build == "plain":
        golden.write_bytes(out)
    assert golden.exists(), f"{golden} is missing (record it with PBP_UPDATE_GOLDEN=1)"
    expected = golden.read_bytes()
    assert out == expected, (
        f"{fmt} output differs from {golden}:\n--- got ---\n{out[:3000]!r}\n"
        f"--- expected ---\n{expected[:3000]!r}")
