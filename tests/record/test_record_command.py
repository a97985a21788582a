"""`record -- COMMAND`: the profiler starts the command, follows its exec (directly for
3.11, through `chroot ROOT python3.X` for the others), profiles it until it exits and
reports its exit status."""

import re
import shutil
import sys
import uuid

import pytest

from lib.paths import PROFILER_GRACE, RUN_DIR
from lib.collapsed import show, total

SECONDS = 2.5
EXIT_CODE = 42
QUICK = 30  # seconds a run bounded by -d 1 may take before we call it a hang


def test_command_form_profiles_child_through_exec(py, harness, tmp_path):
    py.require()
    out = tmp_path / "profile.txt"
    truth_target = f"{RUN_DIR}/command-{py.version}-{uuid.uuid4().hex[:8]}.json"
    cmd = py.argv + [py.script("ratio"), "--seconds", str(SECONDS),
                     "--exit-code", str(EXIT_CODE), "--truth", truth_target]
    run = harness.run_profiler(["record", "-r", 499, "-o", out, "--"] + cmd,
                               timeout=SECONDS + PROFILER_GRACE, out=out)
    prof = run.check_ok()
    truth_host = py.host_path(truth_target)
    assert truth_host.exists(), f"the workload never reached its steady state\n{run.describe()}"
    script = py.script("ratio")
    fa = [s for s in prof if any(f.name == "fa" and f.file == script for f in s.frames)]
    assert total(fa) > 0, f"no samples in fa ({script})\n{show(prof)}"
    assert re.search(r"exit", run.stderr, re.I) and re.search(rf"\b{EXIT_CODE}\b", run.stderr), \
        f"stderr does not report the command's exit status {EXIT_CODE}\n{run.describe()}"


@pytest.mark.parametrize("wrapper", ["sh", "python-named"])
def test_duration_bounds_the_wait_for_python_and_the_command_runs_on(harness, tmp_path,
                                                                     wrapper):
    """-d counts from the profiler's start, the wait for the command's first Python code
    included. The command is a shell that waits for the test's word before it execs
    Python: traced through its execs ("sh"), or, named like a Python, watched for a
    libpython ("python-named", a copy of sh called python-wrapper). -d 1 must end the
    wait while the command still waits, saying that no Python ran in its first 1 s;
    then, as after any -d, the command runs on to its end, which the profiler waits
    for and reports, and nothing is written."""
    go, mark, out = tmp_path / "go", tmp_path / "python-ran", tmp_path / "p.txt"
    sh = shutil.which("sh")
    if wrapper == "python-named":
        sh = str(tmp_path / "python-wrapper")
        shutil.copy2(shutil.which("sh"), sh)
    script = (f"while [ ! -e {go} ]; do sleep 0.05; done; "
              f"exec {sys.executable} -c 'open(\"{mark}\", \"w\")'")
    seen = {}

    def waited_out(_stdout, stderr):
        # Said while the command still waits: only now may it go on to Python.
        if "no CPython code ran in the command's first 1 s" not in stderr:
            return False
        seen["mark_before"] = mark.exists()
        go.touch()
        return True

    run = harness.run_profiler(["record", "-d", 1, "-o", out, "--", sh, "-c", script],
                               timeout=QUICK, signal_when=(waited_out, 0))
    assert seen, f"-d 1 did not end the wait for Python\n{run.describe()}"
    assert not seen["mark_before"], run.describe()
    assert run.rc == 4, run.describe()
    lines = run.stderr.splitlines()
    assert len(lines) == 2 and all(l.startswith("pybpfprof: ") for l in lines), run.describe()
    assert "command exited with status 0" in lines[1], run.describe()
    assert mark.exists(), f"the command did not run on to its end\n{run.describe()}"
    assert not out.exists()
