# SPDX-License-Identifier: GPL-2.0-only
"""-a: one BPF program samples every CPython process on the host.

Each workload (sysburn.py) burns in a function named for it alone, so every process's
samples can be checked against its own truth: under its own root frame
"process PID COMMAND", its own function at its burn line, nobody else's functions.
Covered: host 3.11 beside chroot 3.13 and 3.15; processes started after the profiler
(which must appear, and leave nothing behind in the profiler or the BPF maps once they
exit); a process in its own mount and PID namespace running an interpreter that only
exists inside it; --pid-filter, --exclude, --container (a kubelet-style cgroup made
here) and --max-processes; top -a; and the command-line errors."""

import json
import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from lib.paths import PROFILER_GRACE, RUN_DIR, WORKLOADS_SRC
from lib.collapsed import show
from lib.interpreters import make_interp
from lib.harness import Harness, wait_for
from lib.cgroups import make_pod_cgroup, remove_cgroups
from lib.system_wide import RATE, by_process, check_process, fname, sysburn

# `record -a` profiles every process on the host:
# `make test` runs this file with no other test beside it.
pytestmark = pytest.mark.alone


@pytest.fixture(scope="module")
def three(sid_root, workloads_installed):
    interps = [make_interp(v, sid_root) for v in ("3.11", "3.13", "3.15")]
    for py in interps:
        py.require()
    return interps


def record_all(h, tmp_path, seconds, extra=()):
    out = tmp_path / f"all-{uuid.uuid4().hex[:6]}.txt"
    st = tmp_path / f"all-{uuid.uuid4().hex[:6]}.json"
    args = ["record", "-a", "-d", seconds, "-r", RATE, "-o", out, "--stats-file", st]
    return h.run_profiler(args + list(extra), timeout=seconds + PROFILER_GRACE, out=out,
                          stats=st)


def roots(run):
    return {line.split(";", 1)[0] for line in run.out_path.read_text().splitlines()}


def test_three_versions_at_once(three, tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    try:
        ws = [sysburn(h, py, fname(f"hot_{py.version.replace('.', '_')}"), 60)
              for py in three]
        run = record_all(h, tmp_path, 3)
    finally:
        h.close()
    prof = run.check_ok()
    assert all(s.process is not None for s in prof), \
        f"stacks without a process root frame:\n{show([s for s in prof if s.process is None])}"
    funcs = {w.truth["func"] for w in ws}
    for w in ws:
        check_process(prof, w.truth, funcs - {w.truth["func"]})
        root = [r for r in roots(run) if r.startswith(f"process {w.truth['pid']} ")]
        assert root and "sysburn.py" in root[0], f"root frame does not name the command: {root}"
    stats = run.stats()
    assert stats["processes"] >= 3 and stats["pid"] == 0, stats


# ---- processes that come and go -------------------------------------------------------

def bpf_maps():
    """{name: id} of the maps named like ours that exist now."""
    p = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True,
                       check=True)
    return {(m["name"], m["id"]) for m in json.loads(p.stdout)
            if m.get("name") in ("targets", "threads", "fcache")}


def map_ids_of(pid):
    """The ids of the BPF maps process @pid holds open, from its fdinfo: another
    profiler on the machine has maps of the same names."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            text = open(f"/proc/{pid}/fdinfo/{fd}").read()
        except OSError:
            continue
        m = re.search(r"^map_id:\s*(\d+)$", text, re.M)
        if m:
            ids.add(int(m.group(1)))
    return ids


def map_keys(map_id):
    p = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(map_id)],
                       capture_output=True, text=True, check=True)
    keys = set()
    for e in json.loads(p.stdout):
        raw = e.get("key")
        if isinstance(raw, list):  # hex strings of the u32's bytes, little-endian
            keys.add(int.from_bytes(bytes(int(b, 16) for b in raw), "little"))
        elif isinstance(e.get("formatted"), dict):
            keys.add(int(e["formatted"]["key"]))
    return keys


def test_late_short_lived_processes_appear_and_leave_nothing(three, tmp_path, profiler_bin):
    before = bpf_maps()
    err = tmp_path / "prof.stderr"
    out = tmp_path / "late.txt"
    h = Harness(tmp_path, profiler_bin)
    # Stopped by SIGINT once everything is checked: a busy machine may take a while.
    argv = [profiler_bin, "record", "-a", "-v", "-d", "600", "-r", RATE, "-o", str(out)]
    with open(err, "wb") as fe:
        prof_proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=fe, start_new_session=True)
    h.group_leaders.append(prof_proc)
    try:
        m = wait_for(lambda: re.search(r"profiling (\d+) Python process(?:es)?",
                                       err.read_text(errors="replace")),
                     30, "the profiler to start")
        baseline = int(m.group(1))
        held = map_ids_of(prof_proc.pid)
        ours = {name: i for (name, i) in bpf_maps() - before if i in held}
        assert set(ours) == {"targets", "threads", "fcache"}, f"maps not found: {ours}"
        targets_before = map_keys(ours["targets"])
        ws = []
        for i in range(10):
            py = three[i % 3]
            ws.append(sysburn(h, py, fname(f"short{i}"), 1, wait=False, extra=["--cpu"]))
            time.sleep(0.3)
        for w in ws:
            h.wait_truth(w)
        for w in ws:
            w.proc.wait(PROFILER_GRACE)
        # Exits arrive as events; the sweep that backs them up runs every second.
        time.sleep(2.5)
        text = err.read_text(errors="replace")
        dead = {w.truth["pid"] for w in ws}
        for pid in dead:
            assert f"following pid {pid} " in text, f"pid {pid} never followed:\n{text[-3000:]}"
            assert f"stopped following pid {pid}:" in text, \
                f"pid {pid} still in the table:\n{text[-3000:]}"
        # Other Python processes may come and go meanwhile (and the start-up scan logs
        # each process it takes): the table holds those followed and not let go.
        # Replayed line by line, the log must agree with itself: each "stopped
        # following" names a process in the table and says how many remain.
        table = set()
        for m in re.finditer(r"^pybpfprof: (?:following pid (\d+) |stopped following pid "
                             r"(\d+): (\d+) process(?:es)? profiled now)", text, re.M):
            if m.group(1):
                table.add(int(m.group(1)))
                continue
            pid, left = int(m.group(2)), int(m.group(3))
            assert pid in table, f"pid {pid} let go but never followed:\n{text[-3000:]}"
            table.discard(pid)
            assert left == len(table), f"{left} left after pid {pid}, the log says " \
                f"{len(table)}: {sorted(table)}\n{text[-3000:]}"
        followed = len(re.findall(r"^pybpfprof: following pid \d+ ", text, re.M))
        assert baseline <= followed, f"the start-up scan logged {followed} of {baseline}"
        assert targets_before - dead == targets_before, "a pid was reused"
        for name in ("targets", "threads", "fcache"):
            # Another process may exit between the dump and the look in /proc: an
            # entry is left behind only if it is still there in a later dump, once
            # the exit event and the sweep behind it (every second) had their turn.
            left = {k for k in map_keys(ours[name]) if k in dead or
                    not os.path.exists(f"/proc/{k}")}
            if left:
                time.sleep(2.5)
                left &= map_keys(ours[name])
            assert not left, f"{name} map keeps entries of exited processes: {sorted(left)}"
        prof_proc.send_signal(signal.SIGINT)
        rc = prof_proc.wait(PROFILER_GRACE)
    finally:
        h.close()
    stderr = err.read_text(errors="replace")
    assert rc == 0, f"profiler failed ({rc}):\n{stderr[-3000:]}"
    from lib.collapsed import parse_collapsed
    prof = parse_collapsed(out.read_text())
    funcs = {w.truth["func"] for w in ws}
    for w in ws:
        check_process(prof, w.truth, funcs - {w.truth["func"]})


# ---- a process in its own mount and PID namespace ------------------------------------

def test_own_mount_and_pid_namespace(three, tmp_path, profiler_bin):
    """The interpreter and script sit on a tmpfs mounted inside the process's own mount
    namespace: the host sees them only through /proc/PID/root."""
    py315 = three[2]
    root = py315.root
    private = "/opt/pbp-ns"
    os.makedirs(root + private, exist_ok=True)
    name = fname("namespaced")
    tag = uuid.uuid4().hex[:8]
    truth_target = f"{RUN_DIR}/ns-{tag}.json"
    script = (f"mount -t tmpfs pbpns {root}{private} && "
              f"cp {root}/usr/bin/python3.15 {root}{private}/python3.15 && "
              f"cp {WORKLOADS_SRC}/sysburn.py {WORKLOADS_SRC}/pbp_common.py {root}{private}/ && "
              f"exec chroot {root} /usr/bin/env PYTHONHOME=/usr {private}/python3.15 "
              f"{private}/sysburn.py --name {name} --truth {truth_target} --seconds 60")
    h = Harness(tmp_path, profiler_bin)
    try:
        proc = h.spawn(["unshare", "--mount", "--pid", "--fork", "--propagation", "private",
                        "sh", "-c", script])
        truth_host = Path(root + truth_target)
        wait_for(lambda: truth_host.exists() or proc.poll() is not None, 30,
                 "the namespaced workload")
        assert truth_host.exists(), f"namespaced workload failed ({proc.returncode})"
        truth = json.loads(truth_host.read_text())
        assert truth["pid"] == 1, f"not in its own PID namespace: {truth['pid']}"
        assert not os.path.exists(private + "/python3.15") and \
            not os.path.exists(root + private + "/python3.15"), \
            "the private mount leaked into the host's mount namespace"
        host_pid = None
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    cmd = Path(f"/proc/{d}/cmdline").read_bytes()
                except OSError:
                    continue
                if name.encode() in cmd and cmd.startswith(f"{private}/python3.15".encode()):
                    host_pid = int(d)
        assert host_pid, "cannot find the namespaced process on the host"
        run = record_all(h, tmp_path, 3)
    finally:
        h.close()
    prof = run.check_ok()
    truth["pid"] = host_pid
    truth["file"] = f"{private}/sysburn.py"
    check_process(prof, truth)
    root_frame = [r for r in roots(run) if r.startswith(f"process {host_pid} ")]
    assert root_frame and f"{private}/python3.15" in root_frame[0], root_frame


# ---- narrowing ---------------------------------------------------------------------------

def test_container_pid_filter_and_exclude(three, tmp_path, profiler_bin):
    pod_uid = str(uuid.uuid4())
    container_id = uuid.uuid4().hex + uuid.uuid4().hex
    leaf, made = make_pod_cgroup(pod_uid, container_id)
    h = Harness(tmp_path, profiler_bin)
    try:
        a, b, c = (sysburn(h, py, fname(f"sel{i}"), 60) for i, py in enumerate(three))
        (leaf / "cgroup.procs").write_text(str(a.truth["pid"]))
        assert container_id in Path(f"/proc/{a.truth['pid']}/cgroup").read_text()
        in_pod = record_all(h, tmp_path, 2, ["--container", pod_uid])
        by_id = record_all(h, tmp_path, 2, ["--container", container_id[:12]])
        picked = record_all(h, tmp_path, 2, ["--pid-filter", f"{b.truth['pid']},{c.truth['pid']}",
                                             "--exclude", f"*{c.truth['func']}*"])
    finally:
        h.close()
        remove_cgroups(made)
    for run in (in_pod, by_id):
        prof = run.check_ok()
        assert set(by_process(prof)) == {a.truth["pid"]}, \
            f"--container took other processes: {sorted(by_process(prof))}"
        check_process(prof, a.truth)
    prof = picked.check_ok()
    assert set(by_process(prof)) == {b.truth["pid"]}, \
        f"--pid-filter/--exclude took {sorted(by_process(prof))}, expected {b.truth['pid']}"
    check_process(prof, b.truth)


def test_filters_that_take_nothing_say_so(three, tmp_path, profiler_bin):
    """-a whose filters take no process for the whole run writes no empty profile and
    exits 3, counting the Python processes it could have taken."""
    h = Harness(tmp_path, profiler_bin)
    try:
        ws = [sysburn(h, py, fname(f"none{i}"), 60) for i, py in enumerate(three)]
        runs = {
            "container": record_all(h, tmp_path, 1, ["--container", uuid.uuid4().hex]),
            # PID 1 runs no CPython here; this test's own process does, and
            # --exclude leaves it out.
            "pids": record_all(h, tmp_path, 1, ["--pid-filter", f"1,{os.getpid()}",
                                                "--exclude", "*pytest*"]),
        }
    finally:
        h.close()
    for what, run in runs.items():
        line = run.check_error(3)
        m = re.search(r"no Python process passed the filters \((.*)\) during the run "
                      r"\((\d+) Python process(?:es)? runs? on the host now\); nothing written",
                      line)
        assert m, f"{what}: {line}"
        assert int(m.group(2)) >= len(ws), f"{what}: {len(ws)} workloads run: {line}"
        assert not run.out_path.exists(), f"{what}: an empty profile was left behind"
        assert run.stats()["processes"] == 0
    assert runs["pids"].stderr.count("--pid-filter 1,") == 1, runs["pids"].stderr


def test_max_processes_says_so(three, tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    try:
        ws = [sysburn(h, py, fname(f"cap{i}"), 60) for i, py in enumerate(three)]
        pids = ",".join(str(w.truth["pid"]) for w in ws)
        run = record_all(h, tmp_path, 2, ["--pid-filter", pids, "--max-processes", "2"])
    finally:
        h.close()
    prof = run.check_ok()
    assert len(set(by_process(prof))) == 2, sorted(by_process(prof))
    assert re.search(r"2 processes are being profiled, the most --max-processes allows",
                     run.stderr), run.describe()
    assert run.stats()["processes_skipped"] >= 1


def test_top_all_shows_every_process(three, tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    try:
        ws = [sysburn(h, py, fname(f"top{i}"), 60) for i, py in enumerate(three)]
        pids = ",".join(str(w.truth["pid"]) for w in ws)
        def all_shown(out, _):
            # Every process and its hot function in one block: enough to stop on.
            blocks = [b for b in out.split("\n\n") if b.strip()]
            return len(blocks) >= 2 and all(
                f"process {w.truth['pid']} " in blocks[-2] and w.truth["func"] in blocks[-2]
                for w in ws)

        run = h.run_profiler(["top", "-a", "--pid-filter", pids], timeout=60 + PROFILER_GRACE,
                             signal_when=(all_shown, signal.SIGINT))
    finally:
        h.close()
    assert run.rc == 0, run.describe()
    blocks = [b for b in run.stdout.split("\n\n") if b.strip()]
    assert blocks, f"top -a printed nothing\n{run.describe()}"
    last = blocks[-1]
    for w in ws:
        assert f"process {w.truth['pid']} " in last, f"pid {w.truth['pid']} missing:\n{last}"
        assert w.truth["func"] in last, f"{w.truth['func']} missing:\n{last}"


@pytest.mark.parametrize("args,msg", [
    (["-a", "-p", "1"], "-a profiles every process"),
    (["-a", "--no-bpf"], "-a needs BPF"),
    (["-a", "--subprocesses"], "-a already follows every process"),
    (["--container", "abcd", "-p", "1"], "narrow -a"),
    (["-a", "--max-processes", "0"], "invalid --max-processes"),
    (["-a", "--pid-filter", "12x"], "invalid --pid-filter"),
    (["-a", "--container", "ab"], "invalid --container"),
])
def test_usage_errors(tmp_path, profiler_bin, args, msg):
    h = Harness(tmp_path, profiler_bin)
    try:
        run = h.run_profiler(["record"] + args, timeout=20)
    finally:
        h.close()
    line = run.check_error(2)
    assert msg in line, line


def test_unprivileged_all_is_refused(tmp_path, profiler_bin):
    from lib.paths import UNPRIV_USER
    h = Harness(tmp_path, profiler_bin)
    try:
        run = h.run_profiler(["-a", "-d", "1", "-o", "/dev/null"], timeout=20,
                             user=UNPRIV_USER)
    finally:
        h.close()
    line = run.check_error(6)
    assert "-a needs BPF" in line and "CAP_BPF" in line, line
