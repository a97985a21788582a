# SPDX-License-Identifier: GPL-2.0-only
"""`pybpfprof agent`, black box: a real agent, real Python workloads, a real HTTP server
on 127.0.0.1 standing in for Pyroscope, and the pprof bodies decoded by protoc.

- A workload in a cgroup made here like a kubelet's (burstable pod, containerd
  container) gets one profile per period, labelled with its pod UID, container id, QoS
  class, pid, command, Python version and host, and holding its hot function.
- With the server down, pushes back off, the queue stays within --queue-max and drops
  the oldest; once the server is up, the queued (newest) profiles arrive, in order.
- SIGHUP reloads the config file (a bad one is refused and the old one stays); SIGTERM
  cuts the period short, sends it, and exits 0 within 5 s.
- The metrics endpoint says how many processes are profiled; after short-lived ones
  exit, it is back where it was, and so are the BPF map gauges.
- Clients that connect to the metrics port and never send hold up neither /healthz nor
  sampling; a reload that changes the metrics address warns every time; only the main
  thread takes signals.
- The Pyroscope token and password reach the server from a file or the environment;
  given on the command line they work, with a warning, and are blanked from
  /proc/PID/cmdline; a control character in one is refused."""

import base64
import gzip
import re
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from lib.interpreters import Interp, make_interp
from lib.harness import Harness
from lib.agent import Agent, pushes_for
from lib.cgroups import cgroup2_root, make_pod_cgroup, remove_cgroups
from lib.ingest import Ingest, free_port, http_get
from lib.system_wide import fname, sysburn

# The node agent profiles every process on the host:
# `make test` runs this file with no other test beside it.
pytestmark = pytest.mark.alone


@pytest.fixture(scope="module")
def py315(sid_root, workloads_installed):
    py = make_interp("3.15", sid_root)
    py.require()
    return py


def hot_share(prof, func):
    total = hot = 0
    for stack, values, _ in prof.samples():
        total += values[0]
        hot += values[0] if stack and stack[0][0] == func else 0
    return hot / total if total else 0


def test_labelled_profile_per_period(py315, tmp_path, profiler_bin):
    pod_uid = str(uuid.uuid4())
    container_id = uuid.uuid4().hex + uuid.uuid4().hex
    leaf, made = make_pod_cgroup(pod_uid, container_id)
    server = Ingest()
    h = Harness(tmp_path, profiler_bin)
    try:
        w = sysburn(h, py315, fname("agent_hot"), 120)
        (leaf / "cgroup.procs").write_text(str(w.truth["pid"]))
        pid = w.truth["pid"]
        agent = Agent(h, tmp_path, ["--pyroscope-url", server.url, "--period", "2s",
                                    "--app-name", "shop", "--label", "cluster=test",
                                    "--host-name", "node-7"])
        agent.wait(lambda: len(pushes_for(server, pid)) >= 3, 60, "three pushes")
        rc, _ = agent.stop()
    finally:
        h.close()
        server.stop()
        remove_cgroups(made)
    assert rc == 0, agent.stderr()
    pushes = pushes_for(server, pid)
    windows = []
    for path, q, prof in pushes:
        assert path == "/ingest" and q["format"] == "pprof", (path, q)
        name = q["name"]
        assert name.startswith("shop{") and name.endswith("}"), name
        series = dict(kv.split("=", 1) for kv in name[5:-1].split(","))
        want = {"pid": str(pid), "pod_uid": pod_uid, "container_id": container_id,
                "qos_class": "burstable", "host_name": "node-7", "cluster": "test",
                "python_version": w.truth["python_version"]}
        assert {k: series.get(k) for k in want} == want, series
        assert "sysburn.py" in series["command"], series
        for stack, values, labels in prof.samples():
            assert {k: str(labels.get(k)) for k in ("pod_uid", "container_id", "pid")} == {
                "pod_uid": pod_uid, "container_id": container_id, "pid": str(pid)}, labels
            assert stack, "empty stack"
        windows.append((int(q["from"]), int(q["until"])))
    # Every full period is a profile of its own, holding the hot function at its line.
    full = [p for (_, _, p) in pushes[1:-1]] or [pushes[-1][2]]
    for prof in full:
        assert hot_share(prof, w.truth["func"]) >= 0.5, list(prof.samples())[:5]
        lines = {st[0][2] for st, _, _ in prof.samples() if st and st[0][0] == w.truth["func"]}
        assert lines == {w.truth["line"]}, lines
    starts = [a for a, _ in windows]
    assert starts == sorted(starts) and len(set(starts)) == len(starts), windows


def test_outage_backs_off_bounds_the_queue_then_delivers(py315, tmp_path, profiler_bin):
    port = free_port()
    h = Harness(tmp_path, profiler_bin)
    server = None
    # Only the workload, in a container cgroup of its own: every other Python process
    # on the host (the test runner itself, say) would add profiles of its own to each
    # period and fill the queue before the pushes had failed twice.
    container_id = uuid.uuid4().hex + uuid.uuid4().hex
    leaf, made = make_pod_cgroup(str(uuid.uuid4()), container_id)
    try:
        w = sysburn(h, py315, fname("agent_outage"), 120)
        (leaf / "cgroup.procs").write_text(str(w.truth["pid"]))
        agent = Agent(h, tmp_path, ["--pyroscope-url", f"http://127.0.0.1:{port}",
                                    "--period", "1s", "--queue-max", "3",
                                    "--container", container_id[:12]])
        m = agent.wait(lambda: (lambda m: m if m.get("pybpfprof_export_dropped_total", 0) >= 2
                                else None)(agent.metrics()), 60, "profiles to be dropped")
        assert m["pybpfprof_export_queue_depth"] <= 3, m
        assert m["pybpfprof_export_push_failures_total"] >= 2, m
        failures_then = m["pybpfprof_export_push_failures_total"]
        time.sleep(3)
        m = agent.metrics()
        # Backing off: not a retry per poll.
        assert m["pybpfprof_export_push_failures_total"] - failures_then <= 3, m
        assert m["pybpfprof_export_queue_depth"] <= 3, m
        server = Ingest(port)
        agent.wait(lambda: len(pushes_for(server, w.truth["pid"])) >= 2, 90,
                   "queued profiles to arrive once the server is up")
        rc, _ = agent.stop()
    finally:
        h.close()
        if server:
            server.stop()
        remove_cgroups(made)
    assert rc == 0, agent.stderr()
    starts = [int(q["from"]) for _, q, _ in pushes_for(server, w.truth["pid"])]
    assert starts == sorted(starts), starts


def test_sighup_reload_and_sigterm_flush(py315, tmp_path, profiler_bin):
    server = Ingest()
    conf = tmp_path / "agent.conf"
    conf.write_text(f"pyroscope-url = {server.url}\nperiod = 1s\nlabel = team=blue\n")
    h = Harness(tmp_path, profiler_bin)
    try:
        w = sysburn(h, py315, fname("agent_hup"), 120)
        pid = w.truth["pid"]
        agent = Agent(h, tmp_path, [], config=str(conf))

        def teams():
            return [q["name"] for _, q, _ in pushes_for(server, pid)]
        agent.wait(lambda: any("team=blue" in n for n in teams()), 60, "a team=blue push")
        conf.write_text("period = 1s\nlabel = team=\n")   # bad: refused, old config stays
        agent.proc.send_signal(signal.SIGHUP)
        agent.wait(lambda: agent.metrics().get("pybpfprof_config_reload_failures_total") == 1,
                   30, "the bad config to be refused")
        conf.write_text(f"pyroscope-url = {server.url}\nperiod = 60s\nlabel = team=green\n")
        agent.proc.send_signal(signal.SIGHUP)
        agent.wait(lambda: agent.metrics().get("pybpfprof_config_reloads_total") == 1, 30,
                   "the reload")
        # The period is 60 s now: only SIGTERM can bring the next profile.
        time.sleep(2)
        before = len(teams())
        rc, took = agent.stop()
    finally:
        h.close()
        server.stop()
    assert rc == 0, agent.stderr()
    assert took < 5, f"SIGTERM took {took:.1f}s"
    names = teams()
    assert len(names) > before and "team=green" in names[-1], names[-3:]
    assert "SIGHUP" in agent.stderr()


def test_process_table_and_maps_return_after_exits(py315, tmp_path, profiler_bin):
    """Other Python processes on the host come and go as they like; the agent is
    narrowed to a cgroup of this test's own, which its workloads enter before they
    exec Python."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    group = Path(cgroup2_root()) / f"pbp-agent-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    in_group = Interp(py315.version, py315.root,
                      ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$0" "$@"'] +
                      py315.argv)
    h = Harness(tmp_path, profiler_bin)
    try:
        agent = Agent(h, tmp_path, ["--output-dir", str(out_dir), "--period", "1s",
                                    "--container", group.name])
        time.sleep(1.5)
        base = agent.metrics()
        # They live until the agent has profiled all five and written a profile of
        # each, however long a busy machine makes that; then they exit.
        ws = [sysburn(h, in_group, fname(f"agent_short{i}"), 300, wait=False)
              for i in range(5)]
        for w in ws:
            h.wait_truth(w)
        m = agent.wait(lambda: (lambda m: m if m["pybpfprof_processes"] == 5 else None)(
            agent.metrics()), 60, "the new processes to be profiled")
        agent.wait(lambda: all(any(f"-{w.truth['pid']}-" in p.name for p in out_dir.iterdir())
                               for w in ws), 60, "a profile of each")
        for w in ws:
            w.proc.terminate()
        for w in ws:
            w.proc.wait(30)
        # The map gauge is counted once a period.
        agent.wait(lambda: (lambda m: m["pybpfprof_processes"] == 0 and
                            m['pybpfprof_bpf_map_entries{map="targets"}'] == 0)(
            agent.metrics()), 30, "the exits to be noticed")
        after = agent.metrics()
        rc, _ = agent.stop()
    finally:
        h.close()
        remove_cgroups([group])
    assert rc == 0, agent.stderr()
    for key in ("pybpfprof_processes", 'pybpfprof_bpf_map_entries{map="targets"}'):
        assert base[key] == 0 and after[key] == 0, (key, base[key], m[key], after[key])
    assert after["pybpfprof_processes_seen_total"] == 5, (after, agent.stderr())
    written = {p.name.split("-")[1] for p in out_dir.iterdir() if p.name.endswith(".pb.gz")}
    missing = [w.truth["pid"] for w in ws if str(w.truth["pid"]) not in written]
    assert not missing, f"no profile file for {missing}: {sorted(written)}"


def test_output_format_pbp_writes_profile_files_of_one_process_each(py315, tmp_path,
                                                                   profiler_bin):
    """--output-format pbp: each process's files are profile files that report and
    convert read, and none carries another process's names."""
    h = Harness(tmp_path, profiler_bin)
    out_dir = tmp_path / "agent"
    try:
        a = sysburn(h, py315, fname("agent_pbp_a"), 120)
        b = sysburn(h, py315, fname("agent_pbp_b"), 120)
        agent = Agent(h, tmp_path, ["--output-dir", out_dir, "--output-format", "pbp",
                                    "--period", "1s"])

        def files(w):
            return [p for p in out_dir.iterdir() if f"-{w.truth['pid']}-" in p.name
                    and p.name.endswith(".pbp")]
        agent.wait(lambda: files(a) and files(b), 60, "a profile file of each process")
        rc, _ = agent.stop()
        bad = h.run_profiler(["agent", "--output-format", "pbp", "--pyroscope-url",
                              "http://127.0.0.1:9"], timeout=20)
    finally:
        h.close()
    assert rc == 0, agent.stderr()
    assert bad.rc == 2 and "no --output-dir" in bad.stderr, bad.describe()
    assert not [p for p in out_dir.iterdir() if p.name.endswith(".pb.gz")]
    for mine, other in ((a, b), (b, a)):
        for f in files(mine):
            assert other.truth["func"].encode() not in gzip.decompress(f.read_bytes()), \
                f"{f.name} names {other.truth['func']}"
            p = subprocess.run([profiler_bin, "report", f, "-l", "3"], capture_output=True,
                               text=True, timeout=60)
            assert p.returncode == 0 and f"pid {mine.truth['pid']} " in p.stdout, p.stderr
        f = files(mine)[-1]
        p = subprocess.run([profiler_bin, "convert", f, "-o", "-"], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0 and mine.truth["func"] in p.stdout, p.stderr


def test_agent_creates_a_missing_output_dir(tmp_path, profiler_bin):
    """As a daemon does: the directory and its missing parents are made, mode 0750."""
    out_dir = tmp_path / "new" / "profiles"
    h = Harness(tmp_path, profiler_bin)
    try:
        agent = Agent(h, tmp_path, ["--output-dir", out_dir, "--period", "1s"])
        rc, _ = agent.stop()
    finally:
        h.close()
    assert rc == 0, agent.stderr()
    for d in (out_dir, out_dir.parent):
        assert d.is_dir() and d.stat().st_mode & 0o777 == 0o750, \
            f"{d}: {oct(d.stat().st_mode) if d.exists() else 'missing'}\n{agent.stderr()}"


def test_agent_refuses_bad_setups(tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    (tmp_path / "a-file").write_text("not a directory\n")
    uncreatable = tmp_path / "a-file" / "dir"
    try:
        none = h.run_profiler(["agent"], timeout=20)
        bad = h.run_profiler(["agent", "--output-dir", uncreatable], timeout=20)
        conf = tmp_path / "bad.conf"
        conf.write_text("period = 10s\nfrobnicate = 1\n")
        badconf = h.run_profiler(["agent", "--config", conf, "--output-dir", tmp_path],
                                 timeout=20)
        (tmp_path / "tick.conf").write_text("clock = tick\n")
        ticked = h.run_profiler(["agent", "--config", tmp_path / "tick.conf", "--mode",
                                 "off-cpu", "--output-dir", tmp_path], timeout=20)
    finally:
        h.close()
    assert "nowhere to send profiles" in none.check_error(2)
    assert str(uncreatable) in bad.check_error(2), bad.describe()
    assert badconf.rc == 2 and f"{conf}:2" in badconf.stderr, badconf.describe()
    # Valid alone, not together: record and top refuse them too.
    assert "mode off-cpu takes none" in ticked.check_error(2), ticked.describe()


def connected(s):
    """Whether the server still holds @s open (it has sent nothing and not closed)."""
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except ConnectionError:
        return False


def test_silent_clients_hold_up_neither_healthz_nor_sampling(py315, tmp_path, profiler_bin):
    """Clients connect to the metrics port and never send a byte nor close. Every
    /healthz gets its 200 while all of them are still connected: a server that serves
    one connection at a time answers nobody behind a silent client until it gives up
    on it and closes it. Meanwhile the agent keeps sampling."""
    silent = []
    h = Harness(tmp_path, profiler_bin)
    try:
        sysburn(h, py315, fname("agent_silent"), 120)
        agent = Agent(h, tmp_path, ["--output-dir", tmp_path, "--period", "1s"])
        before = agent.wait(lambda: (lambda m: m if m.get("pybpfprof_samples_total") else None)(
            agent.metrics()), 30, "the first samples")["pybpfprof_samples_total"]
        silent = [socket.create_connection(("127.0.0.1", agent.port), timeout=10)
                  for _ in range(12)]
        for i in range(10):
            status, _, body = http_get(agent.port, "/healthz", timeout=10)
            assert (status, body) == (200, "ok\n")
            gone = [n for n, s in enumerate(silent) if not connected(s)]
            assert not gone, f"/healthz #{i} was answered only after silent clients " \
                             f"{gone} were dropped"
        agent.wait(lambda: agent.metrics()["pybpfprof_samples_total"] > before, 30,
                   "the samples count to rise while the silent clients are connected")
        gone = [n for n, s in enumerate(silent) if not connected(s)]
        assert not gone, f"silent clients {gone} were dropped before the scrape's answer"
        rc, _ = agent.stop()
    finally:
        for s in silent:
            s.close()
        h.close()
    assert rc == 0, agent.stderr()


def test_reload_keeps_the_metrics_address_it_listens_on(tmp_path, profiler_bin):
    """The metrics address needs a restart: each reload whose file names another one
    says so, naming the address still served, which keeps answering."""
    port, other = free_port(), free_port()
    conf = tmp_path / "agent.conf"
    conf.write_text(f"output-dir = {tmp_path}\nmetrics-addr = 127.0.0.1:{port}\n")
    h = Harness(tmp_path, profiler_bin)
    try:
        agent = Agent(h, tmp_path, ["--exclude", "*"], config=str(conf), port=port)
        conf.write_text(f"output-dir = {tmp_path}\nmetrics-addr = 127.0.0.1:{other}\n")
        for n in (1, 2, 3):
            agent.proc.send_signal(signal.SIGHUP)
            agent.wait(lambda: agent.metrics().get("pybpfprof_config_reloads_total") == n,
                       30, f"reload {n}")
        rc, _ = agent.stop()
    finally:
        h.close()
    assert rc == 0, agent.stderr()
    warned = agent.stderr().count(f"metrics-addr: 127.0.0.1:{port} stays until a restart")
    assert warned == 3, agent.stderr()


def test_secrets_refused_with_a_control_character(tmp_path, profiler_bin, monkeypatch):
    """A CR or LF would end the Authorization header early and start another: refused
    with one line, exit 2, whichever way the secret came, and never echoed."""
    evil = "tok\r\nX-Evil: 1"
    tokfile = tmp_path / "token"
    tokfile.write_text(evil + "\n")
    tokfile.chmod(0o600)
    conf = tmp_path / "secret.conf"
    conf.write_text("pyroscope-url = http://127.0.0.1:9\npyroscope-password = \"a\tb\"\n")
    conf.chmod(0o600)
    base = ["agent", "--pyroscope-url", "http://127.0.0.1:9"]
    h = Harness(tmp_path, profiler_bin)
    try:
        runs = {
            "argv": h.run_profiler(base + ["--pyroscope-token", evil], timeout=20),
            "user": h.run_profiler(base + ["--pyroscope-user", "u\nv"], timeout=20),
            "file": h.run_profiler(base + ["--pyroscope-token-file", tokfile], timeout=20),
            "config": h.run_profiler(["agent", "--config", conf], timeout=20),
        }
        monkeypatch.setenv("PYBPFPROF_PYROSCOPE_TOKEN", evil)
        runs["env"] = h.run_profiler(base, timeout=20)
    finally:
        h.close()
    for how, run in runs.items():
        line = run.check_error(2)
        assert "control character" in line and "Evil" not in line, (how, line)
    assert str(tokfile) in runs["file"].stderr
    assert f"{conf}:2" in runs["config"].stderr
    assert "PYBPFPROF_PYROSCOPE_TOKEN" in runs["env"].stderr


def first_auth(server, agent):
    """The Authorization header of the first push @server received from @agent."""
    def got():
        with server.lock:
            return server.requests[0][1].get("Authorization") if server.requests else None
    agent.wait(got, 60, "a push")
    return got()


def test_secrets_from_file_environment_and_command_line(py315, tmp_path, profiler_bin,
                                                         monkeypatch):
    """What the server sees in Authorization, the secret read from a file (named on
    the command line or in the config file), from the environment, or from the
    command line, which warns and blanks it from /proc/PID/cmdline. A file others
    can read that holds a secret is warned about."""
    tokfile = tmp_path / "token"
    tokfile.write_text("tok-from-file\n")
    tokfile.chmod(0o644)
    pwfile = tmp_path / "password"
    pwfile.write_text("pw-from-file")
    pwfile.chmod(0o600)
    readable = tmp_path / "readable.conf"
    readable.write_text("pyroscope-password = pw-from-config\n")
    readable.chmod(0o644)
    seen = {}
    h = Harness(tmp_path, profiler_bin)
    try:
        sysburn(h, py315, fname("agent_secrets"), 120)
        common = ["--period", "1s"]
        for how in ("token-file", "env", "password-file", "argv"):
            server = Ingest()
            try:
                args, config = common + ["--pyroscope-url", server.url], None
                if how == "token-file":
                    conf = tmp_path / "token.conf"
                    conf.write_text(f"pyroscope-token-file = {tokfile}\n")
                    conf.chmod(0o644)   # holds no secret, only where one is
                    config = str(conf)
                elif how == "env":
                    monkeypatch.setenv("PYBPFPROF_PYROSCOPE_TOKEN", "tok-from-env")
                elif how == "password-file":
                    # The command line's file wins over the config file's value.
                    args += ["--pyroscope-user", "me", "--pyroscope-password-file", pwfile]
                    config = str(readable)
                else:
                    args += ["--pyroscope-token", "tok-from-argv"]
                agent = Agent(h, tmp_path, args, config=config)
                monkeypatch.delenv("PYBPFPROF_PYROSCOPE_TOKEN", raising=False)
                cmdline = (Path("/proc") / str(agent.proc.pid) / "cmdline").read_bytes()
                seen[how] = (first_auth(server, agent), agent.stderr(), cmdline)
                rc, _ = agent.stop()
                assert rc == 0, agent.stderr()
            finally:
                server.stop()
    finally:
        h.close()
    basic = "Basic " + base64.b64encode(b"me:pw-from-file").decode()
    assert {how: auth for how, (auth, _, _) in seen.items()} == {
        "token-file": "Bearer tok-from-file", "env": "Bearer tok-from-env",
        "password-file": basic, "argv": "Bearer tok-from-argv"}
    warnings = {how: [line for line in err.splitlines() if "warning" in line or
                      "can read it" in line] for how, (_, err, _) in seen.items()}
    assert len(warnings["token-file"]) == 1 and str(tokfile) in warnings["token-file"][0] \
        and "every user can read it" in warnings["token-file"][0], warnings
    assert warnings["env"] == [], warnings
    assert len(warnings["password-file"]) == 1 and \
        f"config {readable} holds a secret" in warnings["password-file"][0], warnings
    assert len(warnings["argv"]) == 1 and "--pyroscope-token on the command line" in \
        warnings["argv"][0], warnings
    for how, (_, _, cmdline) in seen.items():
        assert b"tok-from" not in cmdline and b"pw-from" not in cmdline, (how, cmdline)


def test_helper_threads_leave_signals_to_the_main_thread(tmp_path, profiler_bin):
    """SIGHUP and SIGTERM are the main loop's: the exporter's and the metrics server's
    threads block them, so the kernel never hands one to a thread that ignores it."""
    wanted = {signal.SIGHUP, signal.SIGTERM, signal.SIGINT}
    h = Harness(tmp_path, profiler_bin)
    try:
        agent = Agent(h, tmp_path, ["--output-dir", tmp_path, "--exclude", "*"])
        blocked = {}
        for task in (Path("/proc") / str(agent.proc.pid) / "task").iterdir():
            status = (task / "status").read_text()
            mask = int(re.search(r"^SigBlk:\s*([0-9a-f]+)$", status, re.M).group(1), 16)
            blocked[int(task.name)] = {s for s in wanted if mask >> (s - 1) & 1}
        rc, _ = agent.stop()
    finally:
        h.close()
    assert rc == 0, agent.stderr()
    main = blocked.pop(agent.proc.pid)
    assert main == set(), main
    assert len(blocked) >= 2, blocked    # the exporter's sender, the metrics server
    assert all(b == wanted for b in blocked.values()), blocked
