"""subinterp: one thread of the main interpreter burns in main_busy(); the main thread
enters a subinterpreter and burns there in subinterp_busy(), the way mod_wsgi or a
Py_NewInterpreter embedder runs code. --config own gives the subinterpreter its own
GIL (3.12+), --config legacy shares the main one (the only kind 3.11 has).

Truth: threads.main / threads.sub (native thread id), stacks main_busy /
subinterp_busy (the subinterpreter's frames only: its thread state is a separate one,
whose frame chain starts at the string run_string() executes), lines *_burn, and
"gil": "own" or "shared" as the subinterpreter was configured. With --sub-seconds
the main thread leaves the subinterpreter early and burns in after_sub() (line
after_burn), the subinterpreter and its thread state still in place.
"""

import json
import os
import sys
import threading
import time

from pbp_common import burn_line, capture_stack

# What the subinterpreter runs: its <module> frame is this string's.
SUB_CODE = """\
import sys
sys.path.insert(0, {wl_dir!r})
import subinterp
subinterp.sub_main({report!r}, {deadline!r})
"""

RUNNING = True

# Both burn loops let go of the GIL now and then: where interpreters share one GIL, a
# thread waiting for it asks only its own interpreter's threads to drop it (3.11), so
# a loop that never blocks would starve the other interpreter.


def subinterp_busy(report, deadline):
    line = burn_line(subinterp_busy, "sub")
    info = {"tid": threading.get_native_id(), "stack": capture_stack(line)}
    tmp = report + ".tmp"
    with open(tmp, "w") as f:
        json.dump(info, f)
    os.rename(tmp, report)
    i = 0
    while time.monotonic() < deadline: i += 1; i % 512 or time.sleep(1e-4)  # BURN:sub
    return i


def sub_main(report, deadline):
    """Runs inside the subinterpreter; time.monotonic() is one clock for all of them."""
    subinterp_busy(report, deadline)


def main_busy(ready, box):
    box["tid"] = threading.get_native_id()
    box["stack"] = capture_stack(burn_line(main_busy, "main"))
    ready.set()
    i = 0
    while RUNNING: i += 1; i % 512 or time.sleep(1e-4)  # BURN:main
    return i


def after_sub(deadline):
    """The main thread, back from the subinterpreter, which is still there."""
    i = 0
    while time.monotonic() < deadline: i += 1; i % 512 or time.sleep(1e-4)  # BURN:after
    return i


def create(config):
    """A subinterpreter with the given config: (run(code), destroy(), gil kind)."""
    if sys.version_info >= (3, 13):
        import _interpreters as xi
        iid = xi.create("isolated" if config == "own" else "legacy")
        gil = "own" if xi.get_config(iid).gil == "own" else "shared"
    elif sys.version_info >= (3, 12):
        import _xxsubinterpreters as xi
        iid = xi.create(isolated=(config == "own"))
        gil = "own" if config == "own" else "shared"   # 3.12 cannot tell; as asked
    elif config == "own":
        raise SystemExit("3.11 subinterpreters share the main GIL")
    else:
        import _xxsubinterpreters as xi
        iid = xi.create()
        gil = "shared"
    return (lambda code: xi.run_string(iid, code)), (lambda: xi.destroy(iid)), gil


def main():
    global RUNNING
    from pbp_common import Truth, parse_args

    def extra(p):
        p.add_argument("--config", choices=["own", "legacy"], default="legacy")
        p.add_argument("--sub-seconds", type=float, default=None,
                       help="leave the subinterpreter after this long, burn in "
                            "after_sub() for the rest")

    args = parse_args(extra)
    t = Truth(args.truth)
    deadline = time.monotonic() + args.seconds
    sub_deadline = min(deadline, time.monotonic() + (args.sub_seconds or args.seconds))
    wl_dir = os.path.dirname(os.path.abspath(__file__))
    report = (args.truth or "/tmp/subinterp") + ".sub.%d" % os.getpid()

    run, destroy, gil = create(args.config)
    box = {}
    ready = threading.Event()
    busy = threading.Thread(target=main_busy, args=(ready, box), name="main_busy",
                            daemon=True)
    busy.start()

    def witness():
        while not os.path.exists(report) or not ready.is_set():
            time.sleep(0.01)
        with open(report) as f:
            info = json.load(f)
        os.unlink(report)
        t["gil"] = gil
        t["threads"] = {"main": box["tid"], "sub": info["tid"]}
        t.data["stacks"]["main_busy"] = box["stack"]
        t.data["stacks"]["subinterp_busy"] = info["stack"]
        t.line("main_burn", box["stack"][-1]["line"])
        t.line("sub_burn", info["stack"][-1]["line"])
        t.line("after_burn", burn_line(after_sub, "after"))
        t.write()

    threading.Thread(target=witness, name="witness", daemon=True).start()
    # The thread that created the subinterpreter runs it: 3.11/3.12's run_string()
    # borrows the thread state Py_NewInterpreter() made for the creating thread, so
    # on any other thread that state would name the wrong native thread id.
    run(SUB_CODE.format(wl_dir=wl_dir, report=report, deadline=sub_deadline))
    after_sub(deadline)
    destroy()
    RUNNING = False
    busy.join()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
