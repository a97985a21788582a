"""live_mix: three threads whose stacks change every few microseconds in the ways a
running program's do and a reading from outside must keep up with. 'coros': an event
loop switching between tasks, each a chain outer -> middle -> inner of coroutines that
burns a little and yields (the coroutines' frames live in their objects, outside the
data stack). 'keys': sort_outer() sorting with a Python key function, called from C
for every element (on 3.11/3.12 every call enters a new eval loop and C frame).
'spawner': threads that start, run short_job() and end, one after another.
Truth: nothing but the names; the tests check the order of the frames they see."""

import asyncio
import sys
import threading
import time

from pbp_common import Truth, deadline_after, parse_args


def spin(n):
    i = 0
    while i < n:
        i += 1
    return i


async def inner(n):
    spin(n)
    await asyncio.sleep(0)
    return n


async def middle(n):
    total = 0
    for _ in range(20):
        total += await inner(n)
    return total


async def outer(n):
    while True:
        await middle(n)


async def coros_main(deadline):
    tasks = [asyncio.ensure_future(outer(200 + 50 * k)) for k in range(6)]
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    for t in tasks:
        t.cancel()


def coros(deadline):
    asyncio.run(coros_main(deadline))


def key_of(x):
    return (x * 7919) % 1009


def sort_outer(deadline):
    while time.monotonic() < deadline:
        sorted(range(400), key=key_of)


def short_job():
    spin(2000)


def spawner(deadline):
    while time.monotonic() < deadline:
        t = threading.Thread(target=short_job)
        t.start()
        t.join()


def main():
    args = parse_args()
    truth = Truth(args.truth)
    deadline = deadline_after(args.seconds)
    threads = [threading.Thread(target=f, args=(deadline,), name=f.__name__)
               for f in (coros, sort_outer, spawner)]
    for t in threads:
        t.start()
    truth.write()
    for t in threads:
        t.join()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
