# SPDX-License-Identifier: GPL-2.0-only
"""The per-CPU scratch space where the BPF program builds a record is sized to the
largest record, not to a loose bound: it is allocated once per possible CPU, in the
kernel, and charged to the profiler's memory cgroup.

The largest record is computed here from the ABI's own building blocks (header,
thread-state cap, stack cap, frame headers, then the --native block and its stack cap
at an 8-byte boundary) by compiling a few lines against include/pbp_abi.h; the size of the map the running profiler created is read from
/proc/PID/fdinfo of its map descriptors.
"""

import os
import re
import subprocess
import time

from lib.paths import REPO

ABI = REPO / "include" / "pbp_abi.h"

RECORD_MAX_C = r"""
#include <stdio.h>
#include "pbp_abi.h"
int main(void)
{
	size_t py = sizeof(struct pbp_sample) + PBP_TSTATE_MAX + PBP_STACK_MAX +
		    PBP_FRAMES_MAX * (8 + PBP_FRAME_HDR_MAX);

	printf("%zu\n", ((py + 7) & ~(size_t)7) + sizeof(struct pbp_native) +
	       PBP_NATIVE_STACK_MAX);
	return 0;
}
"""


def record_max(tmp_path):
    src = tmp_path / "record_max.c"
    src.write_text(RECORD_MAX_C)
    exe = tmp_path / "record_max"
    subprocess.run(["gcc", "-std=gnu11", "-I", str(ABI.parent), str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return int(subprocess.run([str(exe)], check=True, capture_output=True,
                              text=True).stdout)


def array_maps(pid):
    """(value_size, max_entries) of every BPF array map @pid holds open."""
    out = []
    fds = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fds):
        try:
            text = open(os.path.join(fds, fd)).read()
        except OSError:
            continue
        fields = dict(re.findall(r"^(\w+):\s+(\S+)", text, re.M))
        if fields.get("map_type") == "2":    # BPF_MAP_TYPE_ARRAY
            out.append((int(fields["value_size"]), int(fields["max_entries"])))
    return out


def test_scratch_is_sized_to_the_largest_record(py311, harness, tmp_path):
    limit = record_max(tmp_path)
    w = harness.start_workload(py311, "threads")
    prof = harness.spawn(harness.profiler_argv(
        ["record", "-p", w.pid, "-d", 30, "-o", tmp_path / "out.txt", "-f", "collapsed"]))
    deadline = time.monotonic() + 30
    maps = []
    while time.monotonic() < deadline and prof.poll() is None:
        maps = array_maps(prof.pid)
        # The largest array is the scratch space; .rodata and .bss are small.
        if maps and max(maps)[0] > 16 * 1024:
            break
        time.sleep(0.1)
    assert maps and max(maps)[0] > 16 * 1024, \
        f"no scratch map seen in the profiler's descriptors: {maps} (exit {prof.poll()})"
    size, entries = max(maps)
    assert size >= limit, f"scratch value {size} B is smaller than a record ({limit} B)"
    # Within a few percent of the largest record: the verifier's view of the copy
    # needs a little slack (one band of lengths), no more.
    assert size <= limit * 1.05, (
        f"scratch value {size} B x {entries} CPUs, but a record is at most {limit} B")
