"""A target with the shape of a service's profile over minutes: WORKERS threads, each
walking a random path down a tree of FUNCS generated functions in FILES generated
modules (distinct names, files and lines), then sleeping a little; thousands of
distinct stacks. Runs for SECONDS (argv[1])."""
import random
import sys
import threading
import time

FUNCS, FILES, DEPTH, WORKERS = 1200, 60, 12, 4


def make():
    funcs = {}
    for i in range(FUNCS):
        src = (f"def f_{i}(rng, depth, funcs):\n"
               f"    x = 0\n"
               f"    for k in range(200 + {i % 7} * 50):\n"
               f"        x += k * {i}\n"
               f"    if depth:\n"
               f"        funcs[rng.randrange({FUNCS})](rng, depth - 1, funcs)\n"
               f"    return x\n")
        ns = {}
        exec(compile(src, f"/srv/app/module_{i % FILES}.py", "exec"), ns)
        funcs[i] = ns[f"f_{i}"]
    return funcs


def worker(seed, until, funcs):
    rng = random.Random(seed)
    while time.monotonic() < until:
        funcs[rng.randrange(FUNCS)](rng, rng.randrange(DEPTH), funcs)
        time.sleep(0.0005)


def main():
    until = time.monotonic() + float(sys.argv[1])
    funcs = make()
    threads = [threading.Thread(target=worker, args=(i, until, funcs), name=f"worker-{i}")
               for i in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
