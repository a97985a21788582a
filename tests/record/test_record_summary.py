# SPDX-License-Identifier: GPL-2.0-only
"""record's summary line on stderr: its numbers add up and each says what it counts.

- "N samples" are the profile's stacks: complete + incomplete == N, in wall mode on CPU
  + off CPU == N too, and N is what --stats-file calls samples (in cpu mode on the
  timer, also the collapsed profile's total). Threads blocked when the profile ends
  are read once more to charge their open waits; those readings count once, as the
  samples they become, not as the decoder's work.
- Ticks delivered are counted apart from waits, against the expected ticks.
- Live sampling (--no-bpf) adds up the same way.
- One process is "1 process", not "1 processes".
- -vv prints libbpf's lines with one "libbpf: " prefix, not two.
"""

import re
import uuid

from lib.paths import PROFILER_GRACE
from lib.collapsed import total

SUMMARY = re.compile(
    r"^pybpfprof: (?P<n>\d+) samples? (?:\((?P<on>\d+) on CPU, (?P<off>\d+) off CPU\) )?"
    r"in [\d.]+ s from (?P<src>[^:]+): (?P<complete>\d+) complete, "
    r"(?P<incomplete>\d+) incomplete(?:, (?P<left>\d+) more left out by \S+)?;(?P<rest>.*)$",
    re.M)
WALL = re.compile(r"^pybpfprof: [\d.]+ s on CPU, [\d.]+ s off CPU.*from (\d+) waits?$", re.M)


def summary(run):
    m = SUMMARY.search(run.stderr)
    assert m, f"no summary line of the expected form\n{run.describe()}"
    return {k: (int(v) if v and v.isdigit() else v) for k, v in m.groupdict().items()}


def record(harness, pid, args, seconds):
    tag = uuid.uuid4().hex[:6]
    out, st = harness.tmp / f"sum-{tag}.txt", harness.tmp / f"sum-{tag}.json"
    run = harness.run_profiler(["record", "-p", pid, "-d", seconds, "-o", out,
                                "--stats-file", st] + args,
                               timeout=seconds + PROFILER_GRACE, out=out, stats=st)
    return run, run.check_ok(), run.stats()


def check_adds_up(s, st, run):
    assert s["complete"] + s["incomplete"] == s["n"], f"{s}\n{run.describe()}"
    assert st["samples"] == s["n"] and st["samples_decoded"] == s["complete"] and \
        st["samples_incomplete"] == s["incomplete"], f"{s} against the stats file {st}"
    assert sum(st["incomplete_reasons"].values()) == st["samples_incomplete"], st
    assert (s["left"] or 0) == st["samples_filtered"], f"{s} {st}"


def test_wall_summary_adds_up_with_threads_blocked_at_the_end(harness, py311):
    """Three threads are blocked from before the start to after the end: their open
    waits are charged from a last reading of every thread, which the summary counted
    as complete samples beside the records delivered (complete > samples)."""
    w = harness.start_workload(py311, "blocked", "--go", harness.tmp / "never", seconds=120)
    run, _, st = record(harness, w.pid, ["--mode", "wall", "-r", 199], 2)
    s = summary(run)
    check_adds_up(s, st, run)
    assert s["on"] + s["off"] == s["n"], s
    assert st["off_cpu_open_waits"] >= 3, st
    # Every wait (records and open ones) became an off-CPU sample.
    waits = int(WALL.search(run.stderr).group(1))
    assert waits == st["off_cpu_records"] == s["off"], f"{s} {st}\n{run.describe()}"
    m = re.search(r"(\d+) of ~(\d+) expected ticks delivered", s["rest"])
    assert m and int(m.group(1)) == st["ticks_delivered"] and \
        int(m.group(2)) == st["samples_expected"], f"{s}\n{run.describe()}"


def test_cpu_summary_counts_the_profiles_samples(harness, py311):
    w = harness.start_workload(py311, "ratio")
    run, prof, st = record(harness, w.pid, ["-r", 499], 2)
    s = summary(run)
    check_adds_up(s, st, run)
    assert s["n"] == total(prof) > 0, f"{s}: the profile holds {total(prof)}"
    assert s["on"] is None and "ticks delivered" in s["rest"], s
    assert s["src"].startswith(f"pid {w.pid} (Python 3.11"), s


def test_live_summary_counts_the_profiles_samples(harness, py311):
    w = harness.start_workload(py311, "ratio")
    run, prof, st = record(harness, w.pid, ["--no-bpf", "-r", 199], 2)
    s = summary(run)
    check_adds_up(s, st, run)
    assert s["n"] == total(prof) > 0, f"{s}: the profile holds {total(prof)}"
    assert "read from user space" in s["rest"] and "ticks taken" in s["rest"], s


def test_system_wide_summary_says_1_process(harness, py311):
    w = harness.start_workload(py311, "ratio")
    out = harness.tmp / "one.txt"
    run = harness.run_profiler(["-a", "--pid-filter", w.pid, "-d", 2, "-r", 199, "-o", out],
                               timeout=2 + PROFILER_GRACE, out=out)
    run.check_ok()
    s = summary(run)
    assert s["src"].startswith("1 process (Python 3.11"), f"{s}\n{run.describe()}"
    assert "1 processes" not in run.stderr, run.describe()
    assert s["complete"] + s["incomplete"] == s["n"], s


def test_debug_output_has_one_libbpf_prefix(harness, py311):
    w = harness.start_workload(py311, "ratio")
    run, _, _ = record(harness, w.pid, ["-vv"], 1)
    assert "pybpfprof: libbpf: " in run.stderr, run.describe()
    assert "libbpf: libbpf:" not in run.stderr, \
        "\n".join(l for l in run.stderr.splitlines() if "libbpf: libbpf:" in l)[:2000]
