# SPDX-License-Identifier: GPL-2.0-only
"""-a beside an exec storm: a host that starts programs by the thousand must not cost
the Python processes their samples.

Shell loops start short-lived programs as fast as they can (each a `sleep` that lives
a second and a half, so that it is still there to be looked at, beside a `true`),
next to a Python burning in a function of its own. The loops start a fixed number of
programs and the profiler runs until they are done, however long a machine takes
(thousands a second on bare metal, a few dozen on a small loaded VM). With the storm,
no sample or process event may be lost on the way from BPF to the decoder: every tick
that found a Python frame arrives (BPF's own count), and the Python's samples are still
its own.
"""

import signal
import subprocess

import pytest

from lib.paths import PROFILER_GRACE
from lib.interpreters import make_interp
from lib.harness import Harness
from lib.system_wide import RATE, check_process, fname, sysburn

# `record -a` follows every exec on the host:
# `make test` runs this file with no other test beside it.
pytestmark = pytest.mark.alone

STORM_LOOPS = 4
PER_LOOP = 150          # programs each storm loop starts
STORM_LIMIT = 600       # seconds the profiler may run while the storm goes on

STORM = r"""
n=0
while [ $n -lt {max} ]; do
    /bin/sleep 1.5 &
    /bin/true
    n=$((n + 2))
done
echo $n > {count}
wait
"""


def test_exec_storm_costs_no_samples(sid_root, workloads_installed, tmp_path, profiler_bin):
    py = make_interp("3.11", sid_root)
    py.require()
    h = Harness(tmp_path, profiler_bin)
    counts = [tmp_path / f"count-{i}" for i in range(STORM_LOOPS)]
    out, st = tmp_path / "storm.txt", tmp_path / "storm.json"
    storms = []
    try:
        w = sysburn(h, py, fname("hot_storm"), STORM_LIMIT)
        storms = [subprocess.Popen(["bash", "-c", STORM.format(max=PER_LOOP, count=c)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
                  for c in counts]
        run = h.run_profiler(["record", "-a", "-d", STORM_LIMIT, "-r", RATE, "-o", out,
                              "--stats-file", st], timeout=STORM_LIMIT + PROFILER_GRACE,
                             out=out, stats=st,
                             signal_when=(lambda *_: all(p.poll() is not None
                                                         for p in storms), signal.SIGINT))
    finally:
        for p in storms:
            if p.poll() is None:
                p.kill()
        h.close()
    n = sum(int(c.read_text().strip() or 0) for c in counts if c.exists())
    check_process(run.check_ok(), w.truth)
    s = run.stats()
    hits = s["bpf_target_events"] - s["bpf_no_thread_state"] - s["bpf_no_frame"]
    detail = (f"{s['samples_delivered']} delivered of {hits} ticks that found a Python "
              f"frame; {n} programs started, {s['process_looks']} looks "
              f"({s['process_looks_deferred']} put off): {s}")
    assert n == STORM_LOOPS * PER_LOOP, f"the storm started {n} programs: {detail}"
    assert s["ringbuf_drops"] == 0, f"samples dropped during the storm: {detail}"
    assert s["process_event_drops"] == 0, f"process events dropped: {detail}"
    assert s["samples_delivered"] >= hits and s["samples_delivered"] > 0, detail
