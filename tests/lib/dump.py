# SPDX-License-Identifier: GPL-2.0-only
"""`pybpfprof dump`'s text read back: a thread block per thread, its Python frames
innermost first, and with --native the C frames between them. Each parser fails on any
line that is not part of the format."""

import re
from dataclasses import dataclass, field
from typing import List, Optional

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

    @classmethod
    def of(cls, m):
        """The thread a THREAD_RE match heads."""
        return cls(int(m.group(1)), m.group(3), bool(m.group(4)), name=m["name"])

    def root_first(self):
        return tuple(reversed(self.frames))

    def add_frame(self, frame):
        self.frames.append(frame)

    def take(self, raw):
        """Whether @raw, a line of the block that is not a frame, is one of the format's."""
        if raw == "  (no Python frames)":
            self.no_python = True
        elif raw.startswith("  [incomplete: ") and raw.endswith("]"):
            self.incomplete = raw[len("  [incomplete: "):-1]
        else:
            return False
        return True


def _parse_blocks(text, lines, thread, once):
    """{tid: thread.of(its THREAD_RE match)} of the thread blocks in @lines (dump @text
    after its header): a Python frame goes to the thread's add_frame, any other line to
    its take, which says whether it is one of the format's; a line outside a block or
    not the format's fails, and with @once so does a thread with two blocks."""
    threads = {}
    cur = None
    for raw in lines:
        if not raw:
            cur = None
            continue
        m = THREAD_RE.match(raw)
        if m:
            cur = thread.of(m)
            if once:
                assert cur.tid not in threads, f"thread {cur.tid} twice:\n{text}"
            threads[cur.tid] = cur
            continue
        assert cur is not None, f"line outside a thread block: {raw!r}\n{text}"
        m = FRAME_RE.match(raw)
        if m:
            cur.add_frame(Frame(m[3], m[1], None if m[2] == "?" else int(m[2])))
        elif not cur.take(raw):
            pytest.fail(f"unexpected dump line {raw!r}\n{text}")
    return threads


def parse_dump(text):
    """{tid: DumpThread}; fails on any line that is not part of the format."""
    lines = text.splitlines()
    assert len(lines) >= 2, f"dump too short:\n{text}"
    assert lines[1] == "Stacks are most recent call first.", f"bad header:\n{text}"
    return _parse_blocks(text, lines[2:], DumpThread, once=True)


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

    @classmethod
    def of(cls, m):
        """The thread a THREAD_RE match heads."""
        return cls(int(m[1]), m[3])

    def add_frame(self, frame):
        self.items.append(("py", frame))

    def take(self, raw):
        """Whether @raw, a line of the block that is not a Python frame, is one of the
        format's: a C frame, a note on the C stack, or no Python frames."""
        if m := NATIVE_RE.match(raw):
            self.items.append(("c", m["func"], m["obj"]))
        elif m := NOTE_RE.match(raw):
            self.note = m[1]
        else:
            return raw == "  (no Python frames)"
        return True

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
    return _parse_blocks(text, lines[2:], NativeDumpThread, once=False)
