"""pingpong: two threads hand a token back and forth through a pair of locks, as fast
as they can: tens of thousands of short waits a second, each a futex. Truth: the
pid, and the line each thread waits on."""

import sys
import threading

from pbp_common import Truth, burn_line, deadline_after, parse_args

PING = threading.Lock()
PONG = threading.Lock()


def pass_token(mine, theirs, deadline_box):
    import time
    n = 0
    while time.monotonic() < deadline_box[0]:
        mine.acquire()  # BURN:wait
        theirs.release()
        n += 1
    try:
        theirs.release()    # the other may still wait for its last turn
    except RuntimeError:
        pass
    return n


LINE_WAIT = burn_line(pass_token, "wait")


def main():
    args = parse_args()
    t = Truth(args.truth)
    t.line("wait", LINE_WAIT)
    box = [deadline_after(args.seconds)]
    PING.acquire()
    PONG.acquire()
    a = threading.Thread(target=pass_token, args=(PING, PONG, box))
    b = threading.Thread(target=pass_token, args=(PONG, PING, box))
    a.start()
    b.start()
    PING.release()      # the first move
    t.write()
    a.join()
    b.join()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
