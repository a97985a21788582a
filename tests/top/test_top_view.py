# SPDX-License-Identifier: GPL-2.0-only
"""The function table of `top` on one fixed profile (tests/unit/test_top_view.c): its
counts (recursion counted once per sample, one name in two files kept apart), its
renderings byte for byte against tests/golden/top_*.txt, and the screen's geometry at
several sizes: exactly H lines, none wider than W, no control byte from the target's
names. A deliberate change is recorded with PBP_UPDATE_GOLDEN=1 and reviewed as code.
Both the plain and the sanitizer builds run.
"""

import os
import re
import subprocess

import pytest

from lib.paths import REPO
from lib.units import SAN_ENV, assert_clean, unit_binary

GOLDEN = REPO / "tests" / "golden"
ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")

RENDERINGS = {
    "top_80x24_own.txt": ["screen", "own", "80", "24"],
    "top_80x24_total.txt": ["screen", "total", "80", "24"],
    "top_40x12_own.txt": ["screen", "own", "40", "12"],
    "top_text.txt": ["text", "own", "5"],
    "top_update.txt": ["update", "own"],
    "top_native.txt": ["native"],
}


def _run(build, args):
    env = SAN_ENV if build == "sanitizers" else None
    p = subprocess.run([unit_binary("test_top_view", build)] + args, capture_output=True,
                       timeout=60, env=env)
    if env is not None:
        assert_clean(subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(
            "latin-1"), p.stderr.decode("latin-1")), f"test_top_view {args}")
    assert p.returncode == 0, f"test_top_view {args}: exit {p.returncode}\n{p.stderr!r}"
    return p.stdout


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_function_counts_are_once_per_sample_and_per_file(build):
    _run(build, ["check"])


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
@pytest.mark.parametrize("golden", sorted(RENDERINGS))
def test_rendering_matches_golden_file(golden, build):
    out = _run(build, RENDERINGS[golden])
    path = GOLDEN / golden
    if os.environ.get("PBP_UPDATE_GOLDEN") == "1" and build == "plain":
        path.write_bytes(out)
    assert path.exists(), f"{path} is missing (record it with PBP_UPDATE_GOLDEN=1)"
    expected = path.read_bytes()
    assert out == expected, (f"{RENDERINGS[golden]} differs from {path}:\n--- got ---\n"
                             f"{out.decode(errors='replace')}\n--- expected ---\n"
                             f"{expected.decode(errors='replace')}")


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_native_function_is_one_row_named_as_in_collapsed(build):
    """--native: a C function is a row, FUNCTION (OBJECT) as the collapsed format names
    it without the offset, whatever offsets its samples had; the binary checks the
    counts and fails on a mismatch."""
    rows = _run(build, ["native"]).decode().splitlines()
    memcpy = [r for r in rows if r.endswith("  memcpy (libc.so.6)")]
    assert len(memcpy) == 1, rows
    assert memcpy[0].split()[:2] == ["66.7", "66.7"], memcpy[0]
    assert any(r.endswith("  libz.so.1+0x3a40 (libz.so.1)") for r in rows), rows
    assert not any("+0x2c" in r or "+0x4a" in r for r in rows), rows


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_native_function_with_line_info_is_a_row_named_by_its_source(build):
    """A C function with DWARF line info is a row FUNCTION (SOURCE), the source's base
    name, as the collapsed format names it without the line."""
    rows = _run(build, ["native-lines"]).decode().splitlines()
    spin = [r for r in rows if r.endswith("  pbpext_spin (pbpext.c)")]
    assert len(spin) == 1 and spin[0].split()[:2] == ["75.0", "75.0"], rows
    assert any(r.endswith("  pbpext_burn (pbpext.c)") for r in rows), rows
    assert any(r.endswith("  memcpy (libc.so.6)") for r in rows), rows


@pytest.mark.parametrize("width,height", [(80, 24), (120, 40), (56, 10), (55, 10),
                                          (40, 12), (20, 5), (1, 1), (200, 3)])
def test_screen_has_exactly_its_size_and_no_control_bytes(width, height):
    args = ["screen", "own", str(width), str(height)]
    plain = _run("plain", args)
    ansi = _run("plain", args + ["ansi"])
    # H - 1 line breaks: one after the last line would scroll the screen.
    lines = plain.decode().split("\n")
    assert len(lines) == height, f"{len(lines)} lines for a height of {height}:\n{plain!r}"
    for line in lines:
        assert len(line) <= width, f"line wider than {width}: {line!r}"
        assert not any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 for c in line), repr(line)
    assert ansi.startswith(b"\x1b[H"), ansi[:20]
    stripped = [l.rstrip() for l in ANSI.sub(b"", ansi).decode().split("\n")]
    assert stripped == [l.rstrip() for l in lines], "ANSI and plain screens differ"
