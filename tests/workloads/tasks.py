"""tasks: an asyncio service at rest, for dump --async. On one event loop: 'parent'
awaits a gather of 'child-0' and 'child-1'; 'waiter' awaits the task 'target'; 'group'
runs a TaskGroup of 'tg-0' and 'tg-1', each asleep under asyncio.timeout; 'short-1'
finished and was replaced by 'short-2'. Every task is then suspended on a known line,
and with --hog the main task (named 'main') burns CPU without awaiting, so it is the
running task; with --flip it does so on two lines of its own in turn, a few hundred
microseconds each; without either, main sleeps. With --threads, a second thread runs
a loop of its own with 'other-loop' asleep on it, and a loop that no thread runs holds
'idle-loop', never started. The truth file names each task's awaiter, the line its own
coroutine waits on, the thread of each task not on the main thread's loop (truth
["threads"]: a native thread id, or null for the loop no thread runs), and the task
that must not be seen ('short-1'). With --no-loop no loop runs at all: one task,
'parked', waits on a loop that never runs."""

import asyncio
import threading

from pbp_common import Truth, burn_line, parse_args

FOREVER = 3600


async def child(i):
    await asyncio.sleep(FOREVER)  # BURN:child


async def parent(kids):
    await asyncio.gather(*kids)  # BURN:parent


async def target():
    await asyncio.sleep(FOREVER)  # BURN:target


async def waiter(t):
    await t  # BURN:waiter


async def tg_member():
    async with asyncio.timeout(FOREVER):
        await asyncio.sleep(FOREVER)  # BURN:tg_member


async def group():
    async with asyncio.TaskGroup() as tg:  # BURN:group
        tg.create_task(tg_member(), name="tg-0")
        tg.create_task(tg_member(), name="tg-1")


async def short():
    await asyncio.sleep(0)


def spin():
    x = 0
    for i in range(3000):
        x += i
    return x


def hog(seconds):
    import time
    end, x = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for i in range(1000): x += i  # BURN:hog


async def other_loop(ready, tid):
    asyncio.current_task().set_name("other-loop-main")
    tid.append(threading.get_native_id())
    ready.set()
    await asyncio.sleep(FOREVER)  # BURN:other_loop


IDLE = []


def other_loops():
    """The --threads loops: 'other-loop-main' on a thread of its own, 'idle-loop' on a
    loop that no thread runs (kept referenced, or its task would go). Their truth:
    (tasks, threads)."""
    ready, tid = threading.Event(), []
    threading.Thread(target=lambda: asyncio.run(other_loop(ready, tid)), daemon=True).start()
    ready.wait()
    idle = asyncio.new_event_loop()
    IDLE.append((idle, idle.create_task(asyncio.sleep(FOREVER), name="idle-loop")))
    return ({"other-loop-main": {"awaited_by": [],
                                 "line": burn_line(other_loop, "other_loop")},
             "idle-loop": {"awaited_by": [], "line": None}},
            {"other-loop-main": tid[0], "idle-loop": None})


async def main(args):
    asyncio.current_task().set_name("main")
    loop = asyncio.get_running_loop()
    kids = [loop.create_task(child(i), name=f"child-{i}") for i in range(2)]
    loop.create_task(parent(kids), name="parent")
    t = loop.create_task(target(), name="target")
    loop.create_task(waiter(t), name="waiter")
    loop.create_task(group(), name="group")
    await loop.create_task(short(), name="short-1")
    s2 = loop.create_task(asyncio.sleep(FOREVER), name="short-2")
    more, threads = other_loops() if args.threads else ({}, {})
    await asyncio.sleep(0.2)    # every task at its await
    truth = Truth(args.truth)
    tasks = {
        "child-0": {"awaited_by": ["parent"], "line": burn_line(child, "child")},
        "child-1": {"awaited_by": ["parent"], "line": burn_line(child, "child")},
        "parent": {"awaited_by": [], "line": burn_line(parent, "parent")},
        "target": {"awaited_by": ["waiter"], "line": burn_line(target, "target")},
        "waiter": {"awaited_by": [], "line": burn_line(waiter, "waiter")},
        "group": {"awaited_by": [], "line": burn_line(group, "group")},
        "tg-0": {"awaited_by": ["group"], "line": burn_line(tg_member, "tg_member")},
        "tg-1": {"awaited_by": ["group"], "line": burn_line(tg_member, "tg_member")},
        "short-2": {"awaited_by": [], "line": None},
        "main": {"awaited_by": [], "line": None},
    }
    truth["tasks"] = {**tasks, **more}
    truth["threads"] = threads
    truth["gone"] = ["short-1"]
    truth["hog"] = args.hog
    truth.line("hog", burn_line(hog, "hog"))
    truth.line("flip_a", burn_line(main, "flip_a"))
    truth.line("flip_b", burn_line(main, "flip_b"))
    truth.write()
    if args.hog:
        hog(args.seconds)
    elif args.flip:
        end = loop.time() + args.seconds
        while loop.time() < end:
            spin()  # BURN:flip_a
            spin()  # BURN:flip_b
    else:
        await asyncio.sleep(args.seconds)  # BURN:main
    s2.cancel()


if __name__ == "__main__":
    a = parse_args(lambda p: (p.add_argument("--hog", action="store_true"),
                              p.add_argument("--flip", action="store_true"),
                              p.add_argument("--threads", action="store_true"),
                              p.add_argument("--no-loop", action="store_true")))
    if a.no_loop:
        # asyncio imported, a task made on a loop, and no loop running.
        import time
        idle = asyncio.new_event_loop()
        parked = idle.create_task(asyncio.sleep(FOREVER), name="parked")
        Truth(a.truth).write()
        time.sleep(a.seconds)
    else:
        asyncio.run(main(a))
