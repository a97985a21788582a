"""evil_names: burns CPU in a function whose name and file name carry terminal control
sequences (ESC, BEL, C1 CSI), as a hostile process could. Truth: pid, the name."""

import time
import types

from pbp_common import Truth, parse_args

NAME = "evil\x1b[31m\u009b2J"
FILE = "/tmp/\x1b]0;pwned\x07.py"


def burn(until):
    while time.monotonic() < until: pass


def main():
    args = parse_args(lambda p: p.add_argument("rest", nargs="*"))
    code = burn.__code__.replace(co_name=NAME, co_qualname=NAME, co_filename=FILE)
    hot = types.FunctionType(code, globals(), NAME)
    truth = Truth(args.truth)
    truth["func"] = NAME
    truth.write()
    hot(time.monotonic() + args.seconds)


if __name__ == "__main__":
    main()
