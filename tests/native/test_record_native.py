"""record --native: one stack from C up through Python, checked against workloads that
know their own Python stacks (tests/workloads/native_calls.py, deep.py).

- A C extension (tests/fixtures/pbpext.c), built here against each version's headers:
  samples in callback(), which pbpext_call calls from C, read the truth's Python frames,
  then `pbpext_call+0x.. (pbpext...so)`, then callback at its burn line; samples in the
  C burn read the truth's frames, the interpreter's call into C, then pbpext_burn
  then pbpext_spin. At least 95 % of the samples in each.
- ctypes calling libc's qsort with a Python comparator: sorter, then native frames with
  libc's among them, then compare.
- deep.py (601 recursive frames): the Python frames with --native are those without.
- pprof: native frames have Locations with addresses in Mappings that carry the
  object's build-id, which readelf reads from the file itself.
- The extension built with -g: its frames read `pbpext_spin (pbpext.c:LINE)`, LINE the
  line the fixture marks (`/* LINE:spin */`), and pprof's Lines carry that file and line;
  --function puts it at the line pbpext_spin is declared at, --nolineno at none.
- A C++ library called through ctypes (tests/fixtures/pbpcxx.cc): its frame reads
  demangled, `pbp::Burner::spin(unsigned long) const+0x.. (libpbpcxx.so)`.

With libc6-dbg on the host, libc's frames under 3.11 and 3.12 have line info too, and
so has pyenv's 3.12 (built with -g): they read `function (file.c:LINE)`, which
is_python_frame() tells from Python frames.

Every run takes the default --native-unwind auto: BPF walks frame pointers on 3.15
(built with them, as is pbpext with its sysconfig flags) and copies the stack on the
others, which the counters prove. Where a walk must stop (libc's qsort, libffi: no frame
pointers) the tests say what it gives instead: the Python frames in their order, the
outer ones without their C callers after a "[native walk cut: WHY]" frame where the
walk stopped, never a frame out of place; no comparator sample lacks qsort without
that mark.
"""

import gzip
import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from lib.paths import PROFILER_GRACE, REPO, RUN_DIR, WL_DIR
from lib.collapsed import (C_SOURCE, Frame, is_python_frame, same_except_leaf_line, show,
                           total, truth_frames)
from lib.interpreters import PY312_HOME, make_interp
from lib.harness import Once, Harness, fraction, profile_workload, sibling
from lib.agent import agent_until_profiles, pprofs_of
from lib.cgroups import cgroup2_root, remove_cgroups

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile, one  # noqa: E402

RATE = 499
DURATION = 3
COMMAND_S = 4       # the command's own run (the first second is what the test is about),
                    # long enough for 100 comparator samples beside two busy loops
NATIVE = re.compile(r"^(?P<func>.+?)(?:\+0x(?P<off>[0-9a-f]+))? \((?P<obj>[^():]+)\)$")
SHARE = 0.95


EXT_SRC = REPO / "tests" / "fixtures" / "pbpext.c"
CXX_SRC = REPO / "tests" / "fixtures" / "pbpcxx.cc"
DEBUG_EXT_DIR = f"{WL_DIR}/pbpext-g"    # the -g build of pbpext, imported first from there


def native_of(frame: Frame):
    """(function, object) of a native frame, None for any other; (function, source) for
    one with line info."""
    if frame.file is not None:
        return None if is_python_frame(frame) else (frame.name, frame.file)
    m = NATIVE.match(frame.name)
    return (m["func"], m["obj"]) if m else None


def interpreter_frame(native):
    """Whether a native frame's (function, object or source) is the interpreter's: by its
    object, or, with line info (pyenv's 3.12 is built with -g), by a source that is not
    the extension's."""
    where = native[1]
    return where.startswith(("python3", "libpython3")) or \
        (bool(C_SOURCE.search(where)) and where != "pbpext.c")


def marked_line(path, name):
    """The line of @path that the comment "LINE:@name" marks."""
    lines = Path(path).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if f"/* LINE:{name} */" in text)


def interp_query(py, code):
    p = subprocess.run(py.argv + ["-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"{py.version}: {code!r} failed: {p.stderr}"
    return p.stdout.strip()


def codegen_flags(cflags):
    """The code-generation flags of an interpreter's sysconfig CFLAGS (-f, -m, -O: frame
    pointers on 3.15), as an extension built for it gets them; warnings, defines and
    include paths are the build's own, and debug info (-g) only when asked for."""
    return [f for f in cflags.split() if f.startswith(("-f", "-m", "-O"))]


def build_ext(py, tmp: Path, debug=False):
    """pbpext for @py, built with the host's gcc against that version's headers and its
    sysconfig code-generation flags, and put beside the workloads, where the target
    imports it; with @debug, built with -g into DEBUG_EXT_DIR. Returns its host path."""
    include, suffix, cflags = interp_query(
        py, "import sysconfig, importlib.machinery as m; "
            "print(sysconfig.get_paths()['include']); print(m.EXTENSION_SUFFIXES[0]); "
            "print(sysconfig.get_config_var('CFLAGS') or '-O1')").split("\n")
    inc = py.host_path(include)
    if py.version == "3.12" and not (inc / "Python.h").exists():
        inc = PY312_HOME / "include" / "python3.12"   # the runnable copy has no headers
    # Debian's pyconfig.h includes <x86_64-linux-gnu/pythonX.Y/pyconfig.h> from the
    # target's /usr/include: give gcc that directory alone, not the target's libc headers.
    multiarch = tmp / "inc"
    arch_dir = py.host_path(f"/usr/include/x86_64-linux-gnu/{Path(include).name}")
    if arch_dir.is_dir():
        (multiarch / "x86_64-linux-gnu").mkdir(parents=True, exist_ok=True)
        link = multiarch / "x86_64-linux-gnu" / Path(include).name
        if not link.exists():
            link.symlink_to(arch_dir)
    out = py.host_path(f"{DEBUG_EXT_DIR if debug else WL_DIR}/pbpext{suffix}")
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["gcc", "-O1"] + codegen_flags(cflags) + [
        "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", f"-I{inc}", f"-I{multiarch}", "-o",
        str(out), str(EXT_SRC)] + (["-g"] if debug else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"building pbpext for {py.version} failed:\n{p.stderr}"
    return out


def build_id(path):
    p = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, timeout=30)
    m = re.search(r"Build ID: ([0-9a-f]+)", p.stdout)
    assert m, f"{path} has no build-id:\n{p.stdout}"
    return m.group(1)


@pytest.fixture(scope="module")
def ext_runs(py, module_tmp, profiler_bin):
    def run():
        tmp = module_tmp / f"{py.id}-ext"
        tmp.mkdir(parents=True, exist_ok=True)
        so = build_ext(py, tmp)
        prof = profile_workload(tmp, profiler_bin, py, "native_calls", ("--mode", "ext"),
                                rate=RATE, duration=DURATION, extra=["--native"],
                                also=(".pb.gz",))
        return so, prof
    return Once(run)


def python_at(s, name):
    """The index of @s's Python frame @name, None if it has none."""
    return next((i for i, f in enumerate(s.frames) if f.name == name and f.file), None)


def samples_in(prof, name):
    """The samples with a Python frame @name."""
    return [s for s in prof if python_at(s, name) is not None]


def python_part(frames):
    return tuple(f for f in frames if is_python_frame(f))


# --native-unwind auto walks frame pointers for these interpreters (built with them).
FP_VERSIONS = ("3.15",)


def walked_fp(run):
    """Whether @run's native frames came from frame-pointer walks, as the counters say;
    every walk or none."""
    st = run.stats()
    assert st["native_fp_walks"] in (0, st["native_walks"]), st
    return st["native_fp_walks"] > 0


def test_extension_frames_sit_between_their_python_callers_and_callees(py, ext_runs):
    _, ext = ext_runs.get()
    prof = ext.run.check_ok()
    want = truth_frames(ext.truth["stacks"]["callback"])
    burn = ext.truth["lines"]["callback_burn"]
    mine = samples_in(prof, "callback")
    assert total(mine) >= 100, f"too few samples in callback\n{show(prof)}"

    def right(s):
        at = python_at(s, "callback")
        before, rest = s.frames[:at - 1], s.frames[at - 1:]
        if not same_except_leaf_line(python_part(before) + (s.frames[at],), want):
            return False
        if native_of(rest[0]) is None or native_of(rest[0])[0] != "pbpext_call":
            return False
        if not native_of(rest[0])[1].startswith("pbpext."):
            return False
        # Inside callback only native frames may follow: the interpreter's own
        # functions it is running (an add, an allocation).
        return rest[1].line == burn and all(native_of(f) for f in rest[2:]) and \
            all(native_of(f) is None for f in before)
    good = [s for s in mine if right(s)]
    assert fraction(total(good), total(mine)) >= SHARE, (
        f"{total(good)}/{total(mine)} callback samples read <truth>;pbpext_call;callback\n"
        f"{show([s for s in mine if not right(s)], 8)}")


def test_c_burn_is_named_under_its_python_caller(py, ext_runs):
    _, ext = ext_runs.get()
    prof = ext.run.check_ok()
    want = truth_frames(ext.truth["stacks"]["c_burn"])
    mine = [s for s in prof if any((native_of(f) or ("",))[0] == "pbpext_spin"
                                   for f in s.frames)]
    assert total(mine) >= 100, f"too few samples in pbpext_spin\n{show(prof)}"

    def right(s):
        n = len(want)
        names = [native_of(f) for f in s.frames[n:]]
        # The interpreter's own call into the C function may stand between them
        # (cfunction_vectorcall_O): frames of the interpreter's object, then ours.
        return (same_except_leaf_line(s.frames[:n], want) and s.frames[n - 1].line ==
                want[-1].line and len(names) >= 2 and all(names) and
                [x[0] for x in names[-2:]] == ["pbpext_burn", "pbpext_spin"] and
                all(x[1].startswith("pbpext.") for x in names[-2:]) and
                all(interpreter_frame(x) for x in names[:-2]))
    good = [s for s in mine if right(s)]
    assert fraction(total(good), total(mine)) >= SHARE, (
        f"{total(good)}/{total(mine)} C-burn samples read <truth>;pbpext_burn;pbpext_spin\n"
        f"{show([s for s in mine if not right(s)], 8)}")


CUT_MARK = re.compile(r"^\[native walk cut: (?P<why>.+)\]$")
UNMATCHED_MARK = "[native unmatched]"
LIBC_OBJECTS = ("libc.so.6", "msort.c", "qsort.c")


def cut_mark(frame):
    """The reason of a "[native walk cut: WHY]" frame, None for any other frame."""
    m = CUT_MARK.match(frame.name) if frame.file is None else None
    return m and m.group("why")


def qsort_accounts(mine):
    """The comparator's samples by what they say of the C frames between sorter and
    compare: libc's qsort shown, the walk's cut (or a failed match) marked, or frames
    lost without a word. Sample lists."""
    shown, marked, silent = [], [], []
    for s in mine:
        at = python_at(s, "compare")
        if any(cut_mark(f) or f.name == UNMATCHED_MARK for f in s.frames):
            marked.append(s)
        elif any(o in LIBC_OBJECTS for _, o in filter(None, map(native_of, s.frames[:at]))):
            shown.append(s)
        else:
            silent.append(s)
    return shown, marked, silent


def check_qsort(py, run, truth, fp_long_copy=False):
    """The comparator's samples read sorter, then native frames with libc's qsort among
    them, then compare; every native frame is in an object the maps name. A walk that
    stops short of qsort says so where it stops: no sample loses frames silently.
    fp_long_copy: --native-unwind fp with a copy long enough for CFI to go on from the
    frames without frame pointers, on every version."""
    prof = run.check_ok()
    want = truth_frames(truth["stacks"]["compare"])
    mine = samples_in(prof, "compare")
    walked = walked_fp(run)
    assert walked == (fp_long_copy or py.version in FP_VERSIONS), run.stats()
    fp = walked and not fp_long_copy  # the walk stops at libffi
    assert total(mine) >= 100, f"too few samples in compare\n{show(prof)}"

    def right(s):
        at = python_at(s, "compare")
        python_before = python_part(s.frames[:at])
        if not same_except_leaf_line(python_before + (s.frames[at],), want):
            return False
        first_native = len(python_before)
        if python_part(s.frames[:first_native]) != python_before:
            return False
        between = s.frames[first_native:at]
        if fp:
            # The walk ends at the first frame without a frame pointer (libffi's
            # closure, libc's qsort, libffi's ffi_call_int) and says so there: sorter
            # and <module>, the mark, then the callback's C frames from the last
            # one walked.
            if not between or not cut_mark(between[0]):
                return False
            between = between[1:]
        objs = [native_of(f) for f in between]
        if not all(objs) or any(o == "[unknown]" for _, o in objs):
            return False
        if fp:
            return bool(objs) and not any(o.startswith("python3") for _, o in objs[:1])
        # libc's qsort by its object, or with libc6-dbg's line info by its source.
        return any(o in LIBC_OBJECTS for _, o in objs)
    good = [s for s in mine if right(s)]
    print(f"{py.id}: compare, e.g. " + ";".join(f.name for f in (good or mine)[0].frames))
    assert fraction(total(good), total(mine)) >= SHARE, (
        f"{total(good)}/{total(mine)} comparator samples read sorter;<native with libc>;"
        f"compare\n{show([s for s in mine if not right(s)], 8)}")
    shown, marked, silent = qsort_accounts(mine)
    whys = {}
    for s in marked:
        for f in s.frames:
            why = cut_mark(f) or (f.name if f.name == UNMATCHED_MARK else None)
            if why:
                whys[why] = whys.get(why, 0) + s.count
    print(f"{py.id}: comparator samples: {total(shown)} show qsort, {total(marked)} mark "
          f"the cut {whys}, {total(silent)} lose frames silently")
    assert not silent, (f"{total(silent)}/{total(mine)} comparator samples lack libc's qsort "
                        f"and carry no mark of a cut\n{show(silent, 8)}")
    st = run.stats()
    assert st["native_cut_marked"] >= st["native_cut"], st
    if fp:
        assert st["native_cut"] >= 0.9 * st["native_walks"] and st["native_unmatched"] <= \
            0.01 * st["native_walks"], st
    if fp_long_copy and py.version in FP_VERSIONS:
        # Nearly every walk went on past libffi and libc.
        assert st["native_fp_resumed"] >= 0.9 * st["native_walks"], st


def test_qsort_sits_between_sorter_and_the_python_comparator(py, module_tmp, profiler_bin):
    prof_run = profile_workload(module_tmp / f"{py.id}-qsort", profiler_bin, py,
                                "native_calls", ("--mode", "qsort"), rate=RATE,
                                duration=DURATION, extra=["--native"])
    check_qsort(py, prof_run.run, prof_run.truth)


def test_frame_pointer_walk_goes_on_through_qsort_over_a_long_copy(py, module_tmp,
                                                                    profiler_bin):
    """--native-unwind fp with --native-stack 16K: where the records stop (libffi's
    closure, no frame pointer) CFI goes on over the copy, through libc's qsort, back to
    the records at ctypes' call: the comparator's samples read as with the copy."""
    prof_run = profile_workload(module_tmp / f"{py.id}-qsort-fp-long", profiler_bin, py,
                                "native_calls", ("--mode", "qsort"), rate=RATE,
                                duration=DURATION, extra=["--native", "--native-unwind", "fp",
                                                          "--native-stack", "16K"])
    check_qsort(py, prof_run.run, prof_run.truth, fp_long_copy=True)


def test_a_command_is_unwound_through_what_it_loads_from_its_first_samples(
        py, module_tmp, profiler_bin):
    """record --native -- COMMAND samples the command before it has loaded ctypes and
    libffi: the objects it maps next are unwound through and named in the samples that
    first meet them, not from a second later (the maps are read again at once)."""
    py.require()
    h = Harness(module_tmp / f"{py.id}-qsort-command", profiler_bin)
    truth_target = f"{RUN_DIR}/qsort-command-{py.version}-{uuid.uuid4().hex[:8]}.json"
    out = h.tmp / "command.txt"
    st = h.tmp / "command.json"
    cmd = py.argv + [py.script("native_calls"), "--mode", "qsort", "--seconds", COMMAND_S,
                     "--truth", truth_target]
    try:
        run = h.run_profiler(["record", "--native", "-r", RATE, "-f", "collapsed", "-o", out,
                              "--stats-file", st, "--"] + cmd,
                             timeout=COMMAND_S + PROFILER_GRACE, out=out, stats=st)
        truth_host = py.host_path(truth_target)
        assert truth_host.exists(), f"the workload wrote no truth\n{run.describe()}"
        truth = json.loads(truth_host.read_text())
    finally:
        h.close()
    check_qsort(py, run, truth)


@pytest.fixture(scope="module")
def deep_pair(py, module_tmp, profiler_bin):
    def run():
        h = Harness(module_tmp / f"{py.id}-deep", profiler_bin)
        try:
            w = h.start_workload(py, "deep")
            plain = h.record_pid(w.pid, rate=RATE, duration=3)
            native = h.record_pid(w.pid, rate=RATE, duration=3, extra=["--native"])
        finally:
            h.close()
        return w.truth, plain, native
    return Once(run)


def test_deep_recursion_keeps_every_python_frame(py, deep_pair):
    truth, plain, native = deep_pair.get()
    want = truth_frames(truth["stacks"]["leaf"])
    for label, run in (("without --native", plain), ("with --native", native)):
        prof = run.check_ok()
        leaf = samples_in(prof, "leaf")
        good = [s for s in leaf if not s.incomplete and
                same_except_leaf_line(python_part(s.frames), want)]
        assert total(leaf) >= 100, f"{label}: too few leaf samples\n{show(prof)}"
        assert fraction(total(good), total(leaf)) >= SHARE, (
            f"{label}: {total(good)}/{total(leaf)} leaf samples have the truth's "
            f"{len(want)} Python frames\n{show([s for s in leaf if s not in good], 4)}")


def test_pprof_native_locations_carry_addresses_and_build_ids(py, ext_runs):
    """The ext run's pprof, written beside its collapsed file: pbpext's mapping has the
    object's build-id, and pbpext_spin's locations an address in that mapping."""
    so, ext = ext_runs.get()
    ext.run.check_ok()
    prof = Profile.load(sibling(ext.run.out_path, ".pb.gz"))
    want = build_id(so)
    maps = {one(m, "id"): m for m in prof.msg.get("mapping", [])}
    ours = [m for m in maps.values() if prof.s(one(m, "filename")).endswith(so.name)]
    assert ours, f"no mapping for {so.name}: {[prof.s(one(m, 'filename')) for m in maps.values()]}"
    assert prof.s(one(ours[0], "build_id")) == want, "pbpext's mapping has another build-id"
    spin = [loc for i, loc in prof.locations.items() if prof.frame(i)[0] == "pbpext_spin"]
    assert spin, "no location for pbpext_spin"
    for loc in spin:
        assert one(loc, "address") > 0, f"pbpext_spin location without an address: {loc}"
        assert one(loc, "mapping_id") == one(ours[0], "id"), f"wrong mapping: {loc}"


def test_native_all_keeps_the_interpreters_frames(py, ext_runs, module_tmp, profiler_bin):
    """--native-all: the same Python frames, now with the interpreter's own C frames
    between c_caller and pbpext_call, and the process's start-up (_start) at the root;
    where a frame-pointer walk stopped above it, the mark of the cut instead."""
    ext_runs.get()   # the extension is built
    run = profile_workload(module_tmp / f"{py.id}-all", profiler_bin, py, "native_calls",
                           ("--mode", "ext"), rate=RATE, duration=3, extra=["--native-all"])
    prof = run.run.check_ok()
    want = truth_frames(run.truth["stacks"]["callback"])
    mine = samples_in(prof, "callback")
    fp = walked_fp(run.run)
    assert total(mine) >= 50, f"too few samples in callback\n{show(prof)}"

    def root(frames):
        """_start; a frame-pointer walk ends at libc's frame below main (no frame
        pointers there) unless the copy holds that frame's stack, and that frame is
        then the root's child, under the mark of the cut."""
        n = native_of(frames[0])
        if n is not None and n[0] == "_start":
            return True
        n = native_of(frames[1])
        return fp and cut_mark(frames[0]) is not None and n is not None and \
            n[1] == "libc.so.6"

    def right(s):
        at = python_at(s, "c_caller")
        call = [i for i, f in enumerate(s.frames) if (native_of(f) or ("",))[0] == "pbpext_call"]
        return (root(s.frames)
                and same_except_leaf_line(python_part(s.frames), want) and len(call) == 1
                and call[0] > at + 1 and
                all(native_of(f) and interpreter_frame(native_of(f))
                    for f in s.frames[at + 1:call[0]]))
    good = [s for s in mine if right(s)]
    assert fraction(total(good), total(mine)) >= SHARE, (
        f"{total(good)}/{total(mine)} callback samples read _start;...;c_caller;"
        f"<interpreter>;pbpext_call;...;callback\n{show([s for s in mine if not right(s)], 6)}")


def test_native_counters_add_up(py, ext_runs):
    """--stats-file: every sample's copy was walked, nearly all to the outermost frame,
    and nearly none disagreed with its Python runs."""
    _, ext = ext_runs.get()
    ext.run.check_ok()
    st = ext.run.stats()
    walks = st["native_walks"]
    print(f"{py.id}: " + ", ".join(f"{k}={v}" for k, v in st.items() if k.startswith("native")))
    assert walks >= 0.95 * st["samples_delivered"] > 0, st
    ends = sum(st[k] for k in st if k.startswith("native_end_"))
    assert ends == walks, st
    if walked_fp(ext.run):
        # Down to libc's frame below main: every eval-loop activation is above it.
        assert st["native_fp_walks"] == walks, st
        assert st["native_end_outermost"] + st["native_end_no_fp"] >= 0.95 * walks, st
        assert st["native_matched"] >= 0.95 * walks, st
    else:
        assert st["native_fp_walks"] == 0, st
        assert st["native_end_outermost"] >= 0.95 * walks, st
    assert st["native_matched"] + st["native_cut"] + st["native_unmatched"] == walks, st
    assert st["native_unmatched"] <= 0.01 * walks, st
    assert st["native_invalid"] == 0 and st["native_failed"] == 0, st


@pytest.fixture(scope="module")
def ext_debug_runs(py, module_tmp, profiler_bin):
    """pbpext built with -g, profiled under native_calls --mode ext (collapsed)."""
    def run():
        tmp = module_tmp / f"{py.id}-ext-g"
        tmp.mkdir(parents=True, exist_ok=True)
        so = build_ext(py, tmp, debug=True)
        prof = profile_workload(tmp, profiler_bin, py, "native_calls",
                                ("--mode", "ext", "--ext-dir", DEBUG_EXT_DIR), rate=RATE,
                                duration=DURATION, extra=["--native"], also=(".pb.gz",))
        return so, prof
    return Once(run)


def test_c_burn_reads_its_source_line_with_debug_info(py, ext_debug_runs):
    """With DWARF line info, the C burn's frames are `pbpext_burn (pbpext.c:LINE)` and
    `pbpext_spin (pbpext.c:LINE)` at the lines the fixture marks, under the truth's
    Python frames."""
    _, ext = ext_debug_runs.get()
    prof = ext.run.check_ok()
    want = truth_frames(ext.truth["stacks"]["c_burn"])
    burn = Frame("pbpext_burn", "pbpext.c", marked_line(EXT_SRC, "burn"))
    spin = Frame("pbpext_spin", "pbpext.c", marked_line(EXT_SRC, "spin"))
    mine = [s for s in prof if any((native_of(f) or ("",))[0].startswith("pbpext_spin")
                                   for f in s.frames)]
    assert total(mine) >= 100, f"too few samples in pbpext_spin\n{show(prof)}"

    def right(s):
        n = len(want)
        return (same_except_leaf_line(s.frames[:n], want) and
                s.frames[n - 1].line == want[-1].line and tuple(s.frames[-2:]) == (burn, spin))
    good = [s for s in mine if right(s)]
    assert fraction(total(good), total(mine)) >= SHARE, (
        f"{total(good)}/{total(mine)} C-burn samples read <truth>;{burn};{spin}\n"
        f"{show([s for s in mine if not right(s)], 8)}")


def test_pprof_lines_carry_the_c_source_and_line(py, ext_debug_runs):
    """pprof (the -g run's, beside its collapsed file): pbpext_spin's Function names the
    source file, its Line the marked line, and its Location keeps the object's mapping
    (build-id) and an address."""
    so, ext = ext_debug_runs.get()
    ext.run.check_ok()
    prof = Profile.load(sibling(ext.run.out_path, ".pb.gz"))
    maps = {one(m, "id"): m for m in prof.msg.get("mapping", [])}
    ours = [m for m in maps.values()
            if prof.s(one(m, "filename")).endswith(f"/pbpext-g/{so.name}")]
    assert ours, f"no mapping for {so}: {[prof.s(one(m, 'filename')) for m in maps.values()]}"
    assert prof.s(one(ours[0], "build_id")) == build_id(so)
    spin = {i: prof.frame(i) for i in prof.locations if prof.frame(i)[0] == "pbpext_spin"}
    assert spin, "no location for pbpext_spin"
    line = marked_line(EXT_SRC, "spin")
    assert any(Path(f).name == "pbpext.c" and n == line for _, f, n in spin.values()), spin
    for i in spin:
        loc = prof.locations[i]
        assert one(loc, "mapping_id") == one(ours[0], "id") and one(loc, "address") > 0, loc


def build_cxx(py):
    """libpbpcxx.so beside the workloads, built with the host's gcc (C++, no libstdc++).
    Returns its path as the target sees it."""
    target = f"{WL_DIR}/libpbpcxx.so"
    out = py.host_path(target)
    cmd = ["gcc", "-O1", "-shared", "-fPIC", "-fno-exceptions", "-Wall", "-Wextra", "-Werror",
           "-o", str(out), str(CXX_SRC)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"building libpbpcxx.so failed:\n{p.stderr}"
    return target


def test_cxx_frames_read_demangled(py, module_tmp, profiler_bin):
    """A C++ member function's frame reads as its source writes it, not mangled
    (_ZNK3pbp6Burner4spinEm), between the Python caller and nothing but C++."""
    lib = build_cxx(py)
    run = profile_workload(module_tmp / f"{py.id}-cxx", profiler_bin, py, "native_calls",
                           ("--mode", "cxx", "--lib", lib), rate=RATE, duration=3,
                           extra=["--native"])
    prof = run.run.check_ok()
    want = truth_frames(run.truth["stacks"]["cxx_burn"])
    mine = [s for s in prof if any("Burner" in f.name or "_ZNK3pbp" in f.name
                                   for f in s.frames)]
    assert total(mine) >= 100, f"too few samples in the C++ burn\n{show(prof)}"

    def right(s):
        n = len(want)
        leaf = native_of(s.frames[-1])
        return (same_except_leaf_line(s.frames[:n], want) and leaf is not None and
                leaf == ("pbp::Burner::spin(unsigned long) const", "libpbpcxx.so"))
    good = [s for s in mine if right(s)]
    assert fraction(total(good), total(mine)) >= SHARE, (
        f"{total(good)}/{total(mine)} C++ samples end in pbp::Burner::spin(unsigned long) "
        f"const+0x.. (libpbpcxx.so)\n{show([s for s in mine if not right(s)], 8)}")
    assert run.run.stats()["native_demangle_given_up"] == 0, run.run.stats()


@pytest.mark.parametrize("option", ["--function", "--nolineno"])
def test_line_options_apply_to_native_source_lines(py, ext_debug_runs, module_tmp,
                                                   profiler_bin, option):
    """As for Python frames: --function puts a C frame with line info at the line its
    function is declared at, --nolineno at none (`pbpext_spin (pbpext.c)`)."""
    ext_debug_runs.get()   # the -g build is in place
    run = profile_workload(module_tmp / f"{py.id}-g{option}", profiler_bin, py,
                           "native_calls", ("--mode", "ext", "--ext-dir", DEBUG_EXT_DIR),
                           rate=RATE, duration=3, extra=["--native", option])
    prof = run.run.check_ok()
    lines = Path(EXT_SRC).read_text().splitlines()
    decl = next(i for i, t in enumerate(lines, 1) if "pbpext_spin(unsigned long n)" in t)
    want = (Frame("pbpext_spin", "pbpext.c", decl) if option == "--function"
            else Frame("pbpext_spin (pbpext.c)"))
    mine = [s for s in prof if any((native_of(f) or ("",))[0] == "pbpext_spin"
                                   for f in s.frames)]
    assert total(mine) >= 50, f"too few samples in pbpext_spin\n{show(prof)}"
    good = [s for s in mine if s.frames[-1] == want]
    assert fraction(total(good), total(mine)) >= SHARE, (
        f"{total(good)}/{total(mine)} C-burn samples end in {want}\n"
        f"{show([s for s in mine if s not in good], 8)}")


def test_auto_walks_frame_pointers_only_where_the_interpreter_has_them(py, ext_runs):
    """--native-unwind auto: BPF walks frame pointers for 3.15 (its code opens functions
    with push %rbp; mov %rsp, %rbp) and copies the stack for the others; a walk's block
    carries its records and a 1 KiB copy, far less than the copy to the stack's top."""
    _, ext = ext_runs.get()
    st = ext.run.stats()
    copied = st["bpf_native_copied"]
    assert copied > 0, st
    if py.version in FP_VERSIONS:
        assert st["bpf_native_fp_walks"] == copied, st
        assert st["bpf_native_bytes"] <= 1536 * copied, st   # 4 KiB in a system call
        # main, Py_BytesMain ... the eval loop, pbpext_call, the eval loop again
        assert st["bpf_native_fp_records"] >= 10 * copied, st
        print(f"{py.id}: {st['bpf_native_fp_records'] / copied:.1f} records per walk, "
              f"{st['bpf_native_fp_broken']} of {copied} walks ended at a bad frame pointer")
    else:
        assert st["bpf_native_fp_walks"] == 0 and st["bpf_native_fp_records"] == 0, st


FLEET = ("3.13", "3.15")


def test_all_and_agent_native_on_two_versions(sid_root, workloads_installed, tmp_path,
                                              profiler_bin):
    """-a --native and the agent with --native on, over a 3.13 and a 3.15 process at once
    (narrowed to a cgroup of this test's own): each process's C burn reads c_caller,
    then pbpext_burn and pbpext_spin in its own pbpext, in the collapsed output and in
    every process's pprof, where pbpext_spin has an address in a Mapping that carries
    the build-id readelf reads."""
    group = Path(cgroup2_root()) / f"pbp-native-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    h = Harness(tmp_path, profiler_bin)
    ws, ids = [], {}
    try:
        for v in FLEET:
            base = make_interp(v, sid_root)
            so = build_ext(base, tmp_path / v)
            interp = type(base)(base.version, base.root,
                                ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$0" "$@"']
                                + base.argv, base.error)
            w = h.start_workload(interp, "native_calls", "--mode", "ext", seconds=60,
                                 wait=True)
            ws.append(w)
            ids[w.pid] = (so.name, build_id(so))
        out = tmp_path / "all.txt"
        run = h.run_profiler(["record", "-a", "--native", "--container", group.name, "-d", 3,
                              "-r", RATE, "-f", "collapsed", "-o", out], 3 + 60, out=out)
        assert run.rc == 0, run.describe()
        text = out.read_text()
        for w in ws:
            so_name = ids[w.pid][0]
            burns = [ln for ln in text.splitlines() if ln.startswith(f"process {w.pid} ")
                     and "pbpext_spin+" in ln]
            assert burns, f"pid {w.pid} ({w.interp.version}): no pbpext_spin\n{text[:3000]}"
            for ln in burns:
                frames = ln.rsplit(" ", 1)[0].split(";")
                at = next(i for i, f in enumerate(frames) if f.startswith("pbpext_spin+"))
                assert frames[at].endswith(f"({so_name})") and \
                    frames[at - 1].startswith("pbpext_burn+") and \
                    any(f.startswith("c_caller (") for f in frames[:at]), ln
        out_dir = agent_until_profiles(h, tmp_path, ["--period", "1s", "--native", "on",
                                                     "--rate", RATE, "--container", group.name],
                                       {w.pid: 2 for w in ws})
    finally:
        h.close()
        remove_cgroups([group])
    for w in ws:
        so_name, want_id = ids[w.pid]
        spins = 0
        for path in pprofs_of(out_dir, w.pid):
            prof = Profile.parse(gzip.decompress(path.read_bytes()))
            maps = {one(m, "id"): m for m in prof.msg.get("mapping", [])}
            for i, loc in prof.locations.items():
                if prof.frame(i)[0] != "pbpext_spin":
                    continue
                m = maps[one(loc, "mapping_id")]
                assert prof.s(one(m, "filename")).endswith(so_name), (path.name, m)
                assert prof.s(one(m, "build_id")) == want_id, (path.name, m)
                assert one(loc, "address") > 0, (path.name, loc)
                spins += 1
        assert spins, f"pid {w.pid} ({w.interp.version}): no pbpext_spin in the agent's profiles"
