# SPDX-License-Identifier: GPL-2.0-only
"""Processes that set traps for interpreter discovery, run by an unprivileged user
(tests/tools/hostile_target.py). Discovery opens every mapped file whose name holds
"python", as root in the agent, so the names and the files are the attacker's.

- A FIFO at a mapped `python (deleted)` path, and a mapped ELF file truncated while
  it is read, leave a running agent answering /healthz and profiling a real workload;
  the agent never maps the attacker's file.
- A symbolic link at such a path, to a FIFO, a device or a directory, is refused at
  once by a root and by a same-user `dump`: not a CPython process."""

import gzip
import os
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from lib.paths import REPO, RUN_DIR, UNPRIV_USER
from lib.interpreters import Interp
from lib.harness import Harness, program_headers, unpriv_prefix, wait_for
from lib.agent import Agent
from lib.cgroups import cgroup2_root, remove_cgroups
from lib.ingest import http_get
from lib.system_wide import fname, sysburn

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile  # noqa: E402

HOST_PYTHON = "/usr/bin/python3.11"
ATTACKER = REPO / "tests" / "tools" / "hostile_target.py"
QUICK = 30  # seconds a refusal may take before we call it a hang


def elf_interpreter(path):
    """PT_INTERP of a 64-bit little-endian ELF executable: its dynamic loader."""
    data = Path(path).read_bytes()
    for typ, off, size in program_headers(data):
        if typ == 3:
            return data[off:off + size].rstrip(b"\0").decode()
    pytest.fail(f"{path} has no PT_INTERP")


class Hostile:
    """The attacker, as user pbptest. It runs CPython from a copy named without
    "python", started through the dynamic loader (so that /proc/PID/exe is the loader):
    its trap file is then the only candidate in its maps, and discovery keeps coming
    back to it for as long as it waits for an interpreter to appear."""

    def __init__(self, h, mode, group=None):
        self.dir = Path(RUN_DIR) / f"hostile-{uuid.uuid4().hex[:8]}"
        self.dir.mkdir()
        shutil.chown(self.dir, UNPRIV_USER, UNPRIV_USER)
        os.chmod(self.dir, 0o755)
        shutil.copyfile(HOST_PYTHON, self.dir / "interp")
        os.chmod(self.dir / "interp", 0o755)
        shutil.copyfile(ATTACKER, self.dir / "attacker.py")
        self.status = self.dir / "status"
        argv = unpriv_prefix() + [elf_interpreter(HOST_PYTHON), str(self.dir / "interp"),
                                  str(self.dir / "attacker.py"), mode, str(self.dir)]
        if group:
            argv = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$0" "$@"'] + argv
        self.proc = h.spawn(argv)
        self.trap = str(self.dir / "python")
        wait_for(lambda: self.said("ready") or self.proc.poll() is not None, 60,
                 "the attacker to set its trap")
        assert self.proc.poll() is None, f"attacker exited ({self.proc.returncode})"

    def said(self, word):
        """How many times the attacker said @word."""
        try:
            return self.status.read_text().split().count(word)
        except FileNotFoundError:
            return 0

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def healthy(agent):
    """The agent is alive and answers /healthz."""
    assert agent.proc.poll() is None, \
        f"agent died ({agent.proc.returncode}):\n{agent.stderr()[-3000:]}"
    try:
        status, _, body = http_get(agent.port, "/healthz")
    except OSError as e:
        pytest.fail(f"/healthz did not answer: {e!r}\n{agent.stderr()[-3000:]}")
    assert (status, body) == (200, "ok\n"), (status, body)


class Profiles:
    """The agent's files in @out_dir for one process, each parsed once."""

    def __init__(self, out_dir, pid, func):
        self.out_dir, self.pid, self.func = out_dir, pid, func
        self.seen = {}

    def reaching(self):
        """Names of the files whose samples reach function @func."""
        for p in self.out_dir.glob(f"*-{self.pid}-*.pb.gz"):
            if self.seen.get(p.name) is not None:
                continue
            try:
                prof = Profile.parse(gzip.decompress(p.read_bytes()))
            except (OSError, EOFError, ValueError):
                continue            # still being written
            self.seen[p.name] = any(f[0] == self.func
                                    for stack, _, _ in prof.samples() for f in stack)
        return {name for name, hit in self.seen.items() if hit}


def attack_running_agent(py311, tmp_path, profiler_bin, mode, looked_at):
    """A running agent profiles a real workload; the attacker sets its trap; once
    @looked_at(agent, attacker) says discovery has been at the trap, the agent must
    still answer /healthz and profile the workload, and it never mapped the trap."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    group = Path(cgroup2_root()) / f"pbp-hostile-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    py = Interp(py311.version, py311.root,
                ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$0" "$@"'] + py311.argv)
    h = Harness(tmp_path, profiler_bin)
    attacker = None
    try:
        agent = Agent(h, tmp_path, ["--output-dir", str(out_dir), "--period", "1s",
                                    "--container", group.name, "-v", "-v"])
        hot = fname("hostile_hot")
        w = sysburn(h, py, hot, 300)
        profiles = Profiles(out_dir, w.truth["pid"], hot)
        agent.wait(profiles.reaching, 60, "a profile of the workload")
        attacker = Hostile(h, mode, group)
        maps = Path(f"/proc/{agent.proc.pid}/maps")

        def at_trap():
            healthy(agent)
            assert attacker.trap not in maps.read_text(), "the agent mapped the trap file"
            return looked_at(agent, attacker)

        agent.wait(at_trap, 60, "discovery to reach the trap")
        before = profiles.reaching()
        agent.wait(lambda: healthy(agent) or profiles.reaching() - before, 60,
                   "a profile of the workload after the attack")
        attacker.close()
        healthy(agent)
        rc, _ = agent.stop()
    finally:
        if attacker:
            attacker.close()
        h.close()
        remove_cgroups([group])
    assert rc == 0, agent.stderr()[-3000:]


def test_agent_survives_fifo_at_mapped_interpreter_path(py311, tmp_path, profiler_bin,
                                                        unpriv_user):
    """The trap: `python (deleted)` is a FIFO. Opening it to read blocks for good."""
    attack_running_agent(py311, tmp_path, profiler_bin, "fifo",
                         lambda agent, a: f"{a.trap} (deleted)" in agent.stderr())


def test_agent_survives_truncation_of_mapped_elf_during_scan(py311, tmp_path, profiler_bin,
                                                              unpriv_user):
    """The trap: an ELF file with a 128 MiB .symtab, truncated as soon as it is opened.
    A reader that mmaps it is killed by SIGBUS, unless the truncation comes before it
    sized the file: three looks make that chance small."""
    attack_running_agent(py311, tmp_path, profiler_bin, "truncate",
                         lambda agent, a: a.said("truncated") >= 3)


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "/"])
def test_symlink_at_mapped_path_to_non_regular_file_is_refused(harness, py311, unpriv_user,
                                                               target):
    """`python (deleted)` is a symbolic link to a FIFO, a device or a directory (as the
    profiler sees it: an absolute link leads out of the target's root). Root would
    open the mapped file itself through map_files; the same user cannot, and must
    not follow the link."""
    h = harness
    attacker = None
    d = Path(RUN_DIR) / f"hostile-fifo-{uuid.uuid4().hex[:8]}"
    try:
        if target == "fifo":
            d.mkdir()
            os.mkfifo(d / "fifo")
            os.chmod(d / "fifo", 0o666)
            target = str(d / "fifo")
        attacker = Hostile(h, f"symlink:{target}")
        assert os.readlink(f"{attacker.trap} (deleted)") == target
        for user in (None, unpriv_user):
            run = h.run_profiler(["dump", "-p", attacker.proc.pid], timeout=QUICK, user=user)
            assert "not a CPython process" in run.check_error(4)
    finally:
        if attacker:
            attacker.close()
        shutil.rmtree(d, ignore_errors=True)
