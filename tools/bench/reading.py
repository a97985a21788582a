# SPDX-License-Identifier: GPL-2.0-only
"""`make bench` part 14: the reading side, side by side with CPython 3.15's own
profiler. One target (many_funcs.py: threads walking a tree of 1,200 generated
functions, thousands of distinct stacks) is profiled by each for the same time at the
same rate into its lossless recording: pybpfprof `record -o X.pbp` in wall mode with
--threads, the peer `run --binary`. Then each recording is turned into every format the
profiler can make of it (pybpfprof `convert`, the peer `replay`) and into a table in the
terminal (pybpfprof `report`, the peer's default pstats), REPS times, and the median
wall time of each is kept. At 1 kHz for 60 s a recording holds as many samples as a
10-minute profile at the agent's 100 Hz.

run.py runs it (`--parts 14`) and calls report() and goals() from its own; this module
uses run.py's harness (Env, log, ...) through `import run`."""
import os
import shutil
import subprocess
import time

import run as bench

FULL = {"rd_seconds": 60.0, "rd_rate": 1000, "rd_reps": 3}
SMOKE = {"rd_seconds": 3.0, "rd_rate": 1000, "rd_reps": 1}

OURS = [("collapsed", ".txt"), ("svg", ".svg"), ("html", ".html"),
        ("speedscope", ".speedscope.json"), ("pprof", ".pb.gz"), ("chrome", ".trace.json"),
        ("heatmap", ".heatmap.html")]
PEERS = [("collapsed", "--collapsed"), ("flamegraph", "--flamegraph"),
         ("heatmap", "--heatmap"), ("gecko", "--gecko")]


def timed(argv, timeout=600):
    """(seconds, CompletedProcess) of one run of @argv, output to /dev/null."""
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return time.monotonic() - t0, p


def size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path)
                   for f in fs)
    return os.path.getsize(path) if os.path.exists(path) else None


def record(env, cfg):
    """Both recordings: {who: (host path, seconds to record, error)}."""
    secs, rate = cfg["rd_seconds"], cfg["rd_rate"]
    target = env.py + [env.work + "/many_funcs.py", f"{secs:g}"]
    ours = f"{env.work}/out/reading.pbp"
    peer = f"{env.work}/out/reading.bin"
    out = {}
    argv = [bench.BIN, "record", "-r", str(rate), "--mode", "wall", "--threads",
            "-o", env.host(ours), "--"] + target
    dt, p = timed(argv, timeout=secs + 300)
    out["pybpfprof"] = (env.host(ours), dt, None if p.returncode == 0 else p.stderr[-800:])
    argv = env.py + ["-m", "profiling.sampling", "run", "-r", str(rate), "-a", "--mode",
                     "wall", "--binary", "-o", peer, env.work + "/many_funcs.py", f"{secs:g}"]
    dt, p = timed(argv, timeout=secs + 300)
    out["peer"] = (env.host(peer), dt, None if p.returncode == 0 else p.stderr[-800:])
    return out


def part_reading(env, cfg):
    shutil.copy(os.path.join(bench.HERE, "many_funcs.py"), env.host(env.work))
    recs = record(env, cfg)
    rows, errors = [], [f"{who}: {err}" for who, (_, _, err) in recs.items() if err]
    jobs = []
    ours, _, err = recs["pybpfprof"]
    if not err:
        for name, suffix in OURS:
            dst = env.scratch("convert") + suffix
            jobs.append(("pybpfprof", f"convert -f {name}", dst,
                         [bench.BIN, "convert", ours, "-o", dst]))
        jobs.append(("pybpfprof", "report", None, [bench.BIN, "report", ours]))
    peer, _, err = recs["peer"]
    if not err:
        inside = peer[len(env.root):]
        for name, flag in PEERS:
            dst = f"{env.work}/out/replay-{name}"
            jobs.append(("CPython 3.15", f"replay {flag}", env.host(dst),
                         env.py + ["-m", "profiling.sampling", "replay", flag, "-o", dst,
                                   inside]))
        jobs.append(("CPython 3.15", "replay --pstats", None,
                     env.py + ["-m", "profiling.sampling", "replay", "--pstats", inside]))
    for who, what, dst, argv in jobs:
        times, failed = [], None
        for _ in range(cfg["rd_reps"]):
            dt, p = timed(argv)
            if p.returncode:
                failed = p.stderr.strip()[-300:]
                break
            times.append(dt)
        rows.append({"who": who, "what": what, "seconds": bench.med(times) if times else None,
                     "out_bytes": size(dst) if dst else None, "error": failed})
        bench.log(f"part 14: {who} {what}: "
                  f"{rows[-1]['seconds'] if times else 'failed'}")
    return {"rows": rows, "errors": errors, "seconds": cfg["rd_seconds"],
            "rate": cfg["rd_rate"], "reps": cfg["rd_reps"],
            "recordings": {who: {"bytes": size(path), "record_s": dt}
                           for who, (path, dt, e) in recs.items() if not e}}


def goals(res, cfg):
    rd = res.get("reading") or {}
    goal = "reading side: convert and report of a 10-minute profile in under a second"
    ours = [r for r in rd.get("rows", []) if r["who"] == "pybpfprof"]
    if not ours:
        return [(goal, "not measured", "part 14 not run" if not rd else "no recording")]
    bad = [r for r in ours if r["seconds"] is None or r["seconds"] >= 1.0]
    slowest = max((r for r in ours if r["seconds"] is not None),
                  key=lambda r: r["seconds"], default=None)
    why = (f"{len(ours) - len(bad)} of {len(ours)} under a second on a {rd['seconds']:g} s "
           f"recording at {rd['rate']} Hz (part 14); slowest: "
           + (f"{slowest['what']} {slowest['seconds']:.2f} s" if slowest else "none"))
    return [(goal, "met" if not bad else "missed", why)]


def fnum(v, fmt="{:.2f}"):
    return "–" if v is None else fmt.format(v)


def report(w, res, cfg):
    rd = res.get("reading") or {}
    if not rd.get("rows"):
        return
    w(f"## 14. The reading side ({rd['reps']} repetitions)")
    w("")
    w(f"One recording each of `many_funcs.py` on CPython 3.15 (4 threads walking a tree "
      f"of 1,200 generated functions: thousands of distinct stacks), {rd['seconds']:g} s "
      f"at {rd['rate']} Hz in wall mode, as many samples as 10 minutes at 100 Hz: "
      f"pybpfprof `record -o X.pbp --threads`, the peer `run -a --binary`. Then the wall "
      f"time, median of the repetitions, to make each format from it (pybpfprof "
      f"`convert`, the peer `replay`) and a table in the terminal (`report`, the peer's "
      f"pstats). Recordings: " + ", ".join(
          f"{who} {fnum((r['bytes'] or 0) / 2**20)} MiB"
          for who, r in rd.get("recordings", {}).items()) + ".")
    w("")
    w("| profiler | job | seconds | output |")
    w("|---|---|---|---|")
    for r in rd["rows"]:
        out = f"{fnum(r['out_bytes'] / 2**20)} MiB" if r["out_bytes"] else "–"
        w(f"| {r['who']} | `{r['what']}` | {fnum(r['seconds'])} | {out} |"
          + (f" failed: {r['error'][:100]}" if r["error"] else ""))
    for e in rd.get("errors", []):
        w(f"\nRecording failed: {e[:300]}")
    w("")
