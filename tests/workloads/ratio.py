"""ratio: parent() alternately calls fa() and fb(); fa burns 3x the iterations of fb,
so fa gets 75% of the CPU time spent in fa+fb. Truth: expected stacks of both burns,
and the time each has spent so far (spent_ns, published every PUBLISH_NS): a test
compares the profile with what the burns measured over its window, not with the share
their iteration counts promise.

--clock says which time: "cpu" (the default) the thread's CPU time, what BPF mode
samples; "wall" the time from a burn's start to its end, waits for a CPU included,
which is what sampling from user space sees of a runnable thread
(docs/live-sampling.md). The wall clock is read without a system call on purpose: a
read of the thread's CPU clock brings the scheduler's account of the thread up to
date, which preempts it there if its slice has run out, and a reader that finds the
thread preempted would see those waits at the boundaries between the burns, where no
other program puts them."""

import sys
import time

from pbp_common import Truth, burn_line, deadline_after, parse_args

N_B = 150_000          # iterations of fb per call (a few ms)
N_A = 3 * N_B          # fa: three times as many -> 3:1 CPU time
PUBLISH_NS = 200_000_000
CLOCKS = {"cpu": time.thread_time_ns, "wall": time.perf_counter_ns}
T = None


def fa(n):
    if "fa" not in T.data["stacks"]: T.stack("fa", LINE_FA)
    i = 0
    while i < n: i += 1  # BURN:fa
    return i


def fb(n):
    if "fb" not in T.data["stacks"]: T.stack("fb", LINE_FB)
    i = 0
    while i < n: i += 1  # BURN:fb
    return i


LINE_FA = burn_line(fa, "fa")
LINE_FB = burn_line(fb, "fb")


def parent(deadline, clock):
    spent = T["spent_ns"] = {"fa": 0, "fb": 0}
    published = None
    while time.monotonic() < deadline:
        t0 = clock()
        fa(N_A)
        t1 = clock()
        fb(N_B)
        t2 = clock()
        spent["fa"] += t1 - t0
        spent["fb"] += t2 - t1
        now = time.monotonic_ns()
        if published is None or now - published >= PUBLISH_NS:
            T.rewrite()
            published = now


def main():
    global T
    args = parse_args(lambda p: p.add_argument("--clock", choices=CLOCKS, default="cpu"))
    T = Truth(args.truth)
    T["expected_fa_share"] = N_A / (N_A + N_B)
    T["spent_clock"] = args.clock
    T.line("fa_burn", LINE_FA)
    T.line("fb_burn", LINE_FB)
    parent(deadline_after(args.seconds), CLOCKS[args.clock])
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
