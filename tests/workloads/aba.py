"""aba: one thread (or --threads N threads) alternates rapidly between two call chains
of the same shape, a1 -> a2 -> a3 -> work and b1 -> b2 -> b3 -> work, every level
burning a little before it calls the next, so that both chains get the same CPU and a
sample can land at any depth of either chain.

The a and b functions are identical apart from their names, so their frames have the
same size and are pushed at the same data-stack addresses: a few microseconds after a
sample in a3, b3's frame sits where a3's was. A frame cache that trusts an address
(without the interpreter's frame sequence) splices one chain's parents under the
other's frames, which shows up as a stack holding both a* and b* frames.

Truth: per thread (native id), the full stack of each chain captured in work() (every
frame's line is the line of its call to the next, the leaf's is work's burn line), and
per function its first line and the lines of its code object."""

import sys
import threading
import time

from pbp_common import Truth, burn_line, capture_stack, deadline_after, parse_args

ITERS = 300        # loop iterations burned per level and call: a few microseconds
CHECK_EVERY = 64   # chain calls between two deadline checks
T = None
NTHREADS = 1
PENDING = True     # some thread still has to record a chain's truth stack
LOCK = threading.Lock()


def record_chain():
    """Record the calling work() frame's stack as its thread's truth for its chain."""
    global PENDING
    chain = sys._getframe(2).f_code.co_name[0]
    tid = str(threading.get_native_id())
    with LOCK:
        mine = T.data["threads"].setdefault(tid, {})
        if chain not in mine:
            mine[chain] = capture_stack(LINE_WORK, 2)
        if PENDING and len(T.data["threads"]) == NTHREADS and \
                all(len(v) == 2 for v in T.data["threads"].values()):
            PENDING = False
            first = T.data["threads"][min(T.data["threads"])]
            T.data["stacks"]["a"], T.data["stacks"]["b"] = first["a"], first["b"]
            T.write()


def work(n):
    if PENDING: record_chain()
    i = 0
    while i < n: i += 1  # BURN:work
    return i


def a3(n):
    i = 0
    while i < n: i += 1  # BURN:a3
    return work(n)


def a2(n):
    i = 0
    while i < n: i += 1  # BURN:a2
    return a3(n)


def a1(n):
    i = 0
    while i < n: i += 1  # BURN:a1
    return a2(n)


def b3(n):
    i = 0
    while i < n: i += 1  # BURN:b3
    return work(n)


def b2(n):
    i = 0
    while i < n: i += 1  # BURN:b2
    return b3(n)


def b1(n):
    i = 0
    while i < n: i += 1  # BURN:b1
    return b2(n)


LINE_WORK = burn_line(work, "work")
ENTRIES = (a1, b1)


def alternate(deadline, iters):
    # One call site for both chains: the parent frame is the same for a and b, only
    # the chain's own frames differ.
    k = 0
    while True:
        ENTRIES[k & 1](iters)
        k += 1
        if k % CHECK_EVERY == 0 and time.monotonic() >= deadline:
            return k


def describe(funcs):
    out = {}
    for f in funcs:
        code = f.__code__
        out[code.co_qualname] = {
            "def_line": code.co_firstlineno,
            "lines": sorted({ln for _, _, ln in code.co_lines() if ln is not None}),
        }
    return out


def main():
    global T, NTHREADS
    def extra(p):
        p.add_argument("--threads", type=int, default=0,
                       help="run the alternation in N new threads (0: in the main thread)")
        p.add_argument("--iters", type=int, default=ITERS,
                       help="loop iterations burned per level and call")

    args = parse_args(extra)
    T = Truth(args.truth)
    T["threads"] = {}
    T["chains"] = {"a": ["a1", "a2", "a3"], "b": ["b1", "b2", "b3"]}
    T["leaf"] = "work"
    T["loop"] = "alternate"
    T["functions"] = describe([a1, a2, a3, b1, b2, b3, work, alternate])
    T.line("work_burn", LINE_WORK)
    for name in ("a1", "a2", "a3", "b1", "b2", "b3"):
        T.line(f"{name}_burn", burn_line(globals()[name], name))
    deadline = deadline_after(args.seconds)
    if args.threads <= 0:
        NTHREADS = 1
        T["nthreads"] = 0
        alternate(deadline, args.iters)
    else:
        NTHREADS = args.threads
        T["nthreads"] = NTHREADS
        threads = [threading.Thread(target=alternate, args=(deadline, args.iters),
                                    name=f"aba_{k}")
                   for k in range(NTHREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
