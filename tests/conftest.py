"""Shared fixtures for pybpfprof's functional tests.

Everything here runs the real thing: the real profiler binary (build/pybpfprof, built
with `make` first), real BPF, real CPython processes. Ground truth comes from the
workloads themselves (tests/workloads/*.py write a JSON truth file at runtime).

Interpreter matrix (ids py3.11 ... py3.15): 3.11 is the host's /usr/bin/python3.11;
3.13/3.14/3.15 live in the Debian sid chroot made by tools/test-interpreters.sh and run
as `chroot ROOT /usr/bin/python3.X`. Workloads are copied to /tmp/pbp-workloads-TAG (TAG
from the checkout's path) on the host and in the chroot, so every target sees its scripts
at the same path.

3.12 has no Debian package: where the machine image carries a pyenv build of it
(PBP_PY312_HOME, by default /root/.pyenv/versions/3.12.1), its interpreter, libpython
and standard library are copied to a world-readable directory (the image keeps them
under /root, which other users cannot enter) and 3.12 joins the matrix as py3.12;
where it is absent, the run says so in its header and the matrix goes without it.

Environment: PBP_NO_BUILD=1 skips the `make` step (the binary must then exist).
PBP_WL_DIR / PBP_RUN_DIR (absolute paths) replace /tmp/pbp-workloads-TAG and /tmp/pbp-run-TAG.
"""

import ctypes
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "pybpfprof"
WORKLOADS_SRC = REPO / "tests" / "workloads"
FIXTURES = REPO / "tests" / "fixtures"

# Every session reinstalls both directories from scratch, so each checkout gets its own
# (named after its path): suites from two checkouts can run at once.
CHECKOUT_TAG = hashlib.sha1(str(REPO).encode()).hexdigest()[:8]
WL_DIR = os.environ.get("PBP_WL_DIR", f"/tmp/pbp-workloads-{CHECKOUT_TAG}")  # host and chroot
RUN_DIR = os.environ.get("PBP_RUN_DIR", f"/tmp/pbp-run-{CHECKOUT_TAG}")      # truth files, 1777

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
    """bin/pythonX.Y of the newest pyenv build of X.Y, or where one would be."""
    builds = sorted(PYENV_ROOT.glob(f"{version}.*"),
                    key=lambda d: [int(x) if x.isdigit() else 0 for x in d.name.split(".")])
    home = builds[-1] if builds else PYENV_ROOT / f"{version}.x"
    return home / "bin" / f"python{version}"


OLD_PYTHONS = {v: _pyenv_exe(v) for v in ["2.7", "3.6", "3.7", "3.8", "3.9"]}
OLD_PYTHONS["3.10"] = PY310_EXE
VERSIONS = ["3.11"] + (["3.12"] if os.access(PY312_EXE, os.X_OK) else []) + \
    ["3.13", "3.14", "3.15"]
SUPPORTED_VERSIONS = ["3.11", "3.12", "3.13", "3.14", "3.15"]
STATS_KEYS = [
    "samples_expected", "samples_delivered", "samples", "samples_decoded", "samples_incomplete",
    "ringbuf_drops", "bpf_ns_per_sample", "decode_ns_per_sample", "live_reads_per_sample",
    "live_holds", "live_holds_late", "live_holds_refused", "python_version",
]

TRUTH_TIMEOUT = 30.0       # seconds to wait for a workload's truth file
PROFILER_GRACE = 60.0      # seconds a profiler may take beyond its -d before we kill it
UNPRIV_USER = "pbptest"

BAD_OUTPUT = re.compile(
    r"Traceback \(most recent call last\)|AddressSanitizer|LeakSanitizer|"
    r"UndefinedBehaviorSanitizer|ThreadSanitizer|runtime error:|Segmentation fault|"
    r"core dumped|\bAborted\b")


# --------------------------------------------------------------------------------------
# Collapsed-stack parsing

@dataclass(frozen=True)
class Frame:
    name: str                   # co_qualname, or the raw text of a non-Python frame
    file: Optional[str] = None  # co_filename (None for a non-Python frame)
    line: Optional[int] = None

    def __str__(self):
        if self.file is None:
            return self.name
        return f"{self.name} ({self.file}:{self.line})"


@dataclass
class Sample:
    frames: Tuple[Frame, ...]   # root first; without the thread and [incomplete] markers
    count: int
    thread: Optional[int] = None
    incomplete: bool = False
    process: Optional[int] = None   # pid of a "process PID COMMAND" root frame
    thread_name: Optional[str] = None   # NAME of a "thread TID (NAME)" root frame

    @property
    def leaf(self):
        return self.frames[-1] if self.frames else None

    def names(self):
        return [f.name for f in self.frames]

    def __str__(self):
        parts = []
        if self.process is not None:
            parts.append(f"process {self.process}")
        if self.thread is not None:
            parts.append(f"thread {self.thread}")
        if self.incomplete:
            parts.append("[incomplete]")
        parts += [str(f) for f in self.frames]
        return ";".join(parts) + f" {self.count}"


PY_FRAME = re.compile(r"^(?P<name>.+) \((?P<file>.+):(?P<line>\d+)\)$")
THREAD_FRAME = re.compile(r"^thread (\d+)(?: \((.*)\))?$")   # TID, and its name if known
PROCESS_FRAME = re.compile(r"^process (\d+) ")
LINE_RE = re.compile(r"^(?P<stack>.+) (?P<count>\d+)$")
INCOMPLETE = "[incomplete]"


class ParseError(Exception):
    pass


def parse_frame(text):
    m = PY_FRAME.match(text)
    if m:
        return Frame(m["name"], m["file"], int(m["line"]))
    return Frame(text)


def parse_collapsed(text):
    """Parse collapsed output into Samples; raises ParseError on a malformed line."""
    samples = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        m = LINE_RE.match(raw)
        if not m:
            raise ParseError(f"line {lineno}: not 'STACK COUNT': {raw!r}")
        parts = m["stack"].split(";")
        thread = process = thread_name = None
        incomplete = False
        pm = PROCESS_FRAME.match(parts[0])
        if pm:
            process = int(pm.group(1))
            parts = parts[1:]
        tm = THREAD_FRAME.match(parts[0]) if parts else None
        if tm:
            thread, thread_name = int(tm.group(1)), tm.group(2)
            parts = parts[1:]
        if parts and parts[0] == INCOMPLETE:
            incomplete = True
            parts = parts[1:]
        if INCOMPLETE in parts:
            raise ParseError(f"line {lineno}: {INCOMPLETE} not at the root: {raw!r}")
        if any(THREAD_FRAME.match(p) for p in parts):
            raise ParseError(f"line {lineno}: thread frame not at the root: {raw!r}")
        if any(PROCESS_FRAME.match(p) for p in parts):
            raise ParseError(f"line {lineno}: process frame not at the root: {raw!r}")
        count = int(m["count"])
        if count <= 0:
            raise ParseError(f"line {lineno}: count must be positive: {raw!r}")
        samples.append(Sample(tuple(parse_frame(p) for p in parts), count, thread, incomplete,
                              process, thread_name))
    return samples


def total(samples):
    return sum(s.count for s in samples)


# A native frame with DWARF line info reads like a Python frame, "FUNCTION (file.c:LINE)"
# (--native): its file is a C, C++ or assembly source, never a Python one.
C_SOURCE = re.compile(r"\.(c|h|cc|cpp|cxx|hh|hpp|hxx|inc|s|S)$")


def is_python_frame(frame):
    """Whether @frame is a Python frame: a file, and not a C source's."""
    return frame.file is not None and not C_SOURCE.search(frame.file)


def truth_frames(stack):
    """Frames of a truth stack (list of {qualname, filename, line}), root first."""
    return tuple(Frame(f["qualname"], f["filename"], f["line"]) for f in stack)


def same_except_leaf_line(frames, expected):
    """frames equals expected in every frame, ignoring the innermost frame's line."""
    if len(frames) != len(expected):
        return False
    if frames[:-1] != expected[:-1]:
        return False
    return (frames[-1].name, frames[-1].file) == (expected[-1].name, expected[-1].file)


def show(samples, limit=12):
    """A few of the heaviest stacks, for assertion messages (deep stacks abbreviated)."""
    out = []
    for s in sorted(samples, key=lambda s: -s.count)[:limit]:
        txt = str(s)
        if len(txt) > 600:
            txt = txt[:250] + f" ...[{len(s.frames)} frames]... " + txt[-300:]
        out.append("  " + txt)
    return "\n".join(out) if out else "  (none)"


class OpenWatch:
    """Whether anything opens @path while it is watched (inotify's IN_OPEN)."""
    IN_OPEN = 0x20

    def __init__(self, path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, f"inotify_init1: errno {ctypes.get_errno()}"
        wd = self.libc.inotify_add_watch(self.fd, str(path).encode(), self.IN_OPEN)
        assert wd >= 0, f"inotify_add_watch {path}: errno {ctypes.get_errno()}"

    def opened(self):
        try:
            return bool(os.read(self.fd, 4096))
        except BlockingIOError:
            return False
        finally:
            os.close(self.fd)


# --------------------------------------------------------------------------------------
# Interpreters

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


def _run_test_interpreters():
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


@pytest.fixture(scope="session")
def sid_root():
    """(root, error) of the sid chroot; an error fails only the chroot versions."""
    return _run_test_interpreters()


def _copy_workloads(dest_root):
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


@pytest.fixture(scope="session")
def workloads_installed(sid_root):
    _copy_workloads("/")
    root, err = sid_root
    if root:
        _copy_workloads(root)
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
        err = _copy_py312()
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


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"py{v}")
def py(request, sid_root, workloads_installed):
    """The interpreter under test. A missing interpreter FAILS (not errors or skips) every
    test using it: Harness.start_workload and Interp.require() fail inside the test."""
    return make_interp(request.param, sid_root)


# How samples are taken: the BPF program, or user space reading live memory.
MODES = {"bpf": [], "live": ["--no-bpf"]}


@pytest.fixture(scope="module", params=list(MODES), ids=lambda m: m)
def mode(request):
    return request.param


@pytest.fixture(scope="session")
def py311(sid_root, workloads_installed):
    interp = make_interp("3.11", sid_root)
    interp.require()
    return interp


# --------------------------------------------------------------------------------------
# The profiler binary

@pytest.fixture(scope="session")
def profiler_bin():
    if os.environ.get("PBP_NO_BUILD") != "1":
        if not (REPO / "Makefile").exists():
            if not BIN.exists():
                pytest.fail(f"no Makefile in {REPO} and no {BIN}")
        else:
            p = subprocess.run(["make", "-C", str(REPO)], capture_output=True, text=True,
                               timeout=900)
            if p.returncode != 0:
                pytest.fail(f"`make -C {REPO}` failed ({p.returncode}):\n"
                            f"{(p.stdout + p.stderr)[-3000:]}")
    if not (BIN.exists() and os.access(BIN, os.X_OK)):
        pytest.fail(f"profiler binary {BIN} missing after `make -C {REPO}`")
    return str(BIN)


# --------------------------------------------------------------------------------------
# Processes: workloads and profiler runs

@dataclass
class Workload:
    name: str
    interp: Interp
    proc: subprocess.Popen
    truth_path: Path           # host path
    log: Path
    truth: dict = field(default_factory=dict)

    @property
    def pid(self):
        return self.proc.pid

    def output(self):
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def read_truth(self):
        """The truth as the workload last published it (it rewrites it as it runs)."""
        for _ in range(50):
            try:
                return json.loads(self.truth_path.read_text())
            except (OSError, ValueError):
                time.sleep(0.02)
        pytest.fail(f"cannot read the truth of {self.name} at {self.truth_path}")


@dataclass
class Run:
    argv: List[str]
    rc: int
    stdout: str
    stderr: str
    elapsed: float
    out_path: Optional[Path]
    stats_path: Optional[Path]

    def describe(self):
        return (f"command: {' '.join(self.argv)}\nexit: {self.rc}\n"
                f"stderr:\n{self.stderr[-3000:]}")

    def check_ok(self):
        """Exit 0, a summary on stderr, no crash output; returns the parsed profile."""
        assert self.rc == 0, f"profiler failed\n{self.describe()}"
        assert not BAD_OUTPUT.search(self.stderr), f"crash output on stderr\n{self.describe()}"
        assert self.stderr.strip(), f"no summary line on stderr\n{self.describe()}"
        return self.profile()

    def profile(self):
        assert self.out_path is not None
        assert self.out_path.exists(), f"profile {self.out_path} not written\n{self.describe()}"
        text = self.out_path.read_text(errors="replace")
        try:
            return parse_collapsed(text)
        except ParseError as e:
            pytest.fail(f"malformed collapsed output: {e}\n{self.describe()}")

    def stats(self):
        assert self.stats_path is not None
        assert self.stats_path.exists(), f"stats file not written\n{self.describe()}"
        try:
            data = json.loads(self.stats_path.read_text())
        except ValueError as e:
            pytest.fail(f"stats file is not JSON: {e}: {self.stats_path.read_text()[:500]!r}")
        assert isinstance(data, dict), f"stats file is not a JSON object: {data!r}"
        return data

    def check_error(self, rc):
        """A failing run: exit rc, exactly one stderr line starting 'pybpfprof: '."""
        assert self.rc == rc, f"expected exit {rc}\n{self.describe()}"
        assert not BAD_OUTPUT.search(self.stderr), f"crash output on stderr\n{self.describe()}"
        lines = self.stderr.splitlines()
        assert len(lines) == 1, f"expected one stderr line, got {len(lines)}\n{self.describe()}"
        assert lines[0].startswith("pybpfprof: "), f"bad error prefix\n{self.describe()}"
        return lines[0]


def unpriv_prefix(user=UNPRIV_USER):
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--"]


class Harness:
    """Starts workloads and profiler runs; kills whatever is still running at close()."""

    def __init__(self, tmpdir: Path, profiler: Optional[str]):
        self.tmp = Path(tmpdir)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.profiler = profiler
        self.procs: List[subprocess.Popen] = []
        self.group_leaders: List[subprocess.Popen] = []

    # -- workloads -----------------------------------------------------------------
    def start_workload(self, interp: Interp, name, *args, seconds=60.0, user=None,
                       wait=True, first_args=()):
        interp.require()
        tag = f"{name}-{interp.version}-{uuid.uuid4().hex[:8]}"
        truth_target = f"{RUN_DIR}/{tag}.json"
        truth_host = interp.host_path(truth_target)
        log = self.tmp / f"{tag}.log"
        argv = interp.argv + [interp.script(name)] + [str(a) for a in first_args] + \
            ["--truth", truth_target, "--seconds", str(seconds)] + [str(a) for a in args]
        if user and interp.root != "/":
            # chroot needs root: enter it first, then become the user (by id: the
            # chroot's passwd does not know the host's users).
            pw = pwd.getpwnam(user)
            argv = ["env", "PBP_DUMPABLE=1", argv[0],
                    f"--userspec={pw.pw_uid}:{pw.pw_gid}"] + argv[1:]
        elif user:
            argv = unpriv_prefix(user) + argv
        with open(log, "wb") as logf:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf,
                                    stderr=subprocess.STDOUT)
        self.procs.append(proc)
        w = Workload(name, interp, proc, truth_host, log)
        if wait:
            self.wait_truth(w)
        return w

    def wait_truth(self, w: Workload):
        deadline = time.monotonic() + TRUTH_TIMEOUT
        while not w.truth_path.exists():
            if w.proc.poll() is not None:
                pytest.fail(f"workload {w.name} on {w.interp.version} exited "
                            f"({w.proc.returncode}) before writing its truth:\n{w.output()}")
            if time.monotonic() > deadline:
                pytest.fail(f"workload {w.name} on {w.interp.version} wrote no truth "
                            f"within {TRUTH_TIMEOUT}s:\n{w.output()}")
            time.sleep(0.02)
        w.truth = json.loads(w.truth_path.read_text())
        assert w.truth["pid"] == w.proc.pid, \
            f"truth pid {w.truth['pid']} != started pid {w.proc.pid} (wrapper did not exec?)"
        want = tuple(int(x) for x in w.interp.version.split("."))
        assert tuple(w.truth["version_info"][:2]) == want, \
            f"workload ran on {w.truth['version_info']}, expected {w.interp.version}"
        return w.truth

    def spawn(self, argv, user=None, **kw):
        """Start a helper process (killed at close)."""
        if user:
            argv = unpriv_prefix(user) + list(argv)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, **kw)
        self.procs.append(proc)
        return proc

    # -- profiler --------------------------------------------------------------------
    def profiler_argv(self, args):
        assert self.profiler, "profiler_bin fixture not requested"
        return [self.profiler] + [str(a) for a in args]

    def run_profiler(self, args, timeout, user=None, signal_after=None, out=None,
                     stats=None, signal_when=None):
        """Run the profiler; kill its process group after `timeout` s and FAIL.
        signal_after=(seconds, signum) sends a signal to it once; signal_when=(pred,
        signum) sends it once pred(stdout, stderr) holds, so that a busy machine's slow
        start cannot eat the time the profiler was meant to run."""
        argv = self.profiler_argv(args)
        if user:
            argv = unpriv_prefix(user) + argv
        tag = uuid.uuid4().hex[:8]
        so, se = self.tmp / f"prof-{tag}.stdout", self.tmp / f"prof-{tag}.stderr"
        start = time.monotonic()
        with open(so, "wb") as fo, open(se, "wb") as fe:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                                    start_new_session=True)
        self.group_leaders.append(proc)
        try:
            if signal_after:
                delay, signum = signal_after
                try:
                    proc.wait(delay)
                except subprocess.TimeoutExpired:
                    proc.send_signal(signum)
            if signal_when:
                pred, signum = signal_when
                deadline = time.monotonic() + timeout
                while proc.poll() is None and time.monotonic() < deadline:
                    if pred(so.read_text(errors="replace"), se.read_text(errors="replace")):
                        proc.send_signal(signum)
                        break
                    time.sleep(0.05)
            try:
                rc = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill_group(proc)
                pytest.fail(f"profiler did not exit within {timeout:.0f}s; killed.\n"
                            f"command: {' '.join(argv)}\nstderr:\n"
                            f"{se.read_text(errors='replace')[-3000:]}")
        finally:
            if proc.poll() is None:
                self._kill_group(proc)
        elapsed = time.monotonic() - start
        return Run(argv, rc, so.read_text(errors="replace"), se.read_text(errors="replace"),
                   elapsed, out, stats)

    def record_pid(self, pid, rate=None, duration=3, threads=False, stats=True,
                   extra=(), timeout=None):
        out = self.tmp / f"profile-{pid}-{uuid.uuid4().hex[:6]}.txt"
        st = self.tmp / f"stats-{pid}-{uuid.uuid4().hex[:6]}.json" if stats else None
        args = ["record", "-p", pid, "-o", out, "-f", "collapsed"]
        if rate is not None:
            args += ["-r", rate]
        if duration is not None:
            args += ["-d", duration]
        if threads:
            args.append("--threads")
        if st is not None:
            args += ["--stats-file", st]
        args += list(extra)
        if timeout is None:
            timeout = (duration or 0) + PROFILER_GRACE
        return self.run_profiler(args, timeout, out=out, stats=st)

    # -- cleanup ---------------------------------------------------------------------
    @staticmethod
    def _kill_group(proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            pass

    def close(self):
        for proc in self.group_leaders:
            if proc.poll() is None:
                self._kill_group(proc)
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass


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


@dataclass
class Profiled:
    truth: dict
    run: Run
    workload: Workload


def profile_workload(tmpdir, profiler, interp, name, workload_args=(), **record_kw):
    """Start workload `name` on `interp`, wait for its truth, profile it by PID with
    record_pid(**record_kw), then kill it. Fails if the target died while profiled."""
    h = Harness(tmpdir, profiler)
    try:
        w = h.start_workload(interp, name, *workload_args)
        run = h.record_pid(w.pid, **record_kw)
        if w.proc.poll() is not None:
            pytest.fail(f"workload {name} on {interp.version} died while being profiled "
                        f"(exit {w.proc.returncode}):\n{w.output()}\n{run.describe()}")
    finally:
        h.close()
    return Profiled(w.truth, run, w)


class Once:
    """Runs fn on the first get() -- inside a test body, so that a failure (missing
    interpreter, profiler error, no truth) is reported as that test's FAILURE -- and
    hands every later get() the same result or the same failure."""

    def __init__(self, fn):
        self.fn = fn
        self.done = False
        self.value = None
        self.failure = None

    def get(self):
        if not self.done:
            self.done = True
            try:
                self.value = self.fn()
            except pytest.fail.Exception as e:
                self.failure = str(e)
            except Exception as e:  # noqa: BLE001 - reported as the test's failure
                self.failure = f"{type(e).__name__}: {e}"
        if self.failure is not None:
            pytest.fail(self.failure, pytrace=False)
        return self.value


class Servers:
    """A long-running workload of one (name, version) at a time, each in a harness of
    its own: asking for another stops the one before, so that two loaded servers never
    share the machine. get() returns (interp, workload); .harness profiles it."""

    def __init__(self, tmp, profiler, sid_root):
        self.tmp, self.profiler, self.sid_root = tmp, profiler, sid_root
        self.key = None
        self.once = None
        self.harness = None

    def get(self, name, version):
        if self.key != (name, version):
            self.close()
            self.key = (name, version)
            self.harness = Harness(self.tmp / f"{name}-{version}", self.profiler)
            harness = self.harness
            interp = make_interp(version, self.sid_root)
            self.once = Once(lambda: (interp, harness.start_workload(
                interp, name, seconds=600)))
        return self.once.get()

    def close(self):
        if self.harness:
            self.harness.close()
        self.harness = self.key = self.once = None


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("mod")


@pytest.fixture(scope="session")
def unpriv_user():
    """The unprivileged user `pbptest` (created if missing)."""
    if subprocess.run(["id", "-u", UNPRIV_USER], capture_output=True).returncode != 0:
        p = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                            "/usr/sbin/nologin", UNPRIV_USER], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.fail(f"useradd {UNPRIV_USER} failed: {p.stderr.strip()}")
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) not found")
    return UNPRIV_USER


# x86-64 numbers of select, nanosleep, clock_nanosleep and pselect6 (3.10's time.sleep
# uses select; 3.11 and later clock_nanosleep).
SLEEP_SYSCALLS = {"23", "35", "230", "270"}


def seize_by_another_tracer(harness, pid):
    """A helper process that holds @pid with PTRACE_SEIZE (the target runs on, but no
    one else may trace it) until the harness closes. Returns it."""
    seized = harness.tmp / f"seized-{pid}-{uuid.uuid4().hex[:6]}"
    tracer = harness.spawn([sys.executable, "-c", (
        "import ctypes, sys, time\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.ptrace.argtypes = [ctypes.c_long] * 4\n"
        f"if libc.ptrace(0x4206, {pid}, 0, 0): sys.exit(ctypes.get_errno())\n"
        f"open({str(seized)!r}, 'w').close()\n"
        "time.sleep(300)\n")])
    deadline = time.monotonic() + 30
    while not seized.exists():
        assert tracer.poll() is None and time.monotonic() < deadline, \
            f"the tracer did not seize process {pid} (status {tracer.poll()})"
        time.sleep(0.02)
    return tracer


def wait_asleep(pid, tid=None, timeout=TRUTH_TIMEOUT):
    """Wait until thread @tid (default: the main thread) of @pid sits in a sleep
    syscall: the moment a `time.sleep()` or `sleep()` the test relies on has begun,
    however long a busy machine took to get there. FAILs on timeout or exit."""
    path = f"/proc/{pid}/task/{tid or pid}/syscall"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path) as f:
                if f.read().split()[0] in SLEEP_SYSCALLS:
                    return
        except (OSError, IndexError):
            pytest.fail(f"process {pid} exited before it slept")
        if time.monotonic() > deadline:
            pytest.fail(f"process {pid} did not reach its sleep within {timeout}s")
        time.sleep(0.02)


def program_headers(data):
    """(type, offset, file size) of each program header of a 64-bit little-endian ELF
    file's bytes."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        ptype, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        yield ptype, off, filesz


def fraction(part, whole):
    return part / whole if whole else 0.0


# The ratio workload's clock (--clock) for each mode: what that mode's samples are of.
RATIO_CLOCK = {"bpf": "cpu", "live": "wall"}


def spent_fa_share(w, before):
    """fa's share of the fa+fb time the ratio workload measured from the truth @before
    to the one it published last, on the clock it was given. Iteration counts promise
    3:1, but the profile is judged against what the burns actually spent."""
    after = w.read_truth()
    fa, fb = (after["spent_ns"][fn] - before["spent_ns"][fn] for fn in ("fa", "fb"))
    assert fb > 0, f"the ratio workload published no fb time between {before} and {after}"
    return fraction(fa, fa + fb)


def version_matches(reported, version_info):
    """Does a profiler's python_version string match sys.version_info (list of 5)?
    Accepts 'X.Y.Z' and, for pre-releases, 'X.Y.Z' followed by aN/bN/rcN."""
    major, minor, micro, level, serial = version_info
    base = f"{major}.{minor}.{micro}"
    if reported == base:
        return True
    tag = {"alpha": "a", "beta": "b", "candidate": "rc"}.get(level)
    return tag is not None and reported == f"{base}{tag}{serial}"
