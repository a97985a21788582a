"""The suite's fixtures: interpreters, the profiler binary, harnesses. What they are built
from lives in tests/lib/ (paths, collapsed-stack parsing, interpreters, the harness).

Everything here runs the real thing: the real profiler binary (build/pybpfprof, built
with `make` first), real BPF, real CPython processes. Ground truth comes from the
workloads themselves (tests/workloads/*.py write a JSON truth file at runtime).

Environment: PBP_NO_BUILD=1 skips the `make` step (the binary must then exist).
"""

import os
import shutil
import subprocess

import pytest

# lib/'s helpers check with assert as the test files do; rewritten the way pytest
# rewrites a test file's, a failing one shows its values. Before lib is first imported.
pytest.register_assert_rewrite("lib")

from lib.paths import BIN, REPO, UNPRIV_USER
from lib.interpreters import (EDGE_VERSIONS, MODES, OLD_PYTHONS, PY310_EXE, PY312_COPY,
                              PY312_EXE, PYENV_ROOT, VERSIONS, copy_workloads, make_interp,
                              run_test_interpreters)
from lib.browser import open_browser
from lib.harness import Harness
from lib.once import once


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium, one per test module (lib/browser.py)."""
    yield from open_browser()


@pytest.fixture(scope="session")
def sid_root():
    """(root, error) of the sid chroot; an error fails only the chroot versions."""
    return tuple(once("interpreters", run_test_interpreters))


@pytest.fixture(scope="session")
def workloads_installed(sid_root):
    def install():
        copy_workloads("/")
        root, err = sid_root
        if root:
            copy_workloads(root)
    once("workloads", install)
    return True


def pytest_report_header(config):
    lines = []
    if "3.12" not in VERSIONS:
        lines.append(f"CPython 3.12: no build at {PY312_EXE} (PBP_PY312_HOME); "
                     "3.12 is left out of the interpreter matrix")
    else:
        lines.append(f"CPython 3.12: {PY312_EXE}, run from a copy in {PY312_COPY}")
    if not os.access(PY310_EXE, os.X_OK):
        lines.append(f"CPython 3.10: no build at {PY310_EXE} (PBP_PY310_HOME); the "
                     "unsupported-version test uses a stand-in binary only")
    absent = [v for v, exe in OLD_PYTHONS.items() if v != "3.10" and not os.access(exe, os.X_OK)]
    if absent:
        lines.append(f"CPython {', '.join(absent)}: no pyenv build in {PYENV_ROOT} "
                     "(PBP_PYENV_VERSIONS); left out of the unsupported-version test")
    return lines


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"py{v}")
def py(request, sid_root, workloads_installed):
    """The interpreter under test. A missing interpreter FAILS (not errors or skips) every
    test using it: Harness.start_workload and Interp.require() fail inside the test."""
    return make_interp(request.param, sid_root)


@pytest.fixture(scope="module", params=EDGE_VERSIONS, ids=lambda v: f"py{v}")
def py_edge(request, sid_root, workloads_installed):
    """The oldest and the newest interpreter (lib/interpreters.py, EDGE_VERSIONS); a
    module takes them as its `py` by defining py(py_edge)."""
    return make_interp(request.param, sid_root)


@pytest.fixture(scope="module", params=list(MODES), ids=lambda m: m)
def mode(request):
    return request.param


@pytest.fixture(scope="session")
def py311(sid_root, workloads_installed):
    interp = make_interp("3.11", sid_root)
    interp.require()
    return interp


@pytest.fixture(scope="session")
def profiler_bin():
    if os.environ.get("PBP_NO_BUILD") != "1":
        once("build", _build)
    if not (BIN.exists() and os.access(BIN, os.X_OK)):
        pytest.fail(f"profiler binary {BIN} missing after `make -C {REPO}`")
    return str(BIN)


def _build():
    if not (REPO / "Makefile").exists():
        if not BIN.exists():
            pytest.fail(f"no Makefile in {REPO} and no {BIN}")
        return
    p = subprocess.run(["make", "-C", str(REPO)], capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        pytest.fail(f"`make -C {REPO}` failed ({p.returncode}):\n"
                    f"{(p.stdout + p.stderr)[-3000:]}")


@pytest.fixture
def harness(tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    yield h
    h.close()


@pytest.fixture
def harness_noprof(tmp_path):
    """A harness for tests that only need workloads (no profiler build)."""
    h = Harness(tmp_path, None)
    yield h
    h.close()


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("mod")


@pytest.fixture(scope="session")
def unpriv_user():
    """The unprivileged user `pbptest` (created if missing)."""
    once("user", _add_unpriv_user)
    return UNPRIV_USER


def _add_unpriv_user():
    if subprocess.run(["id", "-u", UNPRIV_USER], capture_output=True).returncode != 0:
        p = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                            "/usr/sbin/nologin", UNPRIV_USER], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.fail(f"useradd {UNPRIV_USER} failed: {p.stderr.strip()}")
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) not found")


# --------------------------------------------------------------------------------------
# Markers: what a test needs beyond an unprivileged user's own checkout. A developer
# without root runs the rest with `pytest -m "not bpf and not root and not containers
# and not browser"`; `make check` leaves out bpf, containers, browser and slow.

MARKERS = {
    "bpf": "runs the profiler as root: loads BPF programs, or reads other users' processes",
    "root": "needs root without BPF: the chroot's interpreters, other users, cgroups",
    "containers": "runs real container runtimes (dockerd, podman)",
    "browser": "loads pages in headless Chromium",
    "slow": "takes a minute or more on its own",
    "alone": "sees the whole machine (every process: the node agent, record -a, container "
             "runtimes) or needs its target on a CPU: `make test` runs these with no other "
             "test beside them",
}
# Fixtures that imply a marker, so that a test is marked by what it asks for.
FIXTURE_MARKERS = {
    "profiler_bin": "bpf", "harness": "bpf",
    "py": "root", "py311": "root", "sid_root": "root", "workloads_installed": "root",
    "unpriv_user": "root", "harness_noprof": "root",
}


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in sorted({FIXTURE_MARKERS[f] for f in item.fixturenames
                            if f in FIXTURE_MARKERS}):
            item.add_marker(name)
