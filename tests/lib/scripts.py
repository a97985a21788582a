# SPDX-License-Identifier: GPL-2.0-only
"""The CPython interpreters the tests run, and how to run a script under each.

3.11 is Debian's own on the host; 3.13, 3.14 and 3.15 live in a Debian sid chroot that
tools/test-interpreters.sh builds (or reuses) at $PBP_TEST_ROOT, by default
.cache/sid in the work tree. A chroot cannot see host paths, so scripts and their
output go through a scratch directory under the chroot's /tmp.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from .paths import REPO
VERSIONS = ("3.11", "3.13", "3.14", "3.15")
HOST_VERSIONS = frozenset({"3.11"})


class InterpreterError(Exception):
    """An interpreter the tests need is not there; the message says why."""


def chroot_root():
    """Path of the chroot holding 3.13+, built on first use. Raises InterpreterError."""
    if os.geteuid() != 0:
        raise InterpreterError("the test interpreters need root (chroot, debootstrap)")
    script = REPO / "tools" / "test-interpreters.sh"
    try:
        res = subprocess.run(["bash", str(script)], cwd=REPO, capture_output=True,
                             text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        raise InterpreterError("%s took over 20 minutes" % script) from None
    lines = res.stdout.strip().splitlines()
    if res.returncode != 0 or not lines:
        raise InterpreterError("%s failed (exit %d):\n%s" % (script, res.returncode,
                                                            res.stderr.strip()))
    return Path(lines[-1])


def chroot_root_or_fail():
    """chroot_root(), its InterpreterError failing the test."""
    try:
        return chroot_root()
    except InterpreterError as e:
        pytest.fail(str(e))


class Interpreter:
    """python@version, on the host or in the chroot at @root."""

    def __init__(self, version, root=None):
        self.version = version
        self.root = None if version in HOST_VERSIONS else root
        self.binary = "/usr/bin/python" + version

    def missing(self):
        """Why the interpreter cannot run, or None if it can."""
        where = Path(self.root) if self.root else Path("/")
        if (where / self.binary.lstrip("/")).is_file():
            return None
        return "python%s is missing: no %s%s" % (
            self.version, self.binary, " in chroot %s" % self.root if self.root else "")

    def scratch(self):
        """A fresh directory the interpreter can see, as (host path, its own path)."""
        base = Path(self.root) / "tmp" if self.root else Path(tempfile.gettempdir())
        host = Path(tempfile.mkdtemp(prefix="pbp-test-", dir=base))
        inside = "/" + str(host.relative_to(self.root)) if self.root else str(host)
        return host, inside

    def run(self, script, args, scratch, timeout=600):
        """Runs @script (a host path) with @args (paths as the interpreter sees them)."""
        host, inside = scratch
        shutil.copy(script, host / Path(script).name)
        argv = [self.binary, "%s/%s" % (inside, Path(script).name)] + list(args)
        if self.root:
            argv = ["chroot", str(self.root)] + argv
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
