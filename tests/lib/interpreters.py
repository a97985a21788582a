# SPDX-License-Identifier: GPL-2.0-only
"""The interpreter matrix (ids py3.11 ... py3.15) and how each one is started.

3.11 is the host's /usr/bin/python3.11; 3.13/3.14/3.15 live in the Debian sid chroot made
by tools/test-interpreters.sh and run as `chroot ROOT /usr/bin/python3.X`. Workloads are
copied to /tmp/pbp-workloads-TAG (TAG from the checkout's path) on the host and in the
chroot, so every target sees its scripts at the same path.

3.12 has no Debian package: where the machine image carries a pyenv build of it
(PBP_PY312_HOME, by default /root/.pyenv/versions/3.12.1), its interpreter, libpython
and standard library are copied to a world-readable directory (the image keeps them
under /root, which other users cannot enter) and 3.12 joins the matrix as py3.12;
where it is absent, the run says so in its header and the matrix goes without it.
"""

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pytest

from .once import once
from .paths import REPO, RUN_DIR, WL_DIR, WORKLOADS_SRC


PY312_HOME = Path(os.environ.get("PBP_PY312_HOME", "/root/.pyenv/versions/3.12.1"))
PY312_EXE = PY312_HOME / "bin" / "python3.12"
PY312_COPY = Path(os.environ.get("PBP_PY312_COPY", "/tmp/pbp-python3.12"))


# A real interpreter older than the oldest supported, for the refusal test.
PY310_EXE = Path(os.environ.get("PBP_PY310_HOME", "/root/.pyenv/versions/3.10.13")) / \
    "bin" / "python3.10"


# Older ones still, refused by the version their files name (2.7 and 3.6 have no
# _PyRuntime, 3.7 to 3.9 keep it in .bss): shared-library builds, as pyenv makes them.
PYENV_ROOT = Path(os.environ.get("PBP_PYENV_VERSIONS", "/root/.pyenv/versions"))


def _pyenv_exe(version):
    """bin/pythonX.Y of the newest pyenv build of X.Y, or where one would be. A user who
    cannot enter PYENV_ROOT (/root) has none: the tests that need one are marked root."""
    try:
        found = list(PYENV_ROOT.glob(f"{version}.*"))
    except PermissionError:
        found = []
    builds = sorted(found, key=lambda d: [int(x) if x.isdigit() else 0 for x in d.name.split(".")])
    home = builds[-1] if builds else PYENV_ROOT / f"{version}.x"
    return home / "bin" / f"python{version}"


OLD_PYTHONS = {v: _pyenv_exe(v) for v in ["2.7", "3.6", "3.7", "3.8", "3.9"]}
OLD_PYTHONS["3.10"] = PY310_EXE
VERSIONS = ["3.11"] + (["3.12"] if os.access(PY312_EXE, os.X_OK) else []) + \
    ["3.13", "3.14", "3.15"]
SUPPORTED_VERSIONS = ["3.11", "3.12", "3.13", "3.14", "3.15"]
# The oldest and the newest, for tests whose subject is pybpfprof's own (a writer, the top
# screen, following subprocesses) and not an interpreter's layout: the record, dump and
# stress tests run every version, so each of these would repeat them on the middle three.
EDGE_VERSIONS = ["3.11", "3.15"]


@dataclass
class Interp:
    version: str
    root: str                  # "/" for the host, else the chroot
    argv: List[str]            # how to start the interpreter
    error: Optional[str] = None
    prefix: Optional[str] = None   # install prefix of a build with a shared libpython

    @property
    def id(self):
        return f"py{self.version}"

    def host_path(self, target_path):
        """Host path of a path as the target sees it."""
        if self.root == "/":
            return Path(target_path)
        return Path(self.root) / str(target_path).lstrip("/")

    def script(self, name):
        """The workload path as the target (and the profile) sees it."""
        return f"{WL_DIR}/{name}.py"

    def require(self):
        if self.error:
            pytest.fail(f"interpreter {self.version} unavailable: {self.error}")


def run_test_interpreters():
    script = REPO / "tools" / "test-interpreters.sh"
    if not script.exists():
        return None, f"{script} missing"
    try:
        p = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return None, "tools/test-interpreters.sh timed out"
    if p.returncode != 0:
        return None, f"tools/test-interpreters.sh failed ({p.returncode}): {p.stderr.strip()[-800:]}"
    root = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    if not root or not os.path.isdir(root):
        return None, f"tools/test-interpreters.sh printed no usable root: {p.stdout!r}"
    return root, None


def copy_workloads(dest_root):
    dest = Path(dest_root) / WL_DIR.lstrip("/")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    os.chmod(dest, 0o755)
    for src in WORKLOADS_SRC.glob("*.py"):
        shutil.copyfile(src, dest / src.name)
        os.chmod(dest / src.name, 0o644)
    run = Path(dest_root) / RUN_DIR.lstrip("/")
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    os.chmod(run, 0o1777)


def _copy_py312():
    """A copy of the 3.12 build that every user may run; reused while complete."""
    done = PY312_COPY / ".pbp-complete"
    if done.exists():
        return None
    try:
        if PY312_COPY.exists():
            shutil.rmtree(PY312_COPY)
        (PY312_COPY / "bin").mkdir(parents=True)
        shutil.copy2(PY312_EXE, PY312_COPY / "bin" / "python3.12")
        lib = PY312_HOME / "lib"
        (PY312_COPY / "lib").mkdir()
        for so in lib.glob("libpython3.12.so*"):
            shutil.copy2(so, PY312_COPY / "lib" / so.name, follow_symlinks=False)
        shutil.copytree(lib / "python3.12", PY312_COPY / "lib" / "python3.12",
                        ignore=shutil.ignore_patterns("test", "idlelib", "site-packages",
                                                      "config-3.12-*"))
        (PY312_COPY / "lib" / "python3.12" / "site-packages").mkdir()
        subprocess.run(["chmod", "-R", "a+rX", str(PY312_COPY)], check=True)
        done.touch()
    except (OSError, subprocess.CalledProcessError) as e:
        return f"copying {PY312_HOME} to {PY312_COPY} failed: {e}"
    return None


def make_interp(version, sid_root):
    if version == "3.12":
        err = once("py312", _copy_py312)
        # The build's RUNPATH names /root/...; LD_LIBRARY_PATH is searched first.
        return Interp(version, "/", ["env", f"LD_LIBRARY_PATH={PY312_COPY}/lib",
                                     str(PY312_COPY / "bin" / "python3.12")], err,
                      prefix=str(PY312_COPY))
    if version == "3.11":
        exe = "/usr/bin/python3.11"
        err = None if os.access(exe, os.X_OK) else f"{exe} not found (apt-get install python3.11)"
        return Interp(version, "/", [exe], err)
    root, err = sid_root
    if root is None:
        return Interp(version, "/nonexistent", [], err)
    exe = f"/usr/bin/python{version}"
    if not os.access(os.path.join(root, exe.lstrip("/")), os.X_OK):
        err = f"{exe} not found in the chroot {root}"
    return Interp(version, root, ["chroot", root, exe], err)


# How samples are taken: the BPF program, or user space reading live memory.
MODES = {"bpf": [], "live": ["--no-bpf"]}


def version_matches(reported, version_info):
    """Does a profiler's python_version string match sys.version_info (list of 5)?
    Accepts 'X.Y.Z' and, for pre-releases, 'X.Y.Z' followed by aN/bN/rcN."""
    major, minor, micro, level, serial = version_info
    base = f"{major}.{minor}.{micro}"
    if reported == base:
        return True
    tag = {"alpha": "a", "beta": "b", "candidate": "rc"}.get(level)
    return tag is not None and reported == f"{base}{tag}{serial}"
