"""The parsing worker of `record --native`: the ELF objects a target maps are parsed by a
process that runs as nobody, without capabilities, under no_new_privs and a seccomp
allow-list, and whose descriptors are its socket and /dev/null. A parse that hangs,
crashes it, or tries a system call off its list costs that object's names (it is
quarantined, its frames [unknown]) and never the profile.

The faults are real: libraries built here carry a section that the worker, when the
tests' switch is in the profiler's environment, answers by looping, writing through a
null pointer, or opening a socket."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lib.collapsed import show
from lib.harness import Harness
from lib.procfs import confined_status, field, worker_of

FAULTS = ("hang", "crash", "socket")
LIB_SRC = """
{marker}
double {name}_burn(double x)
{{
	for (int i = 0; i < 300000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}}
"""
WORKLOAD = r'''
import ctypes, os, sys, time
libs = {}
for path in sys.argv[3:]:
    name = os.path.basename(path)[3:-3]
    fn = getattr(ctypes.CDLL(path), name + "_burn")
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_double]
    libs[name] = fn

def call_plain(): libs["plain"](1.0)
def call_hang(): libs["hang"](1.0)
def call_crash(): libs["crash"](1.0)
def call_socket(): libs["socket"](1.0)
def call_escape(): libs["escape"](1.0)

callers = [globals()["call_" + n] for n in libs]
open(sys.argv[1], "w").close()
stop = time.monotonic() + float(sys.argv[2])
while time.monotonic() < stop:
    for c in callers:
        c()
'''


def build_lib(tmp_path, name, source=LIB_SRC):
    marker = ("" if name == "plain" else
              f'__attribute__((used, section(".pbp_worker_{name}"))) '
              f'static const char marker[] = "{name}";')
    src = tmp_path / f"{name}.c"
    src.write_text(source.format(marker=marker, name=name))
    lib = tmp_path / f"lib{name}.so"
    p = subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"building {lib.name} failed:\n{p.stderr}"
    return lib


def start_workload(h, tmp_path, names, seconds):
    libs = [build_lib(tmp_path, n) for n in names]
    script = tmp_path / "worker_faults.py"
    script.write_text(WORKLOAD)
    ready = tmp_path / "ready"
    w = h.spawn([sys.executable, str(script), str(ready), str(seconds)] + [str(p) for p in libs])
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert w.poll() is None and time.monotonic() < deadline, "the workload did not start"
        time.sleep(0.02)
    return w


def test_the_parsing_worker_is_confined(tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    out = tmp_path / "prof.txt"
    try:
        w = start_workload(h, tmp_path, ["plain"], 30)
        prof = subprocess.Popen([profiler_bin, "record", "-p", str(w.pid), "--native", "-r",
                                 "199", "-d", "4", "-f", "collapsed", "-o", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        worker = None
        while worker is None and prof.poll() is None and time.monotonic() < deadline:
            worker = worker_of(prof.pid)
            time.sleep(0.05)
        assert worker, "no parsing worker runs beside record --native"
        status = confined_status(worker)
        fds = {int(f.name): os.readlink(f) for f in Path(f"/proc/{worker}/fd").iterdir()}
        limits = Path(f"/proc/{worker}/limits").read_text()
        _, err = prof.communicate(timeout=60)
    finally:
        if prof.poll() is None:
            prof.kill()
        h.close()
    assert prof.returncode == 0, err
    assert field(status, "Uid") == ["65534"] * 4, status
    assert field(status, "Gid") == ["65534"] * 4, status
    for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(field(status, caps)[0], 16) == 0, status
    assert field(status, "NoNewPrivs") == ["1"], status
    assert field(status, "Seccomp") == ["2"], status
    assert sorted(fds) == [0, 1, 2, 3], fds
    assert all(fds[i] == "/dev/null" for i in (0, 1, 2)), fds
    assert fds[3].startswith("socket:"), fds
    assert any(line.startswith("Max processes") and line.split()[2:4] == ["0", "0"]
               for line in limits.splitlines()), limits
    assert any(line.startswith("Max address space") and line.split()[3] != "unlimited"
               for line in limits.splitlines()), limits
    text = out.read_text()
    assert ";plain_burn" in text, f"no named frame in the library:\n{text[:3000]}"


def test_a_parse_that_hangs_or_faults_costs_that_object_not_the_profile(
        tmp_path, profiler_bin, monkeypatch):
    monkeypatch.setenv("PBP_TEST_WORKER_FAULTS", "1")
    h = Harness(tmp_path, profiler_bin)
    try:
        w = start_workload(h, tmp_path, ["plain"] + list(FAULTS), 60)
        r = h.record_pid(w.pid, rate=199, duration=8, extra=["--native"], timeout=60)
        prof = r.check_ok()
    finally:
        h.close()
    st = r.stats()
    assert st["native_worker_timeouts"] == 1, st
    assert st["native_worker_deaths"] == 2, st
    assert st["native_worker_quarantined"] == 3, st
    assert st["native_worker_starts"] >= 3, st
    # Each new worker was given the samples ring again.
    assert st["native_stacks_from_ring"] == st["native_walks"] > 0, st
    for name, why in (("hang", "took longer than the deadline"),
                      ("crash", "killed the parsing worker (SIGSEGV)"),
                      ("socket", "killed the parsing worker (SIGSYS)")):
        lines = [line for line in r.stderr.splitlines() if f"/lib{name}.so" in line]
        assert len(lines) == 1 and why in lines[0], r.stderr
    names = {f.name for s in prof for f in s.frames}
    assert any(n.startswith("plain_burn") for n in names), \
        f"the sound library lost its names:\n{show(prof)}"
    for name in FAULTS:
        assert not any(f"{name}_burn" in n for n in names), \
            f"{name}: a quarantined object was named\n{show(prof)}"
        callers = [s for s in prof if any(f.name == f"call_{name}" for f in s.frames)]
        assert callers, f"no sample under call_{name}: the profile lost them\n{show(prof)}"


def test_the_profiler_hands_the_worker_only_files_the_target_maps(tmp_path, profiler_bin,
                                                                  monkeypatch):
    """A worker taken over asks for /etc/shadow as a mapped file, as debug files through
    '..' and outside any debug directory, and as a host file: each ask is refused (a
    descriptor handed over would crash it, which the stats would show), and the object
    it parsed keeps its names."""
    monkeypatch.setenv("PBP_TEST_WORKER_FAULTS", "1")
    h = Harness(tmp_path, profiler_bin)
    try:
        w = start_workload(h, tmp_path, ["plain", "escape"], 60)
        r = h.record_pid(w.pid, rate=199, duration=3, extra=["--native"], timeout=60)
        prof = r.check_ok()
    finally:
        h.close()
    st = r.stats()
    assert st["native_worker_deaths"] == 0 and st["native_worker_quarantined"] == 0, st
    # Five refusals each time the worker opens the library (its build-id, the unwinder).
    assert st["native_worker_refused"] >= 5, st
    names = {f.name for s in prof for f in s.frames}
    assert any(n.startswith("escape_burn") for n in names), show(prof)
    # The worker read every stack copy in the samples ring, where BPF wrote it.
    assert st["native_walks"] > 0 and st["native_stacks_from_ring"] == st["native_walks"], st


def test_system_wide_native_walks_every_process_in_one_worker(tmp_path, profiler_bin):
    """record -a --native over four processes, each with a library of its own: one
    worker keeps every process's objects open at once and names each one's function."""
    h = Harness(tmp_path, profiler_bin)
    names = [f"plain{i}" for i in range(4)]
    try:
        workers = []
        for name in names:
            d = tmp_path / name
            d.mkdir()
            lib = build_lib(d, "plain")
            renamed = d / f"lib{name}.so"
            lib.rename(renamed)
            script = d / "w.py"
            script.write_text(WORKLOAD.replace('libs["plain"]', f'libs["{name}"]')
                              .replace("def call_plain", f"def call_{name}")
                              .replace('name + "_burn"', '"plain_burn"'))
            workers.append(h.spawn([sys.executable, str(script), str(d / "ready"), "60",
                                    str(renamed)]))
            deadline = time.monotonic() + 30
            while not (d / "ready").exists():
                assert time.monotonic() < deadline, "a workload did not start"
                time.sleep(0.02)
        out = tmp_path / "all.txt"
        st = tmp_path / "all.json"
        r = h.run_profiler(["-a", "--native", "-r", 99, "-d", 4, "-f", "collapsed", "-o", out,
                            "--stats-file", st], timeout=60, out=out, stats=st)
        r.check_ok()
    finally:
        h.close()
    stats = r.stats()
    assert stats["native_worker_starts"] == 1 and stats["native_worker_deaths"] == 0, stats
    text = out.read_text()
    for w, name in zip(workers, names):
        mine = [line for line in text.splitlines() if f"call_{name}" in line]
        assert any("plain_burn" in line for line in mine), \
            f"{name} (pid {w.pid}): no named frame in its library\n{text[:3000]}"


SLEEP_SRC = """
#include <unistd.h>
{marker}
void {name}_sleep(void)
{{
	for (;;)
		usleep(100000);
}}
"""
SLEEP_WORKLOAD = r'''
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
getattr(lib, sys.argv[2] + "_sleep")()
'''


@pytest.mark.parametrize("name", ["plain", "crash"])
def test_dump_native_parses_in_the_worker(tmp_path, profiler_bin, monkeypatch, name):
    """dump --native of a thread asleep inside a library: the library is parsed by the
    worker, as record's are. One whose parse kills the worker costs its own names (one
    warning says which object) and never the dump; the control is named."""
    monkeypatch.setenv("PBP_TEST_WORKER_FAULTS", "1")
    lib = build_lib(tmp_path, name, SLEEP_SRC)
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEP_WORKLOAD)
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.spawn([sys.executable, str(script), str(lib), name])
        deadline = time.monotonic() + 30
        while f"/lib{name}.so" not in Path(f"/proc/{w.pid}/maps").read_text():
            assert w.poll() is None and time.monotonic() < deadline, "the sleeper did not start"
            time.sleep(0.02)
        time.sleep(0.3)
        r = h.run_profiler(["dump", "-p", w.pid, "--native"], timeout=60)
    finally:
        h.close()
    assert r.rc == 0, r.describe()
    assert 'in <module>' in r.stdout, r.describe()
    if name == "plain":
        assert "plain_sleep" in r.stdout and not r.stderr.strip(), r.describe()
        return
    lines = [line for line in r.stderr.splitlines() if f"/lib{name}.so" in line]
    assert len(lines) == 1 and "killed the parsing worker (SIGSEGV)" in lines[0], r.stderr
    assert "crash_sleep" not in r.stdout, r.describe()
