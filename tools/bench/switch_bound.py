# SPDX-License-Identifier: GPL-2.0-only
"""A switch-heavy target for the benchmark: two threads hand a token back and forth
--handoffs times. --via locks: through a pair of locks, each handoff a futex wake and
a wait and nothing else, hundreds of thousands of switches a second. --via queue:
through two queue.Queue, the receiver doing --work iterations of arithmetic per
handoff, as two threads of a service passing requests would: tens of thousands of
switches a second. Same protocol as cpu_bound.py: {"ready": PID}, a line on stdin,
then the work, timed by the process itself: {"wall": s, "cpu": s, "pid": PID,
"switches": context switches of the process over the work}."""
import argparse
import json
import os
import queue
import resource
import sys
import threading
import time


def pass_token(mine, theirs, n):
    for _ in range(n):
        mine.acquire()
        theirs.release()


def serve(inbox, outbox, n, work):
    for _ in range(n):
        x = inbox.get()
        s = 0
        for i in range(work):
            s += i * i
        outbox.put(x + 1)


def switches():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_nvcsw + ru.ru_nivcsw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--handoffs", type=int, default=200000)
    ap.add_argument("--via", choices=("locks", "queue"), default="locks")
    ap.add_argument("--work", type=int, default=0)
    a = ap.parse_args()
    half = a.handoffs // 2
    if a.via == "locks":
        ping, pong = threading.Lock(), threading.Lock()
        ping.acquire()
        pong.acquire()
        ts = [threading.Thread(target=pass_token, args=(ping, pong, half)),
              threading.Thread(target=pass_token, args=(pong, ping, half))]
        first = ping.release
    else:
        q1, q2 = queue.Queue(), queue.Queue()
        ts = [threading.Thread(target=serve, args=(q1, q2, half, a.work)),
              threading.Thread(target=serve, args=(q2, q1, half, a.work))]
        first = lambda: q1.put(0)  # noqa: E731
    print(json.dumps({"ready": os.getpid()}), flush=True)
    sys.stdin.readline()
    w0, c0, s0 = time.monotonic(), time.process_time(), switches()
    for t in ts:
        t.start()
    first()
    for t in ts:
        t.join()
    print(json.dumps({"wall": time.monotonic() - w0, "cpu": time.process_time() - c0,
                      "switches": switches() - s0, "pid": os.getpid()}), flush=True)


if __name__ == "__main__":
    main()
