"""Error paths: exit codes and one-line `pybpfprof: ` messages on stderr."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from lib.paths import PROFILER_GRACE, RUN_DIR, FIXTURES
from lib.collapsed import parse_collapsed, same_except_leaf_line, show, total, truth_frames
from lib.interpreters import OLD_PYTHONS, SUPPORTED_VERSIONS, Interp, make_interp
from lib.harness import wait_asleep

QUICK = 30  # seconds an error path may take before we call it a hang


def test_no_such_pid_exits_3(harness):
    p = subprocess.Popen(["true"])
    p.wait()                       # spawned and reaped: the PID no longer exists
    run = harness.record_pid(p.pid, duration=2, stats=False, timeout=QUICK)
    run.check_error(3)


def test_non_python_pid_exits_4(harness):
    sleeper = harness.spawn(["sleep", "30"])
    wait_asleep(sleeper.pid)
    run = harness.record_pid(sleeper.pid, duration=2, stats=False, timeout=QUICK)
    run.check_error(4)


def test_unsupported_python_version_exits_5(harness, tmp_path):
    exe = tmp_path / "python3.10"
    cc = subprocess.run(["gcc", "-O0", "-rdynamic", "-o", str(exe),
                         str(FIXTURES / "fake_python.c")], capture_output=True, text=True)
    assert cc.returncode == 0, f"gcc failed: {cc.stderr}"
    nm = subprocess.run(["nm", "-D", str(exe)], capture_output=True, text=True).stdout
    assert "_PyRuntime" in nm and "Py_Version" in nm, f"symbols not exported:\n{nm}"
    fake = harness.spawn([str(exe), "30"])
    wait_asleep(fake.pid)
    run = harness.record_pid(fake.pid, duration=2, stats=False, timeout=QUICK)
    msg = run.check_error(5)
    missing = [v for v in SUPPORTED_VERSIONS if v not in msg]
    assert not missing, f"message does not list supported versions {missing}: {msg!r}"


REAL_OLD = [(v, str(exe)) for v, exe in OLD_PYTHONS.items() if os.access(exe, os.X_OK)]


@pytest.mark.parametrize("version,exe", REAL_OLD, ids=[f"py{v}" for v, _ in REAL_OLD])
@pytest.mark.parametrize("form", ["pid", "command"])
def test_real_old_python_exits_5_naming_its_version(harness, tmp_path, version, exe, form):
    """A real CPython older than 3.11 (pyenv's shared-library builds): refused as an
    unsupported version that the message names, never as "not a CPython process",
    whether its _PyRuntime is in .data (3.10), in .bss (3.7 to 3.9) or absent (2.7,
    3.6). Attached to by -p, and run as the command, where the refusal comes once the
    loader has mapped libpython."""
    sleep = "import time; time.sleep(60)"
    if form == "pid":
        old = harness.spawn([exe, "-c", sleep])
        wait_asleep(old.pid)
        run = harness.record_pid(old.pid, duration=2, stats=False, timeout=QUICK)
    else:
        run = harness.run_profiler(["record", "-d", 30, "-o", tmp_path / "p.txt", "--", exe,
                                    "-c", sleep], timeout=QUICK)
    msg = run.check_error(5)
    assert f"CPython {version} " in msg and "older than 3.11" in msg, msg
    missing = [v for v in SUPPORTED_VERSIONS if v not in msg]
    assert not missing and "untested" not in msg, msg
    assert not (tmp_path / "p.txt").exists()


def record_own_process_live(harness, w, user):
    """@user profiles its own workload @w: no BPF capabilities, so it is sampled from
    user space, with a one-line notice, and the profile is right."""
    owner = subprocess.run(["stat", "-c", "%U", f"/proc/{w.pid}"], capture_output=True,
                           text=True).stdout.strip()
    assert owner == user, f"target owned by {owner!r}"
    out = f"{RUN_DIR}/unpriv-{w.pid}.txt"
    st = f"{RUN_DIR}/unpriv-{w.pid}.json"
    run = harness.run_profiler(["record", "-p", w.pid, "-d", 2, "-r", 499, "-o", out,
                                "--stats-file", st], timeout=QUICK, user=user)
    assert run.rc == 0, run.describe()
    notices = [l for l in run.stderr.splitlines() if "BPF is not available" in l]
    assert len(notices) == 1, f"expected one fallback notice\n{run.describe()}"
    assert "CAP_BPF" in notices[0] and "--no-bpf" in notices[0], notices[0]
    with open(out) as f:
        prof = parse_collapsed(f.read())
    truth = w.truth
    for fn in ("fa", "fb"):
        want = truth_frames(truth["stacks"][fn])
        got = [s for s in prof if s.leaf is not None and s.leaf.name == fn]
        good = [s for s in got if same_except_leaf_line(s.frames, want)]
        assert total(good) >= 50, f"{fn}: {total(good)} samples with the truth stack\n{show(prof)}"
    with open(st) as f:
        assert json.load(f)["mode"] == "live"


def test_unprivileged_user_falls_back_to_live_sampling_of_own_process(harness, py, unpriv_user):
    w = harness.start_workload(py, "ratio", user=unpriv_user)
    record_own_process_live(harness, w, unpriv_user)


def test_unprivileged_fallback_keeps_wall_mode(harness, py311, unpriv_user, tmp_path):
    """--mode wall without BPF rights: the fallback to live sampling still counts the
    waits. A process asleep in nap() for the whole run is 2 s of [off-CPU] under nap,
    and the summary says the off-CPU time the file holds."""
    code = "import time\ndef nap():\n    time.sleep(120)\nnap()\n"
    proc = harness.spawn(py311.argv + ["-c", code], user=unpriv_user)
    wait_asleep(proc.pid)
    out = f"{RUN_DIR}/unpriv-wall-{proc.pid}.txt"
    st = f"{RUN_DIR}/unpriv-wall-{proc.pid}.json"
    run = harness.run_profiler(["record", "-p", proc.pid, "-d", 2, "-r", 100, "--mode",
                                "wall", "-o", out, "--stats-file", st], timeout=QUICK,
                               user=unpriv_user)
    assert run.rc == 0, run.describe()
    assert "BPF is not available" in run.stderr, run.describe()
    with open(st) as f:
        stats = json.load(f)
    assert stats["mode"] == "live", stats["mode"]
    with open(out) as f:
        text = f.read()
    napped = 0
    for line in text.splitlines():
        stack, weight = line.rsplit(" ", 1)
        frames = stack.split(";")
        if frames[-1] == "[off-CPU]" and any(f.split(" ")[0] == "nap" for f in frames):
            napped += int(weight)  # microseconds, in wall mode
    assert 1.6e6 <= napped <= 2.4e6, f"{napped} us asleep in nap\n{text[:2000]}"
    summary = [l for l in run.stderr.splitlines() if " off CPU" in l]
    assert summary, run.describe()
    off = float(summary[0].split(" s off CPU")[0].rsplit(" ", 1)[1])
    assert abs(off * 1e6 - napped) <= 0.05e6, (summary[0], napped)


def test_native_without_bpf_privileges_is_refused_not_sampled_without_c_frames(
        harness, py311, unpriv_user):
    """--native where BPF may not run: live sampling cannot copy the C stack, so the run
    is refused (exit 6, one line naming what is missing) rather than written without
    C frames after a notice; the target runs on."""
    w = harness.start_workload(py311, "ratio", user=unpriv_user)
    out = f"{RUN_DIR}/unpriv-native-{w.pid}.txt"
    run = harness.run_profiler(["record", "-p", w.pid, "-d", 2, "--native", "-o", out],
                               timeout=QUICK, user=unpriv_user)
    msg = run.check_error(6)
    assert "--native needs BPF" in msg and "CAP_BPF" in msg, msg
    assert not os.path.exists(out), "a profile was written"
    assert w.proc.poll() is None, "the target did not survive"


@pytest.mark.parametrize("version", ["3.13", "3.14", "3.15"])
def test_unprivileged_user_profiles_own_process_in_chroot_it_cannot_walk_to(
        harness, sid_root, workloads_installed, unpriv_user, version):
    """The chroot lies under a directory only root may enter (a checkout under /root):
    /proc/PID/maps names the interpreter by that host path, which the user cannot
    open, nor /proc/PID/map_files; inside the process's own root the file is there."""
    sid = make_interp(version, sid_root)
    sid.require()
    top = Path(tempfile.mkdtemp(prefix="pbp-0700-"))
    os.chmod(top, 0o700)
    root = top / "x" / "sid"
    root.mkdir(parents=True)
    mount = subprocess.run(["mount", "--bind", sid.root, str(root)], capture_output=True,
                           text=True)
    assert mount.returncode == 0, f"mount --bind failed: {mount.stderr}"
    try:
        interp = Interp(version, str(root), ["chroot", str(root)] + sid.argv[2:])
        w = harness.start_workload(interp, "ratio", user=unpriv_user)
        maps = Path(f"/proc/{w.pid}/maps").read_text()
        assert f"{root}/usr/bin/python{version}" in maps, maps
        record_own_process_live(harness, w, unpriv_user)
    finally:
        harness.close()
        subprocess.run(["umount", str(root)], check=True)
        shutil.rmtree(top)


def test_unreadable_interpreter_file_is_named_exits_6(harness, py311, unpriv_user):
    """The user's own process runs an interpreter the user may execute but not read:
    no way to its file opens, and the message says which file, not that the memory
    cannot be read (it can)."""
    d = Path(RUN_DIR) / f"xonly-{uuid.uuid4().hex[:8]}"
    d.mkdir()
    try:
        exe = d / "python3.11"
        shutil.copyfile(py311.argv[0], exe)
        os.chmod(exe, 0o711)
        interp = Interp(py311.version, "/", ["env", "PBP_DUMPABLE=1", str(exe)])
        w = harness.start_workload(interp, "ratio", user=unpriv_user)
        run = harness.run_profiler(["record", "-p", w.pid, "-d", 2, "-o",
                                    f"{RUN_DIR}/xonly-{w.pid}.txt"], timeout=QUICK,
                                   user=unpriv_user)
        msg = run.check_error(6)
        assert f"cannot open {exe}," in msg and "Permission denied" in msg, msg
    finally:
        harness.close()
        shutil.rmtree(d)


def test_unprivileged_user_against_root_process_exits_6(harness, py311, unpriv_user):
    w = harness.start_workload(py311, "ratio")
    out = f"{RUN_DIR}/unpriv-root-{w.pid}.txt"
    run = harness.run_profiler(["record", "-p", w.pid, "-d", 2, "-o", out],
                               timeout=QUICK, user=unpriv_user)
    msg = run.check_error(6)
    for what in ("CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE"):
        assert what in msg, f"message does not name {what}: {msg!r}"


def test_target_exit_mid_profile_ends_run_with_profile(py, harness):
    """-d 600, but the target exits a second after sampling began: the profiler stops
    then and writes what it sampled. (The target ends when the profiler has started,
    not after a fixed time, which a slow BPF load on a busy machine could outlast.)"""
    w = harness.start_workload(py, "ratio", seconds=300)

    def end_target_once_sampled():
        deadline = time.monotonic() + PROFILER_GRACE
        while time.monotonic() < deadline and w.proc.poll() is None:
            if any("profiling pid" in p.read_text(errors="replace")
                   for p in harness.tmp.glob("prof-*.stderr")):
                time.sleep(1.0)
                w.proc.terminate()
                return
            time.sleep(0.05)

    ender = threading.Thread(target=end_target_once_sampled, daemon=True)
    ender.start()
    run = harness.record_pid(w.pid, rate=499, duration=600, stats=False,
                             extra=["-v"], timeout=PROFILER_GRACE)
    ender.join()
    prof = run.check_ok()
    assert w.proc.poll() is not None, "target still running"
    fa = [s for s in prof if s.leaf is not None and s.leaf.name == "fa"]
    assert total(fa) > 0, f"profile lacks fa\n{show(prof)}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_profiler_with_profile(py, harness, tmp_path, signum):
    w = harness.start_workload(py, "ratio")
    out = tmp_path / "profile.txt"
    started = []

    def sampled_a_while(_, err):
        # A second and a half of sampling once the profiler said it began.
        if not started and "profiling pid" in err:
            started.append(time.monotonic())
        return started and time.monotonic() - started[0] > 1.5

    run = harness.run_profiler(["record", "-v", "-p", w.pid, "-r", 499, "-o", out],
                               timeout=QUICK + PROFILER_GRACE,
                               signal_when=(sampled_a_while, signum), out=out)
    prof = run.check_ok()
    assert w.proc.poll() is None, "the profiler's signal must not stop the target"
    fa = [s for s in prof if s.leaf is not None and s.leaf.name == "fa"]
    assert total(fa) > 0, f"profile lacks fa\n{show(prof)}"


def test_command_not_found_exits_127(harness, tmp_path):
    run = harness.run_profiler(["record", "-o", tmp_path / "p.txt", "--", "/nonexistent/cmd"],
                               timeout=QUICK)
    run.check_error(127)


def test_command_not_executable_exits_126(harness, tmp_path):
    f = tmp_path / "not-executable"
    f.write_text("#!/bin/sh\necho hi\n")
    f.chmod(0o644)
    run = harness.run_profiler(["record", "-o", tmp_path / "p.txt", "--", f], timeout=QUICK)
    run.check_error(126)


@pytest.mark.parametrize("args", [
    ["record", "--no-such-option", "-p", "1", "-d", "1"],
    ["record", "-p", "1", "-r", "0", "-d", "1"],
    ["record", "-d", "1"],
], ids=["unknown-option", "rate-zero", "no-pid-no-command"])
def test_usage_error_exits_2(harness, args):
    run = harness.run_profiler(args, timeout=QUICK)
    run.check_error(2)


# The sampling options record and top share (cmd/cli.c): each command refuses them alike.
SAMPLING_MISTAKES = {
    "gil-off-cpu": (["--gil", "--mode", "off-cpu"], "--gil keeps on-CPU samples"),
    "mode": (["--mode", "busy"], "invalid --mode 'busy'"),
    "clock": (["--clock", "sundial"], "invalid --clock 'sundial'"),
    "native-unwind": (["--native", "--native-unwind", "guess"], "invalid --native-unwind"),
    "min-block": (["--mode", "wall", "--min-block", "-3"], "invalid --min-block"),
    "rate": (["-r", "x"], "invalid rate 'x'"),
}


@pytest.mark.parametrize("mistake", SAMPLING_MISTAKES)
def test_sampling_option_mistakes_are_refused_alike_by_record_and_top(profiler_bin, mistake):
    args, want = SAMPLING_MISTAKES[mistake]
    said = {}
    for cmd in ("record", "top"):
        p = subprocess.run([profiler_bin, cmd, "-p", "1"] + args, capture_output=True,
                           text=True, timeout=QUICK)
        lines = p.stderr.splitlines()
        assert p.returncode == 2 and len(lines) == 1 and want in lines[0], \
            (cmd, p.returncode, p.stderr)
        said[cmd] = lines[0].replace(f"'pybpfprof {cmd} --help'", "HELP")
    assert said["record"] == said["top"], said


def test_help_states_the_kernel_the_sampler_needs(harness):
    """The sampler uses bpf_loop: Linux 5.17, not the 5.8 of ring buffers alone."""
    run = harness.run_profiler(["--help"], timeout=QUICK)
    assert run.rc == 0, run.describe()
    text = run.stdout + run.stderr
    assert "5.17" in text and "5.8+" not in text, text


@pytest.mark.parametrize("cmd", ["record", "top"])
def test_rate_above_the_kernels_limit_is_a_usage_error_that_names_it(harness, cmd):
    limit = int(open("/proc/sys/kernel/perf_event_max_sample_rate").read())
    run = harness.run_profiler([cmd, "-p", "1", "-r", limit + 1], timeout=QUICK)
    run.check_error(2)
    assert f"expected 1 to {limit} Hz" in run.stderr and \
        "kernel.perf_event_max_sample_rate" in run.stderr, run.describe()
    assert len(run.stderr.strip().splitlines()) == 1, run.describe()

