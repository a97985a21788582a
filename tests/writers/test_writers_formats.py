# SPDX-License-Identifier: GPL-2.0-only
"""The speedscope, pprof and chrome writers, read back by parsers that share no code
with them: speedscope files against speedscope's own JSON schema (from its npm
release, installed by tools/install-deps.sh test), pprof files through `protoc
--decode` with our copy of the public schema (tests/tools/profile.proto), chrome
traces by the rules trace viewers rely on.

Two sources: the fixed profile of tests/unit/test_writers.c, where every format is
compared with the collapsed output of the same aggregate, and real runs of workloads,
compared with what the workload knows about itself (stacks, lines, the 3:1 ratio,
thread ids). The browser-side check (speedscope loading each format) is in
test_writers_browser.py.
"""

import json
import re
import subprocess
import sys
from collections import Counter

import pytest

from lib.paths import REPO
from lib.harness import RATIO_CLOCK, Once, fraction, spent_fa_share
from lib.units import SAN_ENV, assert_clean, san_binary
from lib.writers import (DURATION, FIXED_PERIOD, RATE, build_plain, check_chrome,
                         check_pprof_header, check_speedscope, collapsed_counts, record,
                         writer_output)

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile, one  # noqa: E402

PERIOD = 10**9 // RATE


# --------------------------------------------------------------------------------------
# Readers of the fixed profile and the real runs (lib/writers.py has the rules)

def collapsed_name(name, file, line):
    """A frame as the collapsed writer prints it (';' and newlines made '_')."""
    def clean(s):
        return s.replace(";", "_").replace("\n", "_")
    if not file:
        return clean(name)
    return f"{clean(name)} ({clean(file)}{f':{line}' if line else ''})"


def speedscope_counts(data, period):
    """{(profile name, stack of frame dicts as tuples): samples}."""
    frames = data["shared"]["frames"]
    out = Counter()
    for p in data["profiles"]:
        for s, w in zip(p["samples"], p["weights"]):
            if s:
                stack = tuple((frames[i]["name"], frames[i].get("file"),
                               frames[i].get("line")) for i in s)
                out[(p["name"], stack)] += w // period
    return out


def chrome_self_time(events):
    """{event name: microseconds with no event inside} of one thread's events."""
    out = Counter()
    open_ = []
    for e in events:
        while open_ and e["ts"] >= open_[-1]["ts"] + open_[-1]["dur"] - 1e-6:
            open_.pop()
        out[e["name"]] += e["dur"]
        if open_:
            out[open_[-1]["name"]] -= e["dur"]
        open_.append(e)
    return +out


# --------------------------------------------------------------------------------------
# The fixed profile: every format against the collapsed output of the same aggregate

@pytest.fixture(scope="module")
def py(py_edge):
    """What a run gives a writer does not depend on the interpreter's layout: the oldest and the newest interpreter (EDGE_VERSIONS)."""
    return py_edge


@pytest.fixture(scope="module")
def fixed():
    binary = build_plain()
    return {fmt: writer_output(binary, fmt) for fmt in ("collapsed", "speedscope", "pprof",
                                                         "chrome")}


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_json_strings_are_escaped_and_valid_utf8(build):
    if build == "plain":
        p = subprocess.run(["make", "-C", str(REPO), "build/tests/test_json"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        p = subprocess.run([str(REPO / "build" / "tests" / "test_json")],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
    else:
        p = subprocess.run([san_binary("tests/test_json")], capture_output=True,
                           text=True, timeout=60, env=SAN_ENV)
        assert_clean(p, "test_json")


def test_pprof_of_fixed_profile_matches_collapsed(fixed):
    prof = Profile.parse(fixed["pprof"])
    check_pprof_header(prof, FIXED_PERIOD)
    assert one(prof.msg, "time_nanos") == 1700000000123456789
    assert one(prof.msg, "duration_nanos") == 1500000000
    assert [prof.s(i) for i in prof.msg["comment"]] == ["pid 100 (python3 app.py)"]
    merged = Counter()
    for stack, values, labels in prof.samples():
        merged[";".join(collapsed_name(*f) for f in reversed(stack))] += values[0]
    want = collapsed_counts(fixed["collapsed"].decode())
    assert dict(merged) == want


def test_pprof_of_fixed_profile_labels_threads(fixed):
    prof = Profile.parse(fixed["pprof"])
    labels = Counter()
    for stack, values, lab in prof.samples():
        labels[tuple(sorted(lab.items()))] += values[0]
    assert labels == {
        (("pid", 100), ("thread_id", 100), ("thread_name", "python3")): 80,
        (("pid", 100), ("thread_id", 101), ("thread_name", "worker-1")): 20,
        (("pid", 200), ("thread_id", 200)): 24,
    }
    fn = {prof.s(one(f, "name")): prof.s(one(f, "filename"))
          for f in prof.msg["function"]}
    assert fn["[incomplete]"] == "" and fn["thread 101"] == ""
    assert fn['f\u00e9;"q"'] == "<frozen a;b>"


def test_speedscope_of_fixed_profile_follows_schema_and_timeline(fixed):
    data = json.loads(fixed["speedscope"])
    check_speedscope(data, FIXED_PERIOD)
    assert data["name"] == "pid 100 (python3 app.py)"
    assert [p["name"] for p in data["profiles"]] == [
        "pid 100 thread 100 (python3)", "pid 100 thread 101 (worker-1)", "pid 200 thread 200"]
    # The timeline puts thread 100's samples at 0,10,20,40,80,90,120 ms: gaps at 30-40,
    # 50-80 and 100-120 ms.
    main = data["profiles"][0]
    assert [w for s, w in zip(main["samples"], main["weights"]) if not s] == [
        10_000_000, 30_000_000, 20_000_000]
    # Per stack, as many samples as the aggregate holds: the timeline's counts.
    got = Counter()
    for (_, stack), n in speedscope_counts(data, FIXED_PERIOD).items():
        got[";".join(collapsed_name(*f) for f in stack)] += n
    assert got == {"process 100 python3 app.py;<module> (/srv/app.py:40);"
                   "main (/srv/app.py:31);work (/srv/app.py:12)": 5,
                   "process 100 python3 app.py;<module> (/srv/app.py:40);"
                   "main (/srv/app.py:32);dumps (/usr/lib/python3.11/json/__init__.py:231)": 2,
                   "process 100 python3 app.py;thread 101;Worker.run (/srv/app.py:20);"
                   "get (/srv/venv/lib/python3.11/site-packages/requests/api.py:73)": 2,
                   "process 100 python3 app.py;thread 101;[incomplete];"
                   "<lambda> (/srv/app.py)": 1,
                   'process 200 python3 -c "x<y & z";<module> (<string>:1);'
                   'f\u00e9_"q" (<frozen a_b>:7)': 2,
                   'process 200 python3 -c "x<y & z";[no Python frame]': 1}


def test_chrome_of_fixed_profile_follows_trace_rules(fixed):
    data = json.loads(fixed["chrome"])
    threads = check_chrome(data)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in data["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {(100, 100): "python3", (100, 101): "worker-1", (200, 200): "thread 200"}
    # Leaf time per frame is samples x period (each sample lasts one period here).
    leaf = Counter()
    for events in threads.values():
        leaf.update(chrome_self_time(events))
    assert leaf == {"work (/srv/app.py:12)": 50000, "dumps (/usr/lib/python3.11/json/"
                    "__init__.py:231)": 20000,
                    "get (/srv/venv/lib/python3.11/site-packages/requests/api.py:73)": 20000,
                    "<lambda> (/srv/app.py)": 10000, 'f\u00e9;"q" (<frozen a;b>:7)': 20000,
                    "[no Python frame]": 10000}


# --------------------------------------------------------------------------------------
# Real runs

@pytest.fixture(scope="module")
def ratio_pprof(py, mode, module_tmp, profiler_bin):
    return Once(lambda: record(module_tmp / f"{py.id}-{mode}-pprof", profiler_bin, py,
                               "ratio", "pprof", mode, "--clock", RATIO_CLOCK[mode]))


@pytest.fixture(scope="module")
def threads_runs(py, mode, module_tmp, profiler_bin):
    return {fmt: Once(lambda fmt=fmt: record(module_tmp / f"{py.id}-{mode}-{fmt}",
                                             profiler_bin, py, "threads", fmt, mode))
            for fmt in ("speedscope", "chrome")}


def test_pprof_run_header_period_and_times(py, ratio_pprof):
    rec = ratio_pprof.get()
    prof = Profile.load(rec.output())
    check_pprof_header(prof, PERIOD)
    start, end = rec.wall
    assert start <= one(prof.msg, "time_nanos") <= end, (rec.wall, prof.msg["time_nanos"])
    assert 0.8 * DURATION * 1e9 <= one(prof.msg, "duration_nanos") <= end - start


def test_pprof_run_has_the_workloads_stacks_lines_and_ratio(py, ratio_pprof):
    rec = ratio_pprof.get()
    prof = Profile.load(rec.output())
    leaf = Counter()
    on_burn = Counter()
    good = Counter()
    for stack, values, labels in prof.samples():
        names = [f[0] for f in stack]
        if "[incomplete]" in names or stack[0][0] not in ("fa", "fb"):
            continue
        fn = stack[0][0]
        expected = rec.truth["stacks"][fn]  # root first
        leaf[fn] += values[0]
        if stack[0][2] == rec.truth["lines"][f"{fn}_burn"]:
            on_burn[fn] += values[0]
        frames = [(f[0], f[1]) for f in reversed(stack)]
        if frames == [(e["qualname"], e["filename"]) for e in expected] and \
                [f[2] for f in reversed(stack)][:-1] == [e["line"] for e in expected][:-1]:
            good[fn] += values[0]
        assert labels.get("pid") == rec.pid, labels
        assert labels.get("thread_id") == rec.truth["main_tid"], labels
        assert labels.get("thread_name") == rec.truth["main_thread_name"], labels
    fa, fb = leaf["fa"], leaf["fb"]
    assert fa + fb >= 300, f"too few samples (fa={fa}, fb={fb})"
    for fn in ("fa", "fb"):
        assert fraction(good[fn], leaf[fn]) >= 0.99, \
            f"{fn}: {good[fn]}/{leaf[fn]} samples have the workload's stack"
        assert fraction(on_burn[fn], leaf[fn]) >= 0.95, \
            f"{fn}: {on_burn[fn]}/{leaf[fn]} samples on the burn line"
    share = fa / (fa + fb)
    want = spent_fa_share(rec.workload, rec.truth)
    assert abs(share - want) <= 0.05, (
        f"fa share {share:.3f} (fa={fa}, fb={fb}), the workload spent {want:.3f} +- 0.05")


def worker_tids(truth):
    return {t["tid"]: t["function"] for t in truth["threads"].values()}


def test_speedscope_run_has_a_profile_per_thread_with_its_worker(py, threads_runs):
    rec = threads_runs["speedscope"].get()
    data = json.loads(rec.output().read_text())
    check_speedscope(data, PERIOD)
    frames = data["shared"]["frames"]
    by_tid = {}
    for p in data["profiles"]:
        m = re.match(r"^pid (\d+) thread (\d+)( \(.*\))?$", p["name"])
        assert m and int(m[1]) == rec.pid, p["name"]
        by_tid[int(m[2])] = {frames[i]["name"] for s in p["samples"] for i in s}
    for tid, fn in worker_tids(rec.truth).items():
        assert tid in by_tid and fn in by_tid[tid], \
            f"{fn} (thread {tid}) not in its profile; profiles: {sorted(by_tid)}"
        others = [t for t, names in by_tid.items() if t != tid and fn in names]
        assert not others, f"{fn} appears in the profiles of threads {others}"
    script = [f for f in frames if re.match(r"^worker_\d+$", f["name"])]
    assert script and all(f.get("file", "").endswith("/threads.py") for f in script)


def test_chrome_run_has_a_track_per_thread_with_its_worker(py, threads_runs):
    rec = threads_runs["chrome"].get()
    data = json.loads(rec.output().read_text())
    threads = check_chrome(data)
    for tid, fn in worker_tids(rec.truth).items():
        events = threads.get((rec.pid, tid), [])
        names = {e["name"].split(" (")[0] for e in events}
        assert fn in names, f"{fn} not on its track {tid}: {sorted(names)[:20]}"
        busy = sum(e["dur"] for e in events if e["name"].startswith(fn + " ("))
        assert busy > 0
        for key, evs in threads.items():
            if key != (rec.pid, tid):
                assert not any(e["name"].startswith(fn + " (") for e in evs), \
                    f"{fn} on the track of {key}"
