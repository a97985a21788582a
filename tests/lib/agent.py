# SPDX-License-Identifier: GPL-2.0-only
"""`pybpfprof agent` run for a test: started with its metrics on a free port and waited
for, its /metrics read, stopped by a signal; the profile files it writes and the pushes
a Pyroscope stand-in (lib/ingest.py) received, read back by protoc."""

import gzip
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid

from .paths import REPO
from .harness import wait_for
from .ingest import free_port, multipart_fields

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile  # noqa: E402


class Agent:
    def __init__(self, h, tmp_path, args, config=None, port=None):
        """@port: the metrics port the config file gives; None: one on the command
        line."""
        self.port = port or free_port()
        self.err = tmp_path / f"agent-{uuid.uuid4().hex[:6]}.stderr"
        argv = h.profiler_argv(["agent"] +
                               ([] if port else ["--metrics-addr", f"127.0.0.1:{self.port}"]) +
                               (["--config", config] if config else []) + list(args))
        with open(self.err, "wb") as fe:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=fe,
                                         start_new_session=True)
        h.group_leaders.append(self.proc)
        self.wait(lambda: "agent running" in self.stderr() or self.proc.poll() is not None,
                  30, "the agent to start")
        assert self.proc.poll() is None, f"agent exited ({self.proc.returncode}):\n" \
                                         f"{self.stderr()}"

    def stderr(self):
        return self.err.read_text(errors="replace")

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            m = re.match(r"^(\w+(?:\{[^}]*\})?) (\S+)$", line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out

    def wait(self, pred, timeout, what):
        return wait_for(pred, timeout, what,
                        lambda: f"agent stderr:\n{self.stderr()[-3000:]}")

    def stop(self, sig=signal.SIGTERM):
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        rc = self.proc.wait(30)
        return rc, time.monotonic() - t0


def pprofs_of(out_dir, pid):
    """The pprof files the agent wrote into @out_dir for process @pid."""
    return [p for p in out_dir.iterdir() if f"-{pid}-" in p.name and p.name.endswith(".pb.gz")]


def agent_until_profiles(h, tmp_path, args, want, what="two profiles of each process"):
    """Runs the agent with --output-dir tmp_path/agent and @args until every pid in
    @want ({pid: n}) has n profiles there, then stops it (exit 0). The directory."""
    out_dir = tmp_path / "agent"
    out_dir.mkdir()
    agent = Agent(h, tmp_path, ["--output-dir", out_dir] + list(args))
    agent.wait(lambda: all(len(pprofs_of(out_dir, pid)) >= n for pid, n in want.items()), 60,
               what)
    rc, _ = agent.stop()
    assert rc == 0, agent.stderr()
    return out_dir


def pushes_for(server, pid):
    """[(query dict, Profile)] of the pushes whose labels name @pid, in arrival order."""
    out = []
    with server.lock:
        reqs = list(server.requests)
    for path, headers, body in reqs:
        url = urllib.parse.urlsplit(path)
        q = dict(urllib.parse.parse_qsl(url.query))
        if f"pid={pid}," not in q.get("name", "") and not q.get("name", "").endswith(
                f"pid={pid}}}"):
            continue
        _, data = multipart_fields(headers, body)["profile"]
        out.append((url.path, q, Profile.parse(gzip.decompress(data))))
    return out
