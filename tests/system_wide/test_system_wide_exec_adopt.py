# SPDX-License-Identifier: GPL-2.0-only
"""-a and exec chains into Python: each Python image is taken in once.

The kernel reports an exec once it is done, but the new image shows in /proc (its
executable, its mappings, its auxiliary vector) a little before; on a busy machine the
gap is long enough for -a's look at a new process to find the new interpreter first.
The event that arrives afterwards is of the exec that made that image, not a new one:
acting on it would drop the process and take it in again, counting it twice and
splitting its samples.

Shell chains like a container's entry point (a shell that joins a cgroup and execs
chroot, which execs Python) start one Python after another under --container. Each
carries a long argument list: the kernel writes its pointers into the new stack after
the image is mapped and before it reports the exec, which widens that gap as a loaded
machine does. Each Python lives until the profiler says it follows it, then exits;
the profiler must have taken in each exactly once.
"""

import re
import shutil
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from lib.paths import PROFILER_GRACE
from lib.interpreters import make_interp
from lib.harness import Harness
from lib.cgroups import cgroup2_root, remove_cgroups

# `record -a` follows every exec on the host:
# `make test` runs this file with no other test beside it.
pytestmark = pytest.mark.alone

CHAINS = 64             # Pythons started, one after another per lane
LANES = 4               # chains running at once
ARGS = 100000           # extra arguments of each Python
LIMIT = 600             # seconds the profiler may run while the chains go on

# Waits for the test to say it is being followed (never longer than a minute).
WAIT = """
import os, sys, time
p = "{dir}/release-%d" % os.getpid()
for _ in range(6000):
    if os.path.exists(p):
        sys.exit(0)
    time.sleep(0.01)
sys.exit(3)
"""


def test_exec_chains_into_python_are_each_taken_in_once(sid_root, workloads_installed,
                                                         tmp_path, profiler_bin):
    py = make_interp("3.15", sid_root)
    py.require()
    tag = uuid.uuid4().hex[:8]
    group = Path(cgroup2_root()) / f"pbp-exec-adopt-{tag}"
    group.mkdir()
    rel_dir = f"/tmp/pbp-exec-adopt-{tag}"
    rel_host = py.host_path(rel_dir)
    rel_host.mkdir(parents=True)
    chain = (["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$0" "$@"'] + py.argv +
             ["-c", WAIT.format(dir=rel_dir)] + ["x"] * ARGS)
    out, st = tmp_path / "out.txt", tmp_path / "stats.json"
    h = Harness(tmp_path, profiler_bin)
    shared = {"stderr": ""}
    pids, rcs = [], []
    done = threading.Event()
    started = threading.Event()

    def followed(pid):
        return re.search(rf"following pid {pid} ", shared["stderr"]) is not None

    def lane(n):
        for _ in range(n):
            p = subprocess.Popen(chain, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            pids.append(p.pid)
            # However slow the machine, the Python is followed or exits on its own.
            while p.poll() is None and not followed(p.pid):
                time.sleep(0.02)
            (rel_host / f"release-{p.pid}").touch()
            rcs.append(p.wait())

    def run_lanes():
        try:
            lanes = [threading.Thread(target=lane, args=(CHAINS // LANES,))
                     for _ in range(LANES)]
            for t in lanes:
                t.start()
            for t in lanes:
                t.join()
        finally:
            done.set()

    def when(_stdout, stderr):
        shared["stderr"] = stderr
        if not started.is_set() and "and those that start" in stderr:
            started.set()
            threading.Thread(target=run_lanes, daemon=True).start()
        return done.is_set()

    try:
        run = h.run_profiler(["record", "-a", "-v", "--container", group.name,
                              "-d", LIMIT, "-o", out, "--stats-file", st],
                             timeout=LIMIT + PROFILER_GRACE, out=out, stats=st,
                             signal_when=(when, signal.SIGINT))
    finally:
        # A profiler that died early leaves the chains waiting: let them go.
        for pid in list(pids):
            (rel_host / f"release-{pid}").touch()
        done.wait(120)
        h.close()
        remove_cgroups([group])
        shutil.rmtree(rel_host, ignore_errors=True)
    run.check_ok()
    err = run.stderr
    assert len(pids) == CHAINS and rcs == [0] * CHAINS, (rcs, err[-3000:])
    taken = {pid: len(re.findall(rf"pybpfprof: following pid {pid} ", err)) for pid in pids}
    twice = {pid: n for pid, n in taken.items() if n != 1}
    s = run.stats()
    assert not twice, f"taken in other than once: {twice}; {s}\n{err[-3000:]}"
    assert s["processes"] == CHAINS, (s, err[-3000:])
