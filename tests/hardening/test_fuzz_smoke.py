# SPDX-License-Identifier: GPL-2.0-only
"""The libFuzzer targets (`make fuzz`) build against today's interfaces and run clean
for two seconds each: a fuzzer that no longer compiles finds nothing. The long runs
stay with `make fuzz` (FUZZ_SECONDS, default 60)."""

import re
import subprocess

from lib.paths import REPO


def test_fuzz_targets_build_and_run_clean():
    p = subprocess.run(["make", "-s", "fuzz", "FUZZ_SECONDS=2"], cwd=REPO,
                       capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    assert p.returncode == 0, f"make fuzz exited {p.returncode}:\n{out[-4000:]}"
    assert "runtime error" not in out and "ERROR: " not in out, out[-4000:]
    runs = [int(n) for n in re.findall(r"^Done (\d+) runs", out, re.M)]
    targets = list((REPO / "tests" / "fuzz").glob("fuzz_*.c"))
    assert len(runs) == len(targets) == 7 and all(n > 0 for n in runs), out[-4000:]
