# SPDX-License-Identifier: GPL-2.0-only
"""CPU-bound pure-Python targets for the benchmark: a fixed amount of work, timed by the
process itself, so that start-up and profiler attach are excluded.

Kinds:
  mixed  calls, loops, dict and string work; every BLOCK rounds the work dives into a
         200-frame deep section and does part of its rounds there
  deep   a stable stack of --depth frames with an arithmetic loop at the bottom

--threads T splits the work over T threads that all run at once.

Protocol (the harness attaches a profiler between the two lines): the process prints
{"ready": PID} and waits for a line on stdin; then it works and prints
{"wall": s, "cpu": s, "pid": PID} and exits."""
import argparse
import json
import os
import sys
import threading
import time

DEEP_SECTION = 200   # frames of the mixed kind's deep section
BLOCK = 400          # mixed rounds between two dives
DIVE_ROUNDS = 100    # mixed rounds done at the bottom of each dive


def mix(x):
    return (x * 1103515245 + 12345) & 0x7FFFFFFF


def arith(x, k):
    for _ in range(k):
        x = mix(x)
    return x


def dict_work(d, x):
    key = x & 511
    d[key] = d.get(key, 0) + 1
    if len(d) > 256 and x & 1:
        d.pop(next(iter(d)))
    return sum(d.get(k, 0) for k in (key, key ^ 1, key ^ 2))


def string_work(x):
    parts = [format(x >> s & 0xFFF, "x") for s in (0, 8, 16)]
    s = "-".join(parts).upper()
    return len(s.split("-")) + s.count("A") + len(f"{s}:{x % 97}")


def one_round(d, x):
    x = arith(x, 8)
    x += dict_work(d, x)
    x += string_work(x)
    return x & 0x7FFFFFFF


def rounds(d, x, n):
    for _ in range(n):
        x = one_round(d, x)
    return x


def dive(depth, d, x, n):
    if depth > 1:
        return dive(depth - 1, d, x, n)
    return rounds(d, x, n)


def mixed(work):
    """work rounds in all, DIVE_ROUNDS of each BLOCK + DIVE_ROUNDS at the bottom of the
    deep section."""
    d = {}
    x = 1
    done = 0
    while done < work:
        n = min(BLOCK, work - done)
        x = rounds(d, x, n)
        done += n
        if done < work:
            n = min(DIVE_ROUNDS, work - done)
            x = dive(DEEP_SECTION, d, x, n)
            done += n
    return x


def spin(n):
    x = 1
    i = 0
    while i < n:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        i += 1
    return x


def nest(depth, n):
    if depth > 1:
        return nest(depth - 1, n)
    return spin(n)


def deep(work, depth):
    # <module>, main, run, deep and spin make up the rest of the depth.
    return nest(max(1, depth - 5), work * 100)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=("mixed", "deep"), default="mixed")
    p.add_argument("--work", type=int, required=True, help="rounds (mixed) or 100s of loop "
                   "iterations (deep)")
    p.add_argument("--depth", type=int, default=300)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    sys.setrecursionlimit(max(DEEP_SECTION, a.depth) + 1000)
    go = threading.Event()
    share = max(1, a.work // a.threads)

    def run():
        go.wait()
        if a.kind == "mixed":
            mixed(share)
        else:
            deep(share, a.depth)

    # One thread works in the main thread, so that --depth counts every frame.
    workers = [threading.Thread(target=run, name=f"busy-{k}") for k in range(a.threads)]
    if a.threads == 1:
        workers = []
    for t in workers:
        t.start()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    sys.stdin.readline()
    t0, c0 = time.perf_counter(), time.process_time()
    go.set()
    if not workers:
        run()
    for t in workers:
        t.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"wall": wall, "cpu": cpu, "pid": os.getpid()}), flush=True)


main()
