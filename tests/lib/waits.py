# SPDX-License-Identifier: GPL-2.0-only
"""tests/workloads/waits.py, profiled in wall mode over its whole life: threads that each
spend their time one known way and time themselves (test_offcpu.py says how)."""

import json
import time
import uuid
from pathlib import Path

from lib.harness import Harness, sibling
from lib.paths import PROFILER_GRACE, RUN_DIR
from lib.procfs import host_steal_seconds

SECONDS = 2.5


def profile_waits(tmpdir, profiler, interp, fmt="collapsed", extra=(), also=()):
    """waits.py profiled in wall mode, with --threads, from before its threads start
    until it exits: (truth, run, output, stats). The truth adds host_steal_s, the time
    the hypervisor took from the machine's CPUs over the run. With @also (suffixes
    such as ".pbp"), the same run writes those files too, beside the output under the
    same stem (sibling()), and every format comes from its suffix."""
    h = Harness(tmpdir, profiler)
    try:
        go = f"{RUN_DIR}/go-{uuid.uuid4().hex[:8]}"
        w = h.start_workload(interp, "waits", "--go", go, seconds=SECONDS)
        suffix = {"collapsed": ".txt", "pprof": ".pb.gz", "speedscope": ".speedscope.json"}
        out = Path(tmpdir) / f"waits-{w.pid}{suffix[fmt]}"
        st = Path(tmpdir) / f"waits-{w.pid}.json"
        started = []
        steal0 = host_steal_seconds()

        def start_threads(_stdout, stderr):
            # The profiler says it samples; only then may the threads start.
            if not started and "profiling pid" in stderr:
                interp.host_path(go).touch()
                started.append(time.monotonic())
            return False

        outs = ["-o", out] + [a for s in also for a in ("-o", sibling(out, s))]
        run = h.run_profiler(["record", "-p", w.pid, "--mode", "wall", "--threads", "-v",
                              "--stats-file", st] + outs + ([] if also else ["-f", fmt]) +
                             list(extra),
                             SECONDS + PROFILER_GRACE, out=out, stats=st,
                             signal_when=(start_threads, 0))
        assert started, f"the profiler never said it was sampling:\n{run.describe()}"
        assert run.rc == 0, run.describe()
        done = Path(str(w.truth_path) + ".done")
        assert done.exists(), f"the workload did not finish:\n{w.output()}"
        truth = json.loads(done.read_text())
        truth["host_steal_s"] = host_steal_seconds() - steal0
    finally:
        h.close()
    stats = json.loads(st.read_text())
    return truth, run, out, stats
