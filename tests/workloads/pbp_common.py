"""Shared helpers for the ground-truth workloads (pure stdlib, CPython 3.11+).

A workload burns CPU on known lines and writes a JSON "truth" file describing what a
correct profiler must see: its pid, thread native ids, and full expected stacks
(qualname, filename, line per frame, root first) captured from the live frames with
sys._getframe(), with the innermost frame's line replaced by its burn line.

Burn lines carry a trailing marker comment `# BURN:<tag>`; burn_line() finds it in the
function's own source at runtime and checks that the line really is one of the code
object's lines, so nothing in the tests hard-codes a line number.
"""

import argparse
import inspect
import json
import os
import sys
import threading
import time


def make_dumpable():
    """A process that chroot started as root and that then became a user is not
    dumpable, so the kernel denies that user ptrace access to it. Undo that, so the
    process is like one the user started directly (PR_SET_DUMPABLE = 4)."""
    import ctypes
    if ctypes.CDLL(None, use_errno=True).prctl(4, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")


def parse_args(extra=None):
    if os.environ.get("PBP_DUMPABLE") == "1":
        make_dumpable()
    p = argparse.ArgumentParser()
    p.add_argument("--truth", help="where to write the ground-truth JSON")
    p.add_argument("--seconds", type=float, default=30.0, help="how long to keep running")
    p.add_argument("--exit-code", type=int, default=0, help="exit status at the end")
    if extra:
        extra(p)
    return p.parse_args()


def client_options(p):
    """A server loaded by a copy of its own script: --client PORT makes that copy the
    client of the server at PORT, which stops once its parent is no longer --parent."""
    p.add_argument("--client", type=int, help="be the client of the server at PORT")
    p.add_argument("--parent", type=int)


def qualname(code):
    return code.co_qualname


def burn_line(func, tag):
    """Line number of the `# BURN:<tag>` line inside func (a function or code object)."""
    code = getattr(func, "__code__", func)
    lines, first = inspect.getsourcelines(code)
    marker = "# BURN:" + tag
    hits = [first + i for i, text in enumerate(lines) if text.rstrip().endswith(marker)]
    if len(hits) != 1:
        raise RuntimeError(f"{code.co_qualname}: expected one {marker!r} line, found {hits}")
    line = hits[0]
    code_lines = {ln for _, _, ln in code.co_lines() if ln is not None}
    if line not in code_lines:
        raise RuntimeError(f"{code.co_qualname}: burn line {line} is not in the code object")
    return line


def frame_record(frame, line=None):
    code = frame.f_code
    return {
        "qualname": code.co_qualname,
        "filename": code.co_filename,
        "line": frame.f_lineno if line is None else line,
        "first_line": code.co_firstlineno,
    }


def capture_stack(leaf_line, depth=1):
    """The stack of the caller `depth` frames up, root first, with its own line set to
    leaf_line. Every other frame keeps the line Python reports for it (the line of the
    call it is executing)."""
    frame = sys._getframe(depth)
    out = [frame_record(frame, leaf_line)]
    f = frame.f_back
    while f is not None:
        out.append(frame_record(f))
        f = f.f_back
    out.reverse()
    return out


def version_string():
    v = sys.version_info
    return f"{v.major}.{v.minor}.{v.micro}"


class Truth:
    """Collects ground truth; write() puts it on disk atomically (tmp + rename)."""

    def __init__(self, path):
        self.path = path
        self.data = {
            "pid": os.getpid(),
            "main_tid": threading.get_native_id(),
            "main_thread_name": threading.current_thread().name,
            "python_version": version_string(),
            "version_info": list(sys.version_info[:5]),
            "executable": sys.executable,
            "script": os.path.abspath(sys.argv[0]),
            "stacks": {},
            "lines": {},
        }
        self.written = False

    def __setitem__(self, key, value):
        self.data[key] = value

    def line(self, key, value):
        self.data["lines"][key] = value

    def stack(self, key, leaf_line, depth=1):
        self.data["stacks"][key] = capture_stack(leaf_line, depth + 1)

    def write(self):
        if self.written:
            return
        self.written = True
        self.rewrite()

    def rewrite(self):
        """Writes the truth again, whether or not it was written: a workload that
        keeps counting (CPU per bucket) publishes its counters as they grow, from any
        thread."""
        self.written = True
        if not self.path:
            return
        # The rename alone makes the new truth whole to every reader on this machine;
        # a sync or an indented (pure-Python) encoding would stall or load the
        # workload each time it publishes.
        tmp = f"{self.path}.tmp.{os.getpid()}.{threading.get_ident()}"
        with open(tmp, "w") as f:
            f.write(json.dumps(self.data))
        os.rename(tmp, self.path)


def deadline_after(seconds):
    return time.monotonic() + seconds


class CpuBuckets:
    """CPU time per named bucket, measured by the code it belongs to with
    time.thread_time() deltas and added here from any thread, published in the truth
    (truth["cpu"][NAME], and truth["process_cpu"] and truth["wall"], time.process_time()
    and time.monotonic() at the same moment) by publish(): the workload calls it once it
    runs steadily and then every fraction of a second, from code outside every bucket's
    functions. Publishing writes and syncs a file: done from inside a bucket's function
    (after its timing ends) its CPU would be sampled in the bucket and timed outside it.
    A test reads the truth before and after it profiles and compares the growth of each
    bucket with the process's."""

    def __init__(self, truth, names):
        self.truth = truth
        self.lock = threading.Lock()
        truth.data["cpu"] = {n: 0.0 for n in names}
        truth.data["process_cpu"] = 0.0
        truth.data["published"] = 0

    def add(self, name, seconds):
        with self.lock:
            self.truth.data["cpu"][name] += seconds

    def publish(self):
        with self.lock:
            self.truth.data["process_cpu"] = time.process_time()
            self.truth.data["wall"] = time.monotonic()
            self.truth.data["published"] += 1
            self.truth.rewrite()


def remember_chain(truth, lock, name, stack, most=8):
    """Adds @stack (capture_stack's list) to truth["chains"][name] unless a stack with the
    same functions is there: every distinct path by which @name was called, up to
    @most of them. A sample in @name must have one of them from its root to @name."""
    key = [(f["qualname"], f["filename"]) for f in stack]
    code = sys._getframe(2).f_code
    with lock:
        # A generator or coroutine function also runs in its own frame as it is called,
        # at its first line (RETURN_GENERATOR), right under its caller.
        if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                            inspect.CO_ASYNC_GENERATOR):
            truth.data.setdefault("made_at", {})[code.co_qualname] = [
                code.co_filename, code.co_firstlineno]
        chains = truth.data.setdefault("chains", {}).setdefault(name, [])
        if len(chains) < most and all(
                [(f["qualname"], f["filename"]) for f in c] != key for c in chains):
            chains.append(stack)


def remember_maker(truth, lock, qualname, stack, most=8):
    """Adds @stack, the path of a frame that calls the generator function @qualname,
    to truth["makers"][qualname] unless it is there: a caller that is not on any of the
    generator's own recorded chains (a generator expression that makes generators which
    C code then runs) and so is the parent of its RETURN_GENERATOR frame only."""
    key = [(f["qualname"], f["filename"]) for f in stack]
    with lock:
        makers = truth.data.setdefault("makers", {}).setdefault(qualname, [])
        if len(makers) < most and all(
                [(f["qualname"], f["filename"]) for f in c] != key for c in makers):
            makers.append(stack)
