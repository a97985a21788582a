# SPDX-License-Identifier: GPL-2.0-only
"""`make bench` part 12: time to first sample, side by side with CPython 3.15's own
profiler. How long after it is started does a profiler take its first sample, attaching
to a running process (record -p, attach) or running a command (record --, run)? On an
idle machine and with two busy loops beside it.

The target is phases.py: a busy thread that moves into a function of its own every
WINDOW_MS (phase_0, phase_1, ...) from its origin, a CLOCK_MONOTONIC instant it prints.
The first sample is the earliest phase in the profile: it was taken in that phase's
window, so time to first sample = origin + (k + 0.5) x WINDOW_MS - the instant the
harness started the profiler, to within half a window. This needs nothing from the
profiler but its profile, so both are measured alike. pybpfprof also says, with -v,
when its first sample record was taken and when its consumer received it
(CLOCK_MONOTONIC, user/sample/sampler.c), and the CPU time it had used by then: what
start-up costs on an idle machine, however busy this one is.

run.py runs it (`--parts 12`) and calls report() and goals() from its own; this module
uses run.py's harness (Env, log, read, ...) through `import run`."""
import json
import os
import re
import subprocess
import sys
import time

import run as bench

WINDOW_MS = 10.0
PEER_MODES = ("cpu", "wall")

FULL = {
    "fs_reps": 5,
    "fs_seconds": 8.0,       # the target's life: longer than any start-up seen here
    "fs_after_s": 0.5,       # pybpfprof: how long it runs once its first sample came
}
SMOKE = {
    "fs_reps": 1,
    "fs_seconds": 4.0,
    "fs_after_s": 0.5,
}
BUSY_LOOPS = 2
# name: (how it finds the target, profiler, its arguments). Each profiler at its own
# default rate (pybpfprof 100 Hz, the peer 1 kHz): one period at most of the figure is
# the rate's, the rest start-up.
CONFIGS = {
    "pybpfprof record -p": ("attach", "ours", []),
    "pybpfprof record -p --mode wall": ("attach", "ours", ["--mode", "wall"]),
    "pybpfprof record -p --native": ("attach", "ours", ["--native"]),
    "profiling.sampling attach --mode cpu": ("attach", "peer", ["--mode", "cpu"]),
    "profiling.sampling attach --mode wall": ("attach", "peer", ["--mode", "wall"]),
    "pybpfprof record -- CMD": ("command", "ours", []),
    "pybpfprof record --mode wall -- CMD": ("command", "ours", ["--mode", "wall"]),
    "profiling.sampling run --mode cpu": ("command", "peer", ["--mode", "cpu"]),
    "profiling.sampling run --mode wall": ("command", "peer", ["--mode", "wall"]),
}
FIRST_LINE = re.compile(r"first sample: taken at ([\d.]+), received at ([\d.]+) "
                        r"\(CLOCK_MONOTONIC\), \d+ ms after the sampler began to load; "
                        r"(\d+) ms of CPU")
PHASE = re.compile(r"\bphase_(\d+)\b")


def target_argv(env, seconds, stop):
    return env.py + [env.work + "/phases.py", "--window-ms", f"{WINDOW_MS:g}",
                     "--seconds", f"{seconds:g}", "--cpu", str((os.cpu_count() or 1) - 1),
                     "--stop", stop]


def profiler_argv(env, who, how, args, out, pid=None, target=None):
    if who == "ours":
        a = [bench.BIN, "record", "-v", "-o", env.host(out), "-f", "collapsed"] + args
        return env.prof_cpu + (a + ["-p", str(pid)] if how == "attach" else a + ["--"] + target)
    a = env.py + ["-m", "profiling.sampling", "attach" if how == "attach" else "run",
                  "--collapsed", "-o", out] + args
    if how == "attach":
        return env.prof_cpu + a + [str(pid)]
    # The peer runs the script itself, in its own interpreter's place.
    return env.prof_cpu + a + target[len(env.py):]


def ready_line(text):
    for line in text.splitlines():
        if line.startswith('{"ready"'):
            return json.loads(line)
    return None


def one_run(env, name, cfg):
    """One profiler started on phases.py; times in ms from the profiler's start."""
    how, who, args = CONFIGS[name]
    stem = env.scratch("first")
    tag = os.path.basename(stem)
    out, stop = f"{env.work}/out/{tag}.txt", f"{env.work}/out/{tag}.stop"
    target = target_argv(env, cfg["fs_seconds"], stop)
    so, se = stem + ".stdout", stem + ".stderr"
    tproc = proc = None
    try:
        if how == "attach":
            tproc = subprocess.Popen(target, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
            ready = json.loads(tproc.stdout.readline() or "null")
            if not ready:
                raise bench.BenchError(f"{name}: phases.py did not start")
            argv = profiler_argv(env, who, how, args, out, pid=ready["ready"])
        else:
            argv = profiler_argv(env, who, how, args, out, target=target)
        with open(so, "wb") as fo, open(se, "wb") as fe:
            t0 = time.monotonic()
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
        first = None
        deadline = t0 + cfg["fs_seconds"] + bench.EXIT_TIMEOUT_S
        while proc.poll() is None and time.monotonic() < deadline:
            # Once pybpfprof has its first sample and the phases have begun, the rest of
            # the target's life would only cost time. A command's first sample can come
            # before its phases (the interpreter's start-up is Python code too): they
            # are given fs_after_s to be sampled in.
            if who == "ours" and first is None:
                first = FIRST_LINE.search(bench.read(se))
                if first and (how == "attach" or ready_line(bench.read(so))):
                    time.sleep(cfg["fs_after_s"])
                    open(env.host(stop), "w").close()
                else:
                    first = None
            time.sleep(0.01)
        if proc.poll() is None:
            raise bench.BenchError(f"{name}: still running {bench.EXIT_TIMEOUT_S:.0f} s after "
                                   f"its target should have ended")
        err = bench.read(se)
        if proc.returncode != 0:
            raise bench.BenchError(f"{name} exited {proc.returncode}:\n{err[-1500:]}")
        if how == "command":
            ready = ready_line(bench.read(so))
            if not ready:
                raise bench.BenchError(f"{name}: no ready line from phases.py:\n"
                                       f"{bench.read(so)[-800:]}{err[-800:]}")
        phases = [int(k) for k in PHASE.findall(bench.read(env.host(out)))]
        res = {"phase_ms": None, "log_taken_ms": None, "log_received_ms": None,
               "cpu_ms": None}
        if phases:
            res["phase_ms"] = (ready["origin"] + (min(phases) + 0.5) * WINDOW_MS / 1000
                               - t0) * 1000
        first = FIRST_LINE.search(err)
        if who == "ours" and not first:
            raise bench.BenchError(f"{name}: no 'first sample' line:\n{err[-1500:]}")
        if first:
            res["log_taken_ms"] = (float(first.group(1)) - t0) * 1000
            res["log_received_ms"] = (float(first.group(2)) - t0) * 1000
            res["cpu_ms"] = int(first.group(3))
        return res
    finally:
        for p in (proc, tproc):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        for path in (env.host(out), env.host(stop)):
            if os.path.exists(path):
                os.unlink(path)


def busy_loops(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             stdin=subprocess.DEVNULL) for _ in range(n)]


def part_first_sample(env, cfg):
    names = list(CONFIGS)
    runs = {load: {n: [] for n in names} for load in ("idle", "busy")}
    load_avg = {}
    for load in runs:
        # "idle" is the machine as found: its load average says how idle it was.
        load_avg[load] = os.getloadavg()[0]
        loops = busy_loops(BUSY_LOOPS) if load == "busy" else []
        try:
            for rep in range(cfg["fs_reps"]):
                k = rep % len(names)
                for name in names[k:] + names[:k]:
                    runs[load][name].append(bench.safe(one_run, env, name, cfg))
                bench.log(f"part 12: {load}: repetition {rep + 1}/{cfg['fs_reps']} done")
        finally:
            for p in loops:
                p.kill()
                p.wait()
    rows = []
    for load, by in runs.items():
        for name, rs in by.items():
            ok = [r for r in rs if "error" not in r]
            row = {"load": load, "load_avg": load_avg[load], "config": name, "runs": len(rs),
                   "failed": len(rs) - len(ok),
                   "errors": [r["error"][:300] for r in rs if "error" in r]}
            for key in ("phase_ms", "log_taken_ms", "log_received_ms", "cpu_ms"):
                xs = [r[key] for r in ok if r.get(key) is not None]
                row[key] = bench.med(xs)
                row[key + "_min"] = min(xs) if xs else None
                row[key + "_max"] = max(xs) if xs else None
            row["unsampled"] = sum(1 for r in ok if r.get("phase_ms") is None)
            rows.append(row)
    return {"reps": cfg["fs_reps"], "seconds": cfg["fs_seconds"], "window_ms": WINDOW_MS,
            "busy_loops": BUSY_LOOPS, "rows": rows}


def fnum(v, fmt="{:.0f}"):
    return "–" if v is None else fmt.format(v)


def span(r, key):
    if r.get(key) is None:
        return "–"
    return f"{r[key]:.0f} ({r[key + '_min']:.0f}..{r[key + '_max']:.0f})"


def goals(res, cfg):
    fs = res.get("first_sample") or {}
    r = next((r for r in fs.get("rows", []) if r["load"] == "idle"
              and r["config"] == "pybpfprof record -p"), None)
    goal = "record -p: first sample within 1 s of starting, idle machine"
    if not r or r.get("phase_ms") is None:
        return [(goal, "not measured", "part 12 not run" if not fs else "no sample")]
    v, cpu, la = r["phase_ms"], r.get("cpu_ms"), r.get("load_avg")
    why = (f"median {v:.0f} ms from starting `record -p` to its first sample (part 12), "
           f"{fnum(cpu)} ms of CPU used by then; load average {fnum(la, '{:.1f}')} on "
           f"{os.cpu_count()} CPUs as the runs began")
    verdict = "met" if v < 1000 else "missed"
    if v >= 1000 and la is not None and la > 0.5 * (os.cpu_count() or 1):
        verdict = "wall clock inconclusive; CPU " + (
            "met" if cpu is not None and cpu < 1000 else "missed")
        why += (": the machine was not idle, and the wall time holds the waits for a "
                "CPU; the CPU time is what start-up costs an idle one")
    return [(goal, verdict, why)]


def report(w, res, cfg):
    fs = res.get("first_sample") or {}
    if not fs.get("rows"):
        return
    w(f"## 12. Time to first sample ({fs['reps']} repetitions)")
    w("")
    w(f"How long a profiler takes from being started to its first sample. The target, "
      f"`phases.py` on CPython 3.15 pinned to the last CPU, burns CPU in a function of "
      f"its own for each {fs['window_ms']:g} ms window of its life (phase_0, phase_1, "
      f"...), and prints when it began; the earliest phase in a profile is the window its "
      f"first sample was taken in. First sample: from the instant the harness started "
      f"the profiler (pinned to CPU 0) to the middle of that window, median (min..max), "
      f"to within {fs['window_ms'] / 2:g} ms. Attach: the target is already running; "
      f"command: the profiler starts it, so its figure includes the interpreter's own "
      f"start-up, and counts to the first sample of the script's own code (the phases). "
      f"Idle: the machine as found, its 1-minute load average in brackets. Busy: "
      f"{fs['busy_loops']} unpinned busy loops run beside them. Each profiler at its "
      f"default rate (pybpfprof 100 Hz, the peer 1 kHz), whose period bounds the wait "
      f"for a first tick once attached. pybpfprof's own -v line: when its first record "
      f"was taken and when its consumer received it, by the same clock, and the CPU "
      f"time pybpfprof had used by then, which is what start-up costs an idle machine "
      f"(on a busy one the wall time also holds its waits for a CPU). Unsampled: runs "
      f"whose profile held no phase ({fs['seconds']:g} s of target).")
    w("")
    w("| load (load average) | profiler | first sample ms | -v: taken ms | -v: received ms "
      "| CPU ms | unsampled | failed |")
    w("|---|---|---|---|---|---|---|---|")
    for r in fs["rows"]:
        w(f"| {r['load']} ({fnum(r.get('load_avg'), '{:.1f}')}) | {r['config']} | "
          f"{span(r, 'phase_ms')} | "
          f"{span(r, 'log_taken_ms')} | {span(r, 'log_received_ms')} | "
          f"{span(r, 'cpu_ms')} | {r['unsampled']} | {r['failed']} |"
          + (f" {r['errors'][0][:120]}" if r["errors"] else ""))
    w("")
