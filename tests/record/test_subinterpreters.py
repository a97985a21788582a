# SPDX-License-Identifier: GPL-2.0-only
"""subinterp workload: a thread of the main interpreter and a thread inside a
subinterpreter (mod_wsgi, Py_NewInterpreter embedders) both burn CPU; both are sampled
in BPF mode with their own interpreter's stacks, at the burn lines the workload found.

3.11 and 3.12 keep PyInterpreterState.next at offset 0, and the newest interpreter
heads the list: a walk that takes offset 0 for "no next" sees only the subinterpreter.
3.12 is the pyenv shared-library build at PBP_PY312 (a missing one fails, never skips).

A thread that leaves a subinterpreter keeps its thread state there (3.11/3.12 keep the
one run_string() borrowed): its samples must follow it back to its main-interpreter
state, not stop at the idle one.

--gil: a subinterpreter with a GIL of its own (3.12+) holds that GIL, not the main
one, while it runs; its samples must be kept, as must those of the main interpreter's
thread under the main GIL.
"""

import os

import pytest

from lib.collapsed import Frame, same_except_leaf_line, show, total, truth_frames
from lib.interpreters import Interp, make_interp
from lib.harness import Once, fraction, profile_workload

RATE = 499
DURATION = 3
PY312 = os.environ.get("PBP_PY312", "/root/.pyenv/versions/3.12.1/bin/python3.12")
VERSIONS = ["3.11", "3.12", "3.13", "3.14", "3.15"]


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"py{v}")
def pyv(request, sid_root, workloads_installed):
    if request.param == "3.12":
        err = None if os.access(PY312, os.X_OK) else f"{PY312} not found"
        return Interp("3.12", "/", [PY312], err)
    return make_interp(request.param, sid_root)


def own_gil(version):
    return version != "3.11"


@pytest.fixture(scope="module")
def plain(pyv, module_tmp, profiler_bin):
    """Sub interpreter sharing the main GIL (the only kind on 3.11; mod_wsgi's)."""
    return Once(lambda: profile_workload(
        module_tmp / f"{pyv.id}-plain", profiler_bin, pyv, "subinterp",
        workload_args=("--config", "legacy"), rate=RATE, duration=DURATION, threads=True))


@pytest.fixture(scope="module")
def gil(pyv, module_tmp, profiler_bin):
    config = "own" if own_gil(pyv.version) else "legacy"
    return Once(lambda: profile_workload(
        module_tmp / f"{pyv.id}-gil", profiler_bin, pyv, "subinterp",
        workload_args=("--config", config), rate=RATE, duration=DURATION, threads=True,
        extra=["--gil"]))


def lineless(frame):
    """@frame as the profile names a frame whose instruction it could not place."""
    return Frame(f"{frame.name} ({frame.file})")


def exact(prof, truth, who):
    """(samples of @who's thread, those with the truth stack, those also at the burn
    line, the truth stack)."""
    tid = truth["threads"][who]
    key = "main_busy" if who == "main" else "subinterp_busy"
    expected = truth_frames(truth["stacks"][key])
    assert expected[-1].line == truth["lines"][f"{who}_burn"]
    got = [s for s in prof if s.thread == tid and not s.incomplete]
    same = [s for s in got if same_except_leaf_line(s.frames, expected) or
            s.frames[:-1] == expected[:-1] and s.leaf == lineless(expected[-1])]
    return got, same, [s for s in same if s.frames == expected], expected


def check_both(profiled):
    prof = profiled.run.check_ok()
    truth = profiled.truth
    for who in ("sub", "main"):
        got, same, good, expected = exact(prof, truth, who)
        want = ";".join(map(str, expected))
        assert total(good) > 0, (
            f"{who} thread {truth['threads'][who]}: no sample with its stack\n  {want}"
            f"\nprofile:\n{show(prof)}")
        assert fraction(total(same), total(got)) >= 0.95, (
            f"{who}: {total(same)}/{total(got)} samples in its function\n  {want}"
            f"\n{show(got)}")
        assert fraction(total(good), total(got)) >= 0.5, (
            f"{who}: {total(good)}/{total(got)} samples at its burn line\n  {want}"
            f"\n{show(got)}")
    return prof


def test_subinterpreter_thread_sampled_with_its_stack(pyv, plain):
    check_both(plain.get())


def test_gil_keeps_subinterpreter_holding_its_gil(pyv, gil):
    profiled = gil.get()
    truth = profiled.truth
    assert truth["gil"] == ("own" if own_gil(pyv.version) else "shared"), truth["gil"]
    prof = check_both(profiled)
    if truth["gil"] == "own":
        # Both threads run on their own GIL the whole time, so --gil keeps nearly all
        # of either; the main thread's count in this very run is the yardstick.
        _, sub, _, _ = exact(prof, truth, "sub")
        _, main, _, _ = exact(prof, truth, "main")
        assert total(sub) >= total(main) / 4, (
            f"--gil kept {total(sub)} samples of the subinterpreter's thread against "
            f"{total(main)} of the main interpreter's\n{show(prof)}")


SUB_SECONDS = 4          # the profiler attaches well within this, even when loaded
BACK_DURATION = 8


@pytest.fixture(scope="module")
def back(pyv, module_tmp, profiler_bin):
    return Once(lambda: profile_workload(
        module_tmp / f"{pyv.id}-back", profiler_bin, pyv, "subinterp",
        workload_args=("--config", "legacy", "--sub-seconds", SUB_SECONDS), rate=RATE,
        duration=BACK_DURATION, threads=True))


def test_thread_back_from_subinterpreter_sampled(pyv, back):
    profiled = back.get()
    prof = profiled.run.check_ok()
    truth = profiled.truth
    tid = truth["threads"]["sub"]
    script = truth["stacks"]["subinterp_busy"][-1]["filename"]
    _, _, in_sub, _ = exact(prof, truth, "sub")
    after = Frame("after_sub", script, truth["lines"]["after_burn"])
    back_home = [s for s in prof if s.thread == tid and not s.incomplete and s.leaf == after]
    # The profile must span both phases for the test to mean anything.
    assert total(in_sub) > 0, f"no sample in the subinterpreter\n{show(prof)}"
    assert total(back_home) > 0, (
        f"thread {tid}: no sample in after_sub() once back from the subinterpreter "
        f"(stats: {profiled.run.stats()})\n{show(prof)}")
