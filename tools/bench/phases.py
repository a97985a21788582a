# SPDX-License-Identifier: GPL-2.0-only
"""A busy target that keeps time in its function names, for part 12 (time to first
sample): from its start it burns CPU in phase_0 for --window-ms, then in phase_1 for the
next window, and so on, so that the first phase a profile holds says when that
profiler's first sample was taken, whichever profiler it was.

It pins itself to --cpu, prints {"ready": PID, "origin": T} at once (T: time.monotonic()
when phase_0 began, CLOCK_MONOTONIC, which every process on the host shares) and runs
for --seconds, or until the file --stop appears (looked for at each new phase), then
exits: a profiler attached by PID, or one that ran it, ends with it."""
import argparse
import json
import os
import sys
import time
import types


def phase(until):
    clock = time.monotonic
    while clock() < until:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--window-ms", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--cpu", type=int, help="run on this CPU only")
    ap.add_argument("--stop", help="end once this file exists")
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    w = a.window_ms / 1000.0
    n = int(a.seconds / w) + 1
    # One function per window: the same code under each window's own name.
    code = phase.__code__
    phases = [types.FunctionType(code.replace(co_name=f"phase_{k}", co_qualname=f"phase_{k}"),
                                 phase.__globals__) for k in range(n)]
    origin = time.monotonic()
    print(json.dumps({"ready": os.getpid(), "origin": origin}), flush=True)
    sys.stdout.close()
    for k in range(n):
        if a.stop and os.path.exists(a.stop):
            break
        phases[k](origin + (k + 1) * w)


if __name__ == "__main__":
    main()
