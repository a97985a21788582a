"""thread_exit: short-lived threads whose freed thread states are watched for writes.

Round after round, --batch threads each recurse to a known depth (outer -> step x DEPTH
-> spin), burn CPU for --life seconds there and exit. Once they are joined, their
PyThreadState blocks are free; the main thread then takes each block back with
malloc() of the same size (up to a bounded number of tries), copies what it holds (the
dead thread state's bytes, still there but for the allocator's first words), holds it
for --hold seconds and checks nothing changed it. A profiler that writes into a thread
state after its thread has gone (3.15's last_profiled_frame) changes it. The block is
left as the thread state was, so a profiler still decoding that thread's records reads
what it would have read before the block was taken back. Ground truth: the expected stack of a burning thread; at the end, the counts
of blocks taken back and of blocks found changed, in a second JSON (--result).

Needs ctypes (PyThreadState_Get, malloc_usable_size: glibc).
"""

import ctypes
import json
import os
import sys
import threading
import time

from pbp_common import Truth, burn_line, deadline_after, parse_args

DEPTH = 12
MAX_TRIES = 256

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.restype = None
libc.free.argtypes = [ctypes.c_void_p]
libc.malloc_usable_size.restype = ctypes.c_size_t
libc.malloc_usable_size.argtypes = [ctypes.c_void_p]
ts_get = ctypes.pythonapi.PyThreadState_Get
ts_get.restype = ctypes.c_void_p
ts_get.argtypes = []
T = None


def spin(until):
    if not T.written:
        T.stack("spin", LINE_SPIN)
        T.write()
    i = 0
    while time.monotonic() < until: i += 1  # BURN:spin
    return i


LINE_SPIN = burn_line(spin, "spin")


def step(n, box, until):
    if n:
        return step(n - 1, box, until)
    ts = ts_get()
    box.append((ts, libc.malloc_usable_size(ts)))
    return spin(until)


def outer(box, life):
    step(DEPTH, box, time.monotonic() + life)


def take_back(addr, size):
    """malloc() blocks of @size until one is @addr; frees the others. 0 if none."""
    got, found = [], 0
    for _ in range(MAX_TRIES):
        p = libc.malloc(size)
        if not p:
            break
        if p == addr:
            found = p
            break
        got.append(p)
    for p in got:
        libc.free(p)
    return found


def main():
    global T

    def more(p):
        p.add_argument("--batch", type=int, default=4)
        p.add_argument("--life", type=float, default=0.05)
        p.add_argument("--hold", type=float, default=1.0)
        p.add_argument("--result", required=True)

    args = parse_args(more)
    T = Truth(args.truth)
    T.line("spin", LINE_SPIN)
    T["depth"] = DEPTH
    deadline = deadline_after(args.seconds)
    threads = reclaimed = changed = 0
    offsets = set()
    while time.monotonic() < deadline:
        boxes = [[] for _ in range(args.batch)]
        ths = [threading.Thread(target=outer, args=(b, args.life), name=f"short-{i}")
               for i, b in enumerate(boxes)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        threads += len(ths)
        held = []
        for b in boxes:
            if not b:
                continue
            addr, size = b[0]
            p = take_back(addr, size)
            if p:
                held.append((p, size, ctypes.string_at(p, size)))
        time.sleep(args.hold)
        for p, size, before in held:
            reclaimed += 1
            after = ctypes.string_at(p, size)
            if after != before:
                changed += 1
                offsets.update(i for i in range(size) if after[i] != before[i])
            libc.free(p)
    tmp = args.result + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"threads": threads, "reclaimed": reclaimed, "changed": changed,
                   "changed_offsets": sorted(offsets)[:64]}, f)
    os.rename(tmp, args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
