"""The benchmark harness (`make bench`, tools/bench/run.py) in its smoke mode: one short
repetition of every part. Checks that each number the report is built from is there
and sane (finite, in range, samples delivered), never its value: values are the
benchmark's business, not a test's."""

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from lib.paths import REPO, WL_DIR

# Parts 9 and 10 (paired twins, saturated machine) added about a minute to the run.
SMOKE_TIMEOUT = 360
# Part 12 (time to first sample) runs on its own, under a timeout of its own. Part 13
# (real programs: Django, aiohttp and callbacks.py on four interpreters) is not run here:
# its smoke run takes about 40 s, and tests/record/test_real_programs.py runs the same programs.
MAIN_PARTS = "1,2,3,4,5,6,7,9,10"
FIRST_SAMPLE_TIMEOUT = 300
PROFILERS = {"pybpfprof", "pybpfprof --no-bpf", "profiling.sampling cpu",
             "profiling.sampling wall"}


def run_smoke(tmp_path_factory, sid_root, parts, timeout):
    root, err = sid_root
    if err:
        pytest.fail(f"test interpreters unavailable: {err}")
    out = tmp_path_factory.mktemp("bench")
    env = dict(os.environ, PBP_BENCH_DIR=WL_DIR + "-bench")
    p = subprocess.run([sys.executable, str(REPO / "tools" / "bench" / "run.py"), "--smoke",
                        "--parts", parts, "--out", str(out)], capture_output=True, text=True,
                       timeout=timeout, env=env)
    assert p.returncode == 0, f"run.py --smoke failed ({p.returncode}):\n{p.stderr[-4000:]}"
    res = json.loads((out / "results.json").read_text())
    return out, res, p.stderr


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, profiler_bin, sid_root):
    return run_smoke(tmp_path_factory, sid_root, MAIN_PARTS, SMOKE_TIMEOUT)


@pytest.fixture(scope="module")
def smoke_first_sample(tmp_path_factory, profiler_bin, sid_root):
    return run_smoke(tmp_path_factory, sid_root, "12", FIRST_SAMPLE_TIMEOUT)


def finite(v, lo=-math.inf, hi=math.inf):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        and lo <= v <= hi


def test_bench_smoke_every_slowdown_row_has_numbers(smoke):
    _, res, log = smoke
    rows = res["slowdown"]["rows"]
    assert set(rows) == {"mixed", "8 threads", "300 frames"}, rows.keys()
    for target, table in rows.items():
        names = {r["config"].split(" @ ")[0] for r in table}
        assert names == PROFILERS | {"unprofiled"}, f"{target}: {names}"
        for r in table:
            where = f"{target} / {r['config']}"
            assert r["failed"] == 0, f"{where}: failed runs\n{log[-3000:]}"
            assert finite(r["median_s"], 0.001, 60), where
            assert finite(r["slowdown_pct"], -90, 1000), where
            if r["config"] == "unprofiled":
                continue
            assert finite(r["delivered"], 1), f"{where}: no samples delivered: {r}"
            assert finite(r["expected"], 1), where
            assert finite(r["prof_cpu_pct"], 0, 400), where
            assert finite(r["prof_us_per_sample"], 0), where
            assert finite(r["maxrss_mb"], 1, 4096), where
            if r["config"].startswith("pybpfprof @"):
                assert finite(r["in_target_pct"], 0, 100), where


def test_bench_smoke_cost_rows_have_numbers(smoke):
    _, res, log = smoke
    rows = res["cost"]["rows"]
    assert {r["axis"] for r in rows} == {"depth", "threads"}
    for r in rows:
        where = f"{r['axis']}={r['value']} {r['mode']}"
        assert not r.get("error") and r["failed"] == 0, f"{where}: {r}\n{log[-3000:]}"
        for key in ("delivered", "expected", "decode_ns_per_sample", "prof_us_per_sample",
                    "decoded_per_cpu_s", "maxrss_mb"):
            assert finite(r[key], 0) and r[key] > 0, f"{where}: {key}={r[key]!r}"
        assert finite(r["live_reads_per_sample"], 0), where
        if r["mode"] == "bpf":
            for key in ("bpf_ns_per_sample", "bpf_bytes_copied_per_sample", "in_target_pct"):
                assert finite(r[key], 0) and r[key] > 0, f"{where}: {key}={r[key]!r}"


def test_bench_smoke_accuracy_judges_every_profiler(smoke):
    _, res, log = smoke
    assert set(res["accuracy"]) == {"aba", "depth_walk"}
    for wl, rows in res["accuracy"].items():
        seen = set()
        for r in rows:
            assert "profiler" in r and not r.get("error"), f"{wl}: {r}\n{log[-3000:]}"
            seen.add(r["profiler"])
            if r.get("not_run"):
                continue
            where = f"{wl} {r['profiler']} @ {r['rate']}"
            assert r["samples"] > 0, f"{where}: no samples judged: {r}"
            assert finite(r["impossible_pct"], 0, 100), where
            assert finite(r["flagged_pct"], 0, 100), where
            assert sum(r["verdicts"].values()) == r["samples"], where
        assert seen == {"pybpfprof", "pybpfprof --no-bpf", "profiling.sampling wall"}, seen


def test_bench_smoke_scale_runs_or_says_why_not(smoke):
    _, res, _ = smoke
    sc = res["scale"]
    if sc.get("not_run"):
        assert "system-wide" in sc["not_run"]
        return
    for r in sc["rows"]:
        assert not r.get("error"), r
        assert finite(r["drops"], 0) and finite(r["maxrss_mb"], 1)
        assert finite(r["prof_cpu_pct"], 0, 400)
        assert finite(r["delivered"], 1) and finite(r["prof_us_per_sample"], 0)
        assert r["workers_sampled"] == r["processes"], r
        assert finite(r["follow_ms"], 0) and r["probes_sampled"] >= 1, r


def test_bench_smoke_wall_part_times_the_switch_storm_and_judges_waits(smoke):
    _, res, _ = smoke
    wall = res["wall"]
    assert set(wall["loads"]) == {"queue service", "lock storm"}, wall["loads"].keys()
    for load, rows in wall["loads"].items():
        assert set(rows) == {"unprofiled", "pybpfprof --mode wall",
                             "profiling.sampling wall"}, (load, rows.keys())
        for name, r in rows.items():
            assert r["errors"] == 0 and finite(r["wall_s"], 0), (load, name, r)
            assert finite(r["switches_per_s"], 1), (load, name, r)
        ours = rows["pybpfprof --mode wall"]
        assert finite(ours["switches"], 1) and finite(ours["bpf_ns_per_switch"], 0), ours
        assert ours["drops"] == 0, ours
    for name, acc in wall["accuracy"].items():
        assert "error" not in acc, (name, acc)
        assert set(acc["threads"]) == {"sleeper", "reader", "locker", "gil_a", "gil_b"}
        for t, row in acc["threads"].items():
            assert finite(row["truth_pct"], 0, 100.5), (name, t, row)
            if row["found_pct"] is not None:
                assert finite(row["found_pct"], 0, 100.5), (name, t, row)


def test_bench_smoke_async_part_judges_every_profiler(smoke):
    _, res, log = smoke
    a = res["async"]
    assert set(a["rows"]) == {"pybpfprof", "pybpfprof --async",
                              "profiling.sampling --async-aware"}, a["rows"].keys()
    for name, r in a["rows"].items():
        assert r["runs"] >= 1 and not r["errors"], f"{name}: {r}\n{log[-3000:]}"
        assert finite(r["samples"], 1), (name, r)
        assert finite(r["tasks_found"], 0, 3), (name, r)
        assert finite(r["prof_cpu_s"], 0), (name, r)
    for name in ("pybpfprof --async", "profiling.sampling --async-aware"):
        r = a["rows"][name]
        # Task-aware profilers name the burners; the plain one cannot.
        assert r["tasks_found"] >= 1, (name, r)
        assert finite(r["share_err_pts"], 0, 100) and finite(r["chains_right_pct"], 0, 100), \
            (name, r)
    ours = a["rows"]["pybpfprof --async"]
    assert finite(ours["bpf_ns"], 1) and finite(ours["decode_ns"], 1), ours


def test_bench_smoke_native_part_measures_both_versions(smoke):
    _, res, log = smoke
    rows = res["native"]["rows"]
    assert set(rows) == {f"{v} {p}" for v in ("3.13", "3.15")
                         for p in ("pybpfprof", "pybpfprof --native (dwarf)",
                                   "pybpfprof --native (fp)")}, rows.keys()
    for name, r in rows.items():
        assert r["runs"] >= 1 and not r["errors"], f"{name}: {r}\n{log[-3000:]}"
        assert finite(r["samples"], 1) and finite(r["bpf_ns"], 1), (name, r)
        assert finite(r["in_target_pct"], 0, 100), (name, r)
        if r["profiler"] == "pybpfprof":
            assert r["bytes"] is None and r["walk_us"] is None, (name, r)
            continue
        if r["profiler"].endswith("(fp)"):
            # 16 bytes a frame record and a 1 KiB copy; on 3.15 the walk runs from the
            # comparator down to libffi's first frame (no frame pointers there), and the
            # Python frames that called qsort follow as a cut; on 3.13 (none anywhere)
            # only the top frames are found, from the copy.
            assert finite(r["bytes"], 64, 4 * 1024) and finite(r["walk_us"], 0), (name, r)
            assert finite(r["matched_pct"] + r["cut_pct"], 50, 100.01), (name, r)
            if r["version"] == "3.15":
                assert finite(r["fp_records"], 4) and finite(r["frames"], 5), (name, r)
            continue
        # A qsort stack reaches _start in a few KiB; most walks must get there.
        assert finite(r["bytes"], 512, 64 * 1024) and finite(r["walk_us"], 0), (name, r)
        assert finite(r["frames"], 5) and finite(r["outermost_pct"], 50, 100), (name, r)
        assert finite(r["matched_pct"], 50, 100), (name, r)


def test_bench_smoke_twins_part_sets_every_profiler_against_the_unprofiled_pair(smoke):
    _, res, log = smoke
    rows = res["twins"]["rows"]
    assert set(rows) == {"3.15, 100 frames", "3.11, 100 frames", "3.13, 300 frames"}, \
        rows.keys()
    for group, table in rows.items():
        names = {r["config"].split(" @ ")[0] for r in table}
        # The peer only attaches to its own version.
        want = {"unprofiled", "pybpfprof"} | ({"pybpfprof --no-bpf", "profiling.sampling wall"}
                                              if group.startswith("3.15") else set())
        assert names == want, f"{group}: {names}"
        for r in table:
            where = f"{group} / {r['config']}"
            assert r["failed"] == 0, f"{where}: {r.get('errors')}\n{log[-3000:]}"
            # A twin's work is never negative, so neither is the ratio, and no slowdown
            # passes 100 %; a loaded machine may put them anywhere else.
            assert finite(r["ratio"], 0) and finite(r["slowdown_pct"], hi=100), where
            if r["config"] == "unprofiled":
                continue
            assert finite(r["samples"], 1), f"{where}: no samples: {r}"
            assert finite(r["lost_us_per_sample"]), where
            assert finite(r["prof_cpu_pct"], 0, 400) and finite(r["prof_us_per_sample"], 0), where
            if r["config"].startswith("pybpfprof"):
                assert finite(r["decode_ns"], 0) and r["decode_ns"] > 0, where
            if r["config"].startswith("pybpfprof @"):
                assert finite(r["bpf_ns"], 0) and r["bpf_ns"] > 0, where


def test_bench_smoke_saturated_part_measures_every_profiler_and_the_host_wide_ones(smoke):
    _, res, log = smoke
    sat = res["saturated"]
    rows = {r["config"]: r for r in sat["rows"]}
    assert set(rows) == {"unprofiled", "pybpfprof @ 1000", "pybpfprof --native @ 1000",
                         "pybpfprof --no-bpf @ 1000",
                         "profiling.sampling wall @ 1000", "pybpfprof record -a",
                         "pybpfprof agent", "pybpfprof record -a --clock tick"}, rows.keys()
    assert rows["unprofiled"]["failed"] == 0 and finite(rows["unprofiled"]["work"], 1), \
        f"{rows['unprofiled']}\n{log[-3000:]}"
    for name, r in rows.items():
        if name == "unprofiled":
            continue
        assert r["failed"] == 0, f"{name}: {r.get('errors')}\n{log[-3000:]}"
        # Work lost passes 100 % never, but a loaded machine can give the unprofiled runs
        # beside a run less than half its work: no lower bound.
        assert finite(r["lost_pct"], hi=100) and finite(r["work"], 1), (name, r)
        assert finite(r["samples"], 1) and finite(r["machine_us_per_sample"]), (name, r)
        assert finite(r["prof_cpu_pct"], 0, 400) and finite(r["maxrss_mb"], 1, 4096), (name, r)


def test_bench_smoke_writes_report_and_chart(smoke):
    out, res, _ = smoke
    report = (out / "report.md").read_text()
    for heading in ("## Goals", "## 1.", "## 2.", "## 3.", "## 4.", "## 5.", "## 6.", "## 7.",
                    "## 8.", "## 9.", "## 10.", "## 11."):
        assert heading in report, f"report lacks {heading!r}"
    assert "SMOKE RUN" in report
    assert len(res["goals"]) >= 6
    issue19 = [g for g, _, _ in res["goals"] if g.startswith(("saturated machine",
                                                               "in-target"))]
    assert len(issue19) == 5, issue19
    svg = ET.parse(out / "chart.svg").getroot()
    assert svg.tag.endswith("svg")
    assert any(el.tag.endswith("polyline") for el in svg.iter()), "chart has no line"
    assert not (out / "tmp").exists(), "scratch files left behind"


def test_bench_readme_step_writes_the_report_and_replaces_only_the_verdicts(smoke, tmp_path):
    out, _, _ = smoke
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n## Performance\n\nold\n\n## Layout\n\nkept\n")
    report = tmp_path / "report.md"
    report.write_text((out / "report.md").read_text().replace("SMOKE RUN", "smoke run"))
    (tmp_path / "docs").mkdir()
    p = subprocess.run([sys.executable, str(REPO / "tools" / "bench" / "readme_perf.py"),
                        str(report), str(readme)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    text = readme.read_text()
    assert "old" not in text and "## Layout\n\nkept" in text
    assert "[docs/performance.md](docs/performance.md)" in text
    assert "| goal | result |" in text, "the verdicts belong in README"
    assert "### 1. " not in text, "the tables belong in docs/performance.md"
    doc = (tmp_path / "docs" / "performance.md").read_text()
    assert doc.startswith("# Performance\n") and "sudo make bench" in doc
    assert "## Goals" in doc and "## 1. " in doc
    smoke_report = tmp_path / "smoke.md"
    smoke_report.write_text((out / "report.md").read_text())
    p = subprocess.run([sys.executable, str(REPO / "tools" / "bench" / "readme_perf.py"),
                        str(smoke_report), str(readme)], capture_output=True, text=True)
    assert p.returncode != 0, "a smoke run's report must not replace the README section"
    assert (tmp_path / "docs" / "performance.md").read_text() == doc


def test_bench_smoke_first_sample_part_times_every_profiler_idle_and_busy(smoke_first_sample):
    out, res, log = smoke_first_sample
    rows = res["first_sample"]["rows"]
    configs = {"pybpfprof record -p", "pybpfprof record -p --mode wall",
               "pybpfprof record -p --native", "profiling.sampling attach --mode cpu",
               "profiling.sampling attach --mode wall", "pybpfprof record -- CMD",
               "pybpfprof record --mode wall -- CMD", "profiling.sampling run --mode cpu",
               "profiling.sampling run --mode wall"}
    assert {(r["load"], r["config"]) for r in rows} == \
        {(load, c) for load in ("idle", "busy") for c in configs}, rows
    for r in rows:
        where = f"{r['load']} / {r['config']}"
        assert r["failed"] == 0, f"{where}: {r['errors']}\n{log[-3000:]}"
        # A profile that held no phase has no figure, and says so.
        assert r["unsampled"] == 0 or r["phase_ms"] is None, where
        if r["phase_ms"] is not None:
            assert finite(r["phase_ms"], -100), f"{where}: {r}"
        if r["config"].startswith("pybpfprof"):
            # Its own -v line: taken no later than received, both after its start.
            assert finite(r["log_taken_ms"], 0) and finite(r["log_received_ms"], 0), where
            assert r["log_taken_ms"] <= r["log_received_ms"], where
            assert finite(r["cpu_ms"], 1), where
        else:
            assert r["log_taken_ms"] is None and r["cpu_ms"] is None, where
    ours = [r for r in rows if r["config"] == "pybpfprof record -p"]
    assert all(r["phase_ms"] is not None for r in ours), ours
    report = (out / "report.md").read_text()
    assert "## 12. Time to first sample" in report
    assert any(g.startswith("record -p: first sample") for g, _, _ in res["goals"])


def test_bench_smoke_reading_side_times_every_conversion_beside_the_peer(tmp_path_factory,
                                                                          profiler_bin,
                                                                          sid_root):
    out, res, log = run_smoke(tmp_path_factory, sid_root, "14", FIRST_SAMPLE_TIMEOUT)
    rd = res["reading"]
    assert not rd["errors"], rd["errors"]
    jobs = {(r["who"], r["what"]) for r in rd["rows"]}
    assert ("pybpfprof", "report") in jobs and ("CPython 3.15", "replay --pstats") in jobs, jobs
    assert len([j for j in jobs if j[0] == "pybpfprof"]) == 8, jobs
    for r in rd["rows"]:
        assert r["error"] is None and finite(r["seconds"], 0), f"{r}\n{log[-3000:]}"
    assert "## 14. The reading side" in (out / "report.md").read_text()
    assert any(g.startswith("reading side:") for g, _, _ in res["goals"])
