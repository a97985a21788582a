"""blocked: threads still waiting when a profile ends. asleep sleeps and locked waits
for a lock the main thread holds, both from before the profiler attaches to after it
stops; late waits for the file --go, then burns CPU for half a second of wall time and
sleeps until the process is killed. The truth file holds each thread's native id and
the lines it waits on; late writes its burn's end (time.monotonic()) and the CPU time
it got (time.thread_time()) to TRUTH.late once it sleeps."""

import json
import os
import threading
import time

from pbp_common import Truth, burn_line, parse_args

LOCK = threading.Lock()


def asleep():
    time.sleep(3600)  # BURN:asleep


def locked():
    LOCK.acquire()  # BURN:locked


def late(go, out):
    while not os.path.exists(go):
        time.sleep(0.005)
    end, cpu0 = time.monotonic() + 0.5, time.thread_time()
    x = 0
    while time.monotonic() < end:
        for i in range(1000): x += i  # BURN:late_burn
    with open(out + ".tmp", "w") as f:
        json.dump({"burn_end": time.monotonic(), "burn_cpu": time.thread_time() - cpu0}, f)
    os.rename(out + ".tmp", out)
    time.sleep(3600)  # BURN:late_sleep


def main():
    args = parse_args(lambda p: p.add_argument("--go", required=True))
    truth = Truth(args.truth)
    LOCK.acquire()
    threads = {f.__name__: threading.Thread(target=f, args=a, name=f.__name__, daemon=True)
               for f, a in ((asleep, ()), (locked, ()), (late, (args.go, args.truth + ".late")))}
    for t in threads.values():
        t.start()
    time.sleep(0.2)  # every thread in its wait
    truth["tids"] = {name: t.native_id for name, t in threads.items()}
    truth.line("asleep", burn_line(asleep, "asleep"))
    truth.line("locked", burn_line(locked, "locked"))
    truth.line("late_burn", burn_line(late, "late_burn"))
    truth.line("late_sleep", burn_line(late, "late_sleep"))
    truth.write()
    time.sleep(args.seconds)


if __name__ == "__main__":
    main()
