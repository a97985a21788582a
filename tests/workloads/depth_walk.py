"""depth_walk: one thread whose stack depth never stops changing. main() calls
walk(1), which recurses; a shared target depth jumps pseudo-randomly within
[MIN_DEPTH, MAX_DEPTH]. A walk frame deeper than the target returns, one shallower
calls walk(depth + 1), and the frame at the target burns a little and picks the next
target. So the stack keeps climbing and falling by up to ~400 frames, across several
data-stack chunks that are freed and allocated again as it goes, and every frame of
the recursion is either the innermost one or waiting on the single recursive call.

Once the first target is reached the stack never has fewer than MIN_DEPTH walk frames
until the deadline. Truth: the stack at the first target (root first), walk's
recursive call line, its code lines and the depth bounds."""

import sys
import time

from pbp_common import Truth, burn_line, deadline_after, parse_args

MIN_DEPTH = 10
MAX_DEPTH = 400
ITERS = 200        # loop iterations burned at each target
T = None
TARGET = 0
SEED = 12345
DEADLINE = 0.0
WRITTEN = False


def walk(depth):
    global TARGET, SEED, WRITTEN
    while True:
        if TARGET > depth: walk(depth + 1)
        if TARGET < depth: return depth
        if not WRITTEN: record_truth(depth)
        i = 0
        while i < ITERS: i += 1  # BURN:walk
        # Next target inline (no helper call: only walk frames may be on the stack).
        SEED = (SEED * 1103515245 + 12345) & 0x7FFFFFFF
        TARGET = MIN_DEPTH + (SEED >> 8) % (MAX_DEPTH - MIN_DEPTH + 1)
        if time.monotonic() >= DEADLINE: TARGET = 0


LINE_WALK = burn_line(walk, "walk")


def record_truth(depth):
    global WRITTEN
    WRITTEN = True
    T["first_target"] = depth
    # The parent walk frame is waiting on the recursive call: its line is that call's.
    T.line("recurse", sys._getframe(2).f_lineno)
    T.stack("walk", LINE_WALK, depth=2)
    T.write()


def main():
    global T, TARGET, DEADLINE
    args = parse_args()
    T = Truth(args.truth)
    code = walk.__code__
    T["function"] = code.co_qualname
    T["def_line"] = code.co_firstlineno
    T["walk_lines"] = sorted({ln for _, _, ln in code.co_lines() if ln is not None})
    T["min_depth"] = MIN_DEPTH
    T["max_depth"] = MAX_DEPTH
    T.line("walk_burn", LINE_WALK)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), MAX_DEPTH + 200))
    DEADLINE = deadline_after(args.seconds)
    TARGET = MAX_DEPTH
    walk(1)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
