"""waits: threads that each spend their time in one known way, measured by the threads
themselves: sleeper sleeps, reader blocks reading a pipe the main thread feeds, locker
waits for a lock that holder keeps while it sleeps, and gil_a and gil_b burn CPU in
pure Python, contending for the GIL. Every thread records its native id, its start
and end (time.monotonic()), its CPU time (time.thread_time()) and the time it spent
inside its blocking call, timed around the call.

The workload writes its truth (pid) at once and waits for the file --go to appear, so
that a profiler can attach first and see every worker thread's whole life; at the end
it writes the measurements to TRUTH.done."""

import json
import os
import sys
import threading
import time

from pbp_common import Truth, burn_line, parse_args

RESULTS = {}
LOCK = threading.Lock()       # what locker waits for
RESULTS_LOCK = threading.Lock()
DEADLINE = None


def finish(name, start, cpu0, waited, line):
    end = time.monotonic()
    with RESULTS_LOCK:
        RESULTS[name] = {
            "tid": threading.get_native_id(), "function": name, "start": start, "end": end,
            "cpu": time.thread_time() - cpu0, "waited": waited, "line": line,
        }


def sleeper():
    start, cpu0, waited = time.monotonic(), time.thread_time(), 0.0
    while time.monotonic() < DEADLINE:
        t0 = time.monotonic()
        time.sleep(0.1)  # BURN:sleep
        waited += time.monotonic() - t0
    finish("sleeper", start, cpu0, waited, LINE_SLEEP)


def reader(fd):
    start, cpu0, waited = time.monotonic(), time.thread_time(), 0.0
    while True:
        t0 = time.monotonic()
        b = os.read(fd, 1)  # BURN:read
        waited += time.monotonic() - t0
        if b != b"x":
            break
    finish("reader", start, cpu0, waited, LINE_READ)


def holder():
    start, cpu0 = time.monotonic(), time.thread_time()
    while time.monotonic() < DEADLINE:
        with LOCK:
            time.sleep(0.2)
        time.sleep(0.002)
    finish("holder", start, cpu0, 0.0, 0)


def locker():
    start, cpu0, waited = time.monotonic(), time.thread_time(), 0.0
    time.sleep(0.01)    # let holder take the lock first
    while time.monotonic() < DEADLINE:
        t0 = time.monotonic()
        LOCK.acquire()  # BURN:lock
        waited += time.monotonic() - t0
        LOCK.release()
        time.sleep(0.001)
    finish("locker", start, cpu0, waited, LINE_LOCK)


def gil_a():
    start, cpu0, x = time.monotonic(), time.thread_time(), 0
    while time.monotonic() < DEADLINE:
        for i in range(2000): x += i  # BURN:gil_a
    finish("gil_a", start, cpu0, 0.0, LINE_GIL_A)


def gil_b():
    start, cpu0, x = time.monotonic(), time.thread_time(), 0
    while time.monotonic() < DEADLINE:
        for i in range(2000): x += i  # BURN:gil_b
    finish("gil_b", start, cpu0, 0.0, LINE_GIL_B)


LINE_SLEEP = burn_line(sleeper, "sleep")
LINE_READ = burn_line(reader, "read")
LINE_LOCK = burn_line(locker, "lock")
LINE_GIL_A = burn_line(gil_a, "gil_a")
LINE_GIL_B = burn_line(gil_b, "gil_b")


def main():
    global DEADLINE
    args = parse_args(lambda p: p.add_argument("--go", required=True))
    truth = Truth(args.truth)
    truth.write()
    while not os.path.exists(args.go):
        time.sleep(0.01)
    # A thread that gets its lock or wakes up waits for the GIL before it runs: keep
    # that short beside the waits measured, so that they are what the thread did.
    sys.setswitchinterval(0.001)
    DEADLINE = time.monotonic() + args.seconds
    r, w = os.pipe()
    threads = [threading.Thread(target=f, args=a, name=f.__name__)
               for f, a in ((sleeper, ()), (reader, (r,)), (holder, ()), (locker, ()),
                            (gil_a, ()), (gil_b, ()))]
    spawned = {}
    for t in threads:
        spawned[t.name] = time.monotonic()
        t.start()
    while time.monotonic() < DEADLINE:
        time.sleep(0.1)
        os.write(w, b"x")
    os.write(w, b"q")
    for t in threads:
        t.join()
    # Each thread's life lies within [spawned, joined]: its own start and end leave out
    # the creating and the ending, which take a while on a loaded machine.
    out = dict(truth.data, threads=RESULTS, spawned=spawned, joined=time.monotonic())
    tmp = args.truth + ".done.tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.rename(tmp, args.truth + ".done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
