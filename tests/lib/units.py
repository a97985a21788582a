# SPDX-License-Identifier: GPL-2.0-only
"""The C unit tests (tests/unit/NAME.c) and the sanitizer build: each binary brought up
to date through the Makefile before it runs (one left from an older checkout would
test old code), and a run's output checked for sanitizer reports."""

import os
import shutil
import subprocess
import time

import pytest

from .paths import REPO
from .scripts import Interpreter

SAN = REPO / "build" / "san"
SAN_ENV = dict(os.environ,
               ASAN_OPTIONS="abort_on_error=0:halt_on_error=1:detect_leaks=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
SAN_REPORT = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")
BUILDS = ["plain", "sanitizers"]


def san_binary(name):
    """build/san/NAME (`pybpfprof`, `tests/test_x`), built with ASan and UBSan."""
    path = SAN / name
    p = subprocess.run(["make", "-C", str(REPO), "OUT=build/san", "SAN=address,undefined",
                        f"build/san/{name}"], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"sanitizer build of {name} failed:\n{p.stderr[-3000:]}"
    return str(path)


def unit_binary(name, build):
    """tests/unit/NAME.c built plain or with the sanitizers (@build, one of BUILDS)."""
    if build == "sanitizers":
        return san_binary(f"tests/{name}")
    p = subprocess.run(["make", "-C", str(REPO), f"build/tests/{name}"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"building {name} failed:\n{p.stderr[-3000:]}"
    return str(REPO / "build" / "tests" / name)


def env_for(build):
    """The environment a binary of @build runs in: the sanitizers' options, or ours."""
    return SAN_ENV if build == "sanitizers" else None


def assert_clean(p, what):
    """Exit 0 and no sanitizer report, for a CompletedProcess with text output."""
    report = [m for m in SAN_REPORT if m in p.stderr]
    assert not report, f"{what}: sanitizer report:\n{p.stderr[-4000:]}"
    assert p.returncode == 0, f"{what}: exit {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}"


def run_unit(name, build, ok=None, args=(), timeout=120):
    """Runs unit @name of @build with @args; it must end clean and, with @ok, print that
    line once every check held. Returns the CompletedProcess."""
    p = subprocess.run([unit_binary(name, build), *args], capture_output=True, text=True,
                       timeout=timeout, env=env_for(build))
    assert_clean(p, name)
    if ok is not None:
        assert ok in p.stdout, p.stdout[-2000:]
    return p


# The native unit tests' target: a busy loop under @R Python -> C (sorted) -> Python (key)
# re-entries of the eval loop, R + 1 activations whose runs the workload knows.
DEEP = """
import sys
def burn():
    while True:
        pass
def nest(d):
    if d == 0:
        return burn()
    return sorted([1, 2], key=lambda x: nest(d - 1))
print("ready", flush=True)
nest(int(sys.argv[1]))
"""

# Stops a process by ptrace and writes a snapshot of one thread (registers, stack copy).
SNAPSHOT_TOOL = REPO / "tests" / "tools" / "native_snapshot.py"


def deep_snapshots(root, version, reentries, snaps, unwind, script=DEEP, may_miss=False):
    """Runs @script (DEEP) under python@version (on the host, or in the chroot at @root)
    with argument @reentries and, once it says "ready", for each (path, args) in @snaps
    stops it with tests/tools/native_snapshot.py PID path *args and calls @unwind(pid,
    path); [what each call returned]. The interpreter missing fails the test, and so
    does the tool failing, except that with @may_miss a stop --at an instruction the
    program did not reach gives None."""
    py = Interpreter(version, root)
    if py.missing():
        pytest.fail(py.missing())
    host, inside = py.scratch()
    results = []
    try:
        (host / "deep.py").write_text(script)
        argv = [py.binary, f"{inside}/deep.py", str(reentries)]
        proc = subprocess.Popen((["chroot", str(py.root)] if py.root else []) + argv,
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().startswith("ready")
            time.sleep(0.2)
            for snap, args in snaps:
                tool = subprocess.run(["/usr/bin/python3", str(SNAPSHOT_TOOL), str(proc.pid),
                                       str(snap), *args], capture_output=True, text=True,
                                      timeout=60)
                if tool.returncode == 3 and may_miss:
                    results.append(None)
                    continue
                if tool.returncode:
                    pytest.fail(f"native_snapshot.py {' '.join(args)}: {tool.stderr.strip()}")
                results.append(unwind(proc.pid, snap))
        finally:
            proc.kill()
            proc.wait()
    finally:
        shutil.rmtree(host, ignore_errors=True)
    return results
