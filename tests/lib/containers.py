# SPDX-License-Identifier: GPL-2.0-only
"""The container runtimes and the node agent's image over them, for
tests/containers/test_containers.py and tools/soak/container_load.py: dockerd started
when none runs, workload containers (sysburn.py, each burning in a function of its own)
under docker and podman, the agent run under podman with the privileges, limits and
args deploy/kubernetes/pybpfprof-agent.yaml gives, the checks of a container's profiles,
and a second dockerd in cgroup v2 mode. The containers Fleet and AgentContainer start
carry LABEL, by which remove_ours() removes them."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from .paths import REPO, TRUTH_TIMEOUT
from .harness import wait_for
from .ingest import Ingest

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile  # noqa: E402


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


@contextlib.contextmanager
def prepared_images(run_dir):
    """The images' names (base, sid, agent) from tools/test-containers.sh, under a
    dockerd started in @run_dir when none runs; on leaving, our containers are removed
    and that dockerd stopped. The images stay, as docker's layer cache does: the next
    caller gets them in seconds."""
    missing = [p for p in (DOCKER, "/usr/sbin/dockerd", PODMAN, "/usr/bin/go")
               if not os.access(p, os.X_OK)]
    assert not missing, f"missing {missing}: tools/install-deps.sh test installs them"
    dockerd = Dockerd(run_dir)
    try:
        p = sh(["bash", REPO / "tools" / "test-containers.sh"], timeout=1800)
        yield dict(line.split("=", 1) for line in p.stdout.split())
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
