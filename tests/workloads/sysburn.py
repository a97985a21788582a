"""sysburn: burns CPU in a function named on the command line (--name), so that many
processes profiled at once each have a hot function of their own. The function is the
one below with its code renamed: same file, same lines. --threads N adds N-1 threads
that mostly sleep, as idle-ish service processes do. --cpu burns for that much CPU
time instead of wall time, so that the burn outweighs start-up however busy the
machine is. Truth: pid, function, file, line."""

import threading
import time
import types

from pbp_common import Truth, burn_line, parse_args


CLOCK = time.monotonic


def burn(until):
    i = 0
    while CLOCK() < until: i += 1  # BURN:sys
    return i


def doze(until):
    while time.monotonic() < until:
        time.sleep(0.05)


def main():
    args = parse_args(lambda p: (p.add_argument("--name", default="burn"),
                                 p.add_argument("--threads", type=int, default=1),
                                 p.add_argument("--idle", action="store_true"),
                                 p.add_argument("--cpu", action="store_true")))
    code = burn.__code__.replace(co_name=args.name, co_qualname=args.name)
    hot = types.FunctionType(code, globals(), args.name)
    global CLOCK
    until = time.monotonic() + args.seconds
    for _ in range(args.threads - 1):
        threading.Thread(target=doze, args=(until,), daemon=True).start()
    if args.cpu:
        CLOCK = time.thread_time
        until = CLOCK() + args.seconds
    truth = Truth(args.truth)
    truth["func"] = args.name
    truth["file"] = code.co_filename
    truth["line"] = burn_line(burn, "sys")
    truth["return_line"] = max(ln for _, _, ln in code.co_lines() if ln is not None)
    truth.write()
    (doze if args.idle else hot)(until)


if __name__ == "__main__":
    main()
