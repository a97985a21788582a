# SPDX-License-Identifier: GPL-2.0-only
"""--mode wall and off-cpu: every interval a thread spends off the CPU, measured by the
scheduler and charged to the Python stack it blocked in, under a leaf that names why.

Ground truth comes from the workloads. tests/workloads/waits.py runs threads that each
spend their time one known way (sleeping, reading a pipe, waiting for a lock another
thread holds, burning CPU beside a second burner so that the two contend for the GIL)
and time themselves: start and end, CPU time, time inside the blocking call. The
profiler attaches before the threads start and runs until the process exits, so each
thread's whole life is in the profile. tests/workloads/pingpong.py hands a token
between two threads tens of thousands of times a second: there the waits are short,
most are drawn at random (--min-block), and the profile's total must still match the
sum that BPF measured of every wait.
"""

import gzip
import json
import os
import re
import sys
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from lib.paths import PROFILER_GRACE, REPO, RUN_DIR
from lib.interpreters import make_interp
from lib.harness import Harness, Once
from lib.waits import profile_waits
from lib.agent import agent_until_profiles
from lib.cgroups import cgroup2_root, interp_in_cgroup, remove_cgroups
from lib.writers import speedscope_schema_errors

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile, one  # noqa: E402

VERSIONS = ["3.11", "3.13", "3.14", "3.15"]
THREAD = re.compile(r"^thread (\d+)(?: \(.*\))?$")
LINE = re.compile(r"^(?P<stack>.+) (?P<count>\d+)$")
PY_FRAME = re.compile(r"^(?P<name>.+) \((?P<file>.+):(?P<line>\d+)\)$")
SHARE_POINTS = 5.0          # a wait's share of a thread's life, against the truth
GIL_LESS_POINTS = 8.0    # --gil: CPU time without the GIL is left out
LIFE_TOLERANCE = 0.02       # a thread's profiled time against its life
# The leaves of time off a CPU, and (on a virtual machine) on one the host took back.
WAIT_LEAVES = ("[off-CPU", "[runnable", "[stolen")
STOLEN = "[stolen: the hypervisor took the CPU]"


def life_bounds(truth, name):
    """The microseconds a thread's profile may add up to: at least the span it timed
    itself, at most the one its creator saw from start() to join(). Creating and
    ending a thread happen outside the first and within the second; on a loaded
    machine a new thread can wait tens of milliseconds for a CPU before its first line."""
    t = truth["threads"][name]
    life = (t["end"] - t["start"]) * 1e6
    outer = (truth["joined"] - truth["spawned"][name]) * 1e6
    return life * (1 - LIFE_TOLERANCE) - 3000, outer * (1 + LIFE_TOLERANCE) + 3000


def parse(text):
    """{tid: Counter({(parent frame text, leaf): microseconds})}; leaf is "on-CPU" for
    stacks that do not end in a wait."""
    out = defaultdict(Counter)
    for line in text.splitlines():
        m = LINE.match(line)
        assert m, f"not a collapsed line: {line!r}"
        frames = m["stack"].split(";")
        t = THREAD.match(frames[0])
        assert t, f"no thread frame first: {line!r}"
        wait = frames[-1].startswith(WAIT_LEAVES)
        leaf = frames[-1] if wait else "on-CPU"
        parent = frames[-2] if wait else frames[-1]
        out[int(t[1])][(parent, leaf)] += int(m["count"])
    return out


def function_of(frame_text):
    m = PY_FRAME.match(frame_text)
    return (m["name"], int(m["line"])) if m else (frame_text, None)


class Waited:
    def __init__(self, truth, run, profile, stats):
        self.truth, self.run, self.profile, self.stats = truth, run, profile, stats

    def thread(self, name):
        t = self.truth["threads"][name]
        return t, self.profile.get(t["tid"], Counter()), (t["end"] - t["start"]) * 1e6

    def describe(self, name):
        t, prof, life = self.thread(name)
        rows = "\n".join(f"    {100 * us / life:5.1f}%  {leaf:34} under {parent}"
                         for (parent, leaf), us in prof.most_common(8))
        return (f"{name} (tid {t['tid']}): life {life / 1e6:.3f} s, CPU "
                f"{100 * t['cpu'] * 1e6 / life:.1f}%, in its call "
                f"{100 * t['waited'] * 1e6 / life:.1f}%\n{rows}")


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"py{v}")
def waits(request, sid_root, workloads_installed, module_tmp, profiler_bin):
    interp = make_interp(request.param, sid_root)

    def go():
        truth, run, out, stats = profile_waits(module_tmp / interp.id, profiler_bin, interp)
        return Waited(truth, run, parse(out.read_text()), stats)
    return Once(go)


def test_wall_each_thread_adds_up_to_its_life(waits):
    """On-CPU time plus every wait: the thread's whole life, within 2 % of the span it
    timed itself and of the one from its start() to its join()."""
    w = waits.get()
    bad = []
    for name in w.truth["threads"]:
        _, prof, life = w.thread(name)
        total = sum(prof.values())
        lo, hi = life_bounds(w.truth, name)
        if not lo <= total <= hi:
            bad.append(f"{name}: profiled {total / 1e6:.3f} s of a {life / 1e6:.3f} s life "
                       f"(from start() to join(), at most {hi / 1e6:.3f} s)\n"
                       + w.describe(name))
    lost = {k: w.stats.get(k) for k in ("bpf_no_thread_state", "bpf_no_frame",
                                        "bpf_stack_faults", "ringbuf_drops",
                                        "samples_incomplete", "switch_state_failures",
                                        "on_cpu_rest_lost_ns", "stolen_ns",
                                        "stolen_rest_lost_ns")}
    assert not bad, "\n".join(bad) + f"\nwhere records were lost: {lost}, host steal " \
        f"{w.truth['host_steal_s']:.3f} s"


def test_wall_stolen_time_is_the_hosts_steal_under_running_stacks(waits):
    """On a virtual machine the host can take a CPU while a thread is on it: the
    thread's CPU time leaves that out and no switch marks it. It is charged as stolen,
    under a stack the thread was running (one of its ticks'), and over all the threads
    never more than the steal /proc/stat counted over the run, to two clock ticks of
    each CPU. On bare metal both are 0."""
    w = waits.get()
    stolen, lines, misplaced = 0, 0, []
    for tid, prof in w.profile.items():
        running = {parent for (parent, leaf) in prof if leaf == "on-CPU"}
        for (parent, leaf), us in prof.items():
            if leaf != STOLEN:
                continue
            stolen += us
            lines += 1
            if parent not in running:
                misplaced.append(f"thread {tid}: {us} us under {parent}, never on a CPU there")
    tick = 1e6 / os.sysconf("SC_CLK_TCK")
    host = w.truth["host_steal_s"] * 1e6
    assert not misplaced, "\n".join(misplaced)
    # /proc/stat takes the steal in at each CPU's ticks: each end of the span may lag one.
    assert stolen <= host + 2 * os.cpu_count() * tick, \
        f"{stolen / 1e3:.1f} ms charged as stolen, the host counted {host / 1e3:.1f} ms"
    # Each line of the collapsed profile rounds to a microsecond.
    assert abs(stolen - w.stats["stolen_ns"] / 1e3) <= lines + 1, (stolen, w.stats["stolen_ns"])


@pytest.mark.parametrize("name,leaf", [
    ("sleeper", "[off-CPU: sleep]"),
    ("reader", "[off-CPU: read(pipe)]"),
    ("locker", "[off-CPU: lock (futex)]"),
])
def test_wall_wait_under_its_line_with_its_share(waits, name, leaf):
    """The blocking call's time lands under the line that made it, named for what it
    waited on, within 5 points of the time the thread measured around the call. The
    call ends by taking the GIL back, which two burners hold in turn: that part is a
    GIL wait under the same line, and counts with it; the named wait is the most."""
    w = waits.get()
    t, prof, life = w.thread(name)
    here = sum(us for (parent, lf), us in prof.items()
               if lf == leaf and function_of(parent) == (name, t["line"]))
    gil = sum(us for (parent, lf), us in prof.items()
              if lf == "[off-CPU: GIL wait]" and function_of(parent) == (name, t["line"]))
    want = 100 * t["waited"] * 1e6 / life
    got = 100 * (here + gil) / life
    assert abs(got - want) <= SHARE_POINTS, \
        f"{leaf} and the GIL under {name}:{t['line']}: {got:.1f}% of its life, measured " \
        f"{want:.1f}%\n" + w.describe(name)
    assert here >= 0.75 * (here + gil), f"{leaf} is not most of the call:\n" + w.describe(name)


@pytest.mark.parametrize("name", ["gil_a", "gil_b"])
def test_wall_gil_contention(waits, name):
    """Two burners and one GIL: each runs for its CPU time, and waits, for the GIL
    among others, for the rest, under its own function."""
    w = waits.get()
    t, prof, life = w.thread(name)
    on = sum(us for (_, leaf), us in prof.items() if leaf == "on-CPU")
    off = sum(us for (_, leaf), us in prof.items() if leaf != "on-CPU")
    gil = sum(us for (parent, leaf), us in prof.items()
              if leaf == "[off-CPU: GIL wait]" and function_of(parent)[0] == name)
    cpu = 100 * t["cpu"] * 1e6 / life
    msg = w.describe(name)
    assert abs(100 * on / life - cpu) <= SHARE_POINTS, f"on-CPU against CPU time:\n{msg}"
    assert abs(100 * off / life - (100 - cpu)) <= SHARE_POINTS, f"off-CPU:\n{msg}"
    assert off > 0.2 * life, f"two burners, one GIL, yet hardly any waiting:\n{msg}"
    # Each holds the GIL for about as long as the other waits for it; on a busy
    # machine much of the rest is waiting for a CPU, which is named apart.
    assert gil >= 0.1 * life, f"hardly any wait for the GIL:\n{msg}"


def test_wall_with_gil_keeps_the_holders_ticks_and_every_wait(sid_root, workloads_installed,
                                                               module_tmp, profiler_bin):
    """--gil in wall mode: on-CPU time is kept only while the thread holds the GIL, and
    the waits stay in, so the two burners show as taking turns: each one's GIL-holding
    time is its CPU time (within 5 points) and the rest is waiting, for the GIL among
    others."""
    interp = make_interp("3.13", sid_root)
    truth, run, out, stats = profile_waits(module_tmp / "gil", profiler_bin, interp,
                                           extra=["--gil"])
    w = Waited(truth, run, parse(out.read_text()), stats)
    for name in ("gil_a", "gil_b"):
        t, prof, life = w.thread(name)
        held = sum(us for (_, leaf), us in prof.items() if leaf == "on-CPU")
        gil = sum(us for (parent, leaf), us in prof.items()
                  if leaf == "[off-CPU: GIL wait]" and function_of(parent)[0] == name)
        cpu = 100 * t["cpu"] * 1e6 / life
        msg = w.describe(name)
        # A thread also runs without the GIL (letting it go, asking for it back), which
        # --gil leaves out: under load that part grows, so held time may fall short of
        # the CPU time by more than it may exceed it.
        assert -GIL_LESS_POINTS <= 100 * held / life - cpu <= SHARE_POINTS, \
            f"GIL held against CPU:\n{msg}"
        assert gil >= 0.1 * life, f"hardly any wait for the GIL:\n{msg}"
    # Threads that mostly wait hold the GIL only for moments: their waits are all kept.
    t, prof, life = w.thread("sleeper")
    assert sum(prof.values()) >= 0.9 * life, w.describe("sleeper")


def test_wall_stats_account_for_the_time(waits):
    w = waits.get()
    s = w.stats
    assert s["profile_mode"] == "wall"
    assert s["ringbuf_drops"] == 0, s
    assert s["wall_ns"] == s["on_cpu_ns"] + s["off_cpu_ns"] + s["stolen_ns"]
    assert s["off_cpu_ns"] == sum(s["off_cpu_ns_by_class"].values())
    for k in ("gil", "lock", "sleep", "read"):
        assert s["off_cpu_ns_by_class"][k] > 0, f"no {k} time: {s['off_cpu_ns_by_class']}"
    assert s["switch_events"] >= s["off_cpu_sampled"] > 0, s
    assert s["switch_bpf_run_cnt"] > 0 and s["switch_bpf_run_time_ns"] > 0, s
    # Every wait that ended went through the draw; the estimate stays near the sum.
    assert abs(s["off_cpu_ns"] - s["off_cpu_intervals_ns"]) <= 0.05 * s["off_cpu_intervals_ns"], s


@pytest.fixture(scope="module")
def pingpong(sid_root, workloads_installed, module_tmp, profiler_bin):
    interp = make_interp("3.13", sid_root)

    def go():
        h = Harness(module_tmp / "pingpong", profiler_bin)
        try:
            w = h.start_workload(interp, "pingpong")
            st = module_tmp / "pingpong.json"
            out = module_tmp / "pingpong.txt"
            run = h.run_profiler(["record", "-p", w.pid, "--mode", "off-cpu", "-d", 3,
                                  "-o", out, "--stats-file", st], 3 + PROFILER_GRACE,
                                 out=out, stats=st)
            assert run.rc == 0, run.describe()
            assert w.proc.poll() is None, f"pingpong died:\n{w.output()}"
        finally:
            h.close()
        return run, json.loads(st.read_text()), out.read_text()
    return Once(go)


def test_off_cpu_switch_storm_is_sampled_without_bias_or_loss(pingpong):
    """Tens of thousands of short waits a second: most are left to the draw, none is
    lost, and the kept ones, weighted, add up to what BPF measured within 10 %."""
    run, s, text = pingpong.get()
    assert s["profile_mode"] == "off-cpu"
    assert s["ringbuf_drops"] == 0, s
    assert s["off_cpu_intervals"] >= 20000, f"not a storm: {s['off_cpu_intervals']} waits"
    assert s["off_cpu_short_skipped"] > s["off_cpu_sampled"], \
        f"short waits were not drawn: {s['off_cpu_short_skipped']} skipped, " \
        f"{s['off_cpu_sampled']} taken"
    truth = s["off_cpu_intervals_ns"]
    assert abs(s["off_cpu_ns"] - truth) <= 0.10 * truth, \
        f"estimate {s['off_cpu_ns']} ns against {truth} ns measured"
    # Off-CPU mode: waits only, and the ping-pong's own lines among them.
    assert "pass_token" in text, text[:2000]
    assert all(line.rsplit(" ", 1)[0].split(";")[-1].startswith(WAIT_LEAVES)
               for line in text.splitlines()), text[:2000]


def test_wall_pprof_has_three_sample_types_that_agree(sid_root, workloads_installed,
                                                       module_tmp, profiler_bin):
    interp = make_interp("3.14", sid_root)
    truth, run, out, _ = profile_waits(module_tmp / "pprof", profiler_bin, interp, "pprof")
    prof = Profile.parse(gzip.decompress(out.read_bytes()))
    assert prof.value_types() == [("cpu", "nanoseconds"), ("off_cpu", "nanoseconds"),
                                  ("wall", "nanoseconds")]
    by_tid = defaultdict(lambda: [0, 0, 0])
    for stack, values, labels in prof.samples():
        cpu, off, wall = values
        leaf = stack[0][0]
        assert wall == cpu + off and (cpu == 0 or off == 0), values
        assert (off > 0) == leaf.startswith(WAIT_LEAVES) or wall == 0, \
            (leaf, values)
        for i, v in enumerate(values):
            by_tid[labels["thread_id"]][i] += v
    for name, t in truth["threads"].items():
        life = (t["end"] - t["start"]) * 1e9
        cpu, off, wall = by_tid[t["tid"]]
        lo, hi = life_bounds(truth, name)
        assert lo * 1e3 <= wall <= hi * 1e3, (name, wall, life)
        assert abs(cpu - t["cpu"] * 1e9) <= 0.05 * life, (name, cpu, t["cpu"])


def test_wall_speedscope_weighs_time(sid_root, workloads_installed, module_tmp, profiler_bin):
    interp = make_interp("3.11", sid_root)
    truth, run, out, _ = profile_waits(module_tmp / "speedscope", profiler_bin, interp,
                                       "speedscope")
    data = json.loads(out.read_text())
    errors = speedscope_schema_errors(data)
    assert not errors, "\n".join(errors)
    frames = data["shared"]["frames"]
    for name, t in truth["threads"].items():
        (p,) = [p for p in data["profiles"] if f"thread {t['tid']}" in p["name"]]
        assert p["unit"] == "nanoseconds"
        life = (t["end"] - t["start"]) * 1e9
        waited = sum(w for s, w in zip(p["samples"], p["weights"])
                     if s and frames[s[-1]]["name"].startswith(WAIT_LEAVES))
        # Empty samples are the gaps speedscope's time-order view needs, not time.
        timed = sum(w for s, w in zip(p["samples"], p["weights"]) if s)
        lo, hi = life_bounds(truth, name)
        assert lo * 1e3 <= timed <= hi * 1e3, (name, p["name"], timed, life)
        assert abs(waited - (life - t["cpu"] * 1e9)) <= 0.05 * life, (name, waited, life)


def record_blocked(h, interp, tmp_path, extra=()):
    """blocked.py on @interp, profiled 2 s in wall mode (with @extra options), its
    threads started once the profiler is attached: (workload, truth, profile, stats)."""
    seconds = 2.0
    go = f"{RUN_DIR}/go-{uuid.uuid4().hex[:8]}"
    w = h.start_workload(interp, "blocked", "--go", go, seconds=60)
    truth = json.loads(w.truth_path.read_text())
    out, st = tmp_path / "blocked.txt", tmp_path / "blocked.json"

    def start_late(_stdout, stderr):
        if "profiling pid" in stderr and not interp.host_path(go).exists():
            interp.host_path(go).touch()
        return False

    run = h.run_profiler(["record", "-p", w.pid, "--mode", "wall", *extra, "--threads", "-v",
                          "-d", seconds, "-o", out, "--stats-file", st],
                         seconds + PROFILER_GRACE, out=out, stats=st,
                         signal_when=(start_late, 0))
    assert run.rc == 0, run.describe()
    return w, truth, out, st


@pytest.mark.parametrize("version", VERSIONS)
def test_wall_counts_waits_still_open_at_the_end(sid_root, workloads_installed, tmp_path,
                                                  profiler_bin, version):
    """Threads blocked when the profile ends: one asleep and one waiting for a lock from
    before the profiler attached to after it stopped, one that burns CPU for half a
    second and then sleeps. Each one's profile is the whole window, its wait under the line it waits on
    (the stack read from live memory, the length from BPF)."""
    interp = make_interp(version, sid_root)
    h = Harness(tmp_path, profiler_bin)
    try:
        w, truth, out, st = record_blocked(h, interp, tmp_path)
        late = Path(str(w.truth_path) + ".late")
        assert late.exists(), f"late never finished its burn:\n{w.output()}"
        burn_cpu = json.loads(late.read_text())["burn_cpu"] * 1e6
    finally:
        h.close()
    stats = json.loads(st.read_text())
    prof = parse(out.read_text())
    window = stats["duration_s"] * 1e6
    assert stats["off_cpu_open_waits"] >= 3 and stats["off_cpu_open_waits_lost"] == 0, stats

    def rows(name):
        p = prof.get(truth["tids"][name], Counter())
        return p, "\n".join(f"    {us / 1e3:9.1f} ms  {leaf:34} under {parent}"
                            for (parent, leaf), us in p.most_common(6))

    for name, leaf, line in (("asleep", "[off-CPU: sleep]", "asleep"),
                             ("locked", "[off-CPU: lock (futex)]", "locked")):
        p, text = rows(name)
        waited = sum(us for (parent, lf), us in p.items()
                     if lf == leaf and function_of(parent) == (name, truth["lines"][line]))
        assert abs(waited - window) <= LIFE_TOLERANCE * window + 3000, \
            f"{name}: {waited / 1e3:.1f} ms of a {window / 1e3:.1f} ms window at its wait\n{text}"
    p, text = rows("late")
    total = sum(p.values())
    slept = sum(us for (parent, lf), us in p.items() if lf == "[off-CPU: sleep]" and
                function_of(parent) == ("late", truth["lines"]["late_sleep"]))
    burnt = sum(us for (parent, lf), us in p.items() if lf == "on-CPU" and
                function_of(parent)[0] == "late")
    assert abs(total - window) <= LIFE_TOLERANCE * window + 3000, \
        f"late: {total / 1e3:.1f} ms of a {window / 1e3:.1f} ms window\n{text}"
    # Its burn's CPU time (half a second on an idle machine), then asleep until the end.
    assert abs(burnt - burn_cpu) <= 0.05 * window, \
        f"late burnt {burnt / 1e3:.1f} ms, measured {burn_cpu / 1e3:.1f} ms\n{text}"
    assert slept >= 0.2 * window, f"late slept {slept / 1e3:.1f} ms at its line\n{text}"


def test_wall_leaves_the_attach_hold_out(sid_root, workloads_installed, tmp_path, profiler_bin):
    """--clock thread holds every thread still (ptrace) while it opens their clocks: the
    hold is not the target's wait. Threads asleep and waiting for a lock all along show
    their own waits for the whole window, and no [off-CPU: other]."""
    interp = make_interp("3.11", sid_root)
    h = Harness(tmp_path, profiler_bin)
    try:
        _, truth, out, st = record_blocked(h, interp, tmp_path, ["--clock", "thread"])
    finally:
        h.close()
    window = json.loads(st.read_text())["duration_s"] * 1e6
    prof = parse(out.read_text())
    for name, leaf in (("asleep", "[off-CPU: sleep]"), ("locked", "[off-CPU: lock (futex)]")):
        p = prof.get(truth["tids"][name], Counter())
        text = "\n".join(f"    {us / 1e3:9.1f} ms  {lf:34} under {parent}"
                         for (parent, lf), us in p.most_common(6))
        assert not any(lf == "[off-CPU: other]" for _, lf in p), f"{name}:\n{text}"
        waited = sum(us for (_, lf), us in p.items() if lf == leaf)
        assert abs(waited - window) <= LIFE_TOLERANCE * window + 3000, \
            f"{name}: {waited / 1e3:.1f} ms of a {window / 1e3:.1f} ms window\n{text}"


def sleep_us_of(text, pid):
    """Microseconds charged to sleeper's sleep in process @pid of an -a profile."""
    n = 0
    for line in text.splitlines():
        m = LINE.match(line)
        frames = m["stack"].split(";")
        if frames[0].startswith(f"process {pid} ") and frames[-1] == "[off-CPU: sleep]" \
                and function_of(frames[-2])[0] == "sleeper":
            n += int(m["count"])
    return n


def test_all_and_agent_wall_mode_on_three_versions(sid_root, workloads_installed, tmp_path,
                                                    profiler_bin):
    """-a --mode wall and the agent with --mode wall, each over three interpreters at
    once (narrowed to a cgroup of this test's own, so that the host's other Pythons
    stay out): every process's sleeper is seen sleeping where it sleeps. A thread
    asleep through the whole run shows in each of the agent's periods for that period,
    never piled up into one."""
    group = Path(cgroup2_root()) / f"pbp-wall-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    h = Harness(tmp_path, profiler_bin)
    try:
        ws = []
        for v in ("3.11", "3.13", "3.15"):
            interp, go = interp_in_cgroup(v, sid_root, group)
            ws.append(h.start_workload(interp, "waits", "--go", go, seconds=60))
            if v == "3.13":
                blocked = h.start_workload(interp, "blocked", "--go", go, seconds=60)
        out = tmp_path / "all.txt"
        run = h.run_profiler(["record", "-a", "--mode", "wall", "--container", group.name,
                              "-d", 2, "-o", out], 2 + PROFILER_GRACE, out=out)
        assert run.rc == 0, run.describe()
        text = out.read_text()
        for w in ws:
            got = sleep_us_of(text, w.pid)
            assert got >= 1.2e6, f"pid {w.pid} ({w.interp.version}): sleeper slept " \
                                  f"{got / 1e6:.3f} s of 2 s in the profile\n{text[:3000]}"
        # Two files a process: the first period may have begun before it was found.
        out_dir = agent_until_profiles(h, tmp_path, ["--period", "1s", "--mode", "wall",
                                                     "--container", group.name],
                                       {**{w.pid: 2 for w in ws}, blocked.pid: 3},
                                       "two profiles of each process, three of the blocked one")
    finally:
        h.close()
        remove_cgroups([group])
    for w in ws:
        best = 0
        for path in out_dir.iterdir():
            if f"-{w.pid}-" not in path.name or not path.name.endswith(".pb.gz"):
                continue
            prof = Profile.parse(gzip.decompress(path.read_bytes()))
            assert prof.value_types() == [("cpu", "nanoseconds"), ("off_cpu", "nanoseconds"),
                                          ("wall", "nanoseconds")], path
            slept = sum(values[1] for stack, values, _ in prof.samples()
                        if stack[0][0] == "[off-CPU: sleep]" and stack[1][0] == "sleeper")
            best = max(best, slept)
        assert best >= 0.5e9, f"pid {w.pid} ({w.interp.version}): at most {best / 1e9:.3f} s " \
                              f"of sleeper's sleep in a 1 s period"
    asleep = []
    for path in sorted(out_dir.iterdir()):
        if f"-{blocked.pid}-" not in path.name or not path.name.endswith(".pb.gz"):
            continue
        prof = Profile.parse(gzip.decompress(path.read_bytes()))
        slept = sum(values[1] for stack, values, _ in prof.samples()
                    if stack[0][0] == "[off-CPU: sleep]" and stack[1][0] == "asleep")
        asleep.append((path.name, slept / 1e9, one(prof.msg, "duration_nanos") / 1e9))
    assert all(slept <= 1.05 * period + 0.005 for _, slept, period in asleep), asleep
    assert any(slept >= 0.8 * period for _, slept, period in asleep[1:]), asleep
