# SPDX-License-Identifier: GPL-2.0-only
"""`pybpfprof dump`'s text read back: a thread block per thread, its Python frames
innermost first, and with --native the C frames between them. Each parser fails on any
line that is not part of the format."""

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import pytest

from .collapsed import Frame

QUICK = 60           # seconds a dump may take before we call it a hang

# TID, STATE, ", holds the GIL", then Python's name for the thread if it has one.
THREAD_RE = re.compile(
    r'^Thread (\d+) (?:"(?P<name>.*)" )?\((on CPU|idle|on-CPU state unknown)(, holds the GIL)?\):$')
FRAME_RE = re.compile(r'^  File "(.*)", line (\d+|\?), in (.*)$')
# With --native: a C frame (function, +offset, object) and a note on the C stack.
NATIVE_RE = re.compile(r"^  native: (?P<func>.+?)(?:\+0x[0-9a-f]+)?(?: \((?P<obj>[^()]+)\))?$")
NOTE_RE = re.compile(r"^  \[native: (.*)\]$")


@dataclass
class DumpThread:
    tid: int
    state: str
    gil: bool
    frames: List[Frame] = field(default_factory=list)   # innermost first
    incomplete: Optional[str] = None
    no_python: bool = False
    name: Optional[str] = None

    def root_first(self):
        return tuple(reversed(self.frames))


def parse_dump(text):
    """{tid: DumpThread}; fails on any line that is not part of the format."""
    lines = text.splitlines()
    assert len(lines) >= 2, f"dump too short:\n{text}"
    assert lines[1] == "Stacks are most recent call first.", f"bad header:\n{text}"
    threads: Dict[int, DumpThread] = {}
    cur = None
    for raw in lines[2:]:
        if not raw:
            cur = None
            continue
        m = THREAD_RE.match(raw)
        if m:
            cur = DumpThread(int(m.group(1)), m.group(3), bool(m.group(4)), name=m["name"])
            assert cur.tid not in threads, f"thread {cur.tid} twice:\n{text}"
            threads[cur.tid] = cur
            continue
        assert cur is not None, f"line outside a thread block: {raw!r}\n{text}"
        m = FRAME_RE.match(raw)
        if m:
            line = None if m.group(2) == "?" else int(m.group(2))
            cur.frames.append(Frame(m.group(3), m.group(1), line))
        elif raw == "  (no Python frames)":
            cur.no_python = True
        elif raw.startswith("  [incomplete: ") and raw.endswith("]"):
            cur.incomplete = raw[len("  [incomplete: "):-1]
        else:
            pytest.fail(f"unexpected dump line {raw!r}\n{text}")
    return threads


def check_dump(run):
    """Exit 0, nothing on stderr; returns (header line, {tid: DumpThread})."""
    assert run.rc == 0, f"dump failed\n{run.describe()}"
    assert not run.stderr.strip(), f"dump wrote to stderr\n{run.describe()}"
    return run.stdout.splitlines()[0], parse_dump(run.stdout)


# --------------------------------------------------------------------------------------
# With --native

class NativeDumpThread:
    def __init__(self, tid, state):
        self.tid, self.state = tid, state
        self.items = []          # innermost first: ("py", Frame) or ("c", func, obj)
        self.note = None

    def python(self):
        """The Python frames, root first."""
        return tuple(reversed([it[1] for it in self.items if it[0] == "py"]))

    def natives_before_python(self):
        """The native frames above the innermost Python frame."""
        out = []
        for it in self.items:
            if it[0] == "py":
                break
            out.append(it[1:])
        return out


def parse_native_dump(text):
    """{tid: NativeDumpThread}; fails on any line that is not part of the format."""
    lines = text.splitlines()
    assert len(lines) >= 2 and lines[1] == "Stacks are most recent call first.", text
    threads, cur = {}, None
    for raw in lines[2:]:
        if not raw:
            cur = None
            continue
        m = THREAD_RE.match(raw)
        if m:
            cur = threads[int(m[1])] = NativeDumpThread(int(m[1]), m[3])
            continue
        assert cur is not None, f"line outside a thread block: {raw!r}\n{text}"
        if m := FRAME_RE.match(raw):
            cur.items.append(("py", Frame(m[3], m[1], None if m[2] == "?" else int(m[2]))))
        elif m := NATIVE_RE.match(raw):
            cur.items.append(("c", m["func"], m["obj"]))
        elif m := NOTE_RE.match(raw):
            cur.note = m[1]
        elif raw != "  (no Python frames)":
            pytest.fail(f"unexpected dump line {raw!r}\n{text}")
    return threads
