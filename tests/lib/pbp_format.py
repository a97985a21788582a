# SPDX-License-Identifier: GPL-2.0-only
"""The profile file (.pbp) written from its description in docs/profile-format.md, by
hand and apart from the C code: what a third party's writer would produce, and a way to
make files that no run of pybpfprof would (hostile ones among them)."""

import gzip

# Profile's fields (docs/profile-format.md).
MAGIC, VERSION, STRING, TARGET, START, DURATION, RATE, PERIOD, UNIT, MODE, LABEL, \
    THREAD, STACK, TIMELINE, NATIVE_OBJECT, NATIVE_PROC, NATIVE_FUNCTION, SOURCE = range(1, 19)
# Frame kinds.
PYTHON, THREAD_FRAME, MARKER, PROCESS, WAIT, TASK, NATIVE = range(7)


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def num(field, v):
    return varint(field << 3) + varint(v)


def data(field, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(field << 3 | 2) + varint(len(b)) + b


def packed(field, values):
    return data(field, b"".join(varint(v) for v in values))


def stack(count, pid, tid, frames):
    """A Stack; @frames (kind, name id, file id, line) root first, line -1 for none."""
    return data(STACK, num(1, count) + num(2, pid) + num(3, tid) +
                packed(4, [x for k, n, f, ln in frames for x in (k, n, f, ln + 1)]))


def thread(pid, tid, name=None, label=None):
    return data(THREAD, num(1, pid) + num(2, tid) +
                (num(3, name + 1) if name is not None else b"") +
                (num(4, label + 1) if label is not None else b""))


def profile(strings, body=b"", target="pid 10 (python3 app.py)", rate=100, mode="cpu",
            duration_ns=1_000_000_000, version=1, magic="pybpfprof profile"):
    """The inflated bytes of a profile with @strings (id order) and @body (stacks,
    threads... as encoded above)."""
    unit = 0 if mode == "cpu" else 1
    period = 1_000_000_000 // rate if mode == "cpu" and rate else 1
    head = data(MAGIC, magic) + num(VERSION, version)
    head += b"".join(data(STRING, s) for s in strings)
    head += data(TARGET, target) + num(START, 1_700_000_000_000_000_000) + \
        num(DURATION, duration_ns) + num(RATE, rate) + num(PERIOD, period) + \
        num(UNIT, unit) + data(MODE, mode)
    return head + body


def write(path, inflated):
    """@inflated gzip-compressed into @path, as pybpfprof writes it."""
    with open(path, "wb") as f:
        f.write(gzip.compress(inflated, mtime=0))
