# SPDX-License-Identifier: GPL-2.0-only
"""record's output files (-o and --stats-file): what the user keeps is never lost, and
root never writes into a file of someone else's choosing.

- A run that fails (no such process) leaves existing files byte for byte as they were.
- A hang-up (SIGHUP, as when an SSH session drops and its terminal goes away) ends the
  run like SIGTERM: the profile is written and the exit status is 0.
- A symbolic link, or a file of another user in a sticky directory, is refused with
  one line and exit 2 before anything is sampled; what it names stays untouched. The
  same for the default name, which a local user can predict.
- A re-run over one's own file replaces it (keeping its permissions).
- An output directory that cannot be written fails the run before the target starts.
- No temporary file is left behind, whatever the outcome.
- The helper itself (tests/unit/test_outfile.c), plain and under ASan/UBSan.
"""

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
import uuid

import pytest

from lib.collapsed import parse_collapsed, show, total

QUICK = 30  # seconds an error path may take before we call it a hang
STATUS_SAMPLES = re.compile(rb"pybpfprof: [\d.]+ s, (\d+) samples")
ENOUGH = 100  # samples before the hang-up: fa has 3/4 of them, so some are fa


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()                       # spawned and reaped: the PID no longer exists
    return p.pid


def listing(d):
    """Every name in directory d, hidden ones too."""
    return sorted(os.listdir(d))


@pytest.fixture
def workdir(tmp_path):
    d = tmp_path / f"out-{uuid.uuid4().hex[:6]}"
    d.mkdir()
    return d


@pytest.fixture
def sticky(tmp_path):
    """A world-writable sticky directory, like /tmp."""
    d = tmp_path / f"shared-{uuid.uuid4().hex[:6]}"
    d.mkdir()
    d.chmod(0o1777)
    return d


OUTPUTS = {"-o": ("-o", "profile.txt"), "--stats-file": ("--stats-file", "stats.json")}


def record_args(pid, which, path, workdir, duration=1):
    """record -p PID with @path given to option @which; the other output in workdir."""
    args = ["record", "-p", pid, "-d", duration, "-r", 199]
    if which == "-o":
        return args + ["-o", path, "--stats-file", workdir / "stats.json"]
    return args + ["-o", workdir / "profile.txt", "--stats-file", path]


def test_failed_run_leaves_existing_files_byte_for_byte(harness, workdir):
    prof, st = workdir / "old.txt", workdir / "old.json"
    prof.write_bytes(b"fa;fb 12\nyesterday's profile\n")
    st.write_bytes(b'{"samples_expected": 1}\n')
    before = {p: p.read_bytes() for p in (prof, st)}
    run = harness.run_profiler(["record", "-p", dead_pid(), "-d", 2, "-o", prof,
                                "--stats-file", st], timeout=QUICK)
    run.check_error(3)
    for p, data in before.items():
        assert p.read_bytes() == data, f"{p.name} changed by a failed run"
    assert listing(workdir) == ["old.json", "old.txt"], listing(workdir)


def test_sighup_writes_what_was_sampled(harness, py311, workdir):
    """The profiler's stderr is a terminal; once its status line counts enough samples
    that fa (3/4 of the burn) cannot be missing by chance, the terminal hangs up:
    SIGHUP, then the terminal is gone (writes to it fail)."""
    w = harness.start_workload(py311, "ratio", seconds=600)
    out, st = workdir / "hup.txt", workdir / "hup.json"
    argv = harness.profiler_argv(["record", "-p", w.pid, "-d", 300, "-r", 499, "-o", out,
                                  "--stats-file", st])
    master, slave = pty.openpty()
    with open(workdir.parent / "hup.stdout", "wb") as so:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=so, stderr=slave,
                                start_new_session=True)
    harness.group_leaders.append(proc)
    os.close(slave)
    seen, samples = b"", 0
    deadline = time.monotonic() + 120   # a hang, not a speed limit
    try:
        while samples < ENOUGH and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
                counts = STATUS_SAMPLES.findall(seen)
                samples = int(counts[-1]) if counts else 0
        assert samples >= ENOUGH, f"no status line with {ENOUGH} samples:\n{seen!r}"
        assert proc.poll() is None, f"profiler exited early ({proc.returncode}):\n{seen!r}"
        proc.send_signal(signal.SIGHUP)
    finally:
        os.close(master)
    rc = proc.wait(QUICK)
    assert rc == 0, f"exit {rc} after SIGHUP (killed by it: {rc == -signal.SIGHUP})"
    assert out.exists(), "no profile written after SIGHUP"
    prof = parse_collapsed(out.read_text())
    fa = [s for s in prof if s.leaf is not None and s.leaf.name == "fa"]
    assert total(fa) > 0, f"profile lacks the hot function fa\n{show(prof)}"
    assert '"samples_delivered"' in st.read_text()
    assert w.proc.poll() is None, "the profiler's hang-up must not stop the target"
    assert listing(workdir) == ["hup.json", "hup.txt"], listing(workdir)


@pytest.mark.parametrize("which", OUTPUTS)
def test_symlink_is_refused_and_its_target_untouched(harness, py311, workdir, which):
    w = harness.start_workload(py311, "ratio")
    victim = workdir / "victim"
    victim.write_bytes(b"not a profile\n")
    link = workdir / "link"
    link.symlink_to(victim)
    run = harness.run_profiler(record_args(w.pid, which, link, workdir), timeout=QUICK)
    msg = run.check_error(2)
    assert "link" in msg and "symbolic link" in msg, msg
    assert victim.read_bytes() == b"not a profile\n", "the link's target was written"
    assert link.is_symlink() and os.readlink(link) == str(victim)
    assert listing(workdir) == ["link", "victim"], listing(workdir)


@pytest.mark.parametrize("which", OUTPUTS)
def test_another_users_file_in_a_sticky_dir_is_refused(harness, py311, workdir, sticky,
                                                      unpriv_user, which):
    w = harness.start_workload(py311, "ratio")
    theirs = sticky / "theirs"
    theirs.write_bytes(b"someone else's file\n")
    os.chown(theirs, int(subprocess.check_output(["id", "-u", unpriv_user])), -1)
    run = harness.run_profiler(record_args(w.pid, which, theirs, workdir), timeout=QUICK)
    msg = run.check_error(2)
    assert str(theirs) in msg and "belongs to uid" in msg, msg
    assert theirs.read_bytes() == b"someone else's file\n"
    assert listing(sticky) == ["theirs"], listing(sticky)
    assert listing(workdir) == [], listing(workdir)


def test_default_name_planted_as_links_is_refused(harness, py311, sticky, workdir):
    """Without -o the name is pybpfprof-COMM-PID-DATE-TIME.txt in the current
    directory: predictable. Links planted under every name of the next minutes must
    not lead root's write elsewhere."""
    w = harness.start_workload(py311, "ratio")
    comm = open(f"/proc/{w.pid}/comm").read().strip().replace("/", "_").replace(" ", "_")
    victim = workdir / "victim"
    victim.write_bytes(b"precious\n")
    now = time.time()
    for s in range(-5, 180):
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + s))
        (sticky / f"pybpfprof-{comm}-{w.pid}-{stamp}.txt").symlink_to(victim)
    argv = harness.profiler_argv(["record", "-p", w.pid, "-d", 1])
    p = subprocess.run(argv, cwd=sticky, capture_output=True, text=True, timeout=QUICK)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "symbolic link" in lines[0], \
        f"exit {p.returncode}\n{p.stderr}"
    assert victim.read_bytes() == b"precious\n"
    assert not [n for n in listing(sticky) if n.startswith(".")], listing(sticky)


@pytest.mark.parametrize("which", OUTPUTS)
def test_rerun_replaces_own_file_keeping_its_mode(harness, py311, workdir, which):
    w = harness.start_workload(py311, "ratio")
    name = OUTPUTS[which][1]
    mine = workdir / name
    mine.write_bytes(b"old\n")
    mine.chmod(0o600)
    run = harness.run_profiler(record_args(w.pid, which, mine, workdir), timeout=QUICK + 1)
    assert run.rc == 0, run.describe()
    text = mine.read_text()
    assert text != "old\n"
    if which == "-o":
        parse_collapsed(text)
    else:
        assert '"samples_delivered"' in text, text[:500]
    assert mine.stat().st_mode & 0o777 == 0o600, oct(mine.stat().st_mode)
    assert listing(workdir) == ["profile.txt", "stats.json"], listing(workdir)


def test_standard_output_still_works(harness, py311, workdir):
    w = harness.start_workload(py311, "ratio")
    st = workdir / "stats.json"
    run = harness.run_profiler(["record", "-p", w.pid, "-d", 3, "-r", 499, "-o", "-",
                                "--stats-file", st], timeout=QUICK + 3)
    assert run.rc == 0, run.describe()
    prof = parse_collapsed(run.stdout)
    assert total(prof) > 0, f"no samples on standard output\n{run.describe()}"
    assert '"samples_delivered"' in st.read_text()
    assert listing(workdir) == ["stats.json"], listing(workdir)


@pytest.mark.parametrize("which", OUTPUTS)
def test_unwritable_directory_fails_before_the_command_starts(harness, py311, workdir,
                                                              which):
    """The command after -- would leave a mark if it ran at all."""
    mark = workdir / "ran"
    missing = workdir / "no-such-dir" / OUTPUTS[which][1]
    args = ["record", "-d", 5]
    args += ["-o", missing] if which == "-o" else ["-o", workdir / "p.txt",
                                                  "--stats-file", missing]
    args += ["--", sys.executable, "-c", f"open({str(mark)!r}, 'w')"]
    run = harness.run_profiler(args, timeout=QUICK)
    msg = run.check_error(2)
    assert str(missing) in msg, msg
    assert not mark.exists(), "the command ran although the output cannot be written"
    assert listing(workdir) == [], listing(workdir)


@pytest.mark.parametrize("name", ["profile.json", "profile.png", "flame.Htmlx"])
def test_a_suffix_no_format_has_is_refused_before_profiling(harness, py311, workdir, name):
    """-o names a file whose suffix no format has: not collapsed text under a name that
    says otherwise, but exit 2 and one line naming the suffixes and -f."""
    w = harness.start_workload(py311, "ratio")
    run = harness.run_profiler(["record", "-p", w.pid, "-d", 1, "-o", workdir / name],
                               timeout=QUICK)
    msg = run.check_error(2)
    assert name in msg and "-f FORMAT" in msg and ".html" in msg, msg
    assert listing(workdir) == [], listing(workdir)


@pytest.mark.parametrize("name,head", [("profile", b"<module> ("), ("p.1234", b"<module> ("),
                                       ("p.folded", b"<module> ("), ("p.SVG", b"<?xml")])
def test_names_without_a_known_suffix_follow_the_documented_default(harness, py311, workdir,
                                                                    name, head):
    """No suffix (or only digits after the dot) and .folded: collapsed text; a known
    suffix in capitals: its format."""
    w = harness.start_workload(py311, "ratio")
    out = workdir / name
    run = harness.run_profiler(["record", "-p", w.pid, "-d", 1, "-r", 499, "-o", out],
                               timeout=QUICK + 1)
    assert run.rc == 0, run.describe()
    assert out.read_bytes().startswith(head), out.read_bytes()[:200]
