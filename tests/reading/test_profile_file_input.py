# SPDX-License-Identifier: GPL-2.0-only
"""Profile files (.pbp) that pybpfprof did not write: one made from the format's
description (docs/profile-format.md) reads as that description says, in convert and in
report; and a file that is cut, corrupt, of a later version, a decompression bomb or
otherwise hostile is refused with one line and exit 10, leaving an existing output as
it was, under the sanitizers too. The command lines' own mistakes exit 2."""

import gzip
import subprocess
import zlib

import pytest

from lib.pbp_format import (MARKER, NATIVE, NATIVE_FUNCTION, NATIVE_OBJECT, NATIVE_PROC,
                            PYTHON, TASK, TIMELINE, WAIT, data, num, packed, profile,
                            stack, thread, write)
from lib.paths import REPO
from lib.report import parse_report
from lib.units import BUILDS, SAN_REPORT, env_for, san_binary

STRINGS = ["[incomplete]", "main", "/srv/app.py", "work", "thread 11", "thread 11 (worker)",
           "worker", "[off-CPU: sleep]", "task fetch", "memcpy", "libc.so.6",
           "/usr/lib/x86_64-linux-gnu/libc.so.6", "abc123"]
S = {s: i for i, s in enumerate(STRINGS)}


def described():
    """Three stacks of one thread: main;work 3 times, main once, and work under a native
    frame twice; a thread with a name; a timeline; a native object."""
    body = thread(10, 11, S["worker"], S["thread 11 (worker)"])
    body += stack(3, 10, 11, [(PYTHON, S["main"], S["/srv/app.py"], 5),
                              (PYTHON, S["work"], S["/srv/app.py"], 9)])
    body += stack(1, 10, 11, [(PYTHON, S["main"], S["/srv/app.py"], 6)])
    body += stack(2, 10, 11, [(PYTHON, S["main"], S["/srv/app.py"], 5),
                              (PYTHON, S["work"], S["/srv/app.py"], 9),
                              (NATIVE, S["memcpy"], S["libc.so.6"], 16)])
    body += packed(TIMELINE, [0, 10_000_000, 0, 10_000_000, 10_000_000, 1])
    body += data(NATIVE_OBJECT, num(1, S["libc.so.6"]) +
                 num(2, S["/usr/lib/x86_64-linux-gnu/libc.so.6"]) + num(3, S["abc123"]))
    body += data(NATIVE_PROC, num(1, 10) + num(2, S["libc.so.6"]) + num(3, 0))
    body += data(NATIVE_FUNCTION, num(1, 0) + num(2, S["memcpy"]) + num(3, 0x9a0))
    return profile(STRINGS, body)


@pytest.fixture(params=BUILDS)
def binary(request):
    if request.param == "sanitizers":
        return san_binary("pybpfprof"), env_for("sanitizers")
    p = subprocess.run(["make", "-C", str(REPO)], capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return str(REPO / "build" / "pybpfprof"), None


def run(binary, *args, stdin=None):
    exe, env = binary
    p = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=60,
                       env=env, input=stdin)
    report = [m for m in SAN_REPORT if m in p.stderr]
    assert not report, f"sanitizer report:\n{p.stderr[-4000:]}"
    return p


def test_a_file_made_from_the_description_converts_as_described(binary, tmp_path):
    f = tmp_path / "made.pbp"
    write(f, described())
    p = run(binary, "convert", f, "-o", tmp_path / "out.txt")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "out.txt").read_text() == (
        "main (/srv/app.py:5);work (/srv/app.py:9) 3\n"
        "main (/srv/app.py:5);work (/srv/app.py:9);memcpy+0x10 (libc.so.6) 2\n"
        "main (/srv/app.py:6) 1\n")
    # pprof names the object and where memcpy starts: 0x9a0 + 16.
    p = run(binary, "convert", f, "-o", tmp_path / "out.pb.gz")
    assert p.returncode == 0, p.stderr
    raw = gzip.decompress((tmp_path / "out.pb.gz").read_bytes())
    assert b"/usr/lib/x86_64-linux-gnu/libc.so.6" in raw and b"abc123" in raw


def test_a_file_made_from_the_description_reports_as_described(binary, tmp_path):
    f = tmp_path / "made.pbp"
    write(f, described())
    p = run(binary, "report", f)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("pid 10 (python3 app.py): cpu mode, 6 samples at 100 Hz "
                               "over 1.0 s, 1 thread\n"), p.stdout
    _, rows = parse_report(p.stdout)
    got = {r["name"]: (r["self"], r["total"]) for r in rows}
    # work's hottest line is 9; main's, with no self of its own there, 6 (one sample)
    # beats 5 (none).
    assert got == {"work (/srv/app.py:9)": (3, 5), "main (/srv/app.py:6)": (1, 6),
                   "memcpy (libc.so.6)": (2, 2)}, p.stdout
    p = run(binary, "report", f, "--by", "thread")
    assert "thread 11 (worker)" in p.stdout and " 100.0% " in p.stdout, p.stdout


def test_a_wall_profile_splits_by_wait_class_and_a_task_profile_by_task(binary, tmp_path):
    body = stack(4_000_000_000, 10, 10, [(PYTHON, S["main"], S["/srv/app.py"], 5),
                                         (WAIT, S["[off-CPU: sleep]"], 0, -1)])
    body += stack(1_000_000_000, 10, 10, [(TASK, S["task fetch"], 0, -1),
                                          (PYTHON, S["work"], S["/srv/app.py"], 9)])
    f = tmp_path / "wall.pbp"
    write(f, profile(STRINGS, body, mode="wall"))
    p = run(binary, "report", f)
    assert p.returncode == 0, p.stderr
    cols, rows = parse_report(p.stdout)
    assert cols == ["self%", "total%", "self", "total", "on-CPU", "sleep"], p.stdout
    main = next(r for r in rows if r["name"].startswith("main"))
    assert (main["self"], main["sleep"], main["on-CPU"]) == (4.0, 4.0, 0.0), p.stdout
    p = run(binary, "report", f, "--by", "task")
    _, rows = parse_report(p.stdout)
    assert {r["name"]: r["self"] for r in rows} == {"(not in a task)": 4.0,
                                                    "task fetch": 1.0}, p.stdout


def test_standard_input_is_read_as_a_file(binary, tmp_path):
    exe, env = binary
    f = tmp_path / "made.pbp"
    write(f, described())
    with open(f, "rb") as src:
        p = subprocess.run([exe, "convert", "-", "-o", "-"], stdin=src, capture_output=True,
                           timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(b"main (/srv/app.py:5);work (/srv/app.py:9) 3\n")


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    """A gzip file of 1 MiB past the 1 GiB a profile file may inflate to: zeros,
    compressed as they stream (about 1 KiB per MiB), made once for both builds."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.pbp"
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    with open(path, "wb") as f:
        for _ in range(1025):
            f.write(z.compress(chunk))
        f.write(z.flush())
    return path


def hostile_files(tmp_path):
    """(name, path, what the one-line error must say)."""
    good = described()
    made = []

    def add(name, inflated=None, raw=None, says=""):
        path = tmp_path / f"{name}.pbp"
        if raw is not None:
            path.write_bytes(raw)
        else:
            write(path, inflated)
        made.append((name, path, says))

    full = gzip.compress(good, mtime=0)
    add("empty", raw=b"", says="not a pybpfprof profile file")
    add("collapsed-text", raw=b"main (/srv/app.py:5) 3\n", says="not a pybpfprof")
    add("cut-gzip", raw=full[:len(full) // 2], says="cut short")
    add("cut-payload", inflated=good[:len(good) - 7], says="cut short")
    add("no-magic", inflated=good[len(data(1, "pybpfprof profile")):], says="not a pybpfprof")
    add("other-magic", inflated=profile(STRINGS, magic="pybpfprof profilf"),
        says="not a pybpfprof")
    add("later-version", inflated=profile(STRINGS, version=2), says="version 2")
    add("string-out-of-range", inflated=profile(STRINGS, stack(1, 1, 1, [(PYTHON, 99, 2, 1)])),
        says="names string 99")
    add("repeated-string", inflated=profile(STRINGS + ["main"]), says="repeats string 1")
    add("repeated-stack", inflated=profile(STRINGS, stack(1, 1, 1, [(MARKER, 0, 0, -1)]) * 2),
        says="repeats stack 0")
    add("no-frames", inflated=profile(STRINGS, stack(1, 1, 1, [])), says="has no frames")
    add("frame-kind", inflated=profile(STRINGS, stack(1, 1, 1, [(77, 1, 2, 1)])),
        says="unknown kind 77")
    add("frames-cut", inflated=profile(STRINGS, data(13, num(1, 1) + packed(4, [0, 1, 2]))),
        says="cut short")
    add("timeline-stack", inflated=profile(STRINGS, stack(1, 1, 1, [(MARKER, 0, 0, -1)]) +
                                           packed(TIMELINE, [0, 1, 5])),
        says="names stack 5")
    add("thread-name", inflated=profile(STRINGS, thread(1, 1, 500)), says="names string 500")
    add("proc-of-no-object", inflated=profile(STRINGS, data(NATIVE_PROC, num(1, 1) +
                                                              num(2, 10) + num(3, 4))),
        says="names no object")
    add("no-rate", inflated=profile(STRINGS, rate=0), says="without a sampling rate")
    add("mode", inflated=profile(STRINGS, mode="quantum"), says="unknown mode")
    add("huge-length", inflated=good + bytes([3 << 3 | 2]) + bytes([0xff] * 9) + b"\x01",
        says="cut short or malformed")
    add("varint-overlong", inflated=good + bytes([7 << 3]) + bytes([0x80] * 11),
        says="cut short or malformed")
    return made


def test_hostile_files_are_refused_with_one_line_and_exit_10(binary, bomb, tmp_path):
    existing = tmp_path / "existing.svg"
    existing.write_text("kept")
    bad = []
    cases = [(name, path, says, True) for name, path, says in hostile_files(tmp_path)]
    # One read of the bomb inflates a whole GiB: convert's is the same reader as report's.
    cases.append(("bomb", bomb, "more than 1024 MiB", False))
    for name, path, says, both in cases:
        commands = [["convert", path, "-o", existing]] + ([["report", path]] if both else [])
        for args in commands:
            p = run(binary, *args)
            lines = p.stderr.splitlines()
            if p.returncode != 10 or len(lines) != 1 or says not in lines[0] or \
                    not lines[0].startswith(f"pybpfprof: {path}: "):
                bad.append(f"{name} ({args[0]}): exit {p.returncode}: {p.stderr.strip()}")
    assert not bad, "\n".join(bad)
    assert existing.read_text() == "kept"
    assert not [x for x in tmp_path.iterdir() if x.name.startswith(".")], \
        "a temporary was left behind"


def test_what_is_no_file_is_refused(binary, tmp_path):
    for path, says in ((tmp_path / "absent.pbp", "No such file"), (tmp_path, "not a regular")):
        p = run(binary, "report", path)
        assert p.returncode == 10 and says in p.stderr, p.stderr


@pytest.mark.parametrize("args,says", [
    (["convert"], "no profile to convert"),
    (["convert", "x.pbp"], "give -o FILE"),
    (["convert", "x.pbp", "-o", "a.svg", "-o", "b.txt", "-f", "svg"], "-f names one format"),
    (["convert", "x.pbp", "-o", "a.json"], "no format is known by the suffix"),
    (["convert", "x.pbp", "-o", "a.svg", "-o", "a.svg"], "given twice"),
    (["convert", "x.pbp", "y.pbp", "-o", "a.svg"], "unexpected argument 'y.pbp'"),
    (["report"], "no profile to report"),
    (["report", "x.pbp", "--by", "module"], "unknown --by 'module'"),
    (["report", "x.pbp", "--sort", "name"], "unknown --sort 'name'"),
    (["report", "x.pbp", "-l", "-3"], "invalid --limit '-3'"),
    (["record", "-p", "1", "--by", "line"], "give --report too"),
])
def test_command_line_mistakes_exit_2(binary, tmp_path, args, says):
    exe, env = binary
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60, env=env,
                       cwd=tmp_path)
    assert p.returncode == 2 and says in p.stderr, (p.returncode, p.stderr)
    assert len(p.stderr.splitlines()) == 1, p.stderr
