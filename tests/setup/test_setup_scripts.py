"""The scripts README names, as a newcomer meets them: `make demo` from a checkout at a
long path, and apt calls that wait for another package manager's lock instead of
failing."""

import fcntl
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from lib.paths import REPO

def _copy_checkout(dst: Path):
    """The tracked files as they are now (edits included), plus the build."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached",
                            "--others", "--exclude-standard"], check=True,
                           capture_output=True).stdout.split(b"\0")
    for rel in filter(None, files):
        src = REPO / os.fsdecode(rel)
        if not src.exists():
            continue
        (dst / os.fsdecode(rel)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst / os.fsdecode(rel))
    # A copy of the build with its timestamps: make finds it up to date, so the test
    # measures the demo, not a second compile.
    shutil.copytree(REPO / "build", dst / "build", symlinks=True,
                    ignore=shutil.ignore_patterns("san", "bench", "tests"))


def test_make_demo_succeeds_from_a_checkout_at_a_long_path(tmp_path, profiler_bin):
    # Longer paths make longer frames: the demo's file name is in every one.
    deep = tmp_path / "a-checkout-in-a-directory-named-at-some-length" / ("d" * 100) / \
        "pybpfprof"
    deep.mkdir(parents=True)
    _copy_checkout(deep)
    p = subprocess.run(["make", "-C", str(deep), "demo"], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, f"make demo exit {p.returncode}:\n{p.stdout[-3000:]}\n" \
        f"{p.stderr[-3000:]}"
    parts = p.stdout.split("\n=== ")
    report = next((x for x in parts if x.startswith("profiling, with its report")), "")
    rows = [line for line in report.splitlines() if line.strip()[:1].isdigit()]
    # The demo's own hottest function (tools/demo/app.py's price, a third or more of its
    # CPU) heads the report, at its full path.
    app = str(deep / "tools" / "demo" / "app.py")
    assert rows and " price (" + app in rows[0], report[-3000:]
    by_line = next((x for x in parts if x.startswith("the same recording by line")), "")
    assert " price (" + app + ":" in by_line, by_line[-3000:]
    for name in ("demo.svg", "demo.pbp", "demo.speedscope.json"):
        out = deep / "build" / name
        assert out.exists() and out.stat().st_size > 0, name
    assert b"price" in (deep / "build" / "demo.svg").read_bytes()


def _hold_lock(path: str, held: threading.Event, release: threading.Event):
    # apt and dpkg take these locks with fcntl(F_SETLK), as lockf does.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        held.set()
        release.wait(120)
    finally:
        os.close(fd)


@pytest.mark.root
@pytest.mark.parametrize("lock,args", [
    ("/var/lib/dpkg/lock-frontend", "install -y -qq --reinstall hostname"),
    ("/var/lib/apt/lists/lock", "update -qq"),
], ids=["dpkg-frontend", "lists"])
def test_apt_get_waits_for_another_package_managers_lock(lock, args):
    held, release = threading.Event(), threading.Event()
    t = threading.Thread(target=_hold_lock, args=(lock, held, release), daemon=True)
    t.start()
    assert held.wait(30), f"could not take {lock} for the test"
    apt = subprocess.Popen(["bash", "-c", f". {REPO}/tools/apt.sh && apt_get {args}"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # While the lock is held apt must be waiting, not done (and not failed).
        with pytest.raises(subprocess.TimeoutExpired):
            apt.wait(6)
    finally:
        release.set()
        t.join(30)
    out = apt.communicate(timeout=600)[0]
    assert apt.returncode == 0, f"apt_get {args}: exit {apt.returncode}\n{out[-2000:]}"
