# SPDX-License-Identifier: GPL-2.0-only
"""--nolineno and --function on the ratio workload (fa and fb burn under parent()):
--nolineno gives one frame per function and no line at all; --function puts every
frame at its function's first line, as the workload's own code objects say."""

import re

import pytest

from lib.collapsed import show, total
from lib.harness import Once, profile_workload

RATE = 499
DURATION = 2
NOLINE_FRAME = re.compile(r"^(?P<name>.+) \((?P<file>[^()]+)\)$")


@pytest.fixture(scope="module")
def runs(py, module_tmp, profiler_bin):
    return {opt: Once(lambda opt=opt: profile_workload(
        module_tmp / f"{py.id}{opt}", profiler_bin, py, "ratio", rate=RATE, duration=DURATION,
        extra=[opt])) for opt in ("--nolineno", "--function")}


def test_nolineno_has_no_lines_and_one_stack_per_call_path(py, runs):
    r = runs["--nolineno"].get()
    r.run.check_ok()
    lines = r.run.out_path.read_text().splitlines()
    stacks = [ln.rsplit(" ", 1)[0].split(";") for ln in lines]
    python = [f for st in stacks for f in st if not f.startswith("[")]
    assert python, "empty profile"
    with_line = [f for f in python if re.search(r":\d+\)$", f)]
    assert not with_line, f"frames with a line under --nolineno: {with_line[:5]}"
    script = r.truth["stacks"]["fa"][-1]["filename"]
    for fn in ("fa", "fb"):
        want = [f"{fr['qualname']} ({fr['filename']})" for fr in r.truth["stacks"][fn]]
        ending = [st for st in stacks if st and st[-1] == f"{fn} ({script})"]
        assert ending == [want], (f"{fn}: expected exactly one stack {want}, got {ending}\n"
                                  + "\n".join(lines[:20]))


def test_function_shows_first_lines(py, runs):
    r = runs["--function"].get()
    prof = r.run.check_ok()
    for fn in ("fa", "fb"):
        want = r.truth["stacks"][fn]
        got = [s for s in prof if not s.incomplete and s.leaf and s.leaf.name == fn]
        assert total(got) > 0, f"no complete {fn} stack:\n{show(prof)}"
        wrong = [s for s in got if [f.line for f in s.frames] != [w["first_line"] for w in want]
                 or [f.name for f in s.frames] != [w["qualname"] for w in want]]
        assert not wrong, (f"{fn}: every frame should sit at its function's first line "
                           f"{[w['first_line'] for w in want]}:\n{show(wrong)}")
