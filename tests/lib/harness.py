# SPDX-License-Identifier: GPL-2.0-only
"""Starting workloads and profiler runs, and the checks every run gets: exit status, no
crash output, a summary, a parsable profile and stats file."""

import ctypes
import json
import os
import pwd
import re
import signal
import struct
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import pytest

from .paths import PROFILER_GRACE, RUN_DIR, TRUTH_TIMEOUT, UNPRIV_USER
from .collapsed import ParseError, parse_collapsed
from .interpreters import Interp, make_interp


STATS_KEYS = [
    "samples_expected", "samples_delivered", "samples", "samples_decoded", "samples_incomplete",
    "ringbuf_drops", "bpf_ns_per_sample", "decode_ns_per_sample", "live_reads_per_sample",
    "live_holds", "live_holds_late", "live_holds_refused", "python_version",
]
BAD_OUTPUT = re.compile(
    r"Traceback \(most recent call last\)|AddressSanitizer|LeakSanitizer|"
    r"UndefinedBehaviorSanitizer|ThreadSanitizer|runtime error:|Segmentation fault|"
    r"core dumped|\bAborted\b")


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
                   extra=(), timeout=None, also=()):
        """@also: suffixes of more files the same run writes beside the collapsed one
        (same stem; lib.waits.sibling names them), each in the format its suffix says."""
        out = self.tmp / f"profile-{pid}-{uuid.uuid4().hex[:6]}.txt"
        st = self.tmp / f"stats-{pid}-{uuid.uuid4().hex[:6]}.json" if stats else None
        args = ["record", "-p", pid, "-o", out]
        # -f names the format of a single -o only; with several, each suffix does.
        args += [a for sfx in also for a in ("-o", sibling(out, sfx))] or \
            ["-f", "collapsed"]
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


def sibling(out, suffix):
    """The file written beside @out by the same run (record_pid(also=...),
    profile_waits(also=...)): same stem, @suffix."""
    return out.parent / (out.name.split(".", 1)[0] + suffix)


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


def wait_for(pred, timeout, what, detail=None):
    """pred()'s first true value within @timeout s; else FAIL, with detail() if given."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout}s waiting for {what}" +
                (f"\n{detail()}" if detail else ""))


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
