"""named_threads: six threads that Python names, all burning CPU: the main thread, two
threading.Threads named by the program (one longer than the kernel's 15 bytes, one not
ASCII), an instance of a Thread subclass, and two ThreadPoolExecutor workers, named by
the pool. Truth: each thread's native id and its name as threading.current_thread()
gives it."""

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from pbp_common import Truth, deadline_after, parse_args

NTHREADS = 6
RUNNING = True
T = None
LOCK = threading.Lock()
ALL_READY = threading.Event()


def register():
    with LOCK:
        T.data["threads"][str(threading.get_native_id())] = threading.current_thread().name
        if len(T.data["threads"]) == NTHREADS:
            ALL_READY.set()


def burn():
    register()
    i = 0
    while RUNNING:
        i += 1
    return i


class Worker(threading.Thread):
    def run(self):
        burn()


def main():
    global T, RUNNING
    args = parse_args()
    T = Truth(args.truth)
    T["threads"] = {}
    register()
    threads = [threading.Thread(target=burn, name="request-handler-for-tenant-42"),
               threading.Thread(target=burn, name="gärtner-ß-線程"),
               Worker(name="a-thread-subclass")]
    for t in threads:
        t.start()
    # The first worker never becomes idle, so the second task gets a second worker.
    pool = ThreadPoolExecutor(max_workers=2)
    for _ in range(2):
        pool.submit(burn)
    if not ALL_READY.wait(60):
        sys.exit("the threads did not start")
    T.write()
    deadline = deadline_after(args.seconds)
    while time.monotonic() < deadline:
        pass
    RUNNING = False
    for t in threads:
        t.join()
    pool.shutdown()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
