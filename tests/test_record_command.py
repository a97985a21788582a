"""`record -- COMMAND`: the profiler starts the command, follows its exec (directly for
3.11, through `chroot ROOT python3.X` for the others), profiles it until it exits and
reports its exit status."""

import re
import uuid

from conftest import PROFILER_GRACE, RUN_DIR, show, total

SECONDS = 2.5
EXIT_CODE = 42


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
