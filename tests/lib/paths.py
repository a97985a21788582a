# SPDX-License-Identifier: GPL-2.0-only
"""Where the suite finds the repository, the profiler and its workloads, and the shared
directories every target sees at the same path (host and chroot).

PBP_WL_DIR / PBP_RUN_DIR (absolute paths) replace /tmp/pbp-workloads-TAG and
/tmp/pbp-run-TAG."""

import hashlib
import os
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "build" / "pybpfprof"
WORKLOADS_SRC = REPO / "tests" / "workloads"
FIXTURES = REPO / "tests" / "fixtures"


# Every session reinstalls both directories from scratch, so each checkout gets its own
# (named after its path): suites from two checkouts can run at once.
CHECKOUT_TAG = hashlib.sha1(str(REPO).encode()).hexdigest()[:8]
WL_DIR = os.environ.get("PBP_WL_DIR", f"/tmp/pbp-workloads-{CHECKOUT_TAG}")  # host and chroot
RUN_DIR = os.environ.get("PBP_RUN_DIR", f"/tmp/pbp-run-{CHECKOUT_TAG}")      # truth files, 1777

TRUTH_TIMEOUT = 30.0       # seconds to wait for a workload's truth file
PROFILER_GRACE = 60.0      # seconds a profiler may take beyond its -d before we kill it
UNPRIV_USER = "pbptest"
