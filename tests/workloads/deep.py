"""deep: recurse(DEPTH) -> ... -> recurse(0) -> leaf(), which burns.
Truth: the full expected stack (DEPTH+1 recurse frames) and the recurse frame count."""

import sys
import time

from pbp_common import Truth, burn_line, deadline_after, parse_args

DEPTH = 600
T = None


def leaf(deadline):
    me = sys._getframe()
    f, n = me.f_back, 0
    while f is not None:
        n += f.f_code is recurse.__code__
        f = f.f_back
    T["recurse_frames"] = n
    T.stack("leaf", LINE_LEAF)
    T.write()
    while time.monotonic() < deadline: pass  # BURN:leaf
    return n


LINE_LEAF = burn_line(leaf, "leaf")


def recurse(n, deadline):
    if n == 0:
        return leaf(deadline)
    return recurse(n - 1, deadline)


def main():
    global T
    args = parse_args()
    T = Truth(args.truth)
    T["depth_arg"] = DEPTH
    T.line("leaf_burn", LINE_LEAF)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), DEPTH + 200))
    recurse(DEPTH, deadline_after(args.seconds))
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
