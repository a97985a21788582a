# SPDX-License-Identifier: GPL-2.0-only
"""The node agent on real containers: the image built from deploy/Dockerfile, run with
exactly the privileges deploy/kubernetes/pybpfprof-agent.yaml grants, profiling
containers that docker and podman started, and `-a` from the host beside it.

The runtimes are Debian's docker.io (dockerd 20.10, containerd, runc) and podman 4.3,
with no image registry: tools/test-containers.sh debootstraps a Debian 12 base with
python3, imports it and the sid chroot (CPython 3.13-3.15) as images, and builds the
agent's image FROM that base. dockerd is started here when none runs, and stopped at
the end.

The agent runs under podman: Debian 12's docker 20.10 does not know CAP_BPF or
CAP_PERFMON (`--cap-add BPF` is refused as an unknown capability), which podman and
containerd do. Its podman arguments are read from the manifest itself: the capability
list, hostPID, the read-only root, no privilege escalation, the seccomp profile, the
user and the CPU and memory limits, so the test follows the manifest.

Every workload is sysburn.py burning in a function named for it alone: its truth file
(written inside the container) gives its Python version, function and line; the
runtime gives its container id and host PID. Checked:
- one profile per container process per period, in the files and at a Pyroscope
  stand-in alike, labelled with the right container_id, pid, command and
  python_version, holding the container's own function at its burn line; for
  containers started before and after the agent, of 3.11, 3.13, 3.14 and 3.15, and
  one that exits mid-period (whose profiles then stop);
- each granted capability is needed: without CAP_BPF or CAP_PERFMON the agent exits
  6 saying which; without CAP_SYS_PTRACE it can read no container's memory; without
  CAP_DAC_READ_SEARCH it cannot open a CPython runtime library in another user's
  private directory (as a pyenv build in a home directory is), which it profiles
  with the full set;
- under podman's default seccomp profile (the manifest runs Unconfined) the agent
  exits 6 saying bpf() is refused by a seccomp profile, not that the kernel lacks BPF;
- `--container ID` takes exactly that container's processes; `record -a` on the
  host sees every container, and `-a --container` one;
- docker and podman in cgroup v2 mode (this host is hybrid; a mount namespace whose
  /sys/fs/cgroup is the cgroup2 hierarchy makes a runtime drive v2): the v2 forms
  they write name the container too;
- go tool pprof, the reader Pyroscope and Parca share, reads the agent's files:
  functions, files, lines and labels.
The systemd cgroup driver needs systemd as PID 1, which this machine does not run: the
forms it writes (docker-<id>.scope, libpod-<id>.scope, crio-<id>.scope,
cri-containerd-<id>.scope under kubepods slices) are checked by
tests/unit/test_cgroup_labels.c."""

import os
import re
import time
import urllib.request
from pathlib import Path

import pytest

from lib.paths import PROFILER_GRACE, REPO
from lib.collapsed import show, total
from lib.harness import Harness, fraction, wait_for
from lib.agent import Agent, pushes_for
from lib.system_wide import by_process
from lib.containers import (DOCKER, LABEL, MANIFEST, PERIOD_S, PODMAN, PODMAN_LIMITS,
                            V2_NS, AgentContainer, DockerdV2, Fleet, FreebindIngest,
                            build_pyembed, check_container_profiles, labels_of,
                            manifest_security, podman_gateway, prepared_images, sh,
                            start_v2, window)

import sys
sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile  # noqa: E402

# Real runtimes (dockerd, podman) and the agent over them, as root. Both see every
# process on the host: `make test` runs this file with no other test beside it.
pytestmark = [pytest.mark.containers, pytest.mark.bpf, pytest.mark.alone]


# ---- the runtimes and images -----------------------------------------------------

@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Built beside the other tests by test_container_images.py, found here in seconds."""
    with prepared_images(tmp_path_factory.mktemp("runtimes")) as names:
        yield names


@pytest.fixture(scope="module")
def fleet(images, sid_root, tmp_path_factory):
    """Long-running containers of every runtime and version, started before any
    profiler."""
    root, err = sid_root
    assert root, f"the sid chroot is needed for CPython 3.13-3.15: {err}"
    f = Fleet(tmp_path_factory.mktemp("fleet"), images)
    f.libpython = build_pyembed(root, f.wl / "pyembed")
    f.before = [f.start(DOCKER, "python3"),
                f.start(PODMAN, "python3"),
                f.start(DOCKER, "python3.13", image=images["sid"], private=True)]
    f.before += [f.start(DOCKER, f"python{v}", image=images["sid"])
                 for v in ("3.13", "3.14", "3.15")]
    return f


# ---- the agent, as the DaemonSet runs it ----------------------------------------------

@pytest.fixture(scope="module")
def agent_run(images, fleet, tmp_path_factory):
    """The agent with the DaemonSet's privileges for a few periods, while containers
    start and one exits."""
    tmp = tmp_path_factory.mktemp("agent")
    sink = FreebindIngest(podman_gateway())
    try:
        agent = AgentContainer(images, tmp, sink=sink)
        agent.wait_running()
        late = [fleet.start(DOCKER, "python3"), fleet.start(PODMAN, "python3")]
        short = fleet.start(DOCKER, "python3", seconds=3 * PERIOD_S)
        every = fleet.before + late + [short]
        wait_for(lambda: all(len(agent.files(c.pid)) >= 4 for c in fleet.before + late),
                 120, "four profiles of every container",
                 lambda: f"{[(c.kind, len(agent.files(c.pid))) for c in every]}\n"
                         f"{agent.logs()[-3000:]}")
        exited = sh([DOCKER, "wait", short.id], timeout=60)
        ended_ns = time.time_ns()
        # Two more periods: long enough for a profile of the exited one to show up.
        n = len(agent.files(fleet.before[0].pid))
        wait_for(lambda: len(agent.files(fleet.before[0].pid)) >= n + 2, 60,
                 "two more periods", lambda: agent.logs()[-3000:])
        with urllib.request.urlopen(f"http://{agent.ip()}:9464/healthz", timeout=30) as resp:
            healthz = resp.status
        rc = agent.stop()
        yield dict(agent=agent, sink=sink, late=late, short=short, every=every, rc=rc,
                   short_rc=exited.stdout.strip(), short_ended_ns=ended_ns,
                   healthz=healthz)
    finally:
        sink.stop()


def test_agent_image_with_the_daemonsets_privileges(agent_run, fleet):
    r = agent_run
    agent = r["agent"]
    assert r["rc"] == 0, f"agent exited {r['rc']} on SIGTERM:\n{agent.logs()[-3000:]}"
    assert r["healthz"] == 200, f"/healthz from the pod network: {r['healthz']!r}"
    kinds = {c.kind for c in r["every"]}
    for want in ("docker 3.11", "podman 3.11", "docker 3.13", "docker 3.14", "docker 3.15"):
        assert any(k.startswith(want) for k in kinds), (want, kinds)
    for c in r["every"]:
        check_container_profiles(c, agent.profiles(c.pid), pushes_for(r["sink"], c.pid))
    # The one that exited: its profiles end with it.
    short = r["short"]
    assert r["short_rc"] == "0", r["short_rc"]
    late_starts = [window(p)[0] for p in agent.profiles(short.pid)
                   if window(p)[0] > r["short_ended_ns"] + PERIOD_S * 10**9]
    assert not late_starts, "profiles of a container after it exited"
    # Nothing that is none of ours carries one of our container ids.
    ids = {c.id: c.pid for c in r["every"]}
    for path in agent.out.glob("*.pb.gz"):
        labels = labels_of(Profile.load(path))
        if labels.get("container_id") in ids:
            assert labels["pid"] == str(ids[labels["container_id"]]), (path, labels)


def test_each_granted_capability_is_needed(images, fleet, tmp_path):
    """Without any one of the manifest's capabilities the agent cannot do its job, and
    says so; the full set profiles all of it (the test above)."""
    _, granted = manifest_security(MANIFEST.read_text())
    assert sorted(granted) == ["BPF", "DAC_READ_SEARCH", "PERFMON", "SYS_PTRACE"], granted
    private = next(c for c in fleet.before if c.truth["executable"] == "/home/u/python3")
    assert "libpython3.13" in Path(f"/proc/{private.pid}/maps").read_text()
    plain = [c for c in fleet.before if c is not private]
    for cap in ("BPF", "PERFMON"):
        agent = AgentContainer(images, tmp_path, drop=cap)
        wait_for(lambda: not agent.running(), 60, f"the agent without CAP_{cap} to exit",
                 lambda: agent.logs()[-2000:])
        assert agent.exit_code() == 6, (cap, agent.exit_code(), agent.logs())
        assert re.search(r"missing|CAP_BPF|CAP_PERFMON|privilege", agent.logs()), agent.logs()
    said = {"SYS_PTRACE": r"without CAP_SYS_PTRACE, -a can read only processes of uid 0 ",
            "DAC_READ_SEARCH": rf"pid {private.pid} maps /home/u/lib/libpython3\.13\.so\.1\.0, "
                               r"which cannot be opened \(Permission denied\): .*"
                               r"CAP_DAC_READ_SEARCH"}
    for cap, unreadable in (("SYS_PTRACE", fleet.before), ("DAC_READ_SEARCH", [private])):
        agent = AgentContainer(images, tmp_path, drop=cap)
        agent.wait_running()
        wait_for(lambda: re.search(said[cap], agent.logs()), 60,
                 f"the agent without CAP_{cap} to say why",
                 lambda: agent.logs()[-3000:])
        # Every container has been looked at by the first scan; the one it can read
        # gets its profiles meanwhile, the others none.
        probe = plain[0] if cap == "DAC_READ_SEARCH" else None
        if probe:
            wait_for(lambda: len(agent.files(probe.pid)) >= 2, 60,
                     "profiles of the containers it can read", lambda: agent.logs()[-3000:])
        else:
            time.sleep(2 * PERIOD_S)
        assert agent.stop() == 0, agent.logs()[-3000:]
        got = {c.kind: len(agent.files(c.pid)) for c in unreadable if agent.files(c.pid)}
        assert not got, f"without CAP_{cap} profiled {got}:\n{agent.logs()[-2000:]}"


def test_the_runtimes_default_seccomp_profile_is_why_the_pod_is_unconfined(images, tmp_path):
    """podman's default profile refuses bpf() to a container without CAP_SYS_ADMIN:
    the agent says so (not that the kernel lacks BPF) and exits 6."""
    assert "type: Unconfined" in MANIFEST.read_text()
    agent = AgentContainer(images, tmp_path, runtime_seccomp=True)
    assert "seccomp=unconfined" not in agent.argv
    wait_for(lambda: not agent.running(), 60, "the agent to exit", lambda: agent.logs())
    assert agent.exit_code() == 6, (agent.exit_code(), agent.logs())
    assert re.search(r"bpf\(\).* refused .*seccomp", agent.logs()), agent.logs()


def test_container_filter_takes_exactly_one(images, fleet, tmp_path):
    pick = next(c for c in fleet.before if c.runtime == PODMAN)
    agent = AgentContainer(images, tmp_path, extra=["--container", pick.id[:12]])
    agent.wait_running()
    wait_for(lambda: len(agent.files(pick.pid)) >= 3, 60, "three profiles of the one picked",
             lambda: agent.logs()[-3000:])
    assert agent.stop() == 0, agent.logs()[-3000:]
    pids = {int(p.name.split("-")[1]) for p in agent.out.glob("*.pb.gz")}
    assert pids == {pick.pid}, f"--container {pick.id[:12]} took {pids}"


def test_record_all_on_the_host_sees_every_container(fleet, tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    try:
        runs = {"all": ["record", "-a", "-d", "3", "-r", "99"],
                "one": ["record", "-a", "-d", "3", "-r", "99", "--container",
                        fleet.before[-1].id[:16]]}
        out = {}
        for what, args in runs.items():
            path = tmp_path / f"{what}.txt"
            out[what] = h.run_profiler(args + ["-o", path], timeout=3 + PROFILER_GRACE,
                                       out=path)
    finally:
        h.close()
    everyone = by_process(out["all"].check_ok())
    for c in fleet.before:
        samples = everyone.get(c.pid)
        assert samples, f"{c.kind} pid {c.pid} not in -a: {sorted(p for p in everyone if p)}"
        hot = [s for s in samples if s.leaf and s.leaf.name == c.name and
               s.leaf.line == c.truth["line"]]
        assert fraction(total(hot), total(samples)) >= 0.5, f"{c.kind}:\n{show(samples)}"
    one = by_process(out["one"].check_ok())
    assert set(one) == {fleet.before[-1].pid}, sorted(one)


# ---- the runtimes in cgroup v2 mode ------------------------------------------------

def test_cgroup_v2_runtimes_name_their_containers(images, fleet, tmp_path, profiler_bin):
    """docker and podman in cgroup v2 mode: each container's v2 cgroup, in the form its
    runtime writes, gives its container_id label, and --container finds it."""
    base_root = os.environ.get("PBP_CONTAINER_ROOT", str(REPO / ".cache" / "bookworm"))
    d2 = DockerdV2(tmp_path, base_root)
    podman_v2 = V2_NS + [PODMAN, "--cgroup-manager=cgroupfs"]
    made = []
    try:
        made.append(start_v2(fleet, d2.cli("run", "-d"), d2.cli("inspect"), DOCKER))
        made.append(start_v2(fleet, podman_v2 + ["run", "-d", "--label", LABEL,
                                                 "--pids-limit", "0"] + PODMAN_LIMITS,
                             [PODMAN, "inspect"], PODMAN))
        forms = {DOCKER: "/docker/{}", PODMAN: "/libpod_parent/libpod-{}"}
        for c in made:
            lines = Path(f"/proc/{c.pid}/cgroup").read_text().splitlines()
            assert f"0::{forms[c.runtime].format(c.id)}" in lines, lines
        h = Harness(tmp_path, profiler_bin)
        try:
            out = tmp_path / "agent-out"
            agent = Agent(h, tmp_path, ["--output-dir", str(out), "--period", "1s"] +
                          [a for c in made for a in ("--container", c.id[:12])])
            agent.wait(lambda: all(len(list(out.glob(f"*-{c.pid}-*.pb.gz"))) >= 2
                                   for c in made), 60, "two profiles of each")
            rc, _ = agent.stop()
            one = tmp_path / "one.txt"
            run = h.run_profiler(["record", "-a", "-d", "2", "--container", made[1].id[:16],
                                  "-o", one], timeout=2 + PROFILER_GRACE, out=one)
        finally:
            h.close()
    finally:
        for c in made:
            if c.runtime == PODMAN:
                sh(podman_v2 + ["rm", "-f", "-t", "0", c.id], check=False)
        d2.stop()
    assert rc == 0, agent.stderr()
    for c in made:
        for path in out.glob(f"*-{c.pid}-*.pb.gz"):
            labels = labels_of(Profile.load(path))
            assert labels.get("container_id") == c.id, (c.runtime, labels)
    pids = {int(p.name.split("-")[1]) for p in out.glob("*.pb.gz")}
    assert pids == {c.pid for c in made}, pids
    assert set(by_process(run.check_ok())) == {made[1].pid}


def test_go_tool_pprof_reads_the_agents_profiles(agent_run, tmp_path):
    """`go tool pprof` (the Go pprof package that Pyroscope and Parca parse with) on a
    full period's file: the function with its file and line, and the labels."""
    c = agent_run["every"][0]
    path = sorted(agent_run["agent"].files(c.pid))[1]
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"),
               PPROF_TMPDIR=str(tmp_path))
    top = sh(["go", "tool", "pprof", "-top", "-lines", path], env=env).stdout
    # flat flat% sum% cum cum% name file:line
    m = re.search(rf"^\s*\S+\s+([\d.]+)%\s+\S+%\s+\S+\s+\S+%\s+{c.name} (\S+):(\d+)\s*$",
                  top, re.M)
    assert m, f"no {c.name} line in go tool pprof -top -lines:\n{top}"
    assert float(m.group(1)) >= 50, top
    assert m.group(2).endswith("/wl/sysburn.py") and int(m.group(3)) == c.truth["line"], top
    # A name in angle brackets stays a name (not taken for C++ template arguments).
    assert re.search(r"\s<module> \S+/wl/sysburn.py:\d+\s*$|\s<module> /wl/sysburn.py:\d+\s*$",
                     top, re.M), top
    raw = sh(["go", "tool", "pprof", "-raw", path], env=env).stdout
    for k, v in (("container_id", c.id), ("pid", str(c.pid)),
                 ("python_version", c.truth["python_version"])):
        assert re.search(rf"\b{k}:\[{re.escape(v)}\]", raw), f"{k}={v} not in -raw:\n{raw}"
    assert re.search(rf"\b{c.name} /wl/sysburn.py:{c.truth['line']}\b", raw), raw
