"""A `record -p` target that exec's: another Python is followed, anything else ends the run.

exec_into burns in before_exec() until the profiler has started, and a second more,
then os.execv()s: /bin/sleep (not a
Python), or the same script under the same interpreter, which burns in after_exec().
The PID stays; every address the profiler knew in the old image is gone.
"""

import re
import threading
import time
import uuid

import pytest

from lib.paths import RUN_DIR
from lib.collapsed import show, total
from lib.harness import Harness

BURN = 1.0
# The exec'd program's life: longer than the profiler waits for a Python to show in a
# new image (3 s), so that it gives up on a program that is not one.
SECONDS = 6
DURATION = 10
RATE = 199


@pytest.fixture(scope="module", params=["3.11", "3.15"], ids=lambda v: f"py{v}")
def interp(request, sid_root, workloads_installed):
    from lib.interpreters import make_interp
    return make_interp(request.param, sid_root)


def record_exec(tmp_path, profiler, interp, then):
    """Records the workload; lets it exec once the profiler says it samples."""
    h = Harness(tmp_path, profiler)
    go = f"{RUN_DIR}/exec-go-{uuid.uuid4().hex[:8]}"
    done = threading.Event()

    def release():
        while not done.is_set():
            if any("profiling pid" in p.read_text(errors="replace")
                   for p in tmp_path.glob("prof-*.stderr")):
                time.sleep(0.3)
                interp.host_path(go).write_text("")
                return
            time.sleep(0.05)

    try:
        w = h.start_workload(interp, "exec_into", "--then", then, "--burn", BURN, "--go", go,
                             seconds=SECONDS)
        t = threading.Thread(target=release)
        t.start()
        try:
            r = h.record_pid(w.pid, rate=RATE, duration=DURATION, extra=["-v"])
        finally:
            done.set()
            t.join()
    finally:
        h.close()
    return r, r.check_ok()


def in_function(prof, name):
    return total([s for s in prof if any(f.name == name for f in s.frames)])


def test_exec_of_another_program_ends_the_run_with_a_notice(tmp_path, profiler_bin, interp):
    r, prof = record_exec(tmp_path, profiler_bin, interp, "sleep")
    assert in_function(prof, "before_exec") > 0, f"nothing sampled before the exec\n{show(prof)}"
    assert re.search(r"exec'd \S*/sleep, which is not a Python", r.stderr), (
        f"no notice that the target exec'd a program that is not Python\n{r.describe()}")


def test_exec_of_a_python_is_followed(tmp_path, profiler_bin, interp):
    r, prof = record_exec(tmp_path, profiler_bin, interp, "python")
    assert in_function(prof, "before_exec") > 0, f"nothing sampled before the exec\n{show(prof)}"
    assert in_function(prof, "after_exec") > 0, (
        f"nothing sampled in the exec'd Python\n{show(prof)}\n{r.describe()}")
    assert "a Python: profiling it on" in r.stderr, f"no notice of the exec\n{r.describe()}"
