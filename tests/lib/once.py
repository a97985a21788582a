# SPDX-License-Identifier: GPL-2.0-only
"""Set-up that a test run does once, though pytest-xdist runs it in several worker
processes at the same time: the first worker to take the lock does the work, the others
wait for it and read its result. Without xdist, once() just calls the function.

A worker must not redo a step the others depend on while their tests run: reinstalling
the workloads' directory, for one, would remove the truth files of running workloads."""

import fcntl
import json
import os

from .paths import CHECKOUT_TAG


def once(name, fn):
    """fn()'s result (made JSON: a tuple comes back a list), computed by one worker of
    this run. A call that raises records nothing, so the next worker tries again."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return fn()
    with open(f"/tmp/pbp-once-{CHECKOUT_TAG}-{name}", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        head, _, body = f.read().partition("\n")
        if head == run:
            return json.loads(body)
        result = fn()
        f.seek(0)
        f.truncate()
        f.write(f"{run}\n{json.dumps(result)}")
        return result
