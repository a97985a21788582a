"""threads: 8 threads, thread k runs its own function worker_k, which burns CPU.
Truth: each worker's native thread id and expected stack."""

import sys
import threading
import time

from pbp_common import Truth, burn_line, deadline_after, parse_args

NTHREADS = 8
RUNNING = True
T = None
LOCK = threading.Lock()
ALL_READY = threading.Event()
LINES = {}


def register(k):
    with LOCK:
        T.data["threads"][str(k)] = {"tid": threading.get_native_id(),
                                     "function": f"worker_{k}"}
        T.stack(f"worker_{k}", LINES[k], depth=2)
        if len(T.data["threads"]) == NTHREADS:
            ALL_READY.set()

def worker_0():
    register(0)
    i = 0
    while RUNNING: i += 1  # BURN:worker_0
    return i


def worker_1():
    register(1)
    i = 0
    while RUNNING: i += 1  # BURN:worker_1
    return i


def worker_2():
    register(2)
    i = 0
    while RUNNING: i += 1  # BURN:worker_2
    return i


def worker_3():
    register(3)
    i = 0
    while RUNNING: i += 1  # BURN:worker_3
    return i


def worker_4():
    register(4)
    i = 0
    while RUNNING: i += 1  # BURN:worker_4
    return i


def worker_5():
    register(5)
    i = 0
    while RUNNING: i += 1  # BURN:worker_5
    return i


def worker_6():
    register(6)
    i = 0
    while RUNNING: i += 1  # BURN:worker_6
    return i


def worker_7():
    register(7)
    i = 0
    while RUNNING: i += 1  # BURN:worker_7
    return i


WORKERS = [worker_0, worker_1, worker_2, worker_3, worker_4, worker_5, worker_6, worker_7]
for _k, _w in enumerate(WORKERS):
    LINES[_k] = burn_line(_w, f"worker_{_k}")


def main():
    global T, RUNNING
    args = parse_args()
    T = Truth(args.truth)
    T["threads"] = {}
    for k in range(NTHREADS):
        T.line(f"worker_{k}_burn", LINES[k])
    deadline = deadline_after(args.seconds)
    threads = [threading.Thread(target=w, name=f"worker_{k}") for k, w in enumerate(WORKERS)]
    for t in threads:
        t.start()
    if not ALL_READY.wait(60):
        raise SystemExit("threads did not start")
    T.write()
    while time.monotonic() < deadline:
        time.sleep(0.05)
    RUNNING = False
    for t in threads:
        t.join()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
