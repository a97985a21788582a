"""generators: consume() iterates the generator produce(), which burns inside its body
between yields; then asyncio.run(coro_mid()) awaits coro_leaf(), which burns after
resuming from asyncio.sleep(0) (so it runs as a resumed coroutine driven by the event
loop's Task step); then deep_leaf() burns under DEEP generators nested by `yield from`,
more than a sample follows outside the chunks. The phases alternate. Truth: the
expected stacks of the first two burns, and DEEP."""

import asyncio
import sys
import time

from pbp_common import Truth, burn_line, deadline_after, parse_args

N = 60_000       # iterations per burn (about 1-3 ms)
ROUNDS = 15      # burns per phase
DEEP = 150       # generators nested above deep_leaf (PBP_FRAMES_MAX is 64)
T = None


def produce(n):
    while True:
        if "produce" not in T.data["stacks"]: T.stack("produce", LINE_PRODUCE)
        i = 0
        while i < n: i += 1  # BURN:produce
        yield i


def consume(rounds, n):
    total = 0
    for v in produce(n):
        total += v
        rounds -= 1
        if rounds <= 0:
            break
    return total


async def coro_leaf(n):
    await asyncio.sleep(0)
    if "coro_leaf" not in T.data["stacks"]: T.stack("coro_leaf", LINE_CORO_LEAF)
    i = 0
    while i < n: i += 1  # BURN:coro_leaf
    return i


async def coro_mid(rounds, n):
    total = 0
    for _ in range(rounds):
        total += await coro_leaf(n)
    return total


def deep_leaf(n):
    i = 0
    while i < n: i += 1  # BURN:deep_leaf
    yield i


def nest(depth, n):
    if depth:
        yield from nest(depth - 1, n)
    else:
        yield from deep_leaf(n)


def deep(rounds, n):
    for _ in range(rounds):
        for _ in nest(DEEP, n):
            pass


LINE_PRODUCE = burn_line(produce, "produce")
LINE_CORO_LEAF = burn_line(coro_leaf, "coro_leaf")


def main():
    global T
    args = parse_args()
    T = Truth(args.truth)
    T.line("produce_burn", LINE_PRODUCE)
    T.line("coro_leaf_burn", LINE_CORO_LEAF)
    T.data["deep"] = DEEP
    deadline = deadline_after(args.seconds)
    while time.monotonic() < deadline:
        consume(ROUNDS, N)
        asyncio.run(coro_mid(ROUNDS, N))
        deep(ROUNDS // 3, N)
        T.write()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
