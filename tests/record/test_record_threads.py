"""threads workload: 8 threads, thread k burning in its own worker_k(); --threads."""

import re

import pytest

from lib.collapsed import same_except_leaf_line, show, total, truth_frames
from lib.interpreters import MODES
from lib.harness import Once, fraction, profile_workload

RATE = 999
DURATION = 3
WORKER = re.compile(r"^worker_(\d+)$")


@pytest.fixture(scope="module")
def threads(py, mode, module_tmp, profiler_bin):
    return Once(lambda: profile_workload(
        module_tmp / f"{py.id}-{mode}", profiler_bin, py, "threads", rate=RATE, duration=DURATION,
        threads=True,
        extra=MODES[mode]))


def workers_in(sample):
    return {int(m.group(1)) for f in sample.frames for m in [WORKER.match(f.name)] if m}


def tid_to_worker(truth):
    return {t["tid"]: int(k) for k, t in truth["threads"].items()}


def test_threads_every_sample_has_a_thread_frame(py, threads):
    threads = threads.get()
    prof = threads.run.check_ok()
    missing = [s for s in prof if s.thread is None]
    assert prof, "empty profile"
    assert not missing, f"stacks without a 'thread TID' root frame:\n{show(missing)}"


def test_threads_every_worker_thread_id_appears(py, threads):
    threads = threads.get()
    prof = threads.run.check_ok()
    seen = {s.thread for s in prof}
    tids = tid_to_worker(threads.truth)
    assert len(tids) == 8
    missing = {tid: f"worker_{k}" for tid, k in tids.items() if tid not in seen}
    assert not missing, f"threads never sampled: {missing}; seen thread ids {sorted(seen)}"


def test_threads_stacks_never_mix_workers(py, threads):
    threads = threads.get()
    prof = threads.run.check_ok()
    tids = tid_to_worker(threads.truth)
    wrong = []
    for s in prof:
        ws = workers_in(s)
        if len(ws) > 1:
            wrong.append((s, f"stack mixes workers {sorted(ws)}"))
        elif ws and tids.get(s.thread) not in ws:
            wrong.append((s, f"worker_{ws.pop()} under thread {s.thread} "
                             f"(which runs worker_{tids.get(s.thread)})"))
        elif s.thread in tids and not s.incomplete and not ws:
            wrong.append((s, "worker thread stack without its worker function"))
    assert not wrong, "\n".join(f"{why}: {s}" for s, why in wrong[:15])


def test_threads_every_worker_function_appears(py, threads):
    threads = threads.get()
    prof = threads.run.check_ok()
    counts = {k: 0 for k in range(8)}
    for s in prof:
        for k in workers_in(s):
            counts[k] += s.count
    absent = [f"worker_{k}" for k, n in counts.items() if n == 0]
    assert not absent, f"workers never sampled: {absent}; counts {counts}\n{show(prof)}"


def test_threads_worker_stacks_match_truth(py, threads):
    threads = threads.get()
    prof = threads.run.check_ok()
    tids = tid_to_worker(threads.truth)
    for tid, k in tids.items():
        expected = truth_frames(threads.truth["stacks"][f"worker_{k}"])
        burn = threads.truth["lines"][f"worker_{k}_burn"]
        got = [s for s in prof if s.thread == tid and not s.incomplete]
        good = [s for s in got if same_except_leaf_line(s.frames, expected)
                and s.leaf.line == burn]
        assert total(got) > 0, f"no complete samples for thread {tid} (worker_{k})"
        assert fraction(total(good), total(got)) >= 0.95, (
            f"worker_{k}: {total(good)}/{total(got)} samples match\n  "
            + ";".join(map(str, expected)) + f"\n{show(got)}")
