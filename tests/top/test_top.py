# SPDX-License-Identifier: GPL-2.0-only
"""`pybpfprof top` against the ratio workload (fa gets 3x the CPU of fb, both called by
parent from main from <module>), in both sampling modes.

The terminal view runs in a detached tmux session of 80x24 on a private tmux server;
the test reads the screen with `tmux capture-pane` and types with `tmux send-keys`. The
shell around top checks that the terminal mode after top is the one before it. Without
a terminal, top prints plain blocks and stops on SIGINT.
"""

import os
import re
import shutil
import signal
import subprocess
import time
import uuid

import pytest

from lib.interpreters import MODES
from lib.harness import BAD_OUTPUT, wait_asleep

# Seconds from top's first screen until fa leads the table. Counted from the screen, not
# from the command: loading the BPF program comes first and took 1.2 to 5.4 s on a
# loaded 2-CPU test VM, which says nothing about top.
FIRST_ROW_DEADLINE = 3.0
START_DEADLINE = 30.0      # seconds for the first screen (sampling started)
KEY_DEADLINE = 2.0         # seconds for the screen to answer a key
EXIT_DEADLINE = 10.0       # seconds for top to exit once asked
ESC = re.compile(r"\x1b|\r")


class Tmux:
    """A private tmux server (its own socket) holding one 80x24 session."""

    def __init__(self, tmp):
        if not shutil.which("tmux"):
            pytest.fail("tmux not found (tools/install-deps.sh test installs it)")
        self.sock = f"pbp-top-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp

    def cmd(self, *args, check=True):
        p = subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null"] + list(args),
                           capture_output=True, text=True, timeout=30)
        if check:
            assert p.returncode == 0, f"tmux {' '.join(args)}: {p.stderr}"
        return p.stdout

    def start(self, argv):
        """Runs argv in a shell that reports the exit status and whether the terminal's
        mode survived; the pane stays after the shell ends."""
        top = " ".join(f"'{a}'" for a in argv)
        script = (f"ulimit -c 0; before=$(stty -g); {top}; rc=$?; after=$(stty -g); "
                  f"[ \"$before\" = \"$after\" ] && echo TTY-RESTORED; echo TOP-EXIT=$rc")
        self.started = time.monotonic()
        self.cmd("new-session", "-d", "-s", "top", "-x", "80", "-y", "24", "sh", "-c",
                 script, ";", "set-option", "-t", "top", "remain-on-exit", "on")

    def screen(self, history=False):
        extra = ["-J", "-S", "-"] if history else []
        return self.cmd("capture-pane", "-p", "-t", "top", *extra,
                        check=False)

    def keys(self, *keys):
        self.cmd("send-keys", "-t", "top", *keys)

    def resize(self, cols, rows):
        self.cmd("resize-window", "-t", "top", "-x", str(cols), "-y", str(rows))

    def top_pid(self):
        """The PID of top: the child of the pane's shell."""
        sh = self.cmd("display-message", "-p", "-t", "top", "#{pane_pid}").strip()
        kids = subprocess.run(["pgrep", "-P", sh], capture_output=True, text=True).stdout
        assert kids.split(), f"no child of the pane's shell {sh}"
        return int(kids.split()[0])

    def dead(self):
        return self.cmd("display-message", "-p", "-t", "top", "#{pane_dead}",
                        check=False).strip() == "1"

    def close(self):
        self.cmd("kill-server", check=False)


@pytest.fixture(scope="module")
def py(py_edge):
    """The screen and its rows do not depend on the interpreter's layout: the oldest and the newest interpreter (EDGE_VERSIONS)."""
    return py_edge


@pytest.fixture
def tmux(tmp_path):
    t = Tmux(tmp_path)
    yield t
    t.close()


def table(screen):
    """Function names of the table's rows, top first (the lines under the header)."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("%Own"):
            rows = []
            for row in lines[i + 1:]:
                m = re.match(r"^\s*[\d.]+\s+[\d.]+\s+(?:[\d.e+]+\s+[\d.e+]+\s+)?(\S+) \(", row)
                if not m:
                    break
                rows.append(m.group(1))
            return rows
    return []


def wait_screen(tmux, pred, deadline, what):
    end = time.monotonic() + deadline
    screen = ""
    while time.monotonic() < end:
        screen = tmux.screen()
        if pred(screen):
            return screen
        if tmux.dead():
            break
        time.sleep(0.05)
    pytest.fail(f"{what} within {deadline:.1f}s; screen:\n{screen}")


def wait_exit(tmux):
    end = time.monotonic() + EXIT_DEADLINE
    while time.monotonic() < end:
        screen = tmux.screen(history=True)
        if "TOP-EXIT=" in screen:
            return screen
        time.sleep(0.05)
    pytest.fail(f"top did not exit within {EXIT_DEADLINE:.0f}s; screen:\n{tmux.screen()}")


def wait_fa_first(tmux):
    """fa leads the table, with fb below it, within FIRST_ROW_DEADLINE of the first
    screen (on a busy machine the first screens may hold too few samples to show fb)."""
    wait_screen(tmux, lambda s: s.startswith("pybpfprof top - "), START_DEADLINE,
                "top showed no screen")
    return wait_screen(tmux, lambda s: table(s)[:1] == ["fa"] and "fb" in table(s),
                       FIRST_ROW_DEADLINE, "fa did not lead the table above fb")


def test_top_screen_shows_fa_first_and_switches_sort_keys(harness, tmux, py, mode):
    w = harness.start_workload(py, "ratio")
    tmux.start(harness.profiler_argv(["top", "-p", w.pid] + MODES[mode]))
    screen = wait_fa_first(tmux)
    assert len(screen.splitlines()) <= 24 and all(len(l) <= 80 for l in screen.splitlines())
    assert "Sorted by %Own" in screen, screen
    rows = table(screen)
    assert rows.index("fa") < rows.index("fb"), screen
    # Total: everything under parent is 100%, so the callers lead and fa follows them.
    callers = {"parent", "main", "<module>"}
    tmux.keys("t")
    screen = wait_screen(tmux, lambda s: "Sorted by %Total" in s and table(s)[:1] and
                         table(s)[0] in callers, KEY_DEADLINE, "t did not sort by total")
    assert set(table(screen)[:3]) == callers, screen
    tmux.keys("o")
    wait_screen(tmux, lambda s: "Sorted by %Own" in s and table(s)[:1] == ["fa"],
                KEY_DEADLINE, "o did not sort by own again")
    tmux.keys("Tab")
    wait_screen(tmux, lambda s: "Sorted by %Total" in s and table(s)[:1]
                and table(s)[0] in callers, KEY_DEADLINE, "Tab did not switch to total")
    tmux.keys("1")
    wait_screen(tmux, lambda s: "Sorted by %Own" in s, KEY_DEADLINE, "1 did not sort by own")
    # A narrower window: the table follows at once, every row whole up to its ')'.
    tmux.resize(50, 12)

    def fits(s):
        lines = s.splitlines()
        rows = [l for l in lines if re.match(r"^\s*[\d.]+\s+[\d.]+\s+\S", l)]
        return (lines and lines[-1].startswith("Sorted by") and len(lines) == 12 and
                all(len(l) <= 50 for l in lines) and rows and
                all(l.endswith(")") for l in rows))
    wait_screen(tmux, fits, KEY_DEADLINE, "the screen did not fit a 50x12 window")
    tmux.keys("q")
    screen = wait_exit(tmux)
    assert "TOP-EXIT=0" in screen, screen
    assert "TTY-RESTORED" in screen, f"terminal mode not restored:\n{screen}"
    assert not BAD_OUTPUT.search(screen), screen
    summary = [l for l in screen.splitlines() if l.startswith("pybpfprof: ")]
    assert summary and "samples" in summary[0], f"no summary line:\n{screen}"
    assert w.proc.poll() is None, "the workload died under top"


def test_top_screen_ctrl_c_exits_0(harness, tmux, py311):
    w = harness.start_workload(py311, "ratio")
    tmux.start(harness.profiler_argv(["top", "-p", w.pid]))
    wait_fa_first(tmux)
    tmux.keys("C-c")
    screen = wait_exit(tmux)
    assert "TOP-EXIT=0" in screen and "TTY-RESTORED" in screen, screen


@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 0), (signal.SIGHUP, 0),
                                        (signal.SIGSEGV, 128 + signal.SIGSEGV)],
                         ids=["SIGTERM", "SIGHUP", "SIGSEGV"])
def test_top_screen_gives_the_terminal_back_on_signals(harness, tmux, py311, sig, status):
    """SIGTERM and SIGHUP end top as q does; a crash still restores the terminal
    before the signal takes its course."""
    w = harness.start_workload(py311, "ratio")
    tmux.start(harness.profiler_argv(["top", "-p", w.pid]))
    wait_fa_first(tmux)
    os.kill(tmux.top_pid(), sig)
    screen = wait_exit(tmux)
    assert f"TOP-EXIT={status}" in screen and "TTY-RESTORED" in screen, screen


def test_top_screen_exits_0_when_the_target_exits(harness, tmux, py311):
    w = harness.start_workload(py311, "ratio", seconds=5)
    tmux.start(harness.profiler_argv(["top", "-p", w.pid]))
    w.proc.wait(20)
    screen = wait_exit(tmux)
    assert "TOP-EXIT=0" in screen and "TTY-RESTORED" in screen, screen
    assert "the target exited" in screen, screen


def test_top_without_terminal_prints_plain_blocks_until_sigint(harness, py, mode):
    w = harness.start_workload(py, "ratio")
    out = harness.tmp / f"top-{uuid.uuid4().hex[:6]}.txt"
    err = harness.tmp / f"top-{uuid.uuid4().hex[:6]}.err"
    argv = harness.profiler_argv(["top", "-p", w.pid] + MODES[mode])
    with open(out, "wb") as fo, open(err, "wb") as fe:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                                start_new_session=True)
    harness.group_leaders.append(proc)
    # About 2.5 s of blocks, counted from the first one (BPF takes a while to load).
    end = time.monotonic() + 15
    while "fa (" not in out.read_text(errors="replace") and time.monotonic() < end:
        assert proc.poll() is None, f"top exited ({proc.returncode}): {err.read_text()}"
        time.sleep(0.05)
    time.sleep(1.6)
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(EXIT_DEADLINE)
    text, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
    assert rc == 0, f"exit {rc}\n{stderr}"
    assert not ESC.search(text), f"escape codes or \\r in plain output:\n{text!r}"
    assert not BAD_OUTPUT.search(stderr), stderr
    blocks = [b for b in text.split("\n\n") if b.strip()]
    assert len(blocks) >= 2, f"expected a block a second:\n{text}"
    for block in blocks:
        lines = block.splitlines()
        assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  pid \d+ ", lines[0]), block
        assert lines[2].lstrip().startswith("%Own"), block
    # The rows are ordered by the last second's share, which a loaded machine leaves a
    # score of samples to decide (fb led 11 to 9 once); the run's own seconds, from two
    # seconds of samples or more, are what show fa's three times fb's.
    own = own_seconds(blocks[-1])
    if own:
        assert own.get("fa", 0) > own.get("fb", 0), f"fa's own time is not the larger:\n" \
            f"{blocks[-1]}"
    else:
        assert table(blocks[-1])[:1] == ["fa"], f"fa does not lead the last block:\n" \
            f"{blocks[-1]}"
    assert len(stderr.splitlines()) >= 1 and "samples" in stderr.splitlines()[-1], stderr


def own_seconds(block):
    """{function: Own(s)} of a block whose table has the seconds columns, else {}."""
    lines = block.splitlines()
    head = next((i for i, line in enumerate(lines) if line.lstrip().startswith("%Own")), None)
    if head is None or "Own(s)" not in lines[head]:
        return {}
    out = {}
    for row in lines[head + 1:]:
        m = re.match(r"^\s*[\d.]+\s+[\d.]+\s+([\d.e+]+)\s+[\d.e+]+\s+(\S+) \(", row)
        if not m:
            break
        out[m.group(2)] = float(m.group(1))
    return out


BLOCKED = """import os, threading, time
r, w = os.pipe()
def reader():
    os.read(r, 1)
threading.Thread(target=reader).start()
def nap():
    time.sleep(600)
nap()
"""


def plain_blocks(harness, args, nblocks):
    """Runs `top ARGS` without a terminal until it has printed @nblocks plain blocks
    (20 s at most), stops it with SIGINT, checks that it exited 0, and returns its
    blocks."""
    out = harness.tmp / f"top-{uuid.uuid4().hex[:6]}.txt"
    err = harness.tmp / f"top-{uuid.uuid4().hex[:6]}.err"
    argv = harness.profiler_argv(["top"] + list(args))
    with open(out, "wb") as fo, open(err, "wb") as fe:
        top = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                               start_new_session=True)
    harness.group_leaders.append(top)
    end = time.monotonic() + 20
    while out.read_text(errors="replace").count("\n\n") < nblocks and time.monotonic() < end:
        assert top.poll() is None, f"top exited ({top.returncode}): {err.read_text()}"
        time.sleep(0.05)
    top.send_signal(signal.SIGINT)
    rc = top.wait(EXIT_DEADLINE)
    text = out.read_text(errors="replace")
    assert rc == 0, f"exit {rc}\n{err.read_text()}"
    blocks = [b for b in text.split("\n\n") if b.strip()]
    assert len(blocks) >= nblocks, text
    return blocks


def test_top_wall_shows_threads_blocked_all_along(harness, py):
    """--mode wall: a thread blocked on a pipe and a main thread asleep, both from
    before top started until after it ends, are rows in every block, half the wall
    time each, not only once they wake."""
    proc = harness.spawn(py.argv + ["-c", BLOCKED])
    wait_asleep(proc.pid)
    blocks = plain_blocks(harness, ["-p", proc.pid, "--mode", "wall"], 3)
    for block in blocks:
        shares = {}
        for line in block.splitlines():
            m = re.match(r"^\s*([\d.]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\[off-CPU: .*\])$", line)
            if m:
                shares[m.group(2)] = float(m.group(1))
        assert set(shares) == {"[off-CPU: read(pipe)]", "[off-CPU: sleep]"}, block
        assert all(abs(v - 50) <= 5 for v in shares.values()), block


def test_top_threads_are_rows_named_as_python_names_them(harness, py, mode):
    """--threads: each thread of named_threads (six burning threads, named by the
    program, by a Thread subclass and by a thread pool) is a row 'thread TID (NAME)'
    with the name threading gives it, and each sample is in one thread's row."""
    w = harness.start_workload(py, "named_threads")
    want = {int(tid): name for tid, name in w.read_truth()["threads"].items()}
    assert len(want) == 6, want
    blocks = plain_blocks(harness, ["-p", w.pid, "--threads"] + MODES[mode], 3)
    got, shares = {}, 0.0
    for line in blocks[-1].splitlines():
        m = re.match(r"^\s*[\d.]+\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+thread (\d+) \((.*)\)$", line)
        if m:
            got[int(m[2])] = m[3]
            shares += float(m[1])
    assert got == want, (got, want, blocks[-1])
    # Six rows rounded to 0.1 each: every sample of the block is in exactly one.
    assert 99.6 <= shares <= 100.4, f"thread rows add up to {shares}%\n{blocks[-1]}"


def test_top_dead_pid_exits_3(harness):
    p = subprocess.Popen(["true"])
    p.wait()
    run = harness.run_profiler(["top", "-p", p.pid], timeout=30)
    run.check_error(3)


def test_top_non_python_pid_exits_4(harness):
    sleeper = harness.spawn(["sleep", "30"])
    time.sleep(0.1)
    run = harness.run_profiler(["top", "-p", sleeper.pid], timeout=30)
    run.check_error(4)


def test_top_without_pid_is_a_usage_error(harness):
    run = harness.run_profiler(["top"], timeout=30)
    run.check_error(2)
    assert "top --help" in run.stderr


def test_top_help_lists_keys_and_exit_status(harness):
    run = harness.run_profiler(["top", "--help"], timeout=30)
    assert run.rc == 0
    for what in ("-p, --pid", "--no-bpf", "%Own", "%Total", "q", "Exit status"):
        assert what in run.stdout, f"{what!r} missing from top --help"
    main = harness.run_profiler(["--help"], timeout=30)
    assert "pybpfprof top -p PID" in main.stdout
