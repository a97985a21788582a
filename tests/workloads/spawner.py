"""spawner: a parent that starts two Python children, one by fork and one by exec
(subprocess with the same interpreter), each burning CPU in its own function while the
parent burns in parent_burn(). Truth: the three pids and each one's burn stack."""

import json
import os
import subprocess
import sys
import time

from pbp_common import Truth, burn_line, parse_args


def parent_burn(until):
    i = 0
    while time.monotonic() < until: i += 1  # BURN:parent
    return i


def forked_burn(until):
    i = 0
    while time.monotonic() < until: i += 1  # BURN:forked
    return i


def exec_burn(until):
    i = 0
    while time.monotonic() < until: i += 1  # BURN:exec
    return i


def run_child(kind, seconds, out):
    """In a child: note where it burns, tell the parent, then burn."""
    func = {"forked": forked_burn, "exec": exec_burn}[kind]
    info = {"pid": os.getpid(), "func": func.__name__,
            "file": func.__code__.co_filename, "line": burn_line(func, kind)}
    with open(out + ".tmp", "w") as f:
        json.dump(info, f)
    os.rename(out + ".tmp", out)
    func(time.monotonic() + seconds)


def wait_file(path, deadline):
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"child wrote no {path}")
        time.sleep(0.01)
    with open(path) as f:
        return json.load(f)


def main():
    args = parse_args(lambda p: (p.add_argument("--child"), p.add_argument("--out"),
                                 p.add_argument("--delay", type=float, default=1.0)))
    if args.child:
        run_child(args.child, args.seconds, args.out)
        return
    truth = Truth(args.truth)
    base = (args.truth or "/tmp/spawner") + ".child"
    # Started after the profiler had time to attach: children appear mid-profile.
    time.sleep(args.delay)
    pid = os.fork()
    if pid == 0:
        try:
            run_child("forked", args.seconds, base + "-forked")
        finally:
            os._exit(0)
    exe = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", "exec",
                            "--seconds", str(args.seconds), "--out", base + "-exec"])
    deadline = time.monotonic() + 30
    truth["children"] = {k: wait_file(f"{base}-{k}", deadline) for k in ("forked", "exec")}
    truth["parent"] = {"func": "parent_burn", "file": parent_burn.__code__.co_filename,
                       "line": burn_line(parent_burn, "parent")}
    truth.write()
    parent_burn(time.monotonic() + args.seconds)
    exe.wait()
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
