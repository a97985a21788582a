# SPDX-License-Identifier: GPL-2.0-only
"""--no-bpf holds a running thread still for one reading when sixteen readings in a row
found its stack changing under them (docs/live-sampling.md, "Holding a thread that will
not hold still"; user/sample/thread_hold.c).

depth_walk moves its stack between 10 and 400 frames without pause, so most readings
from outside are torn. With holds its samples come out whole; while record runs, a
poller reading the thread's state every half millisecond never sees it stopped for long;
once record has ended nothing traces the target and it runs on. With --no-hold no thread
is ever stopped, and the readings that could not be made whole are reported incomplete
instead (more of them than with holds)."""

import os
import subprocess
import threading
import time

import pytest

from lib.interpreters import make_interp
from lib.harness import Harness, fraction
from lib.procfs import cpu_seconds

# Holds are for a thread that tears every reading because it is running: beside another
# test, the walker waited for a CPU so often that readings of it came out whole and no
# hold was needed (2,995 samples, none torn, no hold). The walker now runs first in to a
# real-time CPU (walker()), which it would take from a test beside it: `make test` runs
# this file with no other test beside it.
pytestmark = pytest.mark.alone

RATE = 1000
SECONDS = 3
POLL_S = 0.0005
# Longest a thread may be seen stopped in a row: a hold waits at most 10 ms for its
# thread to stop (THREAD_HOLD_WAIT_NS), then reads it for some tens of microseconds.
# A poller on a busy 2-CPU machine may itself be off its CPU for a while, and sees a
# stop only while it is there: 100 ms is far beyond any hold and far below the
# seconds a thread left stopped would show.
MAX_STOPPED_S = 0.1
# With holds, the samples that a hold could not make whole (a thread that did not stop
# in time, or decoding's own reasons): depth_walk without holds loses 21-78 %.
MAX_INCOMPLETE_HELD = 0.03


def thread_states(pid):
    """{tid: (state, tracer pid)} of every thread of @pid."""
    out = {}
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                text = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        out[tid] = (fields.get("State", "?").split()[0], int(fields.get("TracerPid", "0")))
    return out


class StopWatch:
    """Reads the target's thread states until stopped: the longest time any thread was
    seen in a ptrace stop (t) without a look in between that saw it otherwise."""

    def __init__(self, pid):
        self.pid, self.longest, self.looks, self.seen_stopped = pid, 0.0, 0, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        since = {}
        while not self.done.is_set():
            now = time.monotonic()
            for tid, (state, _) in thread_states(self.pid).items():
                if state == "t":
                    self.seen_stopped += 1
                    since.setdefault(tid, now)
                    self.longest = max(self.longest, now - since[tid])
                else:
                    since.pop(tid, None)
            self.looks += 1
            time.sleep(POLL_S)

    def stop(self):
        self.done.set()
        self.thread.join()


def runs_on(pid, seconds=1.0):
    """CPU seconds the process used over @seconds."""
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - before


@pytest.fixture(scope="module", params=["3.11", "3.15"], ids=lambda v: f"py{v}")
def walker(request, module_tmp, profiler_bin, sid_root, workloads_installed):
    h = Harness(module_tmp / f"hold-{request.param}", profiler_bin)
    w = h.start_workload(make_interp(request.param, sid_root), "depth_walk", seconds=120)
    # Holds are for a thread that is running whenever it is read. Beside busy loops the
    # walker would wait for a CPU so often that readings of it come out whole with or
    # without holds: first in to a real-time CPU, it runs as on an idle machine.
    p = subprocess.run(["chrt", "--all-tasks", "--fifo", "--pid", "1", str(w.pid)],
                       capture_output=True, text=True)
    assert p.returncode == 0, f"chrt: {p.stderr}"
    yield h, w
    h.close()


def record_watched(h, w, extra):
    watch = StopWatch(w.pid)
    try:
        run = h.record_pid(w.pid, rate=RATE, duration=SECONDS, extra=["--no-bpf"] + extra)
    finally:
        watch.stop()
    run.check_ok()
    return run, run.stats(), watch


def test_live_hold_makes_torn_readings_whole_and_lets_go(walker):
    h, w = walker
    held, st, watch = record_watched(h, w, [])
    after = thread_states(w.pid)
    n = st.get("samples") or 0
    detail = (f"stats: samples {n}, incomplete {st.get('samples_incomplete')}, "
              f"reasons {st.get('incomplete_reasons')}, holds {st.get('live_holds')}, "
              f"late {st.get('live_holds_late')}, refused {st.get('live_holds_refused')}, "
              f"held {st.get('live_hold_ns')} ns; poller: {watch.looks} looks, "
              f"{watch.seen_stopped} saw a stop, longest {watch.longest * 1000:.1f} ms")
    print(detail)
    assert n >= RATE * SECONDS // 4, detail
    assert st.get("live_holds", 0) > 0, "no thread was held: " + detail
    assert st.get("live_holds_refused", 0) == 0, detail
    assert fraction(st.get("samples_incomplete", 0), n) <= MAX_INCOMPLETE_HELD, detail
    assert watch.longest < MAX_STOPPED_S, detail
    assert all(state != "t" and tracer == 0 for state, tracer in after.values()), \
        f"after record: {after}"
    assert runs_on(w.pid) > 0.3, "the target did not run on after record"
    # The same run with --no-hold: no thread stopped, and the readings a hold made
    # whole are reported incomplete instead.
    free, st_free, watch_free = record_watched(h, w, ["--no-hold"])
    print(f"--no-hold: samples {st_free.get('samples')}, incomplete "
          f"{st_free.get('samples_incomplete')}; poller: {watch_free.looks} looks")
    assert st_free.get("live_holds", 0) == 0, st_free
    assert watch_free.seen_stopped == 0, f"{watch_free.seen_stopped} looks saw a stop"
    assert fraction(st_free.get("samples_incomplete", 0), st_free.get("samples") or 1) > \
        fraction(st.get("samples_incomplete", 0), n), (st_free, detail)
