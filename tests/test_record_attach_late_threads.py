"""record -p on a process with a thread in an uninterruptible wait at attach.

To open a clock per thread, record holds every thread of the target for a moment with
ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT). A thread in an uninterruptible wait cannot
stop then: it stops when the wait ends, and a ptrace stop lasts until its tracer lets
it go. Here that thread is the parent of a vfork (its wait for the child shows as
State: D): once the child has gone, the thread must run on while record is still
sampling, not sit stopped (State: t) until record exits.
"""

import json
import os
import signal
import subprocess
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from conftest import BAD_OUTPUT, make_interp, parse_collapsed, total

WAIT_S = 60.0   # bound on each wait for the target or the profiler to get somewhere
CHILD_S = 90    # the vfork child's sleep: it is killed long before

LIB_SOURCE = r"""
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The caller waits, uninterruptibly, until the child ends: the child only makes raw
 * system calls, as a vfork child must. 0 once the child is gone, -1 if vfork failed. */
int pbp_vfork_wait(int seconds)
{
	struct timespec ts = { .tv_sec = seconds };
	int status;
	pid_t pid = vfork();

	if (pid == 0) {
		syscall(SYS_nanosleep, &ts, NULL);
		syscall(SYS_exit, 0);
	}
	if (pid < 0)
		return -1;
	return waitpid(pid, &status, 0) == pid ? 0 : -1;
}
"""

TARGET_SOURCE = """
import ctypes, os, sys, threading, time
from pathlib import Path

lib = ctypes.CDLL(sys.argv[1])
out = Path(sys.argv[2])

def note(name, text):
    (out / (name + ".tmp")).write_text(text)
    os.replace(out / (name + ".tmp"), out / name)

def blocked():
    note("tid", str(threading.get_native_id()))
    note("returned", str(lib.pbp_vfork_wait(int(sys.argv[3]))))

def spin_in_python(n):
    total = 0
    for i in range(n):
        total += i * i
    return total

threading.Thread(target=blocked, daemon=True).start()
end = time.monotonic() + float(sys.argv[4])
while time.monotonic() < end:
    spin_in_python(20000)
"""


def status_field(path, name):
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].split()[0]
    except OSError:
        return None
    return None


def thread_states(pid):
    """{tid: (State letter, TracerPid)} of every thread of @pid."""
    states = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return states
    for tid in tids:
        st = f"/proc/{pid}/task/{tid}/status"
        state, tracer = status_field(st, "State"), status_field(st, "TracerPid")
        if state is not None:
            states[int(tid)] = (state, int(tracer or 0))
    return states


def wait_for(cond, what, timeout=WAIT_S, alive=()):
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        for name, proc, describe in alive:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited ({proc.returncode}) while waiting for {what}\n"
                            f"{describe()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout:.0f}s")
        time.sleep(0.02)


@pytest.fixture(scope="module", params=["3.11", "3.15"], ids=lambda v: f"py{v}")
def interp(request, sid_root, workloads_installed):
    return make_interp(request.param, sid_root)


def test_record_lets_a_thread_late_at_attach_go_once_it_stops(interp, harness, tmp_path):
    interp.require()
    # Where the target (in the chroot for 3.15) finds the library and writes its notes.
    inside = f"/tmp/pbp-late-{uuid.uuid4().hex[:8]}"
    host = interp.host_path(inside)
    host.mkdir(parents=True)
    os.chmod(host, 0o755)
    try:
        run_late_thread_case(interp, harness, tmp_path, inside, host)
    finally:
        subprocess.run(["rm", "-rf", str(host)], check=False)


def run_late_thread_case(interp, harness, tmp_path, inside, host):
    src = tmp_path / "vfork_wait.c"
    src.write_text(LIB_SOURCE)
    cc = subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(host / "vfork_wait.so"),
                         str(src)], capture_output=True, text=True)
    assert cc.returncode == 0, f"gcc failed: {cc.stderr}"
    (host / "target.py").write_text(TARGET_SOURCE)
    target_log = tmp_path / "target.log"
    with open(target_log, "wb") as logf:
        target = subprocess.Popen(
            interp.argv + [f"{inside}/target.py", f"{inside}/vfork_wait.so", inside,
                           str(CHILD_S), str(WAIT_S * 4)],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
    harness.procs.append(target)
    target_alive = ("the target", target, lambda: target_log.read_text(errors="replace"))
    tid = int(wait_for(lambda: (host / "tid").exists() and (host / "tid").read_text(),
                       "thread id from the target", alive=[target_alive]))
    status = f"/proc/{target.pid}/task/{tid}/status"
    wait_for(lambda: status_field(status, "State") == "D",
             "State: D of the thread waiting for its vfork child", alive=[target_alive])
    child = wait_for(lambda: Path(f"/proc/{target.pid}/task/{tid}/children")
                     .read_text().split(), "vfork child", alive=[target_alive])
    assert len(child) == 1, f"the blocked thread has children {child}"
    child = int(child[0])

    out, stats = tmp_path / "out.txt", tmp_path / "stats.json"
    se = tmp_path / "record.stderr"
    argv = harness.profiler_argv(["record", "-v", "-p", target.pid, "-d", WAIT_S * 2,
                                  "-f", "collapsed", "-o", out, "--stats-file", stats])
    with open(se, "wb") as fe:
        record = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=fe, start_new_session=True)
    harness.group_leaders.append(record)

    def stderr():
        return se.read_text(errors="replace")

    record_alive = ("record", record, lambda: f"stderr:\n{stderr()[-3000:]}")
    try:
        # Attached: every thread but the blocked one was held and let go.
        wait_for(lambda: "profiling pid" in stderr(), "attach",
                 alive=[record_alive, target_alive])
        state, tracer = thread_states(target.pid).get(tid, (None, 0))
        assert tracer == record.pid and state == "D", \
            f"the vfork waiter is not still seized by record in its wait (State {state}, " \
            f"TracerPid {tracer}): the case is not the one under test\n{stderr()[-2000:]}"

        # The wait ends: the thread stops for the pending interrupt and must then be let
        # go while record runs on.
        os.kill(child, signal.SIGKILL)
        returned = host / "returned"
        deadline = time.monotonic() + WAIT_S
        while not returned.exists() and record.poll() is None and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        states = thread_states(target.pid)
        assert record.poll() is None, \
            f"record ended before the thread was let go\n{stderr()[-2000:]}"
        assert returned.exists(), \
            f"the vfork waiter did not run on once its child was gone: threads " \
            f"(State, TracerPid) {states}\n{stderr()[-2000:]}"
        assert returned.read_text() == "0", "the vfork waiter's waitpid failed"
        stopped = {t: s for t, s in states.items() if s[0] == "t" or s[1]}
        assert not stopped, \
            f"threads still traced or stopped while record runs: {stopped}"

        record.send_signal(signal.SIGINT)
        rc = record.wait(WAIT_S)
    finally:
        if record.poll() is None:
            os.killpg(record.pid, signal.SIGKILL)
            record.wait(10)
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass

    err = stderr()
    assert rc == 0, f"record failed ({rc})\n{err[-3000:]}"
    assert not BAD_OUTPUT.search(err), f"crash output on stderr\n{err[-3000:]}"
    warnings = [ln for ln in err.splitlines()
                if f"process {target.pid}: 1 thread was in an uninterruptible wait at "
                   f"attach; each is let go as soon as it stops" in ln]
    assert len(warnings) == 1, f"no (single) warning about the late thread\n{err[-3000:]}"
    prof = parse_collapsed(out.read_text(errors="replace"))
    assert total(prof) > 0, f"empty profile\n{err[-3000:]}"
    assert any(f.name == "spin_in_python" for s in prof for f in s.frames), \
        "the main thread's Python function is not in the profile"
    st = json.loads(stats.read_text())
    assert st["attach_late_threads"] == 1, st
    assert st["attach_late_threads_held"] == 0, st
    assert not {t: s for t, s in thread_states(target.pid).items() if s[0] == "t" or s[1]}
