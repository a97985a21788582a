# SPDX-License-Identifier: GPL-2.0-only
"""The self-contained C unit tests (tests/unit/NAME.c, run with no arguments), each in the
plain build and under AddressSanitizer and UndefinedBehaviorSanitizer: exit 0, no
sanitizer report, and the line the program prints once every check held.

The units that need a target or arguments (a live CPython, an HTTP server, a profile
to render) are driven by the test files named in DRIVEN_ELSEWHERE; a unit the Makefile
builds that neither list names fails test_every_unit_test_is_run."""

import re

import pytest

from lib.paths import REPO
from lib.units import run_unit

# NAME: (the line it prints once every check held, what it proves).
UNITS = {
    "test_hashmap": ("hashmap: ok", "the generic index (base/hashmap.c) with keys whose "
                     "hashes collide on purpose, runs that wrap around the end of the "
                     "slots, each entry in exactly one slot, failed allocations that leave "
                     "everything as it was, and vec__reserve (base/vec.h)"),
    "test_outfile": ("test_outfile: ok", "output files whose names change between open and "
                     "commit (a link or another user's file planted meanwhile), FIFOs, "
                     "devices, a name given later"),
    "test_cgroup": ("test_cgroup: ok", "a process's cgroup v2 path from /proc/PID/cgroup "
                    "texts as hosts and cgroup namespaces write them, and the scope rules"),
    "test_thread_name": ("thread names: ok", "a thread's Python name from its Thread object "
                         "in each way instances keep their attributes, and from hostile "
                         "ones, in a bounded number of reads"),
    "test_asyncio_reads": ("asyncio reads: ok", "an awaiters' set filled with objects that "
                           "are no task is scanned only a few slots deep, and a read budget "
                           "(mem/mem_budget.c) ends a walk once spent"),
    "test_code_cache": ("ok", "the code cache's byte budgets and the string table's "
                        "rebuild; a successor built at a freed object's address is not "
                        "taken for it"),
    "test_frame_cache": ("ok", "the frame cache's byte budgets with the deepest chains; "
                         "freeing gives every byte back"),
    "test_thread_hold": ("thread_hold: ok", "a running thread of a real process held and let "
                         "go; one in an uninterruptible wait not waited for, refused another "
                         "hold meanwhile, and let go once its wait ends"),
    "test_aggregate": ("aggregate: ok", "the aggregate's native tables: objects shared by "
                       "build, conflicts refused, a per-process copy, growth, frames that "
                       "differ only in offset kept apart"),
    "test_descendants": ("descendants: ok", "the watch set of the processes targets start, "
                         "under churn, with its looks spread out by the budget"),
    "test_cgroup_labels": ("cases ok", "container and pod labels from the cgroup texts real "
                           "hosts produce, and from garbage and forged scopes"),
    "test_agent_procs": ("agent_procs: ok", "a reused PID does not take over another "
                         "process's entry before its profile is cut; an exec does"),
    "test_agent_config": ("test_agent_config: ok", "the agent's config file: every key, bad "
                          "ones refused with file:line, the command line winning"),
    "test_export_queue": ("test_export_queue: ok", "the export queue's bounds, drops "
                          "counted, order kept across a requeue and between racing threads"),
    "test_export_files": ("test_export_files: ok", "rotated profile files: names, whole "
                          "content, the directory's cap, other files never touched"),
}
# Units that need root: a forged cgroup, files of another user.
NEEDS_ROOT = {"test_outfile", "test_cgroup_labels"}

# Units that need a target, arguments or a server, and the file under tests/ that drives them.
DRIVEN_ELSEWHERE = {
    "test_linetable": "cpython/test_linetable.py",
    "test_offsets": "cpython/test_offsets.py",
    "test_field_bounds": "cpython/test_offsets.py",
    "test_decode_runs": "native/test_native_merge.py",
    "test_live_verify": "live/test_live_reading.py",
    "test_native_unwind": "native/test_native_unwind.py",
    "test_native_merge": "native/test_native_merge.py",
    "test_native_live": "native/test_native_merge.py",
    "test_writers": "writers/test_writers_golden.py",
    "test_top_view": "top/test_top_view.py",
    "test_json": "writers/test_writers_formats.py",
    "test_export_http": "agent/test_agent_export.py",
}


def _params():
    for name in UNITS:
        for build in ("plain", "sanitizers"):
            marks = [pytest.mark.root] if name in NEEDS_ROOT else []
            yield pytest.param(name, build, marks=marks, id=f"{name}-{build}")


@pytest.mark.parametrize("name,build", _params())
def test_unit_passes(name, build):
    ok, _ = UNITS[name]
    run_unit(name, build, ok)


def test_every_unit_test_is_run():
    """Every unit the Makefile builds (UNIT_LAYER_NAME) is run here or by its driver."""
    text = (REPO / "Makefile").read_text()
    built = set(re.findall(r"^UNIT_LAYER_(test_\w+)\s*:=", text, re.M))
    assert built, "no UNIT_LAYER_ lines in the Makefile"
    unrun = sorted(built - set(UNITS) - set(DRIVEN_ELSEWHERE))
    assert not unrun, f"unit tests built but run by no test: {unrun}"
    gone = sorted((set(UNITS) | set(DRIVEN_ELSEWHERE)) - built)
    assert not gone, f"unit tests named here that the Makefile no longer builds: {gone}"
    for name, driver in DRIVEN_ELSEWHERE.items():
        assert name in (REPO / "tests" / driver).read_text(), \
            f"{driver} does not run {name}"
