"""churn: keeps compiling, running and freeing short-lived functions churn_NNNNNN()
(filename <churn-NNNNNN>), all the same size so a freed code object's memory is reused
by the next one. churn_N calls burn_even() when N is even and burn_odd() when N is odd.
A profiler that caches code objects by address without noticing reuse will show the
wrong name, filename or helper. Truth: both expected stack shapes (for N=0 and N=1)."""

import gc
import sys
import time

from pbp_common import Truth, burn_line, deadline_after, parse_args

N_CHURN = 80_000  # iterations per call (a few ms)
TEMPLATE = (
    "def churn_{n:06d}():\n"
    "    return {helper}(N_CHURN)\n"
)
CALL_LINE = 1 + next(i for i, s in enumerate(TEMPLATE.splitlines()) if "{helper}(" in s)
DEF_LINE = 1 + next(i for i, s in enumerate(TEMPLATE.splitlines()) if s.startswith("def "))
T = None


def burn_even(n):
    if "even" not in T.data["stacks"]: T.stack("even", LINE_EVEN)
    i = 0
    while i < n: i += 1  # BURN:burn_even
    return i


def burn_odd(n):
    if "odd" not in T.data["stacks"]: T.stack("odd", LINE_ODD)
    i = 0
    while i < n: i += 1  # BURN:burn_odd
    return i


LINE_EVEN = burn_line(burn_even, "burn_even")
LINE_ODD = burn_line(burn_odd, "burn_odd")


def churn_loop(deadline):
    n = 0
    while time.monotonic() < deadline:
        name = f"churn_{n:06d}"
        src = TEMPLATE.format(n=n, helper="burn_even" if n % 2 == 0 else "burn_odd")
        ns = {"burn_even": burn_even, "burn_odd": burn_odd, "N_CHURN": N_CHURN}
        code = compile(src, f"<churn-{n:06d}>", "exec")
        exec(code, ns)
        ns[name]()
        del ns, code
        gc.collect()
        n += 1
        if n == 2:
            T.write()
    return n


def main():
    global T
    args = parse_args()
    T = Truth(args.truth)
    T.line("burn_even", LINE_EVEN)
    T.line("burn_odd", LINE_ODD)
    T.line("churn_call", CALL_LINE)
    T.line("churn_def", DEF_LINE)
    T["name_format"] = "churn_{n:06d}"
    T["filename_format"] = "<churn-{n:06d}>"
    churn_loop(deadline_after(args.seconds))
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
