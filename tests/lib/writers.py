# SPDX-License-Identifier: GPL-2.0-only
"""The writers' output and the readers that check it, sharing no code with the writers:
the fixed profile of tests/unit/test_writers.c in each format and its golden files in
tests/golden/, speedscope files against speedscope's own JSON schema, pprof files
through protoc (tests/tools/pprof_text.py), chrome traces by the rules trace viewers
rely on; and a workload recorded in one format."""

import gzip
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from .paths import PROFILER_GRACE, REPO
from .interpreters import MODES
from .harness import BAD_OUTPUT, Harness, Run, Workload
from .units import SAN_ENV, assert_clean, san_binary, unit_binary

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import one  # noqa: E402

GOLDEN = REPO / "tests" / "golden"

# format -> golden file; pprof is compared after gunzip, since gzip is not the format.
FORMATS = {
    "collapsed": "collapsed.txt",
    "svg": "svg.svg",
    "html": "html.html",
    "speedscope": "speedscope.json",
    "pprof": "pprof.pb",
    "chrome": "chrome.trace.json",
}

SPEEDSCOPE_SCHEMA = (REPO / ".cache-npm" / "node_modules" / "speedscope" / "dist" /
                     "release" / "file-format-schema.json")
# record()'s file suffixes, rate (Hz) and duration (s).
SUFFIX = {"speedscope": ".speedscope.json", "pprof": ".pb.gz", "chrome": ".trace.json"}
RATE = 999
DURATION = 3
FIXED_PERIOD = 10_000_000          # the fixed profile's: 100 Hz
COLLAPSED_LINE = re.compile(r"^(?P<stack>.+) (?P<count>\d+)$")


def build_plain():
    return unit_binary("test_writers", "plain")


def writer_output(binary, fmt, env=None, args=()):
    p = subprocess.run([binary, fmt, *args], capture_output=True, timeout=60, env=env)
    if env is not None:
        assert_clean(subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(
            "latin-1"), p.stderr.decode("latin-1")), f"test_writers {fmt}")
    assert p.returncode == 0, f"test_writers {fmt}: exit {p.returncode}\n{p.stderr!r}"
    return gzip.decompress(p.stdout) if fmt == "pprof" else p.stdout


def check_golden(fmt, build, golden_dir, args=()):
    """test_writers @fmt @args of @build (plain or sanitizers) byte for byte against its
    golden file in @golden_dir; PBP_UPDATE_GOLDEN=1 records it first (plain build)."""
    if build == "plain":
        out = writer_output(build_plain(), fmt, args=args)
    else:
        out = writer_output(san_binary("tests/test_writers"), fmt, env=SAN_ENV, args=args)
    golden = golden_dir / FORMATS[fmt]
    if os.environ.get("PBP_UPDATE_GOLDEN") == "1" and build == "plain":
        golden_dir.mkdir(exist_ok=True)
        golden.write_bytes(out)
    assert golden.exists(), f"{golden} is missing (record it with PBP_UPDATE_GOLDEN=1)"
    expected = golden.read_bytes()
    assert out == expected, (
        f"{' '.join([fmt, *args])} output differs from {golden}:\n--- got ---\n"
        f"{out[:3000]!r}\n--- expected ---\n{expected[:3000]!r}")


# --------------------------------------------------------------------------------------
# Readers and rules shared by the fixed profile and the real runs

def collapsed_counts(text):
    """{stack string: count} of collapsed output."""
    out = {}
    for line in text.splitlines():
        m = COLLAPSED_LINE.match(line)
        assert m, f"malformed collapsed line {line!r}"
        out[m["stack"]] = int(m["count"])
    return out


def speedscope_schema_errors(data):
    import jsonschema
    assert SPEEDSCOPE_SCHEMA.exists(), \
        f"{SPEEDSCOPE_SCHEMA} missing: run tools/install-deps.sh test"
    schema = json.loads(SPEEDSCOPE_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(data)][:10]


def check_speedscope(data, period):
    """Schema, then what the schema cannot say: indices in range, weights positive, a
    sample's weight is one period, the time range is what the weights add up to."""
    errors = speedscope_schema_errors(data)
    assert not errors, "speedscope file fails the schema:\n" + "\n".join(errors)
    assert data["exporter"] == "pybpfprof"
    nframes = len(data["shared"]["frames"])
    assert 0 <= data.get("activeProfileIndex", 0) < len(data["profiles"])
    names = [p["name"] for p in data["profiles"]]
    assert len(set(names)) == len(names), f"profile names repeat: {names}"
    for p in data["profiles"]:
        assert p["type"] == "sampled" and p["unit"] == "nanoseconds", p["name"]
        assert len(p["samples"]) == len(p["weights"]), p["name"]
        assert all(w > 0 for w in p["weights"]), f"{p['name']}: weights not positive"
        assert all(0 <= i < nframes for s in p["samples"] for i in s), p["name"]
        assert all(w == period for s, w in zip(p["samples"], p["weights"]) if s), \
            f"{p['name']}: a sample weighs other than one period"
        assert p["endValue"] - p["startValue"] == sum(p["weights"]), p["name"]


def check_chrome(data):
    """The rules trace viewers rely on; returns {(pid, tid): [X events]}."""
    assert isinstance(data.get("traceEvents"), list)
    threads = defaultdict(list)
    thread_names = Counter()
    for e in data["traceEvents"]:
        for key in ("ph", "ts", "pid", "tid"):
            assert key in e, f"event without {key}: {e}"
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name"), e
            assert isinstance(e["args"]["name"], str) and e["args"]["name"], e
            if e["name"] == "thread_name":
                thread_names[(e["pid"], e["tid"])] += 1
            continue
        assert e["ph"] == "X", f"unexpected event type: {e}"
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert isinstance(e["name"], str) and e["name"], e
        threads[(e["pid"], e["tid"])].append(e)
    assert all(n == 1 for n in thread_names.values()), f"thread_name repeats: {thread_names}"
    for key, events in threads.items():
        assert thread_names[key] == 1, f"thread {key} has events but no thread_name"
        ts = [e["ts"] for e in events]
        assert ts == sorted(ts), f"thread {key}: timestamps go back in time"
        # Complete events on one thread must nest: each inside or after the open ones.
        open_ends = []
        for e in events:
            while open_ends and e["ts"] >= open_ends[-1] - 1e-6:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            assert not open_ends or end <= open_ends[-1] + 1e-6, \
                f"thread {key}: {e} overlaps its parent without nesting"
            open_ends.append(end)
    return threads


def check_pprof_header(prof, period):
    assert prof.strings and prof.strings[0] == "", "string_table[0] must be \"\""
    assert prof.value_types() == [("samples", "count"), ("cpu", "nanoseconds")]
    assert prof.value_types("period_type") == [("cpu", "nanoseconds")]
    assert one(prof.msg, "period") == period
    for kind in ("function", "location"):
        ids = [one(m, "id") for m in prof.msg.get(kind, [])]
        assert all(ids), f"a {kind} has id 0"
        assert len(set(ids)) == len(ids), f"{kind} ids repeat"
    for stack, values, labels in prof.samples():
        assert len(values) == 2 and values[0] > 0 and values[1] == values[0] * period, values
        assert stack, "a sample without locations"


# --------------------------------------------------------------------------------------
# A workload recorded in one format

@dataclass
class Recorded:
    truth: dict
    run: Run
    pid: int
    wall: tuple
    workload: Workload      # time.time_ns() before the profiler started and after it ended

    def output(self):
        run = self.run
        assert run.rc == 0, f"profiler failed\n{run.describe()}"
        assert not BAD_OUTPUT.search(run.stderr), f"crash output\n{run.describe()}"
        assert run.out_path.exists(), f"{run.out_path} not written\n{run.describe()}"
        return run.out_path


def record(tmpdir, profiler, interp, workload, fmt, mode, *args):
    h = Harness(tmpdir, profiler)
    try:
        w = h.start_workload(interp, workload, *args)
        out = Path(tmpdir) / f"profile{SUFFIX[fmt]}"
        start = time.time_ns()
        run = h.run_profiler(["record", "-p", w.pid, "-o", out, "-f", fmt, "-r", RATE,
                              "-d", DURATION] + MODES[mode], DURATION + PROFILER_GRACE,
                             out=out)
        end = time.time_ns()
        if w.proc.poll() is not None:
            pytest.fail(f"workload {workload} died while profiled:\n{w.output()}")
    finally:
        h.close()
    return Recorded(w.truth, run, w.pid, (start, end), w)
