# SPDX-License-Identifier: GPL-2.0-only
"""Every writer on one fixed profile (tests/unit/test_writers.c), byte for byte against
tests/golden/. The fixed profile holds two processes, named and unnamed threads,
markers, a frame without a line, and names that need escaping in every format.

A deliberate change of a format is recorded with PBP_UPDATE_GOLDEN=1, and the diff of
tests/golden/ is then reviewed like code. Both the plain and the sanitizer builds run.
"""

import gzip
import os
import subprocess

import pytest

from lib.paths import REPO
from lib.units import SAN_ENV, assert_clean, san_binary, unit_binary

GOLDEN = REPO / "tests" / "golden"

# format -> golden file; pprof is compared after gunzip, since gzip is not the format.
FORMATS = {
    "collapsed": "collapsed.txt",
    "svg": "svg.svg",
    "html": "html.html",
    "speedscope": "speedscope.json",
    "pprof": "pprof.pb",
    "chrome": "chrome.trace.json",
}


def _build_plain():
    return unit_binary("test_writers", "plain")


def _output(binary, fmt, env=None, args=()):
    p = subprocess.run([binary, fmt, *args], capture_output=True, timeout=60, env=env)
    if env is not None:
        assert_clean(subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(
            "latin-1"), p.stderr.decode("latin-1")), f"test_writers {fmt}")
    assert p.returncode == 0, f"test_writers {fmt}: exit {p.returncode}\n{p.stderr!r}"
    return gzip.decompress(p.stdout) if fmt == "pprof" else p.stdout


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_writer_matches_golden_file(fmt, build):
    if build == "plain":
        out = _output(_build_plain(), fmt)
    else:
        out = _output(san_binary("tests/test_writers"), fmt, env=SAN_ENV)
    golden = GOLDEN / FORMATS[fmt]
    if os.environ.get("PBP_UPDATE_GOLDEN") == "1" and build == "plain":
        golden.write_bytes(out)
    assert golden.exists(), f"{golden} is missing (record it with PBP_UPDATE_GOLDEN=1)"
    expected = golden.read_bytes()
    assert out == expected, (
        f"{fmt} output differs from {golden}:\n--- got ---\n{out[:3000]!r}\n"
        f"--- expected ---\n{expected[:3000]!r}")
