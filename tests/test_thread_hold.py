# SPDX-License-Identifier: GPL-2.0-only
"""Holding one thread still for a live reading (user/sample/thread_hold.c), which --no-bpf does
for a running thread whose readings all found its stack changing:
tests/unit/test_thread_hold.c holds a running thread of a real process and lets it go,
then tries one in an uninterruptible wait (a vfork's parent): the hold does not wait for
it, keeps it seized, refuses another hold meanwhile, and once its wait ends lets it go
at a poll, after which it runs on rather than staying stopped. Both the plain and the
sanitizer builds run."""

import pytest

from test_sanitizers import run_unit


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
def test_thread_hold_unit_passes(build):
    run_unit("test_thread_hold", build, "thread_hold: ok")
