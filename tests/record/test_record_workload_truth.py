"""The ground truth itself: every workload starts on every interpreter, reaches its
steady state and writes a consistent truth file (no profiler involved)."""

import pytest

from lib.paths import WL_DIR
from lib.collapsed import truth_frames

EXPECTED_STACKS = {
    "ratio": {"fa": ["parent", "fa"], "fb": ["parent", "fb"]},
    "deep": {"leaf": ["recurse", "leaf"]},
    "threads": {f"worker_{k}": ["Thread.run", f"worker_{k}"] for k in range(8)},
    "generators": {"produce": ["consume", "produce"], "coro_leaf": ["coro_mid", "coro_leaf"]},
    "churn": {"even": ["churn_000000", "burn_even"], "odd": ["churn_000001", "burn_odd"]},
    "delivery": {"spin": ["main", "spin"]},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_STACKS))
def test_workload_writes_consistent_truth(py, harness_noprof, name):
    w = harness_noprof.start_workload(py, name)
    t = w.truth
    script = f"{WL_DIR}/{name}.py"
    assert t["script"] == script
    assert t["python_version"] == ".".join(map(str, t["version_info"][:3]))
    assert set(t["stacks"]) == set(EXPECTED_STACKS[name]), t["stacks"].keys()
    for key, tail in EXPECTED_STACKS[name].items():
        frames = truth_frames(t["stacks"][key])
        assert [f.name for f in frames[-len(tail):]] == tail, frames
        root = "Thread._bootstrap" if name == "threads" else "<module>"
        assert frames[0].name == root, frames
        leaf = frames[-1]
        burn = {v for k, v in t["lines"].items() if k.startswith(leaf.name)}
        assert leaf.line in burn, (leaf, t["lines"])
        if name != "churn":
            assert leaf.file == script
    if name == "deep":
        assert t["recurse_frames"] == 601
        assert sum(f["qualname"] == "recurse" for f in t["stacks"]["leaf"]) == 601
    if name == "threads":
        tids = {v["tid"] for v in t["threads"].values()}
        assert len(tids) == 8 and t["main_tid"] not in tids and t["main_tid"] == t["pid"]
    assert w.proc.poll() is None, f"workload exited early:\n{w.output()}"
