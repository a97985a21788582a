"""Threads read by the names Python gives them (threading.Thread.name), not the kernel's
("python3", or on 3.14+ the Python name cut to 15 bytes), in every view that names
threads: --threads frames, Chrome trace tracks, speedscope profiles and pprof labels;
in BPF and live modes, on every interpreter. Truth: each thread's name as
threading.current_thread() gives it, by native id; two are concurrent.futures' pool
workers, named by the pool."""

import json
import re
import sys

from lib.paths import REPO
from lib.interpreters import MODES

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile  # noqa: E402

RATE = 199
SECONDS = 1


def names_by_tid(w):
    truth = w.read_truth()["threads"]
    assert len(truth) == 6, truth
    return {int(tid): name for tid, name in truth.items()}


def test_threads_frames_carry_python_names(py, mode, harness):
    w = harness.start_workload(py, "named_threads")
    want = names_by_tid(w)
    run = harness.record_pid(w.pid, rate=RATE, duration=SECONDS, threads=True,
                             extra=MODES[mode])
    samples = run.check_ok()
    seen = {}
    for s in samples:
        assert s.thread in want, f"a stack of thread {s.thread}, not one of {want}"
        seen.setdefault(s.thread, set()).add(s.thread_name)
    # Every stack of a thread reads its final name, those taken before it was known too.
    assert seen == {tid: {name} for tid, name in want.items()}, (seen, want)


def test_chrome_speedscope_and_pprof_name_threads_as_python_does(py, mode, harness):
    w = harness.start_workload(py, "named_threads")
    want = names_by_tid(w)
    outs = {fmt: harness.tmp / f"names.{suffix}" for fmt, suffix in
            (("chrome", "trace.json"), ("speedscope", "speedscope.json"), ("pprof", "pb.gz"))}
    for fmt, out in outs.items():
        run = harness.run_profiler(["record", "-p", w.pid, "-r", RATE, "-d", SECONDS, "-f", fmt,
                                    "-o", out] + MODES[mode], SECONDS + 60, out=out)
        assert run.rc == 0, run.describe()
    events = json.loads(outs["chrome"].read_text())["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events
              if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert tracks == want, (tracks, want)
    profiles = json.loads(outs["speedscope"].read_text())["profiles"]
    named = {}
    for p in profiles:
        m = re.match(r"^pid \d+ thread (\d+) \((.*)\)$", p["name"])
        assert m, p["name"]
        named[int(m[1])] = m[2]
    assert named == want, (named, want)
    labels = {}
    for _, _, lab in Profile.load(outs["pprof"]).samples():
        labels.setdefault(lab["thread_id"], set()).add(lab["thread_name"])
    assert labels == {tid: {name} for tid, name in want.items()}, (labels, want)
