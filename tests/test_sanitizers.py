"""The user-space code under AddressSanitizer and UndefinedBehaviorSanitizer: the C unit
tests, and the profiler itself decoding real interpreters of every version. Any
sanitizer report fails the test. tools/run-tests.sh builds build/san/ first."""

import os
import subprocess
from pathlib import Path

import pytest

from lib.paths import REPO, RUN_DIR
from lib.collapsed import parse_collapsed
from lib.interpreters import MODES

SAN = REPO / "build" / "san"
SAN_ENV = dict(os.environ,
               ASAN_OPTIONS="abort_on_error=0:halt_on_error=1:detect_leaks=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
SAN_REPORT = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def san_binary(name):
    """The sanitizer build of `name`, brought up to date first: a binary left from an
    older checkout would test old code."""
    path = SAN / name
    p = subprocess.run(["make", "-C", str(REPO), "OUT=build/san", "SAN=address,undefined",
                        f"build/san/{name}"], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"sanitizer build of {name} failed:\n{p.stderr[-3000:]}"
    return str(path)


def run_unit(name, build, ok):
    """Builds tests/unit/NAME.c (plain, or with the sanitizers), runs it, and checks it
    ends clean with the line @ok on stdout."""
    if build == "sanitizers":
        path = san_binary(f"tests/{name}")
    else:
        p = subprocess.run(["make", "-C", str(REPO), f"build/tests/{name}"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"building {name} failed:\n{p.stderr[-3000:]}"
        path = str(REPO / "build" / "tests" / name)
    p = subprocess.run([path], capture_output=True, text=True, timeout=120,
                       env=SAN_ENV if build == "sanitizers" else None)
    assert_clean(p, name)
    assert ok in p.stdout, p.stdout[-2000:]


def assert_clean(p, what):
    report = [m for m in SAN_REPORT if m in p.stderr]
    assert not report, f"{what}: sanitizer report:\n{p.stderr[-4000:]}"
    assert p.returncode == 0, f"{what}: exit {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}"


@pytest.mark.parametrize("name", ["test_linetable", "test_offsets", "test_field_bounds"])
def test_unit_tests_are_clean_under_sanitizers(name):
    p = subprocess.run([san_binary(f"tests/{name}")], capture_output=True, text=True,
                       timeout=300, env=SAN_ENV)
    assert_clean(p, name)


@pytest.mark.parametrize("mode", list(MODES))
def test_profiler_is_clean_under_sanitizers(py, tmp_path, mode):
    """A whole record run (samples, decoding with the frame cache, aggregation, output)
    of a real workload, through the -- form, with the sanitizer build, in both modes."""
    out = tmp_path / "profile.txt"
    stats = tmp_path / "stats.json"
    truth = f"{RUN_DIR}/san-{py.version}-{mode}.json"
    argv = ([san_binary("pybpfprof"), "record", "-r", "997", "--threads", "-o", str(out),
             "--stats-file", str(stats)] + MODES[mode] + ["--"] + py.argv +
            [py.script("deep"), "--seconds", "2", "--truth", truth])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=SAN_ENV)
    assert_clean(p, " ".join(argv))
    samples = parse_collapsed(out.read_text())
    names = {f.name for s in samples for f in s.frames}
    assert "recurse" in names and "leaf" in names, \
        f"profile lacks the workload:\n{out.read_text()[:2000]}"


def test_native_unwinding_is_clean_under_sanitizers(py, tmp_path):
    """--native-all under the sanitizers: copies unwound with libdw, named, merged with
    the Python frames, through ctypes, libffi and libc's qsort (native_calls.py)."""
    out = tmp_path / "profile.txt"
    truth = f"{RUN_DIR}/san-native-{py.version}.json"
    argv = ([san_binary("pybpfprof"), "record", "-r", "499", "--native-all", "-o", str(out),
             "--"] + py.argv + [py.script("native_calls"), "--mode", "qsort", "--seconds", "2",
                                "--truth", truth])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=SAN_ENV)
    assert_clean(p, " ".join(argv))
    samples = parse_collapsed(out.read_text())
    names = {f.name for s in samples for f in s.frames}
    assert "compare" in names and any(n.startswith("qsort") or "(libc.so.6)" in n
                                      for n in names), \
        f"profile lacks the workload's native frames:\n{out.read_text()[:2000]}"
