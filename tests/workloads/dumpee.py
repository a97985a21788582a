"""dumpee: three threads held still in known places, for `pybpfprof dump`.

- main thread: level_one -> Chain.level_two -> level_three, asleep in level_three;
- "sleeper": sleeper_outer -> sleeper_outer.<locals>.sleeper_inner, asleep;
- "burner": burner_loop, spinning on one line (on a CPU, holding the GIL).

Truth: each thread's native id and its full stack (root first), the innermost frame at
its sleep or burn line.
"""

import sys
import threading
import time

from pbp_common import Truth, burn_line, parse_args

T = None
ARGS = None
RUNNING = True
LOCK = threading.Lock()
SLEEPER_READY = threading.Event()
BURNER_READY = threading.Event()


def register(key, leaf_line):
    with LOCK:
        T.data["threads"][key] = threading.get_native_id()
        T.data.setdefault("names", {})[key] = threading.current_thread().name
        T.stack(key, leaf_line, depth=2)


def sleeper_outer():
    def sleeper_inner():
        register("sleeper", burn_line(sleeper_inner, "sleeper"))
        SLEEPER_READY.set()
        time.sleep(ARGS.seconds)  # BURN:sleeper

    sleeper_inner()


def burner_loop():
    register("burner", burn_line(burner_loop, "burner"))
    BURNER_READY.set()
    i = 0
    while RUNNING: i += 1  # BURN:burner
    return i


def level_three():
    register("main", burn_line(level_three, "main"))
    T.write()
    time.sleep(ARGS.seconds)  # BURN:main


class Chain:
    def level_two(self):
        level_three()


def level_one():
    Chain().level_two()


def main():
    global T, ARGS, RUNNING
    ARGS = parse_args()
    T = Truth(ARGS.truth)
    T["threads"] = {}
    threads = [threading.Thread(target=sleeper_outer, name="sleeper", daemon=True),
               threading.Thread(target=burner_loop, name="burner", daemon=True)]
    for t in threads:
        t.start()
    if not (SLEEPER_READY.wait(60) and BURNER_READY.wait(60)):
        raise SystemExit("threads did not start")
    level_one()
    RUNNING = False
    return ARGS.exit_code


if __name__ == "__main__":
    sys.exit(main())
