"""A target in its own PID namespace (a container), profiled from the host.

CPython records each thread's id as the target's namespace numbers it
(threading.get_native_id(), what the workload's truth holds). /proc here knows the
thread by another id: `--no-bpf` and `dump -p` must translate, or every thread looks
gone (no samples) and no run state is known.

The target is dumpee (tests/workloads/dumpee.py) under `unshare --pid --fork
--mount-proc`, where its threads are 1, 2, 3...: a burner thread spinning in
burner_loop, two threads asleep.
"""

import json
import time
from pathlib import Path

import pytest

from lib.paths import RUN_DIR, TRUTH_TIMEOUT
from lib.collapsed import total, truth_frames
from lib.harness import Harness
from lib.dump import QUICK, check_dump
from lib.procfs import host_child

DURATION = 2


def start_in_namespace(h: Harness, interp, name):
    """(host pid, truth) of workload @name started in a new PID namespace."""
    interp.require()
    truth_target = f"{RUN_DIR}/{name}-ns-{interp.version}-{time.monotonic_ns()}.json"
    truth_host = interp.host_path(truth_target)
    argv = ["unshare", "--pid", "--fork", "--mount-proc"] + interp.argv + [
        interp.script(name), "--truth", truth_target, "--seconds", "120"]
    proc = h.spawn(argv)
    deadline = time.monotonic() + TRUTH_TIMEOUT
    while not truth_host.exists():
        if proc.poll() is not None:
            pytest.fail(f"{' '.join(argv)} exited ({proc.returncode}) before its truth")
        if time.monotonic() > deadline:
            pytest.fail(f"{' '.join(argv)} wrote no truth within {TRUTH_TIMEOUT}s")
        time.sleep(0.02)
    truth = json.loads(truth_host.read_text())
    pid = host_child(proc.pid)
    assert pid, f"unshare ({proc.pid}) has no child"
    # The premise: the ids the target knows are not the host's.
    assert truth["pid"] != pid, f"target is not in its own PID namespace: {truth}"
    assert not Path(f"/proc/{pid}/task/{truth['threads']['burner']}").exists() or \
        truth["threads"]["burner"] == pid, "namespace ids collide with host ids"
    time.sleep(0.5)   # the main thread returns into the sleep its truth describes
    return pid, truth


def test_no_bpf_samples_a_target_in_its_own_pid_namespace(py, harness):
    pid, truth = start_in_namespace(harness, py, "dumpee")
    run = harness.record_pid(pid, rate=200, duration=DURATION, threads=True,
                             extra=["--no-bpf"])
    prof = run.check_ok()
    burner = truth_frames(truth["stacks"]["burner"])
    assert total(prof) > 0, f"no samples from the namespaced target\n{run.describe()}"
    mine = [s for s in prof if not s.incomplete and s.thread == truth["threads"]["burner"]
            and s.frames == burner]
    others = [s for s in prof if s not in mine]
    # Only the burner is on a CPU; every sample must be its truth stack.
    assert total(mine) > 0 and not others, (
        f"want every sample to be thread {truth['threads']['burner']} at "
        f"{';'.join(map(str, burner))}; got:\n" +
        "\n".join(f"  [{s.thread}] {';'.join(map(str, s.frames))} {s.count}" for s in prof))


def test_dump_shows_run_states_of_a_target_in_its_own_pid_namespace(py, harness):
    pid, truth = start_in_namespace(harness, py, "dumpee")
    run = harness.run_profiler(["dump", "-p", pid], timeout=QUICK)
    _, threads = check_dump(run)
    tids = truth["threads"]
    for key in tids:
        assert tids[key] in threads, f"{key} thread {tids[key]} missing:\n{run.stdout}"
    assert threads[tids["burner"]].state == "on CPU", run.stdout
    assert threads[tids["main"]].state == "idle", run.stdout
    assert threads[tids["sleeper"]].state == "idle", run.stdout
