"""The user-space code under AddressSanitizer and UndefinedBehaviorSanitizer: the C unit
tests, and the profiler itself decoding real interpreters of every version. Any
sanitizer report fails the test. tools/run-tests.sh builds build/san/ first."""

import subprocess

import pytest

from lib.paths import RUN_DIR
from lib.collapsed import parse_collapsed
from lib.interpreters import MODES
from lib.units import SAN_ENV, assert_clean, san_binary

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
        f"profile lacks the workload:\n{out.read_text()[:2000]}\nstderr:\n{p.stderr[-3000:]}"


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
        f"profile lacks the workload's native frames:\n{out.read_text()[:2000]}\n" \
        f"stderr:\n{p.stderr[-3000:]}"
