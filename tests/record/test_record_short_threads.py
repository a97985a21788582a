"""Threads shorter than a sampling period, counted as their CPU time says.

short_threads.py serves each request on a new thread that lives for 0.2-3 ms of CPU,
shorter than a period at 100 Hz and about one at 1 kHz, while two client threads load
it; every thread times its own CPU. record -p, on 3.11 and 3.15, at 100 Hz and 1 kHz,
on an idle machine and beside two busy loops:

- the share of samples in the request threads' work, and in the clients', is each
  one's share of the process's CPU, within 3 points beyond sampling noise (3 standard
  errors);
- the samples delivered are the samples expected (the process's CPU over the run
  times the rate) within 10 % (20 % wherever the CPUs were saturated, as beside the
  busy loops: DELIVERED says why).

The default clocks (per CPU, while the target's cgroup runs) meet both; --clock thread
(a clock per thread, which starts each new thread at the beginning of a period) is the
control that shows the test can fail: at 100 Hz it must leave the handlers short of
their CPU share by more than the bound the default clocks meet.
"""

import math

import pytest

from lib.collapsed import total
from lib.interpreters import MODES
from lib.harness import Servers, fraction
from lib.procfs import cpu_jiffies

VERSIONS = ["3.11", "3.15"]
RATES = [100, 1000]
LOADS = ["idle", "loaded"]
# Long enough at 100 Hz for a share's noise (3 standard errors) to be a few points.
SECONDS = {100: 8, 1000: 3}
SLACK = 0.03
# Samples delivered against the process's CPU time times the rate. Idle, 10 %. Beside
# two busy loops this machine delivers 80-98 %, and the kernel's own `perf record -a
# -e cpu-clock` 78-96 % of the same process's CPU: its clocks fire at the full rate,
# but find the target current less often than its CPU time says. Not the host taking
# the saturated virtual CPUs away unreported: a thread that reads its wall and CPU
# clocks in a tight loop beside the same load sees under 1 % of its CPU charged
# without progress. Not the clocks ticking for the busy loops either: with the server
# in a cgroup of its own, so that its clocks run only while it does, 1 kHz delivered
# 93-95 % beside the loops where the shared cgroup's delivered 93-94 % (both 96-98 %
# beside four loops), and one Python thread spinning beside the same loops gets
# 100.4 %. It goes with the request threads' switching: `perf stat`'s
# task-clock (time between each thread's switch in and out) counts 87-88 % of the
# process's CPU beside the loops, 96 % idle. The cause is not settled. 20 % there.
DELIVERED = {"idle": 0.10, "loaded": 0.20}
# The CPUs count as saturated, whatever the case asked for (a suite run beside busy
# loops leaves no "idle" case idle), when less than this share of their time was idle.
SATURATED = 0.15


def cpu_times():
    """(idle, total) jiffies of every CPU so far, from /proc/stat."""
    fields = cpu_jiffies()
    return fields[3] + fields[4], sum(fields[:8])


@pytest.fixture(scope="module")
def servers(module_tmp, profiler_bin, sid_root, workloads_installed):
    s = Servers(module_tmp, profiler_bin, sid_root)
    yield s
    s.close()


def shares(prof, before, after, script):
    """[(bucket, sampled share, true share, bound)] for each bucket of the truth."""
    n = total(prof)
    cpu = after["process_cpu"] - before["process_cpu"]
    out = []
    for bucket, funcs in after["bucket_functions"].items():
        inside = total([s for s in prof
                        if any(f.name in funcs and f.file == script for f in s.frames)])
        want = fraction(after["cpu"][bucket] - before["cpu"][bucket], cpu)
        got = fraction(inside, n)
        bound = SLACK + 3 * math.sqrt(max(want * (1 - want), 0.01) / max(n, 1))
        out.append((bucket, got, want, bound))
    return out


def profile(servers, version, rate, load, clock=()):
    _, w = servers.get("short_threads", version)
    h = servers.harness
    assert w.proc.poll() is None, f"short_threads on {version} exited:\n{w.output()}"
    busy = [h.spawn(["sh", "-c", "while :; do :; done"]) for _ in range(2)] \
        if load == "loaded" else []
    try:
        before, cpu0 = w.read_truth(), cpu_times()
        run = h.record_pid(w.pid, rate=rate, duration=SECONDS[rate],
                           extra=MODES["bpf"] + list(clock))
        after, cpu1 = w.read_truth(), cpu_times()
    finally:
        for p in busy:
            p.kill()
            p.wait()
    prof = run.check_ok()
    idle = fraction(cpu1[0] - cpu0[0], cpu1[1] - cpu0[1])
    return run, prof, run.stats(), before, after, w.interp.script("short_threads"), idle


@pytest.mark.parametrize("load", LOADS)
@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("version", VERSIONS)
def test_short_threads_are_sampled_as_their_cpu_says(servers, version, rate, load):
    run, prof, stats, before, after, script, idle = profile(servers, version, rate, load)
    assert after["requests"] - before["requests"] >= 50, (before, after)
    misses = []
    for bucket, got, want, bound in shares(prof, before, after, script):
        if abs(got - want) > bound:
            misses.append(f"{bucket}: {100 * got:.1f} % of samples, {100 * want:.1f} % of "
                          f"the CPU: off by {100 * abs(got - want):.1f} points > "
                          f"{100 * bound:.1f}")
    delivered, expected = stats["samples_delivered"], stats["samples_expected"]
    held = DELIVERED["loaded" if idle < SATURATED else load]
    if abs(delivered - expected) > held * expected:
        misses.append(f"{delivered} samples delivered of {expected} expected (bound "
                      f"{100 * held:.0f} %, CPUs {100 * idle:.0f} % idle); the program "
                      f"ran {stats['bpf_run_cnt']} times, {stats['bpf_target_events']} for "
                      f"the target, {stats['bpf_no_thread_state']} without a thread state, "
                      f"{stats['bpf_no_frame']} without a frame")
    assert not misses, "\n".join(misses) + f"\n{run.describe()}"


def test_a_clock_per_thread_misses_short_threads(servers):
    """The control: clocks that start every thread afresh leave the handlers short of
    their CPU share at 100 Hz by more than the test above allows, so it can tell. (They
    miss 41-50 % of the handlers' CPU here: "most" held on some runs only.)"""
    run, prof, stats, before, after, script, _ = profile(servers, "3.11", 100, "idle",
                                                         clock=["--clock", "thread"])
    assert stats["clock"] == "thread", stats
    _, got, want, bound = next(sh for sh in shares(prof, before, after, script)
                               if sh[0] == "handlers")
    assert want - got > bound, \
        f"handlers: {got:.3f} of samples, {want:.3f} of the CPU, short by " \
        f"{want - got:.3f}, no more than the {bound:.3f} the default clocks must meet\n" \
        f"{run.describe()}"



