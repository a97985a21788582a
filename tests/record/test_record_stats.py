"""--stats-file: required keys and the interpreter version."""

import numbers

import pytest

from lib.interpreters import version_matches
from lib.harness import Once, STATS_KEYS, profile_workload

DURATION = 2


@pytest.fixture(scope="module")
def stats_run(py, module_tmp, profiler_bin):
    return Once(lambda: profile_workload(
        module_tmp / py.id, profiler_bin, py, "delivery", duration=DURATION))


def test_stats_file_has_every_required_key(py, stats_run):
    stats_run = stats_run.get()
    stats_run.run.check_ok()
    st = stats_run.run.stats()
    missing = [k for k in STATS_KEYS if k not in st]
    assert not missing, f"missing keys {missing} in {st}"
    not_numbers = [k for k in STATS_KEYS if k != "python_version"
                   and not (isinstance(st[k], numbers.Real) and not isinstance(st[k], bool)
                            and st[k] >= 0)]
    assert not not_numbers, f"keys that are not non-negative numbers: {not_numbers}: {st}"
    assert st["samples_delivered"] > 0, f"no samples delivered: {st}"


def test_stats_python_version_is_the_targets(py, stats_run):
    stats_run = stats_run.get()
    stats_run.run.check_ok()
    st = stats_run.run.stats()
    vi = stats_run.truth["version_info"]
    assert isinstance(st.get("python_version"), str), f"python_version not a string: {st}"
    assert version_matches(st["python_version"], vi), \
        f"python_version {st['python_version']!r}, target is {vi}"
