# SPDX-License-Identifier: GPL-2.0-only
"""--native, part 1: the BPF program copies each sample's user registers and user stack
into the record (struct pbp_native), and the decoder takes the block in. Nothing decodes
native frames yet, so the proof is in the counters: the program's (bpf_native_*) and the
decoder's (native_blocks, native_invalid), against the records delivered.

The ratio workload (parent() calling fa() and fb() with 3:1 CPU time, in the main
thread) is recorded twice from one process, without --native and with it, on CPython
3.11 (host), 3.13 and 3.15 (sid chroot): with --native every record must carry a block
the decoder accepts, with a stack copy that reached the stack's top (the main thread's
first RSP, 1.4-1.9 KiB above a busy loop's, under the default 16 KiB) without a fault; the Python profile
must be the one recorded without --native; without --native no block and no byte of
native stack may be copied. threads.py in wall mode adds worker threads and off-CPU
records (registers saved at the entry of the wait). What the copies hold is the
unwinder's to judge: tests/native/test_native_unwind.py unwinds the same snapshots taken by
ptrace.
"""

import math
import subprocess

import pytest

from lib.collapsed import is_python_frame, total
from lib.interpreters import make_interp
from lib.harness import Harness, Once, fraction, spent_fa_share

VERSIONS = ["3.11", "3.13", "3.15"]
SECONDS = 3
RATE = 997
MIN_SAMPLES = 300           # a loaded machine may give the target a third of a CPU
MAX_FAULT_SHARE = 0.01      # copies that met an unreadable page: lookups that failed
MIN_STACK = 1024            # below _start's frame, in the leanest of the three versions


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"py{v}")
def interp(request, sid_root, workloads_installed):
    return make_interp(request.param, sid_root)


def record_twice(tmpdir, profiler, py):
    """One ratio process recorded without --native, then with it copying the stack, then
    with --native as it comes (auto: a frame-pointer walk on 3.15): (truth, plain run,
    native run, auto run)."""
    h = Harness(tmpdir, profiler)
    try:
        w = h.start_workload(py, "ratio", seconds=5 * SECONDS + 30)
        plain = h.record_pid(w.pid, rate=RATE, duration=SECONDS)
        before = w.read_truth()
        native = h.record_pid(w.pid, rate=RATE, duration=SECONDS,
                              extra=["--native", "--native-unwind", "dwarf"])
        spent = spent_fa_share(w, before)
        auto = h.record_pid(w.pid, rate=RATE, duration=SECONDS, extra=["--native"])
        assert w.proc.poll() is None, f"the workload died while profiled:\n{w.output()}"
    finally:
        h.close()
    return dict(w.truth, spent_fa_share=spent), plain, native, auto


@pytest.fixture(scope="module")
def runs(interp, module_tmp, profiler_bin):
    return Once(lambda: record_twice(module_tmp / interp.id, profiler_bin, interp))


def native_stats(st):
    """The counters these tests judge, for the failure messages."""
    return {k: v for k, v in st.items()
            if "native" in k or k.startswith("samples_") or k in ("ringbuf_drops",)}


def python_leaf(s):
    """The innermost Python frame: with --native, C frames the interpreter is running
    for it (an add, a free) may follow."""
    return next((f for f in reversed(s.frames) if is_python_frame(f)), None)


def leaf_total(samples, name):
    return total([s for s in samples if (python_leaf(s) or s.leaf) is not None and
                  (python_leaf(s) or s.leaf).name == name])


def test_native_block_rides_with_every_sample(interp, runs):
    _, _, native, _ = runs.get()
    native.check_ok()
    st = native.stats()
    delivered = st["samples_delivered"]
    assert delivered >= MIN_SAMPLES, f"too few samples to judge: {native_stats(st)}"
    # Counted by BPF once the record is in the ring buffer, and by the decoder as it
    # takes it in: every record delivered has one, and the decoder refused none.
    assert st["bpf_native_copied"] == delivered, native_stats(st)
    assert st["native_blocks"] == delivered and st["native_invalid"] == 0, native_stats(st)


def test_native_stack_copy_reaches_the_stack_top_without_faults(interp, runs):
    _, _, native, _ = runs.get()
    st = native.stats()
    copied = st["bpf_native_copied"]
    per_block = st["bpf_native_bytes"] / copied
    # The copy ends at the main thread's first RSP, just above _start's frame: 1.4-1.9
    # KiB above a busy loop's RSP (docs/native-unwinding.md).
    assert MIN_STACK <= per_block <= 4 * 1024, f"{per_block:.0f} stack bytes per block: {st}"
    assert st["bpf_native_faults"] <= MAX_FAULT_SHARE * copied, st
    assert st["bpf_native_capped"] <= MAX_FAULT_SHARE * copied, st


def test_native_leaves_the_python_profile_as_it_was(interp, runs):
    """fa's share of fa+fb (by innermost Python frame), with --native, against the run
    without it and the CPU time the burns measured over the --native run;
    each bound is four standard deviations of the sampling error (at least 5 points)."""
    truth, plain, native, _ = runs.get()
    shares, counts = {}, {}
    for name, run in (("without", plain), ("with", native)):
        prof = run.check_ok()
        fa, fb = leaf_total(prof, "fa"), leaf_total(prof, "fb")
        incomplete = total([s for s in prof if s.incomplete])
        assert fa + fb >= MIN_SAMPLES, f"{name} --native: too few samples ({fa}+{fb})"
        assert fa + fb >= 0.9 * total(prof), f"{name} --native: {fa}+{fb} of {total(prof)}"
        assert fraction(incomplete, total(prof)) <= 0.02, \
            f"{name} --native: {incomplete} of {total(prof)} samples incomplete"
        shares[name], counts[name] = fa / (fa + fb), fa + fb
    want = truth["spent_fa_share"]    # over the --native run
    var = want * (1 - want)
    both = max(0.05, 4 * math.sqrt(var * (1 / counts["with"] + 1 / counts["without"])))
    alone = max(0.05, 4 * math.sqrt(var / counts["with"]))
    assert abs(shares["with"] - shares["without"]) <= both, (shares, counts, want)
    assert abs(shares["with"] - want) <= alone, (shares, counts, want)


def test_without_native_nothing_native_is_copied(interp, runs):
    _, plain, native, _ = runs.get()
    st, nst = plain.stats(), native.stats()
    for key in ("bpf_native_copied", "bpf_native_bytes", "bpf_native_capped",
                "bpf_native_faults", "native_blocks", "native_invalid"):
        assert st[key] == 0, (key, st)
    # The records themselves are the Python payload alone: smaller by the block.
    grown = nst["bpf_bytes_copied_per_sample"] - st["bpf_bytes_copied_per_sample"]
    assert grown >= MIN_STACK, (st["bpf_bytes_copied_per_sample"], nst["bpf_bytes_copied_per_sample"])


def test_auto_walks_frame_pointers_on_3_15_alone(interp, runs):
    """--native-unwind auto: on 3.15 (built with frame pointers) every block carries a
    frame-pointer walk, its records and a copy of 1 KiB at most for the top frames,
    which the decoder takes (4 KiB for a tick in a system call); elsewhere the copy as
    with dwarf. The Python profile stays
    the one without --native."""
    truth, plain, _, auto = runs.get()
    auto.check_ok()
    st = auto.stats()
    delivered = st["samples_delivered"]
    assert delivered >= MIN_SAMPLES, native_stats(st)
    assert st["bpf_native_copied"] == delivered == st["native_blocks"], native_stats(st)
    assert st["native_invalid"] == 0, native_stats(st)
    if interp.version == "3.15":
        assert st["bpf_native_fp_walks"] == delivered, native_stats(st)
        # 1 KiB, 4 KiB for a tick in a system call (a few: the truth file's writes)
        assert st["bpf_native_bytes"] <= 1536 * delivered, native_stats(st)
        # _start is 11-14 frames below a loop at module level; the records stop at
        # libc's first frame, one or two above it.
        assert st["bpf_native_fp_records"] >= 8 * delivered, native_stats(st)
        assert st["native_walks"] == st["native_fp_walks"] >= 0.95 * delivered, st
        assert st["native_matched"] >= 0.95 * st["native_walks"], native_stats(st)
        print(f"{interp.id}: fp {st['bpf_bytes_copied_per_sample']} bytes/sample, "
              f"{st['bpf_native_fp_records'] / delivered:.1f} records, "
              f"{st['bpf_native_bytes'] / delivered:.0f} stack bytes; dwarf top "
              f"{st['native_fp_dwarf_top']}, ends no_fp {st['native_end_no_fp']} outermost "
              f"{st['native_end_outermost']} bad {st['native_end_bad_frame']}")
    else:
        assert st["bpf_native_fp_walks"] == 0 and st["native_fp_walks"] == 0, native_stats(st)
        assert st["bpf_native_bytes"] >= MIN_STACK * delivered, native_stats(st)
    prof, base = auto.check_ok(), plain.check_ok()
    fa, fb = leaf_total(prof, "fa"), leaf_total(prof, "fb")
    pa, pb = leaf_total(base, "fa"), leaf_total(base, "fb")
    assert fa + fb >= MIN_SAMPLES and pa + pb >= MIN_SAMPLES, (fa, fb, pa, pb)
    var = truth["expected_fa_share"] * (1 - truth["expected_fa_share"])
    both = max(0.05, 4 * math.sqrt(var * (1 / (fa + fb) + 1 / (pa + pb))))
    assert abs(fa / (fa + fb) - pa / (pa + pb)) <= both, (fa, fb, pa, pb)


@pytest.mark.parametrize("args", [
    ["--native-unwind", "fp"],
    ["--native", "--native-unwind", "frames"],
], ids=["unwind-alone", "bad-unwind"])
@pytest.mark.parametrize("cmd", ["record", "top"])
def test_native_unwind_refused_with_one_line(cmd, args, profiler_bin):
    p = subprocess.run([profiler_bin, cmd, "-p", "1"] + args, capture_output=True, text=True,
                       timeout=30)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "--native-unwind" in lines[0], \
        (p.returncode, p.stderr)


def threads_in_wall_mode(py, tmp_path, profiler_bin):
    """The threads workload under record --native --mode wall --threads: its stats."""
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(py, "threads", seconds=SECONDS + 30)
        run = h.record_pid(w.pid, rate=RATE, duration=SECONDS,
                           extra=["--native", "--mode", "wall", "--threads"])
    finally:
        h.close()
    run.check_ok()
    return run.stats()


def test_native_covers_threads_and_off_cpu_records(py311, tmp_path, profiler_bin):
    """Worker threads (their stacks in mappings of their own) and, in wall mode, the
    off-CPU records taken at a system call's exit or a switch."""
    st = threads_in_wall_mode(py311, tmp_path, profiler_bin)
    delivered = st["samples_delivered"]
    assert st["off_cpu_records"] > 0, st
    assert st["bpf_native_copied"] == delivered == st["native_blocks"], st
    assert st["native_invalid"] == 0, st
    assert st["bpf_native_faults"] <= MAX_FAULT_SHARE * delivered, st
    assert st["bpf_native_bytes"] >= MIN_STACK * delivered, st


@pytest.mark.parametrize("args", [
    ["--native", "--no-bpf"],
    ["--native-stack", "16K"],
    ["--native", "--native-stack", "3K"],
    ["--native", "--native-stack", "65537"],
    ["--native", "--native-stack", "16M"],
], ids=["no-bpf", "size-alone", "too-small", "too-large", "bad-suffix"])
@pytest.mark.parametrize("cmd", ["record", "top"])
def test_native_options_refused_with_one_line(cmd, args, profiler_bin):
    p = subprocess.run([profiler_bin, cmd, "-p", "1"] + args, capture_output=True, text=True,
                       timeout=30)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("pybpfprof: "), \
        (p.returncode, p.stderr)
    assert "--native" in lines[0], lines[0]


def test_fp_walks_cover_threads_and_off_cpu_records(sid_root, workloads_installed, tmp_path,
                                                    profiler_bin):
    """3.15 (auto: frame-pointer walks): worker threads, whose stacks end at their
    mapping's end, and off-CPU records, taken in the kernel, where the thread sits under
    libc's wrappers (no frame pointers: DWARF over the 4 KiB copy reaches the first
    frame that keeps one). Nearly every walk must place every Python run."""
    st = threads_in_wall_mode(make_interp("3.15", sid_root), tmp_path, profiler_bin)
    delivered = st["samples_delivered"]
    print("py3.15 threads: " + ", ".join(f"{k}={v}" for k, v in native_stats(st).items()))
    assert st["off_cpu_records"] > 0, st
    assert st["bpf_native_copied"] == delivered == st["native_blocks"], native_stats(st)
    assert st["bpf_native_fp_walks"] == delivered and st["native_invalid"] == 0, native_stats(st)
    assert st["native_walks"] >= 0.95 * delivered, native_stats(st)
    assert st["native_matched"] >= 0.95 * st["native_walks"], native_stats(st)
    assert st["native_unmatched"] <= 0.01 * st["native_walks"], native_stats(st)
