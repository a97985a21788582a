# SPDX-License-Identifier: GPL-2.0-only
"""Collapsed stacks as the profiler writes them, parsed into samples of frames, and the
helpers that compare them with what a workload knows about itself."""

import re
from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class Frame:
    name: str                   # co_qualname, or the raw text of a non-Python frame
    file: Optional[str] = None  # co_filename (None for a non-Python frame)
    line: Optional[int] = None

    def __str__(self):
        if self.file is None:
            return self.name
        return f"{self.name} ({self.file}:{self.line})"


@dataclass
class Sample:
    frames: Tuple[Frame, ...]   # root first; without the thread and [incomplete] markers
    count: int
    thread: Optional[int] = None
    incomplete: bool = False
    process: Optional[int] = None   # pid of a "process PID COMMAND" root frame
    thread_name: Optional[str] = None   # NAME of a "thread TID (NAME)" root frame

    @property
    def leaf(self):
        return self.frames[-1] if self.frames else None

    def names(self):
        return [f.name for f in self.frames]

    def __str__(self):
        parts = []
        if self.process is not None:
            parts.append(f"process {self.process}")
        if self.thread is not None:
            parts.append(f"thread {self.thread}")
        if self.incomplete:
            parts.append("[incomplete]")
        parts += [str(f) for f in self.frames]
        return ";".join(parts) + f" {self.count}"


PY_FRAME = re.compile(r"^(?P<name>.+) \((?P<file>.+):(?P<line>\d+)\)$")
THREAD_FRAME = re.compile(r"^thread (\d+)(?: \((.*)\))?$")   # TID, and its name if known
PROCESS_FRAME = re.compile(r"^process (\d+) ")
LINE_RE = re.compile(r"^(?P<stack>.+) (?P<count>\d+)$")
INCOMPLETE = "[incomplete]"


class ParseError(Exception):
    pass


def parse_frame(text):
    m = PY_FRAME.match(text)
    if m:
        return Frame(m["name"], m["file"], int(m["line"]))
    return Frame(text)


def parse_collapsed(text):
    """Parse collapsed output into Samples; raises ParseError on a malformed line."""
    samples = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        m = LINE_RE.match(raw)
        if not m:
            raise ParseError(f"line {lineno}: not 'STACK COUNT': {raw!r}")
        parts = m["stack"].split(";")
        thread = process = thread_name = None
        incomplete = False
        pm = PROCESS_FRAME.match(parts[0])
        if pm:
            process = int(pm.group(1))
            parts = parts[1:]
        tm = THREAD_FRAME.match(parts[0]) if parts else None
        if tm:
            thread, thread_name = int(tm.group(1)), tm.group(2)
            parts = parts[1:]
        if parts and parts[0] == INCOMPLETE:
            incomplete = True
            parts = parts[1:]
        if INCOMPLETE in parts:
            raise ParseError(f"line {lineno}: {INCOMPLETE} not at the root: {raw!r}")
        if any(THREAD_FRAME.match(p) for p in parts):
            raise ParseError(f"line {lineno}: thread frame not at the root: {raw!r}")
        if any(PROCESS_FRAME.match(p) for p in parts):
            raise ParseError(f"line {lineno}: process frame not at the root: {raw!r}")
        count = int(m["count"])
        if count <= 0:
            raise ParseError(f"line {lineno}: count must be positive: {raw!r}")
        samples.append(Sample(tuple(parse_frame(p) for p in parts), count, thread, incomplete,
                              process, thread_name))
    return samples


def total(samples):
    return sum(s.count for s in samples)


# A native frame with DWARF line info reads like a Python frame, "FUNCTION (file.c:LINE)"
# (--native): its file is a C, C++ or assembly source, never a Python one.
C_SOURCE = re.compile(r"\.(c|h|cc|cpp|cxx|hh|hpp|hxx|inc|s|S)$")


def is_python_frame(frame):
    """Whether @frame is a Python frame: a file, and not a C source's."""
    return frame.file is not None and not C_SOURCE.search(frame.file)


def truth_frames(stack):
    """Frames of a truth stack (list of {qualname, filename, line}), root first."""
    return tuple(Frame(f["qualname"], f["filename"], f["line"]) for f in stack)


def same_except_leaf_line(frames, expected):
    """frames equals expected in every frame, ignoring the innermost frame's line."""
    if len(frames) != len(expected):
        return False
    if frames[:-1] != expected[:-1]:
        return False
    return (frames[-1].name, frames[-1].file) == (expected[-1].name, expected[-1].file)


def show(samples, limit=12):
    """A few of the heaviest stacks, for assertion messages (deep stacks abbreviated)."""
    out = []
    for s in sorted(samples, key=lambda s: -s.count)[:limit]:
        txt = str(s)
        if len(txt) > 600:
            txt = txt[:250] + f" ...[{len(s.frames)} frames]... " + txt[-300:]
        out.append("  " + txt)
    return "\n".join(out) if out else "  (none)"
