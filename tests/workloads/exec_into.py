"""exec_into: burns in before_exec() until the file --go exists and then --burn seconds
more (at most 60 s in all), then replaces itself with
os.execv(): with --then sleep, /bin/sleep (not a Python; it sleeps --seconds); with
--then python, this script again under the same interpreter, which burns in
after_exec() until --seconds have passed since the first start. Truth: the stack of
before_exec(), written before the exec (the PID stays the same)."""

import os
import sys
import time

from pbp_common import Truth, burn_line, parse_args

T = None


def before_exec(go, burn):
    i, until = 0, time.monotonic() + 60
    while time.monotonic() < until:
        i += 1  # BURN:before
        if i % 10000 == 0 and os.path.exists(go):
            until = min(until, time.monotonic() + burn)
    return i


def after_exec(until):
    i = 0
    while time.monotonic() < until: i += 1  # BURN:after
    return i


LINE_BEFORE = burn_line(before_exec, "before")
LINE_AFTER = burn_line(after_exec, "after")


def main():
    global T

    def more(p):
        p.add_argument("--then", choices=["sleep", "python"], required=True)
        p.add_argument("--burn", type=float, default=1.0)
        p.add_argument("--go", default="")
        p.add_argument("--after", type=float, default=0.0,
                       help="set after the exec: monotonic time to burn until")

    args = parse_args(more)
    if args.after:
        after_exec(args.after)
        return 0
    T = Truth(args.truth)
    T.line("before", LINE_BEFORE)
    T.line("after", LINE_AFTER)
    T.write()
    start = time.monotonic()
    before_exec(args.go, args.burn)
    sys.stdout.flush()
    if args.then == "sleep":
        os.execv("/bin/sleep", ["sleep", str(args.seconds)])
    end = time.monotonic() + args.seconds
    os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), "--then", "python",
                              "--after", repr(end), "--seconds", str(args.seconds)])


if __name__ == "__main__":
    sys.exit(main())
