# SPDX-License-Identifier: GPL-2.0-only
"""What record loads into the kernel before its first sample. The verifier's walk of
each BPF program is most of record's start-up, so each mode loads only the programs it
attaches: the perf-event sampler for on-CPU timers, the scheduler's programs for
off-CPU waits, the tick's pair for --clock tick. Each case reads the programs the
running profiler holds (its /proc/PID/fdinfo, named by bpftool), then checks that the
mode still samples the workload and that -v told when its first sample came."""

import os
import re
import shutil
import subprocess
import time

import pytest

TIMERS = {"pbp_sample"}
OFF_CPU = {"pbp_switch", "pbp_sys_exit", "pbp_open_waits"}
TICK = {"pbp_tick", "pbp_clock_probe"}
EVENTS = {"pbp_thread_exit", "pbp_fork", "pbp_exec"}   # every mode follows processes
LRU_HASH = 9
EXIT_KERNEL = 7

# mode arguments: the programs it needs, on top of EVENTS
CASES = {
    "cpu": ([], TIMERS),
    "wall": (["--mode", "wall"], TIMERS | OFF_CPU),
    "off-cpu": (["--mode", "off-cpu"], OFF_CPU),
    "cpu, --clock tick": (["--clock", "tick"], TICK),
    "cpu, --native": (["--native"], TIMERS),
}


def bpf_objects(pid):
    """(program ids, [(map type, max entries)]) of the BPF objects @pid holds open."""
    progs, maps = set(), []
    fds = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fds):
        try:
            with open(os.path.join(fds, fd)) as f:
                fields = dict(re.findall(r"^(\w+):\s+(\S+)", f.read(), re.M))
        except OSError:
            continue
        if "prog_id" in fields:
            progs.add(int(fields["prog_id"]))
        elif "map_type" in fields:
            maps.append((int(fields["map_type"]), int(fields["max_entries"])))
    return progs, maps


def prog_name(bpftool, prog_id):
    p = subprocess.run([bpftool, "prog", "show", "id", str(prog_id)], capture_output=True,
                       text=True)
    m = re.search(r"^\d+: \S+\s+name (\S+)", p.stdout, re.M)
    return m.group(1) if m else None


@pytest.mark.parametrize("case", list(CASES))
def test_record_loads_only_the_programs_its_mode_attaches_and_samples(case, py311, harness,
                                                                      tmp_path):
    args, needed = CASES[case]
    bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    assert os.access(bpftool, os.X_OK), "bpftool (which the build uses) is missing"
    w = harness.start_workload(py311, "threads")
    out, err = tmp_path / "out.txt", tmp_path / "stderr.txt"
    argv = harness.profiler_argv(["record", "-v", "-p", w.pid, "-d", 4, "-o", out,
                                  "-f", "collapsed"] + args)
    with open(err, "wb") as fe:
        prof = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=fe)
    harness.procs.append(prof)
    # Once it says it is profiling, everything it loads is loaded; it holds every
    # program's descriptor until it exits.
    deadline = time.monotonic() + 60
    while "profiling pid" not in err.read_text(errors="replace"):
        assert prof.poll() is None or prof.returncode == EXIT_KERNEL, \
            f"record exited {prof.returncode}:\n{err.read_text(errors='replace')}"
        if prof.poll() is not None:
            pytest.skip(f"this kernel cannot run {case}: {err.read_text().strip()}")
        assert time.monotonic() < deadline, "record did not start within 60 s"
        time.sleep(0.02)
    ids, maps = bpf_objects(prof.pid)
    names = {prog_name(bpftool, i) for i in ids}
    assert prof.wait(60) == 0, err.read_text(errors="replace")

    assert names >= needed | EVENTS, f"{case}: loaded {sorted(names)}"
    unneeded = (TIMERS | OFF_CPU | TICK) - needed
    assert not names & unneeded, \
        f"{case}: loaded {sorted(names & unneeded)}, which this mode never attaches"
    # The per-thread LRU maps are allocated whole at load: -p's are smaller than -a's.
    lru = [n for t, n in maps if t == LRU_HASH]
    assert len(lru) == 2 and max(lru) < 65536, f"{case}: LRU maps of {lru} entries"

    stderr = err.read_text(errors="replace")
    assert re.search(r"first sample: taken at \d+\.\d{6}, received at \d+\.\d{6} "
                     r"\(CLOCK_MONOTONIC\)", stderr), stderr
    text = out.read_text(errors="replace")
    assert re.search(r"worker_\d \(", text), f"{case}: no worker in the profile:\n{text[:2000]}"
