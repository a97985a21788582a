"""late_threads: threads started after the profile began, each by the one before.

Until --go exists the main thread waits. Then it starts 'late-1'; each late thread
burns --cpu seconds of its own CPU time in relay(), starts the next (down to 'late-N'),
and burns as much again. A profiler must sample each of them as often as its CPU time
says: a thread it missed has none, and one it samples twice has twice as many.
Truth: each late thread's native id and CPU time (time.thread_time()), and the burn
line."""

import os
import threading
import time

from pbp_common import Truth, burn_line, parse_args

T = None
ARGS = None
LOCK = threading.Lock()


def burn(seconds):
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < seconds:
        for i in range(200): x += i  # BURN:burn


def relay(k, done):
    t0 = time.thread_time()
    burn(ARGS.cpu)
    nxt = None
    if k < ARGS.threads:
        nxt = threading.Thread(target=relay, args=(k + 1, done), name=f"late-{k + 1}")
        nxt.start()
    burn(ARGS.cpu)
    with LOCK:
        T.data["threads"][f"late-{k}"] = {"tid": threading.get_native_id(),
                                         "cpu": time.thread_time() - t0}
    if nxt:
        nxt.join()
    else:
        done.set()


def main():
    global T, ARGS

    def extra(p):
        p.add_argument("--go", required=True)
        p.add_argument("--threads", type=int, default=3)
        p.add_argument("--cpu", type=float, default=0.5)
    ARGS = parse_args(extra)
    T = Truth(ARGS.truth)
    T["threads"] = {}
    T.line("burn", burn_line(burn, "burn"))
    open(ARGS.go + ".ready", "w").close()
    while not os.path.exists(ARGS.go):
        time.sleep(0.005)
    done = threading.Event()
    first = threading.Thread(target=relay, args=(1, done), name="late-1")
    first.start()
    first.join()
    T.write()
    time.sleep(ARGS.seconds)


if __name__ == "__main__":
    main()
