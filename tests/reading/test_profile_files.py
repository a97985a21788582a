# SPDX-License-Identifier: GPL-2.0-only
"""Record once, read later: one run written in every format and as a profile file
(.pbp), then `convert` of that file must give each format's bytes exactly, on CPU and
wall profiles, with threads, tasks, C frames and from user space; and `report` of it
must give the shares the workloads measured of themselves and the counts of the
collapsed file the same run wrote.

The ratio workload times its two burns (fa three times fb's iterations); waits.py has
threads that each spend their time one known way, timed around their calls."""

import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from lib.collapsed import parse_collapsed, parse_frame
from lib.harness import Harness, Once, sibling, spent_fa_share
from lib.interpreters import make_interp
from lib.paths import RUN_DIR
from lib.report import parse_report, rows_by_tid
from lib.waits import profile_waits

# Every format record writes, by the suffix that names it.
SUFFIXES = [".txt", ".svg", ".html", ".speedscope.json", ".pb.gz", ".trace.json", ".pbp"]
SECONDS = 2
RATE = 997
SHARE_POINTS = 5.0


def outputs(base):
    """-o for every format, files named @base plus each suffix."""
    return [a for s in SUFFIXES for a in ("-o", f"{base}{s}")]


def record_all(tmpdir, profiler, interp, workload, extra=(), go=False, args=()):
    """@workload recorded for SECONDS into every format at once: (run, base path)."""
    h = Harness(tmpdir, profiler)
    try:
        gofile = f"{RUN_DIR}/go-{uuid.uuid4().hex[:8]}"
        w = h.start_workload(interp, workload, *(["--go", gofile] if go else []), *args,
                             seconds=60, wait=not go)
        if go:
            deadline = time.monotonic() + 60
            while not interp.host_path(gofile + ".ready").exists():
                assert w.proc.poll() is None and time.monotonic() < deadline, w.output()
                time.sleep(0.02)
            interp.host_path(gofile).touch()
        base = Path(tmpdir) / f"{workload}-{w.pid}"
        run = h.run_profiler(["record", "-p", w.pid, "-d", SECONDS, "-r", RATE,
                              *outputs(base), *extra], SECONDS + 60)
        assert run.rc == 0, run.describe()
        assert w.proc.poll() is None, f"the workload died while profiled:\n{w.output()}"
    finally:
        h.close()
    return run, base


def convert_each(profiler, base, tmpdir):
    """Every format converted from @base.pbp, against what record wrote: the formats
    whose bytes differ."""
    wrong = []
    for s in SUFFIXES:
        out = Path(tmpdir) / f"converted{s}"
        p = subprocess.run([profiler, "convert", f"{base}.pbp", "-o", out],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"convert to {s}: exit {p.returncode}\n{p.stderr}"
        direct = Path(f"{base}{s}").read_bytes()
        assert direct, f"record wrote an empty {s}"
        if out.read_bytes() != direct:
            wrong.append(f"{s}: {len(out.read_bytes())} bytes converted, {len(direct)} "
                         f"written by record")
    return wrong


CASES = {
    # name: (version, workload, record options, started by --go)
    "cpu-threads-3.11": ("3.11", "ratio", ["--threads"], False),
    "cpu-threads-3.13": ("3.13", "ratio", ["--threads"], False),
    "cpu-threads-3.15": ("3.15", "ratio", ["--threads"], False),
    "native-3.13": ("3.13", "ratio", ["--native"], False),
    "async-wall-3.14": ("3.14", "async_burn", ["--async", "--mode", "wall", "--threads"], True),
    "no-bpf-3.12": ("3.12", "threads", ["--no-bpf", "--threads"], False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_convert_gives_the_bytes_record_wrote(case, sid_root, workloads_installed, tmp_path,
                                              profiler_bin):
    version, workload, extra, go = CASES[case]
    interp = make_interp(version, sid_root)
    run, base = record_all(tmp_path, profiler_bin, interp, workload, extra, go)
    profile = parse_collapsed(Path(f"{base}.txt").read_text())
    assert sum(s.count for s in profile) > 0, f"no samples\n{run.describe()}"
    wrong = convert_each(profiler_bin, base, tmp_path)
    assert not wrong, "\n".join(wrong)


def test_convert_of_a_wall_profile_of_every_thread(sid_root, workloads_installed, tmp_path,
                                                   profiler_bin):
    """waits.py over its whole life in wall mode: every kind of wait in one file."""
    interp = make_interp("3.11", sid_root)
    _, _, out, _ = profile_waits(tmp_path, profiler_bin, interp, also=SUFFIXES[1:])
    wrong = convert_each(profiler_bin, sibling(out, ""), tmp_path)
    assert not wrong, "\n".join(wrong)


# ---- report ----------------------------------------------------------------------------

def report(profiler, path, *args):
    p = subprocess.run([profiler, "report", path, *map(str, args)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, f"report exit {p.returncode}\n{p.stderr}"
    return p.stdout


def record_ratio(tmpdir, profiler, interp):
    """The ratio workload, recorded with --report into a profile file and collapsed
    text at once: (truth's fa share over the run, run, base path)."""
    h = Harness(tmpdir, profiler)
    try:
        w = h.start_workload(interp, "ratio", seconds=60)
        before = w.read_truth()
        base = Path(tmpdir) / f"ratio-{w.pid}"
        run = h.run_profiler(["record", "-p", w.pid, "-d", 3, "-r", RATE, "--report",
                              "-l", 0, "-o", f"{base}.pbp", "-o", f"{base}.txt"], 60)
        assert run.rc == 0, run.describe()
        # The truth is published every 200 ms: wait for one from after the profile.
        time.sleep(0.5)
        spent = spent_fa_share(w, before)
    finally:
        h.close()
    return spent, run, base


@pytest.fixture(scope="module", params=["3.11", "3.14"], ids=lambda v: f"py{v}")
def ratio(request, sid_root, workloads_installed, module_tmp, profiler_bin):
    interp = make_interp(request.param, sid_root)
    return Once(lambda: record_ratio(module_tmp / interp.id, profiler_bin, interp))


def by_name(rows):
    return {r["name"].split(" (")[0]: r for r in rows}


def test_report_shares_are_the_burns_own(ratio, profiler_bin):
    """fa's self share of fa+fb in the report is the share of their time the burns
    measured, within 5 points."""
    spent, run, base = ratio.get()
    _, rows = parse_report(report(profiler_bin, f"{base}.pbp", "-l", 0))
    f = by_name(rows)
    assert "fa" in f and "fb" in f, rows[:10]
    got = 100 * f["fa"]["self"] / (f["fa"]["self"] + f["fb"]["self"])
    assert abs(got - 100 * spent) <= SHARE_POINTS, \
        f"fa's share {got:.1f}% in the report, {100 * spent:.1f}% measured\n{rows[:8]}"


def test_report_counts_are_the_collapsed_files(ratio, profiler_bin):
    """Self: the samples whose innermost frame is the function; total: those with it
    anywhere; both exactly what the collapsed file of the same run says, for every
    function and every line."""
    _, run, base = ratio.get()
    profile = parse_collapsed(Path(f"{base}.txt").read_text())
    for by in ("function", "line"):
        def key(fr):
            return (fr.name, fr.file) if by == "function" else (fr.name, fr.file, fr.line)
        self_, total = Counter(), Counter()
        for s in profile:
            code = [fr for fr in s.frames if fr.file]
            if code:
                self_[key(code[-1])] += s.count
            for k in {key(fr) for fr in code}:
                total[k] += s.count
        _, rows = parse_report(report(profiler_bin, f"{base}.pbp", "--by", by, "-l", 0))
        got_self, got_total = Counter(), Counter()
        for r in rows:
            fr = parse_frame(r["name"])
            if not fr.file:
                continue
            k = (fr.name, fr.file) if by == "function" else (fr.name, fr.file, fr.line)
            got_self[k] += int(r["self"])
            got_total[k] += int(r["total"])
        assert +got_self == +self_, f"--by {by}: self differs"
        assert +got_total == +total, f"--by {by}: total differs"


def test_record_report_is_report_of_its_profile_file(ratio, profiler_bin):
    """record --report prints, after the run, the table report prints of the profile
    file the run wrote."""
    _, run, base = ratio.get()
    assert run.stdout.strip(), run.describe()
    assert run.stdout.lstrip("\n") == report(profiler_bin, f"{base}.pbp", "-l", 0)


# What each thread of waits.py spends its calls on, in the report's columns; its own
# timing says how much of its life that is.
WAITED_IN = {"sleeper": "sleep", "reader": "I/O", "locker": "lock"}


@pytest.mark.parametrize("version", ["3.11", "3.15"])
def test_report_splits_each_thread_by_what_it_waited_for(version, sid_root,
                                                         workloads_installed, tmp_path,
                                                         profiler_bin):
    interp = make_interp(version, sid_root)
    truth, run, out, _ = profile_waits(tmp_path, profiler_bin, interp, also=(".pbp",))
    text = report(profiler_bin, sibling(out, ".pbp"), "--by", "thread", "-l", 0)
    cols, rows = parse_report(text)
    tids = rows_by_tid(rows)
    bad = []
    for name, t in truth["threads"].items():
        row = tids.get(t["tid"])
        if row is None:
            bad.append(f"{name}: no row for thread {t['tid']}")
            continue
        life = t["end"] - t["start"]
        if name in WAITED_IN:
            # The call ends by taking the GIL back from the two burners, inside the span
            # the thread timed; the thread's GIL column also holds the GIL it took back
            # after its other calls (locker's short sleep), which it did not time. So the
            # timed call lies between the named wait and the named wait with all the GIL.
            low = row.get(WAITED_IN[name], 0) / life
            high = low + row.get("GIL", 0) / life
            want = t["waited"] / life
        elif name.startswith("gil_"):
            low = high = row.get("on-CPU", 0) / life
            want = t["cpu"] / life
        else:
            continue
        if not low - SHARE_POINTS / 100 <= want <= high + SHARE_POINTS / 100:
            bad.append(f"{name}: {100 * low:.1f}-{100 * high:.1f}% in the report, "
                       f"{100 * want:.1f}% measured: {row}")
    assert not bad, "\n".join(bad) + "\n" + text


def test_report_by_task_names_the_burning_tasks(sid_root, workloads_installed, tmp_path,
                                               profiler_bin):
    """--by task of an --async profile: a row per burner task, and their self shares
    add up to the samples in them."""
    interp = make_interp("3.14", sid_root)
    run, base = record_all(tmp_path, profiler_bin, interp, "async_burn", ["--async"], True)
    _, rows = parse_report(report(profiler_bin, f"{base}.pbp", "--by", "task", "-l", 0))
    profile = parse_collapsed(Path(f"{base}.txt").read_text())
    want = Counter()
    for s in profile:
        tasks = [fr.name for fr in s.frames if fr.name.startswith("task ")]
        want[tasks[-1] if tasks else "(not in a task)"] += s.count
    got = Counter({r["name"]: int(r["self"]) for r in rows})
    assert +got == +want, f"{rows[:10]}\nwant {want.most_common(10)}"
    assert any(n.startswith("task ") for n in got), rows


def test_record_report_goes_to_stderr_when_the_profile_is_on_stdout(sid_root,
                                                                    workloads_installed,
                                                                    tmp_path, profiler_bin):
    interp = make_interp("3.11", sid_root)
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(interp, "ratio", seconds=60)
        run = h.run_profiler(["record", "-p", w.pid, "-d", 1, "--report", "-o", "-"], 60)
    finally:
        h.close()
    assert run.rc == 0, run.describe()
    assert "self%" not in run.stdout and parse_collapsed(run.stdout), run.stdout[:500]
    assert "self%" in run.stderr, run.describe()


def test_a_signal_still_writes_every_output(sid_root, workloads_installed, tmp_path,
                                           profiler_bin):
    """Several -o and no -d: SIGINT ends the run, and each file is in place."""
    interp = make_interp("3.13", sid_root)
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(interp, "ratio", seconds=60)
        base = tmp_path / "signalled"
        seen = []

        def a_second_in(_stdout, stderr):
            if not seen and "profiling pid" in stderr:
                seen.append(time.monotonic())
            return bool(seen) and time.monotonic() > seen[0] + 1

        run = h.run_profiler(["record", "-p", w.pid, "-v", *outputs(base)], 60,
                             signal_when=(a_second_in, signal.SIGINT))
    finally:
        h.close()
    assert run.rc == 0, run.describe()
    for s in SUFFIXES:
        assert Path(f"{base}{s}").stat().st_size > 0, s
