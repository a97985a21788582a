# SPDX-License-Identifier: GPL-2.0-only
"""record's status line: on a terminal's stderr, one line redrawn in place with the
elapsed time, samples, threads and drops, erased before the final messages; nothing of
the kind when stderr is a file, nor when a command after -- shares the terminal.

The terminal is a pty from util-linux `script`, whose output is what the terminal got.
"""

import re
import shlex
import subprocess

from lib.paths import WL_DIR
from lib.interpreters import MODES
from lib.harness import BAD_OUTPUT

STATUS = re.compile(r"\r(pybpfprof: [\d.]+ s, (\d+) samples? \(\d+ incomplete, \d+ dropped\), "
                    r"\d+ threads?[^\r\n\x1b]*)\x1b\[K")
ERASE = "\r\x1b[K"


def under_tty(argv, timeout=60):
    """Runs argv with a pty as its stdin, stdout and stderr; returns (rc, what it wrote)."""
    p = subprocess.run(["script", "-qfec", shlex.join(str(a) for a in argv), "/dev/null"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace")


def test_status_line_counts_samples_on_a_terminal(harness, py311, mode, tmp_path):
    w = harness.start_workload(py311, "ratio")
    out = tmp_path / "profile.txt"
    rc, tty = under_tty(harness.profiler_argv(["record", "-p", w.pid, "-d", 2, "-o", out]
                                              + MODES[mode]))
    assert rc == 0, tty
    assert not BAD_OUTPUT.search(tty), tty
    shown = STATUS.findall(tty)
    assert len(shown) >= 2, f"expected a status line redrawn in place:\n{tty!r}"
    assert max(int(n) for _, n in shown) > 0, f"no samples counted:\n{shown}"
    assert all(len(text) < 80 for text, _ in shown), "status line wider than the pty"
    # Redrawn at most every ~250 ms: 2 s of profiling is not hundreds of redraws.
    assert len(shown) <= 20, f"{len(shown)} redraws in 2 s"
    # Erased before the summary: no message starts on the status line's remains.
    last = tty.rindex("\x1b[K", 0, tty.index("pybpfprof: ", tty.rindex("Ctrl-C stops")))
    assert tty[last - 1:last + 3] == ERASE, f"status line not erased:\n{tty[-600:]!r}"
    summary = tty[last + 3:]
    assert re.match(r"pybpfprof: \d+ samples in", summary), summary
    assert "\x1b" not in summary and "Ctrl-C stops" not in summary, summary


def test_no_status_line_when_stderr_is_a_file(harness, py311):
    w = harness.start_workload(py311, "ratio")
    run = harness.record_pid(w.pid, duration=2, stats=False)
    run.check_ok()
    assert "\r" not in run.stderr and "\x1b" not in run.stderr, repr(run.stderr)
    assert "Ctrl-C stops" not in run.stderr


def test_no_status_line_over_a_command_on_the_same_terminal(harness, py311, tmp_path):
    out = tmp_path / "profile.txt"
    truth = f"{tmp_path}/truth.json"
    rc, tty = under_tty(harness.profiler_argv(
        ["record", "-o", out, "--"] + py311.argv + [f"{WL_DIR}/ratio.py", "--seconds", "2",
                                                    "--truth", truth]))
    assert rc == 0, tty
    assert "Ctrl-C stops" not in tty and "\x1b[K" not in tty, repr(tty)
