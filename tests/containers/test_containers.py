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

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from lib.paths import PROFILER_GRACE, REPO, TRUTH_TIMEOUT
from lib.collapsed import show, total
from lib.harness import Harness, fraction, wait_for
from lib.agent import Agent, pushes_for
from lib.ingest import Ingest
from lib.system_wide import by_process

import sys
sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile  # noqa: E402

# Real runtimes (dockerd, podman) and the agent over them, as root. Both see every
# process on the host: `make test` runs this file with no other test beside it.
pytestmark = [pytest.mark.containers, pytest.mark.bpf, pytest.mark.alone]

DOCKER = "/usr/bin/docker"	# Debian's client: another may sit earlier in PATH
PODMAN = "/usr/bin/podman"
MANIFEST = REPO / "deploy" / "kubernetes" / "pybpfprof-agent.yaml"
# This machine's shell lacks CAP_SYS_RESOURCE: podman must not raise these limits.
PODMAN_LIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]
PERIOD_S = 2
LABEL = f"pbp.test={uuid.uuid4().hex[:12]}"
APP = "python"


def sh(argv, timeout=120, check=True, **kw):
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                       timeout=timeout, **kw)
    if check and p.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} exited {p.returncode}:\n"
                    f"{p.stdout[-2000:]}{p.stderr[-3000:]}")
    return p


# ---- the runtimes and images -----------------------------------------------------

def stop_daemon(proc):
    """SIGTERM, and SIGKILL to its whole group if it has not ended within a minute."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


class Dockerd:
    """dockerd, started here if none answers; stopped by its PID at the end."""

    def __init__(self, run_dir):
        self.proc = None
        if sh([DOCKER, "info"], timeout=30, check=False).returncode == 0:
            return
        log = open(run_dir / "dockerd.log", "wb")
        self.proc = subprocess.Popen(["/usr/sbin/dockerd", "--pidfile",
                                      run_dir / "dockerd.pid"], stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.log = run_dir / "dockerd.log"
        wait_for(lambda: self.proc.poll() is not None or
                 sh([DOCKER, "info"], timeout=30, check=False).returncode == 0,
                 90, "dockerd to answer `docker info`",
                 lambda: self.log.read_text(errors="replace")[-3000:])
        assert self.proc.poll() is None, \
            f"dockerd exited {self.proc.returncode}:\n{self.log.read_text()[-3000:]}"

    def stop(self):
        if self.proc:
            stop_daemon(self.proc)


@dataclass
class Container:
    runtime: str        # DOCKER or PODMAN
    id: str             # the full 64-hex id
    pid: int            # its first process, on the host
    truth: dict
    name: str           # the function it burns in

    @property
    def kind(self):
        return f"{Path(self.runtime).name} {self.truth['python_version']}"


def remove_ours():
    for rt in (DOCKER, PODMAN):
        ids = sh([rt, "ps", "-aq", "--filter", f"label={LABEL}"], check=False).stdout.split()
        if ids:
            sh([rt, "rm", "-f"] + (["-t", "0"] if rt == PODMAN else []) + ids,
               check=False, timeout=120)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    missing = [p for p in (DOCKER, "/usr/sbin/dockerd", PODMAN, "/usr/bin/go")
               if not os.access(p, os.X_OK)]
    assert not missing, f"missing {missing}: tools/install-deps.sh test installs them"
    run_dir = tmp_path_factory.mktemp("runtimes")
    dockerd = Dockerd(run_dir)
    try:
        p = sh(["bash", REPO / "tools" / "test-containers.sh"], timeout=1800)
        names = dict(line.split("=", 1) for line in p.stdout.split())
        yield names
    finally:
        remove_ours()
        dockerd.stop()


class Fleet:
    """Workload containers: sysburn.py in each, truths in a directory they share."""

    def __init__(self, tmp, images):
        self.images = images
        self.truths = tmp / "truths"
        self.truths.mkdir(mode=0o777, exist_ok=True)
        os.chmod(self.truths, 0o777)
        self.wl = tmp / "wl"
        shutil.copytree(REPO / "tests" / "workloads", self.wl, dirs_exist_ok=True)
        self.all = []

    def start(self, runtime, python, seconds=600, image=None, private=False):
        """@private: the sid image's CPython 3.13 as a shared library beside a small
        executable, both in a directory only their owner (uid 1000) may enter, as a
        pyenv build in a home directory is."""
        name = f"c{uuid.uuid4().hex[:10]}"
        image = image or self.images["base"]
        if runtime == PODMAN:
            image = f"localhost/{image}"
        burn = [python, "/wl/sysburn.py", "--truth", f"/truth/{name}.json",
                "--seconds", str(seconds), "--name", name]
        if private:
            burn = ["sh", "-c", "mkdir -p /home/u/lib && cp /wl/pyembed /home/u/python3 && "
                    f"cp {self.libpython} /home/u/lib/ && chown -R 1000:1000 /home/u && "
                    "chmod 700 /home/u && exec setpriv --reuid 1000 --regid 1000 "
                    "--clear-groups /home/u/python3 \"$@\"", "sh"] + burn[1:]
        argv = [runtime, "run", "-d", "--label", LABEL,
                "-v", f"{self.wl}:/wl:ro", "-v", f"{self.truths}:/truth"]
        argv += PODMAN_LIMITS if runtime == PODMAN else []
        cid = sh(argv + [image] + burn).stdout.strip().splitlines()[-1]
        truth_path = self.truths / f"{name}.json"
        wait_for(truth_path.exists, TRUTH_TIMEOUT, f"the truth of {name}",
                 lambda: sh([runtime, "logs", cid], check=False).stderr[-2000:])
        pid = int(sh([runtime, "inspect", "-f", "{{.State.Pid}}", cid]).stdout)
        truth = json.loads(truth_path.read_text())
        # The host PID the runtime reports is the process that wrote the truth.
        nspid = re.search(r"^NSpid:\s+(.*)$", Path(f"/proc/{pid}/status").read_text(), re.M)
        assert nspid and int(nspid.group(1).split()[-1]) == truth["pid"], (pid, truth)
        c = Container(runtime, cid, pid, truth, name)
        self.all.append(c)
        return c


def build_pyembed(sid, dest):
    """An executable that is only Py_BytesMain() from the sid image's libpython3.13,
    found beside it in lib/ ($ORIGIN): a Python that maps its runtime from a shared
    library. Linked here against the chroot's library; its newer glibc symbols
    resolve inside the image, where it runs."""
    libs = sorted(Path(sid).glob("usr/lib/*/libpython3.13.so.1.0"))
    assert libs, f"no libpython3.13.so.1.0 in {sid}"
    src = dest.with_suffix(".c")
    src.write_text("int Py_BytesMain(int argc, char **argv);\n"
                   "int main(int argc, char **argv) { return Py_BytesMain(argc, argv); }\n")
    sh(["gcc", "-o", dest, src, f"-L{libs[0].parent}", "-l:libpython3.13.so.1.0",
        "-Wl,-rpath,$ORIGIN/lib", "-Wl,--allow-shlib-undefined"])
    return "/" + str(libs[0].relative_to(sid))


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

def manifest_security(text):
    """podman arguments for what the DaemonSet's pod spec says about privileges."""
    def one(pattern):
        m = re.search(pattern, text, re.M)
        assert m, f"{MANIFEST.name}: no match for {pattern!r}"
        return m.group(1)

    def caps(key):
        return [c.strip().strip('"') for c in one(rf"^\s*{key}:\s*\[([^\]]*)\]").split(",")]

    assert one(r"^\s*hostPID:\s*(\w+)") == "true"
    assert one(r"^\s*privileged:\s*(\w+)") == "false"
    argv = ["--pid=host", "--user", one(r"^\s*runAsUser:\s*(\d+)")]
    argv += [f"--cap-drop={c}" for c in caps("drop")]
    argv += [f"--cap-add={c}" for c in caps("add")]
    if one(r"^\s*readOnlyRootFilesystem:\s*(\w+)") == "true":
        # A pod's read-only root has no tmpfs on /tmp, /run, /var/tmp: nor has this.
        argv += ["--read-only", "--read-only-tmpfs=false"]
    if one(r"^\s*allowPrivilegeEscalation:\s*(\w+)") == "false":
        argv += ["--security-opt", "no-new-privileges"]
    seccomp = one(r"^\s*seccompProfile:\s*\n\s*type:\s*(\w+)")
    assert seccomp in ("Unconfined", "RuntimeDefault"), seccomp
    if seccomp == "Unconfined":
        argv += ["--security-opt", "seccomp=unconfined"]
    cpu, mem = re.search(r"^\s*limits:\s*\n\s*cpu:\s*(\S+)\s*\n\s*memory:\s*(\S+)", text,
                         re.M).groups()
    cpus = int(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
    assert mem.endswith("Mi"), mem
    argv += ["--cpus", str(cpus), "--memory", f"{int(mem[:-2])}m"]
    return argv, caps("add")


def manifest_args(text):
    """The container's args, with the node name the downward API would give."""
    block = re.search(r"^\s*args:\s*\n((?:\s*(?:- .*|#.*)\n)+)", text, re.M).group(1)
    args = [m.group(1) for m in re.finditer(r"^\s*- (\S+)\s*$", block, re.M)]
    return [a.replace("$(NODE_NAME)", "node-test") for a in args]


class FreebindIngest(Ingest):
    """The Pyroscope stand-in on podman's bridge address, reachable from the agent's
    own network namespace as Pyroscope is from a pod; bound before the bridge exists."""

    def __init__(self, host):
        self.host = host
        super().__init__()

    def server_bind(self):
        self.socket.setsockopt(socket.SOL_IP, 15, 1)	# IP_FREEBIND
        self.server_address = (self.host, 0)
        super().server_bind()

    @property
    def url(self):
        return f"http://{self.host}:{self.server_address[1]}"


def podman_gateway():
    out = sh([PODMAN, "network", "inspect", "podman"]).stdout
    return json.loads(out)[0]["subnets"][0]["gateway"]


class AgentContainer:
    def __init__(self, images, tmp, extra=(), drop=None, sink=None, period=PERIOD_S,
                 runtime_seccomp=False):
        """@drop: a granted capability left out; @runtime_seccomp: the runtime's
        default seccomp profile instead of the manifest's."""
        text = MANIFEST.read_text()
        security, granted = manifest_security(text)
        if runtime_seccomp:
            at = security.index("seccomp=unconfined")
            del security[at - 1:at + 1]
        if drop:
            security = [a for a in security if a != f"--cap-add={drop}"]
            security.append("--cap-add=" + ",".join(c for c in granted if c != drop))
        self.out = tmp / f"out-{uuid.uuid4().hex[:6]}"
        conf_dir = tmp / f"conf-{uuid.uuid4().hex[:6]}"
        self.out.mkdir()
        conf_dir.mkdir()
        conf = [f"app-name = {APP}", f"period = {period}s", "label = cluster=test",
                "output-dir = /out"]
        rate = re.search(r"^\s*rate = (\d+)", text, re.M)
        conf += [f"rate = {rate.group(1)}"] if rate else []
        conf += [f"pyroscope-url = {sink.url}"] if sink else []
        (conf_dir / "agent.conf").write_text("\n".join(conf) + "\n")
        os.chmod(conf_dir / "agent.conf", 0o600)
        image = f"localhost/{images['agent']}"
        args = manifest_args(text)
        assert args[0] == "agent" and "--config=/etc/pybpfprof/agent.conf" in args, args
        argv = ([PODMAN, "run", "-d", "--label", LABEL] + PODMAN_LIMITS + security +
                ["-v", f"{conf_dir}:/etc/pybpfprof:ro", "-v", f"{self.out}:/out", image] +
                args + list(extra))
        self.argv = argv
        self.id = sh(argv).stdout.strip().splitlines()[-1]

    def logs(self):
        p = sh([PODMAN, "logs", self.id], check=False)
        return p.stdout + p.stderr

    def running(self):
        return sh([PODMAN, "inspect", "-f", "{{.State.Running}}", self.id]).stdout.strip() \
            == "true"

    def exit_code(self):
        return int(sh([PODMAN, "inspect", "-f", "{{.State.ExitCode}}", self.id]).stdout)

    def wait_running(self):
        wait_for(lambda: "agent running" in self.logs() or not self.running(), 60,
                 "the agent to start", lambda: self.logs()[-3000:])
        assert self.running(), f"agent exited {self.exit_code()}:\n{self.logs()[-3000:]}"

    def ip(self):
        return sh([PODMAN, "inspect", "-f", "{{.NetworkSettings.IPAddress}}",
                   self.id]).stdout.strip()

    def stop(self):
        """SIGTERM, as the kubelet sends it; the exit status."""
        sh([PODMAN, "stop", "-t", "10", self.id], timeout=60)
        return self.exit_code()

    def files(self, pid):
        return sorted(self.out.glob(f"{APP}-{pid}-*.pb.gz"))

    def profiles(self, pid):
        return [Profile.load(p) for p in self.files(pid)]


def labels_of(prof):
    """The label set every sample of @prof carries (asserted to be one set)."""
    sets = {tuple(sorted((k, str(v)) for k, v in labels.items()
                         if k not in ("thread_id", "thread_name")))
            for _, _, labels in prof.samples()}
    assert len(sets) == 1, sets
    return dict(next(iter(sets)))


def window(prof):
    start = prof.msg["time_nanos"][0]
    return start, start + prof.msg["duration_nanos"][0]


def hot_at_line(prof, c):
    """Share of @prof's samples in @c's function at its burn line."""
    hot = sum(v[0] for st, v, _ in prof.samples()
              if st and st[0][0] == c.name and st[0][2] == c.truth["line"])
    allv = sum(v[0] for _, v, _ in prof.samples())
    return hot / allv if allv else 0.0


def check_container_profiles(c, profs, pushes):
    """@c's profiles from the files and the pushes: one per period, labelled, its
    function hot at its line in every full period."""
    assert profs, f"{c.kind} pid {c.pid}: no profile file"
    assert len(pushes) == len(profs), \
        f"{c.kind} pid {c.pid}: {len(profs)} files but {len(pushes)} pushes"
    windows = sorted(window(p) for p in profs)
    for (a0, a1), (b0, _) in zip(windows, windows[1:]):
        assert a1 <= b0, f"{c.kind} pid {c.pid}: profiles overlap: {windows}"
    for prof in profs:
        labels = labels_of(prof)
        want = {"container_id": c.id, "pid": str(c.pid),
                "python_version": c.truth["python_version"], "host_name": "node-test",
                "cluster": "test"}
        assert {k: labels.get(k) for k in want} == want, (c.kind, labels)
        assert "sysburn.py" in labels["command"] and c.name in labels["command"], labels
        others = {st[0][0] for st, _, _ in prof.samples() if st} - {c.name}
        assert not {o for o in others if re.fullmatch(r"c[0-9a-f]{10}", o)}, \
            f"{c.kind} pid {c.pid} holds another container's function: {others}"
    for prof in sorted(profs, key=window)[1:-1]:
        assert hot_at_line(prof, c) >= 0.5, \
            (c.kind, c.truth["line"], list(prof.samples())[:6])
    for _, q, prof in pushes:
        series = dict(kv.split("=", 1) for kv in q["name"][len(APP) + 1:-1].split(","))
        assert series.get("container_id") == c.id and series.get("pid") == str(c.pid), series


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

# This host mounts cgroup v1 with cgroup2 beside it (hybrid). A runtime decides which
# it drives by what /sys/fs/cgroup is: in a mount namespace where that is the cgroup2
# hierarchy, dockerd and podman run as on a cgroup v2 host, and their containers' v1
# lines stay "/", as where v1 is not mounted at all.
V2_NS = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount -t cgroup2 none /sys/fs/cgroup && exec "$@"', "sh"]


class DockerdV2:
    """A second dockerd, in cgroup v2 mode, with state of its own, in a network
    namespace of its own (with --bridge=none a dockerd deletes the host's docker0)."""

    def __init__(self, tmp, base_root):
        self.sock = tmp / "docker.sock"
        self.log = tmp / "dockerd.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                ["unshare", "--net"] + V2_NS + ["/usr/sbin/dockerd", "--data-root", tmp / "data", "--exec-root",
                         tmp / "exec", "-H", f"unix://{self.sock}", "--pidfile",
                         tmp / "dockerd.pid", "--bridge=none", "--iptables=false"],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        wait_for(lambda: self.proc.poll() is not None or
                 sh(self.cli("info"), timeout=30, check=False).returncode == 0,
                 90, "the cgroup v2 dockerd", lambda: self.log.read_text()[-3000:])
        info = sh(self.cli("info", "-f", "{{.CgroupVersion}} {{.CgroupDriver}}")).stdout
        assert info.split() == ["2", "cgroupfs"], info
        tar = subprocess.Popen(["tar", "-C", base_root, "--exclude=./proc", "--exclude=./sys",
                                "--exclude=./dev", "-c", "."], stdout=subprocess.PIPE)
        sh(self.cli("import", "-", "local/bookworm-python"), stdin=tar.stdout, timeout=300)
        assert tar.wait() == 0

    def cli(self, *args):
        return [DOCKER, "-H", f"unix://{self.sock}"] + list(args)

    def stop(self):
        ids = sh(self.cli("ps", "-aq"), check=False).stdout.split()
        if ids:
            sh(self.cli("rm", "-f", *ids), check=False)
        stop_daemon(self.proc)


def start_v2(fleet, argv, inspect, runtime):
    """A sysburn container started by @argv (a v2-mode runtime's run command); @inspect
    is that runtime's inspect command."""
    name = f"c{uuid.uuid4().hex[:10]}"
    cid = sh(argv + ["--network", "none", "-v", f"{fleet.wl}:/wl:ro",
                     "-v", f"{fleet.truths}:/truth", "local/bookworm-python" if
                     runtime == DOCKER else "localhost/local/bookworm-python",
                     "python3", "/wl/sysburn.py", "--truth", f"/truth/{name}.json",
                     "--seconds", "600", "--name", name]).stdout.split()[-1]
    path = fleet.truths / f"{name}.json"
    wait_for(path.exists, TRUTH_TIMEOUT, f"the truth of {name}")
    truth = json.loads(path.read_text())
    pid = int(sh(inspect + ["-f", "{{.State.Pid}}", cid]).stdout)
    return Container(runtime, cid, pid, truth, name)


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
