"""async_burn: an asyncio service that burns known CPU shares in named tasks. 'parent'
awaits a gather of 'worker-a' and 'worker-b'; 'waiter' awaits the task 'lonely'; each
of the three burners burns in its own coroutine for its quantum of thread CPU time
(a: 4 ms, b: 2 ms, lonely: 2 ms) and then yields to the loop with asyncio.sleep(0);
'sleeper' sleeps. Every so often a short task 'blip-N' is made, runs one quantum and
ends, replaced by the next (the names of ended tasks must not stay on later samples).

Until --go exists the burners wait. Then each counts the CPU it burns until --seconds
have passed or, with --cpu, until the burners together have burned that much CPU (a
loaded machine can give the process a few per cent of a CPU). Then the truth file gets each burner's CPU time (time.thread_time() deltas around its
bursts), its coroutine's burn line and its chain of tasks, from 'main' (which awaits
'parent' and 'waiter') down to itself."""

import asyncio
import os
import time

from pbp_common import Truth, burn_line, parse_args

QUANTUM = {"worker-a": 0.004, "worker-b": 0.002, "lonely": 0.002}
CPU = {}
CPU_GOAL = [None]       # --cpu: the burners' CPU seconds that end the burn


def burning(stop):
    if time.monotonic() >= stop:
        return False
    goal = CPU_GOAL[0]
    return goal is None or sum(CPU.get(k, 0.0) for k in QUANTUM) < goal


def burn(name, seconds):
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < seconds:
        for i in range(200): x += i  # BURN:burn
    CPU[name] = CPU.get(name, 0.0) + time.thread_time() - t0


async def crunch_a(stop):
    while burning(stop):
        burn("worker-a", QUANTUM["worker-a"])  # BURN:crunch_a
        await asyncio.sleep(0)


async def crunch_b(stop):
    while burning(stop):
        burn("worker-b", QUANTUM["worker-b"])  # BURN:crunch_b
        await asyncio.sleep(0)


async def crunch_c(stop):
    await asyncio.sleep(0)      # its waiter awaits it before it burns
    while burning(stop):
        burn("lonely", QUANTUM["lonely"])  # BURN:crunch_c
        await asyncio.sleep(0)


async def parent(stop):
    loop = asyncio.get_running_loop()
    a = loop.create_task(crunch_a(stop), name="worker-a")
    b = loop.create_task(crunch_b(stop), name="worker-b")
    await asyncio.gather(a, b)  # BURN:parent


async def waiter(t):
    await t  # BURN:waiter


async def blip(stop):
    burn("blips", 0.001)  # BURN:blip


async def blipper(stop):
    n = 0
    while burning(stop):
        n += 1
        await asyncio.get_running_loop().create_task(blip(stop), name=f"blip-{n}")
        await asyncio.sleep(0.05)


async def main(args):
    asyncio.current_task().set_name("main")
    # Ready: whoever holds --go may now start a profile that will see the burns.
    open(args.go + ".ready", "w").close()
    while not os.path.exists(args.go):
        await asyncio.sleep(0.005)
    stop = time.monotonic() + args.seconds
    loop = asyncio.get_running_loop()
    p = loop.create_task(parent(stop), name="parent")
    lonely = loop.create_task(crunch_c(stop), name="lonely")
    w = loop.create_task(waiter(lonely), name="waiter")
    s = loop.create_task(asyncio.sleep(args.seconds + 5), name="sleeper")
    bl = loop.create_task(blipper(stop), name="blipper")
    await asyncio.gather(p, w, bl)
    s.cancel()
    truth = Truth(args.truth)
    truth["cpu"] = CPU
    truth["tasks"] = {
        "worker-a": {"chain": ["main", "parent", "worker-a"], "coro": "crunch_a",
                     "line": burn_line(crunch_a, "crunch_a")},
        "worker-b": {"chain": ["main", "parent", "worker-b"], "coro": "crunch_b",
                     "line": burn_line(crunch_b, "crunch_b")},
        "lonely": {"chain": ["main", "waiter", "lonely"], "coro": "crunch_c",
                   "line": burn_line(crunch_c, "crunch_c")},
    }
    truth.line("parent", burn_line(parent, "parent"))
    truth.line("waiter", burn_line(waiter, "waiter"))
    truth.line("burn", burn_line(burn, "burn"))
    truth.write()
    await asyncio.sleep(3600)


if __name__ == "__main__":
    def extra(p):
        p.add_argument("--go", required=True)
        p.add_argument("--cpu", type=float, help="end the burn once the burners used this")
    a = parse_args(extra)
    CPU_GOAL[0] = a.cpu
    asyncio.run(main(a))
