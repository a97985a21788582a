"""record -p (and dump --native) on a process with a thread in an uninterruptible wait.

record's default clocks (per CPU, scoped to the target's cgroup) need no hold: no thread
of the target is ever traced, the blocked one included. To open a clock per thread
(--clock thread), record holds every thread of the target for a moment with
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
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from lib.collapsed import parse_collapsed, total
from lib.interpreters import make_interp
from lib.harness import BAD_OUTPUT
from lib.procfs import cpu_seconds

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
spin_in_python(20000)
note("spinning", "1")
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


@dataclass
class Blocked:
    """A Python target whose thread @tid waits in vfork for @child (State: D)."""
    proc: subprocess.Popen
    tid: int
    child: int
    host: Path          # the target's notes, as the host sees them
    log: Path

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return ("the target", self.proc, lambda: self.log.read_text(errors="replace"))

    def returned(self):
        """The waiter's vfork_wait() result once it has returned, else None."""
        p = self.host / "returned"
        return p.read_text() if p.exists() else None


@pytest.fixture
def blocked(interp, harness, tmp_path):
    interp.require()
    # Where the target (in the chroot for 3.15) finds the library and writes its notes.
    inside = f"/tmp/pbp-late-{uuid.uuid4().hex[:8]}"
    host = interp.host_path(inside)
    host.mkdir(parents=True)
    os.chmod(host, 0o755)
    child = None
    try:
        src = tmp_path / "vfork_wait.c"
        src.write_text(LIB_SOURCE)
        cc = subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o",
                             str(host / "vfork_wait.so"), str(src)],
                            capture_output=True, text=True)
        assert cc.returncode == 0, f"gcc failed: {cc.stderr}"
        (host / "target.py").write_text(TARGET_SOURCE)
        log = tmp_path / "target.log"
        with open(log, "wb") as logf:
            proc = subprocess.Popen(
                interp.argv + [f"{inside}/target.py", f"{inside}/vfork_wait.so", inside,
                               str(CHILD_S), str(WAIT_S * 4)],
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
        harness.procs.append(proc)
        b = Blocked(proc, 0, 0, host, log)
        b.tid = int(wait_for(lambda: (host / "tid").exists() and (host / "tid").read_text(),
                             "thread id from the target", alive=[b.alive()]))
        status = f"/proc/{b.pid}/task/{b.tid}/status"
        wait_for(lambda: status_field(status, "State") == "D",
                 "State: D of the thread waiting for its vfork child", alive=[b.alive()])
        children = wait_for(lambda: Path(f"/proc/{b.pid}/task/{b.tid}/children")
                            .read_text().split(), "vfork child", alive=[b.alive()])
        assert len(children) == 1, f"the blocked thread has children {children}"
        b.child = child = int(children[0])
        # The main thread back from Thread.start() and in its loop: on a loaded machine
        # it can still be waiting for the new thread's start when the waiter blocks.
        wait_for(lambda: (host / "spinning").exists(), "the main thread's loop",
                 alive=[b.alive()])
        yield b
    finally:
        if child:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        subprocess.run(["rm", "-rf", str(host)], check=False)


def held_or_stopped(pid):
    return {t: s for t, s in thread_states(pid).items() if s[0] in "tT" or s[1]}


def wait_returned(b, record=None):
    """Until the waiter has returned from vfork_wait() (or record has ended)."""
    deadline = time.monotonic() + WAIT_S
    while b.returned() is None and (record is None or record.poll() is None) and \
            time.monotonic() < deadline:
        time.sleep(0.02)
    return b.returned()


def test_record_lets_a_thread_late_at_attach_go_once_it_stops(blocked, harness, tmp_path):
    b = blocked
    out, stats = tmp_path / "out.txt", tmp_path / "stats.json"
    se = tmp_path / "record.stderr"
    # Only clocks per thread hold the target as they open.
    argv = harness.profiler_argv(["record", "-v", "-p", b.pid, "-d", WAIT_S * 2,
                                  "--clock", "thread",
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
                 alive=[record_alive, b.alive()])
        spun_at_attach = cpu_seconds(b.pid, b.pid)
        state, tracer = thread_states(b.pid).get(b.tid, (None, 0))
        assert tracer == record.pid and state == "D", \
            f"the vfork waiter is not still seized by record in its wait (State {state}, " \
            f"TracerPid {tracer}): the case is not the one under test\n{stderr()[-2000:]}"

        # The wait ends: the thread stops for the pending interrupt and must then be let
        # go while record runs on.
        os.kill(b.child, signal.SIGKILL)
        returned = wait_returned(b, record)
        states = thread_states(b.pid)
        assert record.poll() is None, \
            f"record ended before the thread was let go\n{stderr()[-2000:]}"
        assert returned is not None, \
            f"the vfork waiter did not run on once its child was gone: threads " \
            f"(State, TracerPid) {states}\n{stderr()[-2000:]}"
        assert returned == "0", "the vfork waiter's waitpid failed"
        stopped = held_or_stopped(b.pid)
        assert not stopped, f"threads still traced or stopped while record runs: {stopped}"

        # The profile must show the main thread, whose clock was opened under the hold:
        # on a busy machine it may have had no CPU yet, so record runs on until the
        # thread has used enough for some 30 ticks of its clock.
        wait_for(lambda: cpu_seconds(b.pid, b.pid) - spun_at_attach >= 0.3,
                 "0.3 s of the main thread's CPU time while profiled",
                 alive=[record_alive, b.alive()])
        record.send_signal(signal.SIGINT)
        rc = record.wait(WAIT_S)
    finally:
        if record.poll() is None:
            os.killpg(record.pid, signal.SIGKILL)
            record.wait(10)

    err = stderr()
    assert rc == 0, f"record failed ({rc})\n{err[-3000:]}"
    assert not BAD_OUTPUT.search(err), f"crash output on stderr\n{err[-3000:]}"
    warnings = [ln for ln in err.splitlines()
                if f"process {b.pid}: 1 thread was in an uninterruptible wait at "
                   f"attach; each is let go as soon as it stops" in ln]
    assert len(warnings) == 1, f"no (single) warning about the late thread\n{err[-3000:]}"
    prof = parse_collapsed(out.read_text(errors="replace"))
    assert total(prof) > 0, f"empty profile\n{err[-3000:]}"
    assert any(f.name == "spin_in_python" for s in prof for f in s.frames), \
        "the main thread's Python function is not in the profile"
    st = json.loads(stats.read_text())
    assert st["attach_late_threads"] == 1, st
    assert st["attach_late_threads_held"] == 0, st
    assert not held_or_stopped(b.pid)


def test_record_on_its_default_clocks_never_holds_the_target(blocked, harness, tmp_path):
    b = blocked
    out, stats = tmp_path / "out.txt", tmp_path / "stats.json"
    record = harness.spawn(harness.profiler_argv(
        ["record", "-p", b.pid, "-d", 3, "-f", "collapsed", "-o", out,
         "--stats-file", stats]), start_new_session=True)
    traced = set()
    while record.poll() is None:
        traced |= {t for t, (_, tracer) in thread_states(b.pid).items() if tracer}
        time.sleep(0.005)
    assert record.returncode == 0, f"record failed ({record.returncode})"
    assert not traced, f"threads traced by record: {traced}"
    prof = parse_collapsed(out.read_text(errors="replace"))
    assert any(f.name == "spin_in_python" for s in prof for f in s.frames), \
        "the main thread's Python function is not in the profile"
    st = json.loads(stats.read_text())
    assert st["clock"] == "timer" and st["attach_late_threads"] == 0, st
    assert status_field(f"/proc/{b.pid}/task/{b.tid}/status", "State") == "D"


def test_dump_native_leaves_a_thread_late_at_the_hold_running(blocked, harness):
    """dump --native holds the process too: the waiter, left out after 2 s, must not be
    left stopped once the dump has exited, and runs on when its wait ends."""
    b = blocked
    run = harness.run_profiler(["dump", "-p", b.pid, "--native"], timeout=WAIT_S)
    assert run.rc == 0, run.describe()
    assert f"1 thread of process {b.pid} did not stop within" in run.stderr, run.describe()
    assert f"Thread {b.pid}" in run.stdout and f"Thread {b.tid}" in run.stdout, run.stdout
    assert "spin_in_python" in run.stdout, run.stdout
    stopped = held_or_stopped(b.pid)
    assert not stopped, f"threads left traced or stopped after the dump: {stopped}"
    os.kill(b.child, signal.SIGKILL)
    assert wait_returned(b) == "0", \
        f"the vfork waiter did not run on once its child was gone: {thread_states(b.pid)}"
    assert not held_or_stopped(b.pid)
