#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Memory soak of `pybpfprof agent` under process churn.

Runs the agent as the DaemonSet does (profiles to --output-dir, /metrics served) while
short-lived Python processes come and go, each with names nothing else has: a unique
command line, a few hundred functions with long unique names, compiled from generated
code under unique file names, with big line tables, called as one deep chain so that
every sample names them all, and threads that start and stop with chains of their own.
The agent's VmRSS is sampled every second. The churn runs in a cgroup of its own and
the agent takes only that (--container), so nothing else on the host (other Python
processes, tests of hostile inputs) weighs on the numbers.

It passes when RSS levels off: below --limit-mb throughout and, over the second half,
no upward trend: the least-squares growth over the second half and the rise of the
last quarter's peak over the second quarter's are each below --tolerance of the mean
(and never more than --tolerance-mb). A leak of 10 MB over a 10-minute run rises 5 MB
over the second half and cannot pass.

    tools/soak/agent_churn.py --binary build/pybpfprof --seconds 600
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

CHILD = r'''
import sys, threading, time

tok, nfuncs, namelen, lines, seconds, nthreads = sys.argv[1:7]
nfuncs, namelen, lines, nthreads = int(nfuncs), int(namelen), int(lines), int(nthreads)
seconds = float(seconds)


def chain(tag, n):
    """n functions calling one another, the last spinning until the deadline; unique
    long names, one unique file, many lines each (a big line table)."""
    pad = (tag * (namelen // len(tag) + 1))[:namelen]
    src = []
    for i in range(n):
        src.append(f"def f{i}_{pad}(deadline):")
        for k in range(lines):
            src.append(f"    v{k} = {k} + {i}")
        if i + 1 < n:
            src.append(f"    return f{i + 1}_{pad}(deadline)")
        else:
            src.append("    while time.monotonic() < deadline:")
            src.append("        pass")
    ns = {"time": time}
    exec(compile("\n".join(src), f"/soak/{tag}/{pad[:900]}.py", "exec"), ns)
    return ns[f"f0_{pad}"]


def thread_main(k):
    f = chain(f"{tok}t{k}", max(nfuncs // 4, 1))
    f(time.monotonic() + seconds / (nthreads + 1))


# The deadlines count from when the code is built: under load that takes a while.
main = chain(f"{tok}m", nfuncs)
threads = []
for k in range(nthreads):
    threads.append(threading.Thread(target=thread_main, args=(k,), name=f"soak-{tok}-{k}"))
    threads[-1].start()
main(time.monotonic() + seconds)
for t in threads:
    t.join()
'''


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slope(points):
    """Least-squares slope of [(t, y)], y per second."""
    n = len(points)
    mt = sum(t for t, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (y - my) for t, y in points) / var if var else 0.0


def verdict(samples, limit_mb=256.0, tolerance=0.03, tolerance_mb=2.0):
    """Whether RSS samples [(t, bytes)] level off; (ok, numbers, reasons)."""
    n = len(samples)
    if n < 8:
        return False, {}, [f"only {n} RSS samples"]
    half = samples[n // 2:]
    q2 = samples[n // 4:n // 2]
    q4 = samples[3 * n // 4:]
    mean = sum(y for _, y in half) / len(half)
    growth = slope(half) * (half[-1][0] - half[0][0])
    peak = max(y for _, y in samples)
    q2max, q4max = max(y for _, y in q2), max(y for _, y in q4)
    allowed = min(tolerance * mean, tolerance_mb * 2**20)
    mb = 2.0**20
    nums = {
        "samples": n, "first_mb": samples[0][1] / mb, "peak_mb": peak / mb,
        "second_half_mean_mb": mean / mb, "second_half_growth_mb": growth / mb,
        "q2_max_mb": q2max / mb, "q4_max_mb": q4max / mb, "allowed_mb": allowed / mb,
        "last_mb": samples[-1][1] / mb,
    }
    reasons = []
    if peak > limit_mb * mb:
        reasons.append(f"peak RSS {peak / mb:.1f} MiB over {limit_mb} MiB")
    if growth > allowed:
        reasons.append(f"RSS grows {growth / mb:.2f} MiB over the second half "
                       f"(least squares), more than {allowed / mb:.2f} MiB")
    if q4max - q2max > allowed:
        reasons.append(f"last quarter's peak {q4max / mb:.1f} MiB is above the second "
                       f"quarter's {q2max / mb:.1f} MiB by more than {allowed / mb:.2f} MiB")
    return not reasons, nums, reasons


def cgroup2_root():
    with open("/proc/self/mounts") as f:
        for line in f:
            p = line.split()
            if p[2] == "cgroup2":
                return p[1]
    raise RuntimeError("no cgroup2 hierarchy mounted")


class Churn:
    """Keeps @concurrency short-lived Python processes running, in cgroup @cgroup."""

    def __init__(self, python, workdir, concurrency, nfuncs, namelen, lines, seconds,
                 nthreads, cgroup):
        self.python = python
        self.cgroup = cgroup
        self.script = os.path.join(workdir, "churn_child.py")
        with open(self.script, "w") as f:
            f.write(CHILD)
        self.args = [str(nfuncs), str(namelen), str(lines), str(seconds), str(nthreads)]
        self.concurrency = concurrency
        self.procs = []
        self.started = 0
        self.failed = 0

    def step(self):
        alive = []
        for p in self.procs:
            rc = p.poll()
            if rc is None:
                alive.append(p)
            elif rc != 0:
                self.failed += 1
        self.procs = alive
        while len(self.procs) < self.concurrency:
            tok = uuid.uuid4().hex[:12]
            self.procs.append(subprocess.Popen(
                [self.python, self.script, tok] + self.args, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                preexec_fn=self.enter_cgroup))
            self.started += 1

    def enter_cgroup(self):
        with open(os.path.join(self.cgroup, "cgroup.procs"), "w") as f:
            f.write("0")

    def stop(self):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []


def metrics(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#"):
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


def run(agent_argv, seconds, workdir, python=sys.executable, concurrency=4, nfuncs=400,
        namelen=1000, lines=20, child_seconds=1.5, nthreads=3, period="2s", log=None):
    """Runs the agent (@agent_argv: the binary and anything before 'agent's options)
    under churn for @seconds; returns a dict with the RSS samples and counts."""
    port = free_port()
    cg_name = f"pbp-soak-{uuid.uuid4().hex[:16]}"
    cgroup = os.path.join(cgroup2_root(), cg_name)
    os.mkdir(cgroup)
    outdir = os.path.join(workdir, "profiles")
    os.makedirs(outdir, exist_ok=True)
    err_path = os.path.join(workdir, "agent.stderr")
    # A small cap on the files: the sink scans the directory at every write, and that
    # scan's (transient) size should reach its steady state early, not creep all run.
    argv = list(agent_argv) + ["agent", "--output-dir", outdir, "--output-max-mb", "4",
                               "--period", period, "--metrics-addr", f"127.0.0.1:{port}",
                               "--container", cg_name]
    churn = Churn(python, workdir, concurrency, nfuncs, namelen, lines, child_seconds,
                  nthreads, cgroup)
    with open(err_path, "wb") as fe:
        agent = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=fe, start_new_session=True)
    samples = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and agent.poll() is None:
            with open(err_path, errors="replace") as f:
                if "agent running" in f.read():
                    break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"the agent did not start (exit status {agent.poll()}): "
                               f"{open(err_path).read()[-2000:]}")
        t0 = time.monotonic()
        next_sample = t0
        while time.monotonic() - t0 < seconds:
            if agent.poll() is not None:
                raise RuntimeError(f"the agent exited ({agent.returncode}): "
                                   f"{open(err_path).read()[-2000:]}")
            churn.step()
            now = time.monotonic()
            if now >= next_sample:
                r = rss_bytes(agent.pid)
                if r is not None:
                    samples.append((now - t0, r))
                    if log:
                        log(f"{now - t0:6.0f} s  RSS {r / 2**20:7.1f} MiB  "
                            f"processes {churn.started}")
                next_sample += 1.0
            time.sleep(0.05)
        m = metrics(port)
    finally:
        churn.stop()
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(15)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
        for _ in range(50):
            try:
                os.rmdir(cgroup)
                break
            except OSError:
                time.sleep(0.1)
    return {"samples": samples, "processes": churn.started, "failed": churn.failed,
            "metrics": m, "stderr": open(err_path, errors="replace").read(),
            "profiles": len(os.listdir(outdir))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="build/pybpfprof")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--python", default=shutil.which("python3.11", path="/usr/bin:/bin") or
                    shutil.which("python3.11") or sys.executable)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--functions", type=int, default=400)
    ap.add_argument("--name-length", type=int, default=1000)
    ap.add_argument("--limit-mb", type=float, default=256)
    ap.add_argument("--tolerance", type=float, default=0.03)
    ap.add_argument("--tolerance-mb", type=float, default=2.0)
    ap.add_argument("--json", help="write the RSS samples and the verdict here")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="pbp-soak-")
    try:
        res = run([a.binary], a.seconds, work, python=a.python, concurrency=a.concurrency,
                  nfuncs=a.functions, namelen=a.name_length,
                  log=lambda s: print(s, flush=True))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ok, nums, reasons = verdict(res["samples"], a.limit_mb, a.tolerance, a.tolerance_mb)
    summary = {"ok": ok, "reasons": reasons, "processes": res["processes"],
               "profiles": res["profiles"], **nums,
               "metrics": {k: v for k, v in res["metrics"].items()
                           if k.startswith(("pybpfprof_code_cache", "pybpfprof_frame_cache",
                                            "pybpfprof_string",
                                            "pybpfprof_resident", "pybpfprof_processes"))}}
    print(json.dumps(summary, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({**summary, "rss": res["samples"]}, f)
    if not ok:
        print("FAIL: " + "; ".join(reasons), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
