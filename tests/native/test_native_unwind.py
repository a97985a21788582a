# SPDX-License-Identifier: GPL-2.0-only
"""Native unwinding and symbolisation (user/native/native_maps.c, native_unwind.c, native_sym.c)
for --native, against real processes and snapshots of their threads.

tests/unit/native_target.c, built here with and without -fomit-frame-pointer, takes a
snapshot of its own thread (registers and a copy of its stack, what BPF will copy at a
sample) from a call chain it knows and waits; tests/unit/test_native_unwind.c unwinds
the snapshot against the live process's mappings and names every frame. The chain must
come back exactly, innermost first, through glibc's own frames down to _start, and
the walk must say it reached the outermost frame. The unit binary also checks on the
way that every shorter copy of the stack gives a prefix of the walk ending "stack copy
exhausted", and that garbage stacks end cleanly. CPython 3.13-3.15 in the sid chroot
are stopped with ptrace (tests/tools/native_snapshot.py) and unwound the same way; the
bytes each walk needed are printed (pytest -s) for the design note in native_unwind.c.
Both the plain and the sanitizer builds run.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lib.paths import REPO
from lib.scripts import chroot_root_or_fail
from lib.units import SAN_ENV, SNAPSHOT_TOOL, assert_clean, deep_snapshots, unit_binary

TARGET_SRC = REPO / "tests" / "unit" / "native_target.c"
FRAME = re.compile(r"^frame (\d+) (0x[0-9a-f]+) (0x[0-9a-f]+) (\S+) (.+) (0x[0-9a-f]+) "
                   r"(0x[0-9a-f]+) \| (.*)$")

# glibc 2.36's start-up frames below main, innermost first. __libc_start_call_main is a
# static function: only the .symtab of libc6-dbg's separate debug file names it.
LIBC_START = ["__libc_start_call_main", "__libc_start_main", "_start"]
UNIT = "test_native_unwind"


def run_unit(binary, build, args, timeout=120):
    return subprocess.run([binary] + args, capture_output=True, text=True, timeout=timeout,
                          env=SAN_ENV if build == "sanitizers" else None)


def parse(out):
    frames, info = [], {}
    for line in out.splitlines():
        m = FRAME.match(line)
        if m:
            frames.append({"pc": int(m[2], 16), "lookup": int(m[3], 16),
                           "function": None if m[4] == "-" else m[4], "module": m[5],
                           "rel": int(m[6], 16), "func_rel": int(m[7], 16), "text": m[8],
                           "source": None})
        elif line.startswith("source "):
            _, i, lineno, func_line, path = line.split(" ", 4)
            frames[int(i)]["source"] = (path, int(lineno), int(func_line))
        elif line.startswith(("end ", "stack_used ", "stack_copied ", "ns_per_", "modules ",
                              "guessed_from ", "sp_checked ", "locals_in_frames ",
                              "fp_frames ", "fp_frames_full ", "fp_records ")):
            key, value = line.split(" ", 1)
            info[key] = value
    return frames, info


def build_target(tmp_path, frame_pointers, strip=False):
    exe = tmp_path / ("native_target" + ("_fp" if frame_pointers else "_nofp"))
    flag = "-fno-omit-frame-pointer" if frame_pointers else "-fomit-frame-pointer"
    p = subprocess.run(["gcc", "-O2", "-g", flag, "-Wall", "-Wextra", "-Werror", "-o",
                        str(exe), str(TARGET_SRC)], capture_output=True, text=True)
    assert p.returncode == 0, f"building native_target failed:\n{p.stderr}"
    if strip:
        stripped = exe.with_name(exe.name + "_stripped")
        shutil.copy(exe, stripped)
        subprocess.run(["strip", "--strip-all", str(stripped)], check=True)
        return exe, stripped
    return exe


class Target:
    """native_target running MODE: its snapshot taken, alive until closed."""

    def __init__(self, exe, mode, snap):
        self.snap = snap
        self.proc = subprocess.Popen([str(exe), mode, str(snap)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("ready"), f"native_target {mode} said {line!r}"

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def unwind(binary, build, exe, mode, tmp_path, repeat=0):
    target = Target(exe, mode, tmp_path / f"{mode}.snap")
    try:
        p = run_unit(binary, build, ["unwind", str(target.proc.pid), str(target.snap)] +
                     ([str(repeat)] if repeat else []))
    finally:
        target.close()
    assert_clean(p, f"test_native_unwind unwind ({mode})")
    return parse(p.stdout)


def names(frames):
    return [f["function"] for f in frames]


def libc_debug_present():
    """Whether libc6-dbg's debug file for this libc is installed (by build-id)."""
    out = subprocess.run(["readelf", "-n", "/lib/x86_64-linux-gnu/libc.so.6"],
                         capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return bool(m) and Path(f"/usr/lib/debug/.build-id/{m[1][:2]}/{m[1][2:]}.debug").exists()


@pytest.fixture(scope="module")
def libc_debug():
    assert libc_debug_present(), \
        "libc6-dbg is not installed (tools/install-deps.sh test installs it): glibc's " \
        "static start-up functions have no names without it"


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_maps_parser_survives_hostile_text(build):
    binary = unit_binary(UNIT, build)
    p = run_unit(binary, build, ["parse"])
    assert_clean(p, "test_native_unwind parse")
    assert "native maps parse: ok" in p.stdout


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
@pytest.mark.parametrize("frame_pointers", [True, False], ids=["fp", "no-fp"])
def test_unwinds_known_chain_exactly_to_start(build, frame_pointers, tmp_path, libc_debug):
    exe = build_target(tmp_path, frame_pointers)
    frames, info = unwind(unit_binary(UNIT, build), build, exe, "chain", tmp_path,
                          repeat=200 if build == "plain" else 0)
    print(f"chain ({'fp' if frame_pointers else 'no-fp'}): {len(frames)} frames, "
          f"stack_used {info['stack_used']} bytes, ns_per_walk {info.get('ns_per_walk')}")
    assert names(frames) == ["leaf", "middle", "outer", "main"] + LIBC_START, frames
    assert [f["module"] for f in frames] == [exe.name] * 4 + ["libc.so.6"] * 2 + [exe.name]
    assert info["end"] == "outermost" and info["guessed_from"] == "0"
    # The first frame is where the registers were taken: its exact PC, not a return
    # address; every other frame's lookup address is inside the call.
    assert frames[0]["lookup"] == frames[0]["pc"]
    assert all(f["lookup"] == f["pc"] - 1 for f in frames[1:])
    assert 0 < int(info["stack_used"]) <= int(info["stack_copied"])
    # Each frame's stack pointer sits just past its callee's return address, and a
    # local of leaf, middle and outer each lies in its own function's stack area.
    assert info["sp_checked"] == str(len(frames) - 1), info
    assert info["locals_in_frames"] == "3", info
    # The program's functions start where its symbol table says.
    ranges = symbol_ranges(exe)
    for f in frames[:4]:
        assert f["func_rel"] == ranges[f["function"]][0], f
    assert_chain_sources(frames, TARGET_SRC)
    # --native-unwind fp over the same snapshot (the unit binary checked every frame
    # against this walk): with frame pointers, leaf to main and the libc frame below,
    # where the records stop being believed (it keeps none), then DWARF from there on,
    # since the 1 KiB copy holds that frame's stack; without, the copy's DWARF alone.
    got, of, end = fp_walk(info)
    assert of == len(frames), info
    assert (got, end) == (len(frames), "outermost"), info


def marked_lines(path):
    """{NAME: (line marked "LINE:NAME", line where the function NAME is declared)}."""
    text = Path(path).read_text().splitlines()
    marks = {}
    for i, line in enumerate(text, 1):
        m = re.search(r"/\* LINE:(\w+) \*/", line)
        if m:
            decl = next(k for k in range(i, 0, -1)
                        if re.search(rf"\b{m[1]}\(int x\)$", text[k - 1]))
            marks[m[1]] = (i, decl)
    return marks


def assert_chain_sources(frames, src):
    """leaf, middle and outer stand at the lines their "LINE:" comments mark, in @src,
    each declared where the source says (DWARF line info, native_line.c)."""
    marks = marked_lines(TARGET_SRC)
    assert set(marks) == {"leaf", "middle", "outer"}, marks
    for f in frames[:3]:
        assert f["source"] is not None, f"{f['function']} has no source line: {f}"
        path, line, decl = f["source"]
        assert Path(path).name == Path(src).name and (line, decl) == marks[f["function"]], f


def fp_walk(info, key="fp_frames"):
    """(frames, of how many, end) of the unit binary's frame-pointer walk: with the 1 KiB
    copy (fp_frames), or the whole stack's (fp_frames_full)."""
    m = re.match(r"(\d+) of (\d+) (.+?)(?: \(|$)", info[key])
    assert m, info
    return int(m[1]), int(m[2]), m[3]


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
@pytest.mark.parametrize("frame_pointers", [True, False], ids=["fp", "no-fp"])
def test_unwinds_through_libc_qsort_into_the_comparator(build, frame_pointers, tmp_path,
                                                        libc_debug):
    """A C callback under libc, as a Python comparator under ctypes' qsort will be:
    the comparator, glibc's merge sort recursing once per halving of 64 elements
    (msort_with_tmp, split by GCC into a .part clone), qsort_r (qsort is a tail call
    to it), then the caller and the start-up frames."""
    exe = build_target(tmp_path, frame_pointers)
    frames, info = unwind(unit_binary(UNIT, build), build, exe, "qsort", tmp_path)
    print(f"qsort ({'fp' if frame_pointers else 'no-fp'}): {len(frames)} frames, "
          f"stack_used {info['stack_used']} bytes")
    assert names(frames) == (["compare"] + ["msort_with_tmp.part.0"] * 6 +
                             ["qsort_r", "sorter", "main"] + LIBC_START), frames
    assert [f["module"] for f in frames[1:8]] == ["libc.so.6"] * 7
    assert info["end"] == "outermost"
    # With frame pointers the records are believed down to the comparator's caller,
    # libc's msort: it keeps none. From there the walk goes on with DWARF as far as the
    # copy holds msort's and qsort_r's frames (qsort_r's 1 KiB buffer among them), back
    # to the records at sorter: with the whole stack, to _start.
    got, of, end = fp_walk(info)
    full = fp_walk(info, "fp_frames_full")
    print(f"  fp: {got} of {of} frames, {end}; whole stack: {full}")
    if frame_pointers:
        assert got >= 2 and end in ("no frame pointer", "stack copy exhausted"), info
        assert full == (of, of, "outermost"), info


def test_frame_pointers_carry_the_walk_where_there_is_no_cfi(tmp_path, libc_debug):
    """A program built without unwind tables but with frame pointers (as JIT code or
    some hand-written assembly is): libdwfl's x86-64 fallback walks RBP where no FDE
    covers the PC, and the chain is still exact."""
    exe = tmp_path / "native_target_nocfi"
    subprocess.run(["gcc", "-O2", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables",
                    "-fno-unwind-tables", "-o", str(exe), str(TARGET_SRC)], check=True)
    frames, info = unwind(unit_binary(UNIT, "plain"), "plain", exe, "chain", tmp_path)
    assert names(frames) == ["leaf", "middle", "outer", "main"] + LIBC_START, frames
    assert info["end"] == "outermost"


def symbol_ranges(exe):
    """name -> (start, end) of the functions in @exe's .symtab (nm -S)."""
    out = subprocess.run(["nm", "-S", "--defined-only", str(exe)], capture_output=True,
                         text=True, check=True).stdout
    ranges = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            start, size = int(parts[0], 16), int(parts[1], 16)
            ranges[parts[3]] = (start, start + size)
    return ranges


def test_stripped_object_is_named_by_object_and_offset(tmp_path, libc_debug):
    """Without .symtab (and with nothing exported) the program's frames carry their
    address as addr2line and nm use it (REL), which must fall in the function the
    unstripped twin names, and are named native_target+0xSTART after the FDE covering
    them (.eh_frame_hdr), which starts where the function does. CFI survives strip:
    the walk is whole."""
    exe, stripped = build_target(tmp_path, False, strip=True)
    frames, info = unwind(unit_binary(UNIT, "plain"), "plain", stripped, "chain", tmp_path)
    ranges = symbol_ranges(exe)
    want = ["leaf", "middle", "outer", "main"]
    assert len(frames) == 7 and info["end"] == "outermost", frames
    for f, name in zip(frames[:4] + frames[6:], want + ["_start"]):
        assert f["function"] is None and f["module"] == stripped.name, f
        lo, hi = ranges[name]
        assert lo <= f["rel"] < hi, f"{name}: {f['rel']:#x} not in [{lo:#x}, {hi:#x})"
        # Named after where the FDE covering it starts: the function's own start, one
        # name for all its samples.
        assert f["func_rel"] == lo and f["text"] == f"{stripped.name}+{lo:#x}", f
        assert f["source"] is None, f"a stripped object has no line info: {f}"
    assert names(frames[4:6]) == LIBC_START[:2]


def split_debug(tmp_path, name, build_id=True, wrong_debug=False):
    """native_target stripped, its symbols in NAME.debug beside it named by
    .gnu_debuglink; with @wrong_debug, that file is another build's debug file."""
    exe = tmp_path / name
    cc = ["gcc", "-O2", "-g", "-o", str(exe), str(TARGET_SRC)]
    if not build_id:
        cc.insert(1, "-Wl,--build-id=none")
    subprocess.run(cc, check=True)
    debug = tmp_path / (name + ".debug")
    subprocess.run(["objcopy", "--only-keep-debug", str(exe), str(debug)], check=True)
    subprocess.run(["strip", "--strip-all", str(exe)], check=True)
    subprocess.run(["objcopy", f"--add-gnu-debuglink={debug}", str(exe)], check=True)
    if wrong_debug:
        other = tmp_path / "other"
        subprocess.run(cc[:-3] + ["-O1", "-o", str(other), str(TARGET_SRC)], check=True)
        subprocess.run(["objcopy", "--only-keep-debug", str(other), str(debug)], check=True)
    return exe


@pytest.mark.parametrize("case", ["build-id", "crc", "wrong-file"])
def test_debug_file_named_by_debuglink_is_used_only_if_it_matches(tmp_path, case, libc_debug):
    """A stripped program whose symbols live in a separate file named by
    .gnu_debuglink: the file is used when its build-id (or, without one, the CRC the
    link records) matches, and never when it is another build's."""
    exe = split_debug(tmp_path, "split", build_id=case == "build-id",
                      wrong_debug=case == "wrong-file")
    frames, info = unwind(unit_binary(UNIT, "plain"), "plain", exe, "chain", tmp_path)
    assert info["end"] == "outermost" and len(frames) == 7, frames
    if case == "wrong-file":
        assert names(frames[:4]) == [None] * 4, frames
        assert all(f["source"] is None for f in frames[:4]), frames
    else:
        assert names(frames) == ["leaf", "middle", "outer", "main"] + LIBC_START, frames
        # Lines too come from the debug file: the stripped program has none.
        assert_chain_sources(frames, TARGET_SRC)


def test_debug_link_candidate_too_large_is_not_read(tmp_path, libc_debug):
    """An object without a build-id names its debug file by .gnu_debuglink, and one
    candidate lies in the target's own directory: a 32 GB file there (sparse) is not
    read whole for its CRC, a minute and more, but taken for no match at once."""
    exe = split_debug(tmp_path, "huge", build_id=False)
    debug = tmp_path / "huge.debug"
    debug.unlink()
    with open(debug, "wb") as f:
        f.truncate(32 << 30)
    target = Target(exe, "chain", tmp_path / "chain.snap")
    try:
        p = run_unit(unit_binary(UNIT, "plain"), "plain",
                     ["unwind", str(target.proc.pid), str(target.snap)], timeout=60)
    finally:
        target.close()
    assert_clean(p, "test_native_unwind unwind (a huge debug-link candidate)")
    frames, info = parse(p.stdout)
    assert info["end"] == "outermost" and names(frames[:4]) == [None] * 4, frames


def vdso_range(pid):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            if line.rstrip().endswith("[vdso]"):
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                return lo, hi
    raise AssertionError(f"process {pid} maps no [vdso]")


def test_unwinds_out_of_the_vdso(tmp_path, libc_debug):
    """A thread stopped inside clock_gettime's vDSO code (no file behind it: our own
    identical image is reported at the target's address) unwinds through libc's
    clock_gettime to _start."""
    exe = build_target(tmp_path, False)
    proc = subprocess.Popen([str(exe), "vdso", "-"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("ready")
        lo, hi = vdso_range(proc.pid)
        snap = tmp_path / "vdso.snap"
        for _ in range(50):
            out = subprocess.run(["/usr/bin/python3", str(SNAPSHOT_TOOL), str(proc.pid),
                                  str(snap)], check=True, capture_output=True, text=True,
                                 timeout=30).stdout
            if lo <= int(out.split()[1], 16) < hi:
                break
        else:
            pytest.fail("50 stops of a clock_gettime loop never landed in the [vdso]")
        p = run_unit(unit_binary(UNIT, "plain"), "plain", ["unwind", str(proc.pid), str(snap)])
    finally:
        proc.kill()
        proc.wait()
    assert_clean(p, "unwinding out of the vdso")
    frames, info = parse(p.stdout)
    modules = [f["module"] for f in frames]
    assert info["end"] == "outermost", frames
    assert modules[0] == "[vdso]" and "__vdso_clock_gettime" in names(frames), frames
    rest = frames[modules.index("libc.so.6"):]
    assert names(rest) == ["clock_gettime", "clock_loop", "main"] + LIBC_START, frames


def test_process_gone_is_a_clean_error(tmp_path):
    exe = build_target(tmp_path, True)
    target = Target(exe, "chain", tmp_path / "chain.snap")
    pid = target.proc.pid
    target.close()
    p = run_unit(unit_binary(UNIT, "plain"), "plain", ["unwind", str(pid), str(target.snap)])
    assert p.returncode == 1 and "No such process" in p.stderr, p.stderr
    assert "Sanitizer" not in p.stderr


@pytest.fixture(scope="module")
def sid_root():
    return chroot_root_or_fail()


def run_python_snapshots(sid_root, version, reentries, tmp_path, count=3, unit_prefix=()):
    """Runs DEEP under python@version in the chroot, stops it @count times and unwinds
    each snapshot (through @unit_prefix, e.g. setpriv); [(frames, info)]."""
    def unwind(pid, snap):
        p = subprocess.run(list(unit_prefix) + [
            unit_binary(UNIT, "plain"), "unwind", str(pid), str(snap), "50"],
            capture_output=True, text=True, timeout=120)
        assert_clean(p, f"unwinding python{version}")
        return parse(p.stdout)
    return deep_snapshots(sid_root, version, reentries,
                          [(tmp_path / f"py{i}.snap", []) for i in range(count)], unwind)


def test_chroot_objects_open_through_its_root_without_map_files(sid_root, tmp_path):
    """Without CAP_SYS_ADMIN (and CAP_CHECKPOINT_RESTORE) /proc/PID/map_files is shut;
    the chroot's python3.13 and libc must then open as /proc/PID/root + the maps path
    with the chroot's own path taken off (the host's libc would name other functions)."""
    drop = ["setpriv", "--inh-caps=-sys_admin,-checkpoint_restore",
            "--bounding-set=-sys_admin,-checkpoint_restore"]
    for frames, info in run_python_snapshots(sid_root, "3.13", 0, tmp_path, count=1,
                                             unit_prefix=drop):
        assert info["modules"].endswith("unopened 0"), info
        assert info["end"] == "outermost", frames
        fn = names(frames)
        assert fn[-3:] == [None, "__libc_start_main", "_start"] and "Py_BytesMain" in fn, fn


@pytest.mark.parametrize("version", ["3.13", "3.14", "3.15"])
@pytest.mark.parametrize("reentries", [0, 1, 4])
def test_unwinds_cpython_to_start(sid_root, version, reentries, tmp_path):
    """A running CPython stopped at a random instruction of a busy loop, under
    @reentries Python -> C (sorted) -> Python (key) calls: the walk reaches _start
    through Py_BytesMain, every C re-entry of the eval loop shows as one more
    PyObject_CallOneArg frame (the key call), and what it needed of the stack is printed.
    The chroot has no libc debug file: glibc's static __libc_start_call_main is
    libc.so.6+0xREL there."""
    results = run_python_snapshots(sid_root, version, reentries, tmp_path)
    for frames, info in results:
        fn = names(frames)
        print(f"python{version} reentries={reentries}: {len(frames)} frames, end "
              f"{info['end']}, stack_used {info['stack_used']} bytes, "
              f"ns_per_walk {info.get('ns_per_walk')}")
        assert info["end"] == "outermost", frames
        assert info["sp_checked"] == str(len(frames) - 1), info
        assert fn[-1] == "_start" and "Py_BytesMain" in fn and "__libc_start_main" in fn, fn
        assert frames[0]["module"] == f"python{version}"
        assert fn.count("PyObject_CallOneArg") == reentries, fn
        # --native-unwind fp over the same snapshot: on 3.15 (frame pointers) down to
        # the libc frame below main, all but __libc_start_main and _start; a prefix of
        # this walk in any case (the unit binary checked it frame by frame).
        got, of, end = fp_walk(info)
        print(f"  fp: {got} of {of} frames, {end}, records {info['fp_records']}")
        full = fp_walk(info, "fp_frames_full")
        print(f"  fp, whole stack: {full}")
        if version == "3.15":
            # The 1 KiB copy may hold the libc frame's own: then DWARF goes on to _start.
            assert (got, end) in ((of - 2, "no frame pointer"), (of, "outermost")), info
            assert full == (of, of, "outermost"), info


# Big ints added in a loop: each sum is a new object from _PyCompactLong_Add's free-list
# path, and the one it replaces goes through _Py_Dealloc.
ADDS = """
import sys
print("ready", flush=True)
x = 10 ** 6
while True:
    y = x + x
"""
POPPED_FUNCTIONS = ("_PyCompactLong_Add", "_Py_Dealloc")


def popped_rows(exe, functions):
    """{function: [addresses]} of @exe's CFI rows, in @functions, where the CFA is back at
    RSP + 8 while a callee-saved register is still said to be saved at the CFA minus
    something: the instructions between an epilogue's last pop and its ret (or tail
    jump), at which that slot lies below RSP."""
    syms = {}
    for line in subprocess.run(["nm", "-D", "--defined-only", str(exe)], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        part = line.split()
        if len(part) == 3 and part[2] in functions:
            syms[int(part[0], 16)] = part[2]
    rows, fn = {}, None
    for line in subprocess.run(["readelf", "--debug-dump=frames-interp", str(exe)],
                               capture_output=True, text=True, check=True).stdout.splitlines():
        m = re.search(r" FDE .* pc=([0-9a-f]+)\.\.", line)
        if m:
            fn = syms.get(int(m[1], 16))
            continue
        part = line.split()
        if fn and len(part) > 3 and re.fullmatch(r"[0-9a-f]{8,}", part[0]) and \
                part[1] == "rsp+8" and any(re.fullmatch(r"c-\d+", r) for r in part[2:-1]):
            rows.setdefault(fn, []).append(int(part[0], 16))
    return rows


@pytest.mark.parametrize("version", ["3.14", "3.15"])
def test_unwinds_from_the_ret_after_an_epilogues_pops(sid_root, version, tmp_path):
    """Stopped between an epilogue's pops and its ret (`leave; ret`, `pop %rbp; ret`), where
    CFI still places the caller's RBP in a slot now below RSP, outside the copy: the walk
    must reach _start all the same, and the frame-pointer walk as far as from anywhere
    else. Samples land there in CPython's small helpers; the walk used to end at the
    caller with "bad frame". Every such row of the two functions is tried, 2 s each: each
    one the loop reaches is checked, and each function must have one reached."""
    exe = Path(sid_root) / "usr" / "bin" / f"python{version}"
    rows = popped_rows(exe, POPPED_FUNCTIONS)
    assert rows, f"no CFI row after an epilogue's pops in {POPPED_FUNCTIONS} of {exe}"
    for fn, addrs in sorted(rows.items()):
        def unwind(pid, snap):
            p = subprocess.run([unit_binary(UNIT, "plain"), "unwind", str(pid), str(snap)],
                               capture_output=True, text=True, timeout=120)
            assert_clean(p, f"unwinding python{version} at the end of {fn}")
            return parse(p.stdout)
        snaps = [(tmp_path / f"{fn}-{a:x}.snap", ["--at", hex(a), "--wait", "2"])
                 for a in addrs]
        walks = [w for w in deep_snapshots(sid_root, version, 0, snaps, unwind, script=ADDS,
                                           may_miss=True) if w]
        assert walks, f"python{version} reached none of {fn}'s rows {[hex(a) for a in addrs]}"
        for frames, info in walks:
            fn_names = names(frames)
            print(f"python{version} at {frames[0]['text']}: {len(frames)} frames, "
                  f"{info['end']}; fp {info['fp_frames']}")
            assert frames[0]["function"] == fn, frames[0]
            assert info["end"] == "outermost", frames
            assert fn_names[-1] == "_start" and "Py_BytesMain" in fn_names, fn_names
            got, of, end = fp_walk(info)
            if version == "3.15":
                assert (got, end) in ((of - 2, "no frame pointer"), (of, "outermost")), info
                assert fp_walk(info, "fp_frames_full") == (of, of, "outermost"), info
