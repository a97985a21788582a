# SPDX-License-Identifier: GPL-2.0-only
"""-a beside an exec storm: a host that starts programs by the thousand must not cost
the Python processes their samples.

Shell loops start short-lived programs as fast as they can (each a `sleep` that lives
a second and a half, so that it is still there to be looked at, beside a `true`),
next to a Python burning in a function of its own. How many that is depends on the
machine's exec speed (thousands a second on bare metal, a few hundred on a small
loaded VM); the test asks only for a few hundred. The same Python is recorded once without
and once with the storm; with it, no sample may be dropped from the ring buffer and
the share of expected samples delivered must stay close to the quiet run's, and the
Python's samples must still be its own.
"""

import subprocess
import time

from conftest import Harness, fraction, make_interp
from test_system_wide import check_process, fname, record_all, sysburn

SECONDS = 5
STORM_MAX = 20000       # programs each storm loop starts at most
STORM_LOOPS = 4
MIN_STARTED = 200
# The storm takes CPU from the Python target too; what must hold is the share of the
# target's expected samples (from its CPU time) that arrive.
MIN_SHARE_OF_QUIET = 0.8

STORM = r"""
n=0
while [ $n -lt {max} ] && [ ! -e {stop} ]; do
    /bin/sleep 1.5 &
    /bin/true
    n=$((n + 2))
done
echo $n > {count}
wait
"""


def started(counts):
    return sum(int(p.read_text().strip() or 0) for p in counts if p.exists())


def test_exec_storm_costs_no_samples(sid_root, workloads_installed, tmp_path, profiler_bin):
    py = make_interp("3.11", sid_root)
    py.require()
    h = Harness(tmp_path, profiler_bin)
    stop = tmp_path / "stop"
    counts = [tmp_path / f"count-{i}" for i in range(STORM_LOOPS)]
    storms = []
    try:
        w = sysburn(h, py, fname("hot_storm"), 120)
        quiet = record_all(h, tmp_path, SECONDS)
        storms = [subprocess.Popen(["bash", "-c", STORM.format(max=STORM_MAX, stop=stop,
                                                               count=c)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
                  for c in counts]
        time.sleep(0.5)
        loud = record_all(h, tmp_path, SECONDS)
        stop.write_text("")
        for p in storms:
            p.wait(60)
    finally:
        for p in storms:
            if p.poll() is None:
                p.kill()
        h.close()
    n = started(counts)
    for run in (quiet, loud):
        check_process(run.check_ok(), w.truth)
    q, s = quiet.stats(), loud.stats()
    detail = (f"quiet: {q['samples_delivered']}/{q['samples_expected']}, storm: "
              f"{s['samples_delivered']}/{s['samples_expected']} with {n} programs "
              f"started, {s['process_looks']} looks ({s['process_looks_deferred']} put off)")
    assert n >= MIN_STARTED, f"the storm started only {n} programs: {detail}"
    assert s["ringbuf_drops"] == 0, f"samples dropped during the storm: {detail}"
    share_q = fraction(q["samples_delivered"], q["samples_expected"])
    share_s = fraction(s["samples_delivered"], s["samples_expected"])
    assert share_s >= MIN_SHARE_OF_QUIET * share_q, \
        f"the storm cost samples: {share_s:.2f} of expected vs {share_q:.2f} quiet; {detail}"
