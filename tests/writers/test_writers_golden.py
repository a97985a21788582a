# SPDX-License-Identifier: GPL-2.0-only
"""Every writer on one fixed profile (tests/unit/test_writers.c), byte for byte against
tests/golden/. The fixed profile holds two processes, named and unnamed threads,
markers, a frame without a line, and names that need escaping in every format.

A deliberate change of a format is recorded with PBP_UPDATE_GOLDEN=1, and the diff of
tests/golden/ is then reviewed like code. Both the plain and the sanitizer builds run.
"""

import pytest

from lib.writers import FORMATS, GOLDEN, check_golden


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_writer_matches_golden_file(fmt, build):
    check_golden(fmt, build, GOLDEN)
