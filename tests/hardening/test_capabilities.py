# SPDX-License-Identifier: GPL-2.0-only
"""The least-privilege deployments: exactly the capabilities the DaemonSet and the
systemd unit grant (CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH; no
CAP_SYS_ADMIN), set as bounding, inheritable and ambient sets with setpriv, as root.

- `record -p` samples with BPF (not the live fallback) and gets the workload's hot
  function at its burn line, with a BPF cost per sample that is measured, not 0.
- `-a` samples the workload under its own process root.
- `agent` starts, and its /metrics counts samples of the workload.
- `record --native` unwinds in a parsing worker that keeps uid 0 (no CAP_SETUID) but
  has no capability left, no_new_privs and its seccomp filter.
- The same three on the scheduler's tick (`--clock tick`), which needs no kernel
  address from kallsyms: these capabilities do not show any."""

import json
import re
import subprocess
import time
import urllib.request
import uuid

import pytest

from lib.paths import PROFILER_GRACE
from lib.collapsed import show, total
from lib.harness import Harness, fraction, wait_for
from lib.ingest import free_port
from lib.procfs import confined_status, field, perf_event_fds_of, worker_of
from lib.system_wide import fname, sysburn

CAPS = "+bpf,+perfmon,+sys_ptrace,+dac_read_search"
# CapEff of the shipped deployments: DAC_READ_SEARCH (2), SYS_PTRACE (19), PERFMON
# (38), BPF (39).
WANT_CAPEFF = (1 << 2) | (1 << 19) | (1 << 38) | (1 << 39)


def least_privilege(argv):
    return ["setpriv", f"--bounding-set=-all,{CAPS}", f"--inh-caps=-all,{CAPS}",
            f"--ambient-caps=-all,{CAPS}", "--"] + [str(a) for a in argv]


@pytest.mark.root
def test_setpriv_gives_exactly_the_deployment_capabilities():
    """The premise of the other tests: no CAP_SYS_ADMIN, exactly the four."""
    p = subprocess.run(least_privilege(["grep", "^CapEff:", "/proc/self/status"]),
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    assert int(p.stdout.split()[1], 16) == WANT_CAPEFF, p.stdout


def hot_samples(prof, truth):
    return [s for s in prof if not s.incomplete and s.leaf is not None and
            s.leaf.name == truth["func"] and s.leaf.line == truth["line"]]


@pytest.fixture
def burner(py311, tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    w = sysburn(h, py311, fname("capburn"), 120)
    yield h, w
    h.close()


# Each clock at a rate every kernel's tick reaches (HZ is 100 at least).
CLOCKS = {"timer": ["-r", 199], "tick": ["--clock", "tick", "-r", 100]}


def run_limited(h, args, seconds, clock="timer"):
    """Run the profiler with the deployment's capabilities; returns the Run."""
    out = h.tmp / f"cap-{uuid.uuid4().hex[:6]}.txt"
    st = h.tmp / f"cap-{uuid.uuid4().hex[:6]}.json"
    argv = least_privilege(h.profiler_argv(args + CLOCKS[clock] + ["-d", seconds, "-o", out,
                                                                   "--stats-file", st]))
    real = h.profiler
    h.profiler = argv[0]
    try:
        return h.run_profiler(argv[1:], timeout=seconds + PROFILER_GRACE, out=out, stats=st)
    finally:
        h.profiler = real


@pytest.mark.parametrize("clock", CLOCKS)
def test_record_pid_uses_bpf(burner, clock):
    h, w = burner
    run = run_limited(h, ["record", "-p", w.pid], 2, clock)
    prof = run.check_ok()
    stats = run.stats()
    assert stats["mode"] == "bpf", f"fell back to {stats['mode']}\n{run.describe()}"
    assert stats["clock"] == clock and (stats["tick_hz"] > 0) == (clock == "tick"), stats
    assert "BPF is not available" not in run.stderr, run.describe()
    hot = hot_samples(prof, w.truth)
    assert fraction(total(hot), total(prof)) >= 0.5, show(prof)
    assert stats["bpf_ns_per_sample"] > 0, \
        f"BPF cost not measured without CAP_SYS_ADMIN: {stats}\n{run.describe()}"


@pytest.mark.parametrize("clock", CLOCKS)
def test_system_wide_runs(burner, clock):
    h, w = burner
    run = run_limited(h, ["record", "-a"], 2, clock)
    prof = run.check_ok()
    mine = [s for s in prof if s.process == w.pid]
    assert fraction(total(hot_samples(mine, w.truth)), total(mine)) >= 0.5, show(prof)


@pytest.mark.parametrize("clock", CLOCKS)
def test_agent_starts_and_samples(burner, tmp_path, clock):
    h, w = burner
    port = free_port()
    out_dir = tmp_path / "profiles"
    out_dir.mkdir()
    err = tmp_path / "agent.stderr"
    argv = least_privilege(h.profiler_argv(["agent", "--metrics-addr", f"127.0.0.1:{port}",
                                            "--output-dir", out_dir, "--period", "1s",
                                            "--clock", clock, "-v"]))
    with open(err, "wb") as fe:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=fe, start_new_session=True)
    h.group_leaders.append(proc)

    def log():
        return err.read_text(errors="replace")[-3000:]

    def samples():
        if proc.poll() is not None:
            raise AssertionError(f"agent exited ({proc.returncode}):\n{log()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                text = r.read().decode()
        except OSError:
            return 0
        m = re.search(r"^pybpfprof_samples_total (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0

    wait_for(lambda: samples() > 50, 60, "the agent to count samples", log)
    wait_for(lambda: any(p.name.endswith(".pb.gz") for p in out_dir.iterdir()), 30,
             "a profile file", log)
    clocks = perf_event_fds_of(proc.pid)
    if clock == "tick":
        assert "sampling on the scheduler's tick" in log() and clocks == 0, (clocks, log())
    else:
        assert "scheduler's tick" not in log() and clocks > 0, (clocks, log())
    proc.terminate()
    assert proc.wait(30) == 0, log()


def test_record_native_parses_in_a_confined_worker(burner, tmp_path):
    """--native with the deployment's capabilities: no CAP_SETUID, so the parsing worker
    keeps uid 0, but with no capability left, no_new_privs and its seccomp filter; and
    it unwinds (the profile has native frames under the workload's Python ones)."""
    h, w = burner
    out = tmp_path / "native.txt"
    st = tmp_path / "native.json"
    argv = least_privilege(h.profiler_argv(["record", "-p", w.pid, "--native", "-r", 199,
                                            "-d", 4, "-f", "collapsed", "-o", out,
                                            "--stats-file", st]))
    prof = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        worker, deadline = None, time.monotonic() + 20
        while worker is None and prof.poll() is None and time.monotonic() < deadline:
            worker = worker_of(prof.pid)
            time.sleep(0.05)
        status = confined_status(worker) if worker else ""
        _, err = prof.communicate(timeout=60)
    finally:
        if prof.poll() is None:
            prof.kill()
    assert worker, f"no parsing worker ran:\n{err}"
    assert prof.returncode == 0, err
    for caps in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(field(status, caps)[0], 16) == 0, status
    assert field(status, "NoNewPrivs") == ["1"] and field(status, "Seccomp") == ["2"], status
    stats = json.loads(st.read_text())
    assert stats["native_walks"] > 0 and stats["native_worker_deaths"] == 0, stats
    assert stats["native_end_outermost"] >= stats["native_walks"] // 2, stats
