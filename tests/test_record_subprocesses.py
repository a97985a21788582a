# SPDX-License-Identifier: GPL-2.0-only
"""--subprocesses: `record --subprocesses -- python spawner.py` profiles the parent, a
child it forks and a child it execs (both started a second into the run), each under
its own root frame "process PID COMMAND", with its own hot function at its burn line.
Without the flag, only the parent is profiled and no process frames appear."""

import json
import time
import uuid

import pytest

from conftest import (MODES, RUN_DIR, Harness, fraction, show, total)

SECONDS = 3


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
        wrong_line = [s for s in hot if s.leaf.line != want["line"] or
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
