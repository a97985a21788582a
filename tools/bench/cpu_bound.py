"""Fixed CPU-bound pure-Python work for the overhead benchmark: prints the seconds the
work took, measured inside the process, so start-up and profiler attach are excluded.
With --depth N the work runs under N extra frames of recursion."""
import sys
import time


def step(x):
    return (x * 1103515245 + 12345) & 0x7fffffff


def work(n):
    x = 1
    for _ in range(n):
        x = step(x)
    return x


def nest(depth, n):
    if depth == 0:
        return work(n)
    return nest(depth - 1, n)


def main():
    n = int(sys.argv[1])
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    sys.setrecursionlimit(depth + 1000)
    t0 = time.perf_counter()
    nest(depth, n)
    print(f"{time.perf_counter() - t0:.6f}")


main()
