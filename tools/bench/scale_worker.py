# SPDX-License-Identifier: GPL-2.0-only
"""One process of the system-wide scale benchmark: --threads threads, --busy of them
burning CPU (--duty of the time) under a 20-frame stack, the rest asleep, for
--seconds. At exit it prints {"pid", "cpu", "wall"} so that the harness can set the
samples a profiler took of it against the CPU it used."""
import argparse
import json
import os
import threading
import time


def burn(deadline, duty):
    """Busy for duty of every 20 ms period until deadline."""
    x = 1
    period = 0.02
    while True:
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
    deadline = t0 + a.seconds
    stop = threading.Event()
    threads = []
    for k in range(a.threads - 1):
        if k < a.busy - 1:
            t = threading.Thread(target=nest, args=(20, deadline, a.duty))
        else:
            t = threading.Thread(target=stop.wait, args=(a.seconds,))
        t.start()
        threads.append(t)
    if a.busy > 0:
        nest(20, deadline, a.duty)
    else:
        time.sleep(a.seconds)
    stop.set()
    for t in threads:
        t.join()
    print(json.dumps({"pid": os.getpid(), "cpu": time.process_time(),
                      "wall": time.monotonic() - t0}), flush=True)


main()
