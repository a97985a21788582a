# SPDX-License-Identifier: GPL-2.0-only
"""A switch-heavy target for the benchmark: two threads hand a token back and forth
through a pair of locks --handoffs times, each handoff a futex wake and a wait; tens
of thousands a second. Same protocol as cpu_bound.py: {"ready": PID}, a line on
stdin, then the work, timed by the process itself: {"wall": s, "cpu": s, "pid": PID}."""
import argparse
import json
import os
import sys
import threading
import time


def pass_token(mine, theirs, n):
    for _ in range(n):
        mine.acquire()
        theirs.release()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--handoffs", type=int, default=200000)
    a = ap.parse_args()
    ping, pong = threading.Lock(), threading.Lock()
    ping.acquire()
    pong.acquire()
    half = a.handoffs // 2
    ts = [threading.Thread(target=pass_token, args=(ping, pong, half)),
          threading.Thread(target=pass_token, args=(pong, ping, half))]
    print(json.dumps({"ready": os.getpid()}), flush=True)
    sys.stdin.readline()
    w0, c0 = time.monotonic(), time.process_time()
    for t in ts:
        t.start()
    ping.release()
    for t in ts:
        t.join()
    print(json.dumps({"wall": time.monotonic() - w0, "cpu": time.process_time() - c0,
                      "pid": os.getpid()}), flush=True)


if __name__ == "__main__":
    main()
