# SPDX-License-Identifier: GPL-2.0-only
"""Reads the collapsed output of pybpfprof and of CPython's profiling.sampling into one
shape, and judges each sample of the aba and depth_walk workloads (tests/workloads/)
against the truth they write: is it a stack the program could have had?

A sample is impossible when it mixes chain a and chain b frames, when a frame sits
under the wrong parent (or the parent is on another line than its call), or when it
does not start at the thread's <module> frame. pybpfprof marks stacks whose walk did
not reach the bottom '[incomplete]'; those are counted apart, as flagged, because the
profiler says they are partial instead of passing them off as whole."""
import re
from collections import Counter

OURS_FRAME = re.compile(r"^(?P<name>.+) \((?P<file>[^():]+)(?::(?P<line>\d+))?\)$")
# Frames the peer adds that are no Python function of the program.
PEER_PSEUDO = {"<GC>", "<native>"}


class Stack:
    __slots__ = ("frames", "count", "flagged")

    def __init__(self, frames, count, flagged=False):
        self.frames = frames      # [(name, line or None)], root first
        self.count = count
        self.flagged = flagged    # pybpfprof said [incomplete]


def parse_ours(text):
    out = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        stack, _, count = raw.rpartition(" ")
        parts = stack.split(";")
        if parts and parts[0].startswith("process "):
            parts = parts[1:]
        if parts and parts[0].startswith("thread "):
            parts = parts[1:]
        flagged = bool(parts) and parts[0] == "[incomplete]"
        if flagged:
            parts = parts[1:]
        frames = []
        for p in parts:
            m = OURS_FRAME.match(p)
            if m:
                frames.append((m["name"], int(m["line"]) if m["line"] else None))
            else:
                frames.append((p, None))
        out.append(Stack(frames, int(count), flagged))
    return out


def parse_ours_processes(text):
    """(pid, count) of every line of system-wide output ('process PID COMMAND;...')."""
    out = []
    for raw in text.splitlines():
        m = re.match(r"^process (\d+) .* (\d+)$", raw)
        if m:
            out.append((int(m.group(1)), int(m.group(2))))
    return out


def parse_peer(text):
    """profiling.sampling --collapsed: 'tid:N;FILE:FUNC:LINE;... COUNT', root first."""
    out = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        stack, _, count = raw.rpartition(" ")
        parts = stack.split(";")
        if parts and parts[0].startswith("tid:"):
            parts = parts[1:]
        frames = []
        for p in parts:
            bits = p.rsplit(":", 2)
            if len(bits) == 3 and bits[2].lstrip("-").isdigit():
                frames.append((bits[1], int(bits[2])))
            else:
                frames.append((p, None))
        while frames and frames[-1][0] in PEER_PSEUDO:
            frames.pop()
        out.append(Stack(frames, int(count)))
    return out


def _truth(stack):
    return [(f["qualname"], f["line"]) for f in stack]


def judge_aba(stacks, truth):
    """Counter of verdicts: ok, flagged, mixed, wrong_parent, wrong_line, not_module."""
    chains = {n: c for c, names in truth["chains"].items() for n in names}
    want = {c: _truth(truth["stacks"][c]) for c in ("a", "b")}
    loop = truth["loop"]
    res = Counter()
    for s in stacks:
        names = [n for n, _ in s.frames]
        if s.flagged:
            res["flagged"] += s.count
            continue
        if "record_chain" in names:     # the workload writing its truth: a true stack
            res["ok"] += s.count
            continue
        if len({chains[n] for n in names if n in chains}) > 1:
            res["mixed"] += s.count
            continue
        if not names or names[0] != "<module>":
            res["not_module"] += s.count
            continue
        res[_cut_verdict(s.frames, want, loop)] += s.count
    return res


def _cut_verdict(frames, want, loop):
    """ok if frames is one truth stack cut at or below the loop frame; wrong_line if only
    a parent's line differs; else wrong_parent."""
    names = [n for n, _ in frames]
    best = "wrong_parent"
    for w in want.values():
        wn = [n for n, _ in w]
        if not (wn.index(loop) < len(names) <= len(w)) or names != wn[:len(names)]:
            continue
        if all(line == wl for (_, line), (_, wl) in zip(frames[:-1], w[:len(frames) - 1])):
            return "ok"
        best = "wrong_line"
    return best


def judge_walk(stacks, truth):
    """<module>;main;walk*k, 1 <= k <= max_depth, every outer walk on its call line."""
    fixed = _truth(truth["stacks"]["walk"][:2])
    fn = truth["function"]
    recurse = truth["lines"]["recurse"]
    res = Counter()
    for s in stacks:
        names = [n for n, _ in s.frames]
        if s.flagged:
            res["flagged"] += s.count
            continue
        if not names or names[0] != fixed[0][0]:
            res["not_module"] += s.count
            continue
        walks = names[2:]
        if names[:2] != [n for n, _ in fixed] or not walks or any(n != fn for n in walks) \
                or len(walks) > truth["max_depth"]:
            res["wrong_parent"] += s.count
            continue
        lines = [ln for _, ln in s.frames]
        if lines[1] != fixed[1][1] or any(ln != recurse for ln in lines[2:-1]):
            res["wrong_line"] += s.count
            continue
        res["ok"] += s.count
    return res


IMPOSSIBLE = ("mixed", "wrong_parent", "wrong_line", "not_module")


def summary(verdicts):
    """(total, impossible, flagged) sample counts."""
    total = sum(verdicts.values())
    return total, sum(verdicts[k] for k in IMPOSSIBLE), verdicts["flagged"]
