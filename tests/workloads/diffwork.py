"""diffwork: a fixed amount of work, the same on every run, for `pybpfprof diff`:
--rounds rounds, each calling three fast functions and slow_me() with fixed iteration
counts, then exiting. --slow doubles slow_me()'s iterations and nothing else, so that
a diff of a run with --slow against one without must find slow_me() and its callers
grown, and every other function as it was. Truth: each burn's stack (written once, at
the end), the iterations each function did and whether it ran --slow.

--calibrate SECONDS prints the rounds whose work without --slow takes that much CPU
time here, and exits: the diff's power grows with the samples, so a run of fixed
rounds is as good a test on a slow machine as it is too weak a one on a fast one."""

import sys
import time

from pbp_common import Truth, burn_line, parse_args

ROUNDS = 100          # the default, and the fewest --calibrate answers
N_FAST = 80_000        # each fast function's iterations per round
N_SLOW = 100_000       # slow_me's, doubled by --slow: under half the work either way
T = None


def fast_a(n):
    i = 0
    while i < n: i += 1  # BURN:fast_a
    return i


def fast_b(n):
    i = 0
    while i < n: i += 1  # BURN:fast_b
    return i


def fast_c(n):
    i = 0
    while i < n: i += 1  # BURN:fast_c
    return i


def slow_me(n):
    i = 0
    while i < n: i += 1  # BURN:slow_me
    return i


BURNS = {f.__name__: (f, burn_line(f, f.__name__)) for f in (fast_a, fast_b, fast_c, slow_me)}


def one_round(n_slow):
    fast_a(N_FAST)
    fast_b(N_FAST)
    slow_me(n_slow)
    fast_c(N_FAST)


def calibrate(seconds):
    rounds, start = 0, time.process_time()
    while (spent := time.process_time() - start) < min(seconds / 5, 0.3) or rounds < 3:
        one_round(N_SLOW)
        rounds += 1
    return max(ROUNDS, round(rounds * seconds / spent))


def options(p):
    p.add_argument("--slow", action="store_true")
    p.add_argument("--rounds", type=int, default=ROUNDS)
    p.add_argument("--calibrate", type=float, metavar="SECONDS")


def main():
    global T
    args = parse_args(options)
    if args.calibrate:
        print(calibrate(args.calibrate))
        return 0
    T = Truth(args.truth)
    n_slow = N_SLOW * (2 if args.slow else 1)
    for _ in range(args.rounds):
        one_round(n_slow)
    T["slow"] = args.slow
    T["iterations"] = {name: args.rounds * (n_slow if name == "slow_me" else N_FAST)
                       for name in BURNS}
    T["callers"] = ["one_round", "main", "<module>"]
    for name, (_, line) in BURNS.items():
        T.line(name, line)
    T.write()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
