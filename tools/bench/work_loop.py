# SPDX-License-Identifier: GPL-2.0-only
"""A busy target for the machine-cost parts of the benchmark (tools/bench/machine_cost.py):
an arithmetic loop under a stable stack of --depth frames that counts its iterations
for a fixed window of wall time, so that two or more of them sharing CPUs can be set
against each other by the work each got done.

Protocol: the process prints {"ready": PID} and waits for a line "START END" on stdin,
two CLOCK_MONOTONIC times in seconds (the harness's time.monotonic(), which is the same
clock in every process of the host, chroot or not); it sleeps until START, loops until
END and prints {"work": iterations, "cpu": s, "wall": s, "pid": PID}, then exits.
Runs on every CPython the project supports (3.11 on the host, 3.13+ in the chroot)."""
import json
import os
import sys
import time

CHUNK = 200          # loop iterations between two looks at the clock (about 10-20 µs)


def count(end):
    now = time.monotonic
    x = 1
    chunks = 0
    while now() < end:
        for _ in range(CHUNK):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        chunks += 1
    return chunks * CHUNK


def nest(depth, end):
    if depth > 1:
        return nest(depth - 1, end)
    return count(end)


def main():
    depth = 100
    args = sys.argv[1:]
    if args[:1] == ["--depth"] and len(args) == 2:
        depth = int(args[1])
    elif args:
        sys.exit("usage: work_loop.py [--depth N]")
    sys.setrecursionlimit(depth + 1000)
    print(json.dumps({"ready": os.getpid()}), flush=True)
    start, end = (float(v) for v in sys.stdin.readline().split())
    delay = start - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    t0, c0 = time.monotonic(), time.process_time()
    # <module>, main and count make up the rest of the depth.
    work = nest(max(1, depth - 3), end)
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    print(json.dumps({"work": work, "cpu": cpu, "wall": wall, "pid": os.getpid()}),
          flush=True)


main()
