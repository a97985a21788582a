# SPDX-License-Identifier: GPL-2.0-only
"""Names a target chooses (its functions, file names, command line) never reach a
terminal raw: ESC, BEL and the C1 CSI (U+009B) come out escaped from `dump`, from
collapsed stacks written to stdout, and in log lines about the process."""

import re

from lib.paths import PROFILER_GRACE
from lib.harness import Harness

# Raw C0 controls other than tab and newline, DEL, and C1 in UTF-8.
RAW_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
ESCAPE_ARG = "\x1b[2J\x1b]0;title\x07"


def evil(h, py):
    # First, so that a log line cut to its length still holds it.
    return h.start_workload(py, "evil_names", seconds=120, first_args=[ESCAPE_ARG])


def raw(run):
    """Everything the profiler wrote, as bytes."""
    return run.stdout.encode("utf-8", "surrogateescape"), \
        run.stderr.encode("utf-8", "surrogateescape")


def test_dump_escapes_names(py311, tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    try:
        w = evil(h, py311)
        run = h.run_profiler(["dump", "-p", w.pid], timeout=PROFILER_GRACE)
    finally:
        h.close()
    assert run.rc == 0, run.describe()
    out, err = raw(run)
    assert not RAW_CONTROL.search(out + err), f"raw control bytes:\n{out!r}"
    assert rb"evil\x1b[31m\xc2\x9b2J" in out, out


def test_collapsed_to_stdout_and_log_lines_escape_names(py311, tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    try:
        w = evil(h, py311)
        run = h.run_profiler(["record", "-a", "--pid-filter", w.pid, "-v", "-d", 2,
                              "-o", "-"], timeout=2 + PROFILER_GRACE)
    finally:
        h.close()
    assert run.rc == 0, run.describe()
    out, err = raw(run)
    bad = [l for l in (out + err).splitlines() if RAW_CONTROL.search(l)]
    assert not bad, f"raw control bytes in {len(bad)} lines: {bad[:3]!r}"
    assert rb"evil\x1b[31m\xc2\x9b2J" in out, out[-2000:]
    following = [l for l in err.splitlines() if f"following pid {w.pid} ".encode() in l]
    assert following and b"?[2J" in following[0], err[-2000:]
