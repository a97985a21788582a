"""delivery: a single thread that only burns CPU (no syscalls: time.monotonic is vDSO).
Truth: the expected stack of the burn."""

import sys
import time

from pbp_common import Truth, burn_line, deadline_after, parse_args

T = None


def spin(deadline):
    T.stack("spin", LINE_SPIN)
    T.write()
    while time.monotonic() < deadline: pass  # BURN:spin


LINE_SPIN = burn_line(spin, "spin")


def main():
    global T
    args = parse_args()
    T = Truth(args.truth)
    T.line("spin_burn", LINE_SPIN)
    spin(deadline_after(args.seconds))
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
