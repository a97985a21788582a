# SPDX-License-Identifier: GPL-2.0-only
"""sysburn workloads (tests/workloads/sysburn.py) under `record -a`: each burns in a
function named for it alone, so every process's samples are checked against its own
truth, under its own root frame "process PID COMMAND"."""

import uuid

from .collapsed import show, total
from .harness import fraction

RATE = "199"


def fname(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def sysburn(h, py, name, seconds, wait=True, extra=()):
    return h.start_workload(py, "sysburn", "--name", name, *extra, seconds=seconds,
                            wait=wait)


def by_process(prof):
    out = {}
    for s in prof:
        out.setdefault(s.process, []).append(s)
    return out


def check_process(prof, truth, others=()):
    """truth: a sysburn truth. Its samples sit under its own root, mostly in its own
    function at its burn line, and hold no function of @others."""
    pid = truth["pid"]
    samples = by_process(prof).get(pid)
    assert samples, (f"pid {pid} ({truth['func']}) never sampled; processes seen: "
                     f"{sorted(p for p in by_process(prof) if p is not None)}")
    hot = [s for s in samples if not s.incomplete and s.leaf and s.leaf.name == truth["func"]]
    assert fraction(total(hot), total(samples)) >= 0.5, \
        f"pid {pid}: {truth['func']} is not where it spends its time:\n{show(samples)}"
    # The loop ends once, into its return line: a sample there is the function's real
    # last moment (its frame is cleared, its objects freed, which may hand memory back
    # to the kernel), seen once in a CI run. Once, not a share: a decoder that slips a
    # line would put many samples there.
    wrong = [s for s in hot if s.leaf.line != truth["line"] or s.leaf.file != truth["file"]]
    last = [s for s in wrong if s.leaf.line == truth["return_line"] and
            s.leaf.file == truth["file"]]
    if total(last) <= 1:
        wrong = [s for s in wrong if s not in last]
    assert not wrong, f"pid {pid}: burn line {truth['line']} expected:\n{show(wrong)}"
    strays = [s for s in samples if any(f.name in others for f in s.frames)]
    assert not strays, f"pid {pid} holds another process's function:\n{show(strays)}"
