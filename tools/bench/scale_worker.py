# SPDX-License-Identifier: GPL-2.0-only
"""One process of the system-wide scale benchmark: --threads threads, --busy of them
burning CPU (--duty of the time) under a 20-frame stack, the rest asleep, for
--seconds, or with --seconds 0 until its standard input ends. It prints {"ready": PID}
once its threads run and, at exit, {"pid", "cpu", "wall"}, so that the harness can
set the samples a profiler took of it against the CPU it used."""
import argparse
import json
import os
import sys
import threading
import time


STOP = threading.Event()


def burn(deadline, duty):
    """Busy for duty of every 20 ms period until deadline or STOP."""
    x = 1
    period = 0.02
    while not STOP.is_set():
        start = time.monotonic()
        if start >= deadline:
            return x
        while time.monotonic() - start < period * duty:
            for _ in range(200):
                x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        if duty < 1.0:
            time.sleep(max(0.0, period - (time.monotonic() - start)))


def nest(k, deadline, duty):
    if k > 1:
        return nest(k - 1, deadline, duty)
    return burn(deadline, duty)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=10)
    p.add_argument("--busy", type=int, default=2)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--duty", type=float, default=1.0, help="busy share of each busy thread")
    a = p.parse_args()
    t0 = time.monotonic()
    deadline = t0 + a.seconds if a.seconds > 0 else float("inf")
    threads = []
    # The main thread is one of --threads; it only waits.
    for k in range(a.threads - 1):
        if k < a.busy:
            t = threading.Thread(target=nest, args=(20, deadline, a.duty))
        else:
            t = threading.Thread(target=STOP.wait, args=(a.seconds or None,))
        t.start()
        threads.append(t)
    print(json.dumps({"ready": os.getpid()}), flush=True)
    if a.seconds > 0:
        time.sleep(a.seconds)
    else:
        sys.stdin.read()
    STOP.set()
    for t in threads:
        t.join()
    print(json.dumps({"pid": os.getpid(), "cpu": time.process_time(),
                      "wall": time.monotonic() - t0}), flush=True)


main()
