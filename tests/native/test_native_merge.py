# SPDX-License-Identifier: GPL-2.0-only
"""--native, part 2: which eval-loop activation ran which Python frames, and one stack
of native and Python frames.

tests/unit/test_decode_runs.c decodes fake targets of every layout (3.11's is_entry and
_PyCFrame chain read from a copy of the native stack; 3.12-3.15's entry frames; 3.15's
base frame) and checks the runs of frames per activation and their C-stack addresses;
tests/unit/test_native_merge.c checks native_merge__interleave() on stacks written out
by hand (plumbing dropped, other objects kept, cut and inconsistent walks) and on random
ones checked against the rules. Both run plain and under ASan/UBSan.

tests/unit/test_native_live.c does it all on a live CPython (3.11 on the host, 3.13-3.15
in the sid chroot) stopped by ptrace (tests/tools/native_snapshot.py) under C re-entries
of the eval loop: unwinds the snapshot, decodes the thread with the snapshot's stack
copy as its native-stack view, merges; the runs' C-stack addresses must fall in the
eval loop's own native frames and the merged stacks be what the workload implies.
"""

import re
import subprocess

import pytest

from lib.scripts import chroot_root_or_fail
from lib.units import SAN_ENV, assert_clean, deep_snapshots, unit_binary


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
@pytest.mark.parametrize("name", ["test_decode_runs", "test_native_merge"])
def test_unit(build, name):
    p = subprocess.run([unit_binary(name, build)], capture_output=True, text=True, timeout=300,
                       env=SAN_ENV if build == "sanitizers" else None)
    assert_clean(p, name)
    assert f"{name}: all passed" in p.stdout, p.stdout


LINE = re.compile(r"^(native|python|run|merged|end|gap) (.*)$")


@pytest.fixture(scope="module")
def sid_root():
    return chroot_root_or_fail()


def parse_live(out):
    got = {"native": [], "python": [], "run": [], "merged": {}}
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        kind, rest = m[1], m[2].split()
        if kind == "native":
            got["native"].append({"sp": int(rest[1], 16), "module": rest[2],
                                  "func_rel": int(rest[3], 16), "name": rest[4]})
        elif kind == "python":
            got["python"].append(rest[1])
        elif kind == "run":
            got["run"].append((int(rest[1]), int(rest[2]), int(rest[3], 16)))
        elif kind == "merged":
            got["merged"][rest[0]] = (rest[1], rest[2:])
        else:
            got[kind] = m[2]
    return got


def live_snapshots(sid_root, version, reentries, tmp_path, caps, build="plain"):
    """Runs DEEP under python@version, takes one snapshot per stack cap in @caps and
    decodes and merges each with test_native_live; [parsed output]."""
    binary = unit_binary("test_native_live", build)

    def decode(pid, snap):
        p = subprocess.run([binary, str(pid), str(snap)], capture_output=True, text=True,
                           timeout=120, env=SAN_ENV if build == "sanitizers" else None)
        assert_clean(p, f"test_native_live python{version}")
        return parse_live(p.stdout)
    return deep_snapshots(sid_root, version, reentries,
                          [(tmp_path / f"live-{cap}.snap", [str(cap)]) for cap in caps], decode)


def area_of(natives, addr, complete):
    """The native frame whose stack area holds @addr, or None."""
    for i, f in enumerate(natives):
        top = natives[i + 1]["sp"] if i + 1 < len(natives) else (1 << 64 if complete else 0)
        if f["sp"] <= addr < top:
            return i
    return None


def expected_python(reentries):
    return ["burn", "nest"] + ["nest.<locals>.<lambda>", "nest"] * reentries + ["<module>"]


@pytest.mark.parametrize("version", ["3.11", "3.13", "3.14", "3.15"])
@pytest.mark.parametrize("reentries", [0, 1, 4])
def test_live_runs_sit_in_the_eval_loop_frames(sid_root, version, reentries, tmp_path):
    """A running CPython stopped in a busy loop under @reentries C re-entries: one run
    per activation, as the workload nests them; each run's C-stack address (its entry
    frame, on 3.11 its _PyCFrame read from the stack copy) lies in the area of a native
    frame of the eval loop (one function: the same start for every one), and every
    eval-loop frame of the walk has its run. Merged by default, the stack is the native
    frames above the innermost activation, then every Python frame (all between and
    below is the interpreter's own); with all, every native frame with each run just
    before its activation."""
    (got,) = live_snapshots(sid_root, version, reentries, tmp_path, [1 << 20])
    natives, runs = got["native"], got["run"]
    assert got["end"] == "outermost" and got["gap"] == "0", got
    assert got["python"] == expected_python(reentries), got["python"]
    sizes = [3] + [2] * reentries if reentries else [3]
    assert [n for _, n, _ in runs] == sizes, runs
    acts = [area_of(natives, c, True) for _, _, c in runs]
    assert None not in acts and acts == sorted(set(acts)), (acts, runs, natives)
    loop = {natives[a]["func_rel"] for a in acts}
    assert len(loop) == 1 and {natives[a]["module"] for a in acts} == {f"python{version}"}, \
        [natives[a] for a in acts]
    assert [i for i, f in enumerate(natives) if f["func_rel"] in loop] == acts, natives

    depth = len(got["python"])
    result, items = got["merged"]["default"]
    assert result == "matched"
    assert items == [f"n:{i}" for i in range(acts[0])] + [f"p:{i}" for i in range(depth)]
    result, items = got["merged"]["all"]
    want = []
    for i in range(len(natives)):
        if i in acts:
            first, n, _ = runs[acts.index(i)]
            want += [f"p:{j}" for j in range(first, first + n)]
        want.append(f"n:{i}")
    assert result == "matched" and items == want, (items, want)


@pytest.mark.parametrize("version", ["3.11", "3.13", "3.15"])
def test_live_short_stack_copy_cuts(sid_root, version, tmp_path):
    """A copy of 8 KiB under four re-entries (each costs 5-7 KiB): the walk ends
    'stack copy exhausted' after an activation or two; those runs are placed, the
    outer ones follow as Python frames only ('cut'). On 3.11 the _PyCFrame chain
    stops at the copy's end too: the outer runs have no address at all."""
    (got,) = live_snapshots(sid_root, version, 4, tmp_path, [8192])
    natives, runs = got["native"], got["run"]
    assert got["end"] == "stack copy exhausted", got
    assert got["python"] == expected_python(4)
    placed = [area_of(natives, c, False) for _, _, c in runs if c]
    assert placed and None not in placed[:1], (runs, natives)
    if version == "3.11":
        assert runs[-1][2] == 0, runs
    result, items = got["merged"]["default"]
    assert result == "cut", got["merged"]
    assert [i for i in items if i.startswith("p:")] == \
        [f"p:{i}" for i in range(len(got["python"]))], items


@pytest.mark.parametrize("version", ["3.11", "3.15"])
def test_live_clean_under_sanitizers(sid_root, version, tmp_path):
    """The whole path (unwind, decode with the stack copy, merge) under ASan/UBSan, on
    a whole copy and on one cut short."""
    whole, cut = live_snapshots(sid_root, version, 1, tmp_path, [1 << 20, 4096],
                                build="sanitizers")
    assert whole["python"] == expected_python(1) and len(whole["run"]) == 2
    assert whole["merged"]["default"][0] == "matched"
    assert cut["merged"]["default"][0] in ("cut", "matched"), cut["merged"]
