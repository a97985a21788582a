# SPDX-License-Identifier: GPL-2.0-only
"""--subprocesses: `record --subprocesses -- python spawner.py` profiles the parent, a
child it forks and a child it execs (both started a second into the run), each under
its own root frame "process PID COMMAND", with its own hot function at its burn line.
Without the flag, only the parent is profiled and no process frames appear."""

import json
import shlex
import time
import uuid

import pytest

from lib.paths import RUN_DIR
from lib.collapsed import show, total
from lib.interpreters import MODES
from lib.harness import Harness, fraction

SECONDS = 3


@pytest.fixture(scope="module")
def py(py_edge):
    """Following subprocesses does not depend on the interpreter's layout: the oldest and the newest interpreter (EDGE_VERSIONS)."""
    return py_edge


def run_spawner(tmp_path, profiler_bin, py, mode, subprocesses=True):
    py.require()
    h = Harness(tmp_path, profiler_bin)
    truth_target = f"{RUN_DIR}/spawner-{py.version}-{uuid.uuid4().hex[:8]}.json"
    out = tmp_path / "profile.txt"
    args = ["record", "-r", "499", "-o", out] + MODES[mode]
    if subprocesses:
        args.append("--subprocesses")
    args += ["--"] + py.argv + [py.script("spawner"), "--truth", truth_target,
                                "--seconds", str(SECONDS)]
    try:
        run = h.run_profiler(args, timeout=SECONDS + 60, out=out)
    finally:
        h.close()
    truth_path = py.host_path(truth_target)
    assert truth_path.exists(), f"spawner wrote no truth\n{run.describe()}"
    return run, json.loads(truth_path.read_text())


@pytest.mark.parametrize("mode", list(MODES))
def test_subprocesses_each_process_under_its_own_root(py, tmp_path, profiler_bin, mode):
    run, truth = run_spawner(tmp_path, profiler_bin, py, mode)
    prof = run.check_ok()
    expect = {truth["pid"]: truth["parent"]}
    for child in truth["children"].values():
        expect[child["pid"]] = child
    rootless = [s for s in prof if s.process is None]
    assert not rootless, f"stacks without a process root frame:\n{show(rootless)}"
    by_pid = {}
    for s in prof:
        by_pid.setdefault(s.process, []).append(s)
    missing = [p for p in expect if p not in by_pid]
    assert not missing, (f"processes never sampled: {missing} (expected {sorted(expect)}); "
                         f"seen {sorted(by_pid)}\n{run.describe()}")
    funcs = {e["func"]: p for p, e in expect.items()}
    for pid, want in expect.items():
        samples = by_pid[pid]
        hot = [s for s in samples if not s.incomplete and s.leaf and s.leaf.name == want["func"]]
        assert fraction(total(hot), total(samples)) >= 0.5, (
            f"pid {pid}: {want['func']} is not where it spends its time:\n{show(samples)}")
        # Each burn is `i = 0`, the loop, `return i`: a sample may catch the first or
        # the last line, which run once each (a loaded machine stretches them).
        wrong_line = [s for s in hot if abs(s.leaf.line - want["line"]) > 1 or
                      s.leaf.file != want["file"]]
        assert not wrong_line, f"pid {pid}: burn line {want['line']} expected:\n{show(wrong_line)}"
        strays = [s for s in samples if any(f.name in funcs and funcs[f.name] != pid
                                            for f in s.frames)]
        assert not strays, f"pid {pid} holds another process's function:\n{show(strays)}"
    roots = {line.split(";", 1)[0] for line in run.out_path.read_text().splitlines()}
    parent_root = [r for r in roots if r.startswith(f"process {truth['pid']} ")]
    assert parent_root and "spawner.py" in parent_root[0], \
        f"the parent's root frame does not name its command: {sorted(roots)}"


def test_without_subprocesses_only_the_target(py, tmp_path, profiler_bin):
    run, truth = run_spawner(tmp_path, profiler_bin, py, "bpf", subprocesses=False)
    prof = run.check_ok()
    child_funcs = {c["func"] for c in truth["children"].values()}
    assert all(s.process is None for s in prof), "process frames without --subprocesses"
    strays = [s for s in prof if any(f.name in child_funcs for f in s.frames)]
    assert not strays, f"children profiled without --subprocesses:\n{show(strays)}"
    assert any(s.leaf and s.leaf.name == "parent_burn" for s in prof), show(prof)


# A shell that runs Python as a child, not by exec ("; true" keeps bash from exec'ing
# its last command), after a moment, so the child starts while the shell is watched.
def shell_running_ratio(py, truth_target, delay=0.5):
    ratio = shlex.join(py.argv + [py.script("ratio"), "--truth", truth_target,
                                  "--seconds", str(SECONDS)])
    return ["bash", "-c", f"sleep {delay}; {ratio}; true"]


def check_ratio_child(run, py, truth_target, shell_pid=None):
    """The profile is the shell's Python child's: fa, its hot function, at its line,
    under the root frame of the child's pid."""
    prof = run.check_ok()
    truth_path = py.host_path(truth_target)
    assert truth_path.exists(), f"the Python child wrote no truth\n{run.describe()}"
    truth = json.loads(truth_path.read_text())
    assert truth["pid"] != shell_pid, "the shell exec'd Python: no child to follow"
    fa = [s for s in prof if s.process == truth["pid"] and s.leaf and s.leaf.name == "fa"]
    assert total(fa) > 0, f"no fa in pid {truth['pid']}\n{show(prof)}\n{run.describe()}"
    line = truth["stacks"]["fa"][-1]["line"]
    assert any(s.leaf.line == line for s in fa), f"fa not at its line {line}\n{show(fa)}"


@pytest.mark.parametrize("form", ["command", "pid"])
def test_subprocesses_follow_python_started_by_a_shell(py311, harness, tmp_path, form):
    """--subprocesses where the target is a shell, not a Python: the shell is a parent
    to watch, and the Python it starts is profiled, by -p SHELL and as the command."""
    truth_target = f"{RUN_DIR}/shell-ratio-{uuid.uuid4().hex[:8]}.json"
    out = tmp_path / "p.txt"
    shell = shell_running_ratio(py311, truth_target, delay=0.5 if form == "command" else 1)
    args = ["record", "--subprocesses", "-r", 499, "-o", out]
    shell_pid = None
    if form == "command":
        args += ["--"] + shell
    else:
        proc = harness.spawn(shell)
        shell_pid = proc.pid
        args += ["-p", proc.pid]
    run = harness.run_profiler(args, timeout=SECONDS + 60, out=out)
    check_ratio_child(run, py311, truth_target, shell_pid)


@pytest.mark.parametrize("form", ["command", "pid"])
def test_subprocesses_when_no_python_ever_ran(harness, tmp_path, form):
    """--subprocesses on a shell that starts no Python: said once, at the end, with exit
    3; nothing is written."""
    out = tmp_path / "p.txt"
    # Long enough that -p finds the shell alive on a loaded machine, where loading BPF
    # alone can take a second or two.
    shell = ["bash", "-c", "sleep 3; sleep 0.2; true"]
    if form == "command":
        args = ["record", "--subprocesses", "-o", out, "--"] + shell
    else:
        proc = harness.spawn(shell)
        args = ["record", "--subprocesses", "-o", out, "-p", proc.pid]
    run = harness.run_profiler(args, timeout=60)
    lines = run.stderr.splitlines()
    assert run.rc == 3, run.describe()
    assert lines and "nor any process it started ran CPython code" in lines[0], run.describe()
    assert "sleep 3" in lines[0], f"the message does not name the shell\n{run.describe()}"
    assert not out.exists()


def test_pid_of_a_wrapper_names_its_python_child(py311, harness, tmp_path):
    """Without --subprocesses, -p on a shell whose child is a CPython: refused (exit 4),
    naming the child's pid for -p."""
    truth_target = f"{RUN_DIR}/wrapped-ratio-{uuid.uuid4().hex[:8]}.json"
    proc = harness.spawn(shell_running_ratio(py311, truth_target, delay=0))
    truth_path = py311.host_path(truth_target)
    deadline = time.monotonic() + 30
    while not truth_path.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert truth_path.exists(), "the shell's Python child wrote no truth"
    child = json.loads(truth_path.read_text())["pid"]
    assert child != proc.pid
    run = harness.record_pid(proc.pid, duration=2, stats=False, timeout=60)
    msg = run.check_error(4)
    assert f"process {proc.pid} is not a CPython process; its child {child} is: use -p " \
           f"{child} or --subprocesses" in msg, msg
