# SPDX-License-Identifier: GPL-2.0-only
"""The C location-table decoder against each supported interpreter's own answers.

Each interpreter dumps co_positions() for every code object of a broad stdlib set plus
tricky and synthetic tables (tests/tools/dump_positions.py); the C checker
(tests/unit/test_linetable.c) must agree on every code unit. An interpreter that is
missing fails its test: a silently skipped version would hide a format change.
"""

import re
import shutil
import subprocess

import pytest

from lib.scripts import HOST_VERSIONS, REPO, VERSIONS, Interpreter, InterpreterError, chroot_root

# 3.13 and later run in the sid chroot, which needs root.
pytestmark = pytest.mark.root

CHECKER = REPO / "build" / "tests" / "test_linetable"
DUMPER = REPO / "tests" / "tools" / "dump_positions.py"
# Well below what the default module set yields on every version; guards against a
# dump that quietly covers almost nothing.
MIN_CODE_OBJECTS = 3000


def _build_checker():
    """Builds the checker through the Makefile where it has the rule, else directly."""
    target = str(CHECKER.relative_to(REPO))
    if (REPO / "Makefile").is_file() and subprocess.run(
            ["make", "-n", target], cwd=REPO, capture_output=True).returncode == 0:
        argv = ["make", target]
    else:
        CHECKER.parent.mkdir(parents=True, exist_ok=True)
        argv = ["gcc", "-std=gnu11", "-Wall", "-Wextra", "-O2", "-I", "user", "-o",
                target, "tests/unit/test_linetable.c", "user/cpython/py_linetable.c"]
    res = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        return "building the checker failed: %s\n%s%s" % (" ".join(argv), res.stdout,
                                                           res.stderr)
    return None


@pytest.fixture(scope="session")
def linetable_checker():
    """Path of the built checker, or an error string for the tests to fail with."""
    err = _build_checker()
    return err if err else CHECKER


@pytest.fixture(scope="session")
def interpreter_root():
    """The chroot path, or the InterpreterError that kept it from being made."""
    try:
        return chroot_root()
    except InterpreterError as e:
        return e


@pytest.mark.parametrize("version", VERSIONS, ids=["py" + v for v in VERSIONS])
def test_linetable_matches_interpreter(version, linetable_checker, interpreter_root):
    if isinstance(linetable_checker, str):
        pytest.fail(linetable_checker, pytrace=False)
    interp = Interpreter(version, None if isinstance(interpreter_root, Exception)
                         else interpreter_root)
    if interp.root is None and version not in HOST_VERSIONS:
        pytest.fail("python%s unavailable: %s" % (version, interpreter_root), pytrace=False)
    if interp.missing():
        pytest.fail(interp.missing(), pytrace=False)

    scratch = interp.scratch()
    try:
        dump_host = scratch[0] / "positions.txt"
        res = interp.run(DUMPER, ["-o", scratch[1] + "/positions.txt"], scratch)
        if res.returncode != 0:
            pytest.fail("dump_positions.py under python%s failed (exit %d):\n%s%s" % (
                version, res.returncode, res.stdout, res.stderr), pytrace=False)

        res = subprocess.run([str(linetable_checker), str(dump_host)], capture_output=True,
                             text=True, timeout=600)
        out = res.stdout + res.stderr
        if res.returncode != 0:
            pytest.fail("linetable checker disagrees with python%s (exit %d):\n%s" % (
                version, res.returncode, out), pytrace=False)
        m = re.search(r"python (\S+): (\d+) instructions in (\d+) code objects agree", out)
        assert m, "no summary line in the checker's output:\n" + out
        assert m.group(1).startswith(version + "."), "dump came from python %s" % m.group(1)
        assert int(m.group(3)) >= MIN_CODE_OBJECTS, "dump too small:\n" + out
        print(m.group(0))
    finally:
        shutil.rmtree(scratch[0], ignore_errors=True)
