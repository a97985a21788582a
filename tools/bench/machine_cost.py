# SPDX-License-Identifier: GPL-2.0-only
"""`make bench` parts 9 and 10 (issue 19): what sampling costs inside the target and
what it costs a loaded machine, side by side with CPython 3.15's own profiler, and
where a pybpfprof sample's cost goes.

  9. paired twins: two identical work_loop.py targets pinned together to one CPU, only
     twin A profiled, the profiler pinned to the other CPU. The scheduler gives both
     the same CPU time, and these kernels charge interrupt time (the timer tick, the
     BPF program) to the interrupted task, so A's work over B's work, against the
     same ratio unprofiled, is what the profiled target pays; ticks that hit both
     twins alike cancel out.
 10. saturated machine: one work_loop.py pinned to each CPU, the profiler unpinned,
     one target profiled (or, for `record -a` and the agent, every one of them); the
     work all targets got done against unprofiled runs beside it in the same run.
     This is what a host with no idle CPU pays, timer ticks and the profiler's own
     process included.
 11. cost breakdown per sample, from what parts 9 and 10 measured.

run.py runs them (`--parts 9,10`) and calls report() and goals() from its own; this
module uses run.py's harness (Env, Profiler, safe, ...) through `import run`."""
import json
import os
import select
import signal
import socket
import subprocess
import time
import urllib.request

import run as bench

# PEER_MODE: the peer's default mode; on always-busy targets wall and cpu sample alike.
PEER_MODE = "wall"
DEPTH = 100                 # frames of the twins' and the saturated targets' stacks
HOST_VERSIONS = {"3.11"}    # Debian's own, on the host; the rest run in the chroot
LEAD_S = 0.3                # from sending the window to its start: every target waiting

FULL = {
    "twin_reps": 3,
    "twin_seconds": 4.0,
    "twin_base_every": 4,    # an unprofiled pair before every 4 profiled ones
    # (CPython, frames, profilers, rates); the peer only on 3.15, the version it runs on.
    "twin_groups": [
        ("3.15", DEPTH, ("pybpfprof", "pybpfprof --clock tick", "pybpfprof --no-bpf", "peer"),
         (100, 1000, 10000)),
        ("3.11", DEPTH, ("pybpfprof",), (100, 1000, 10000)),
        ("3.13", DEPTH, ("pybpfprof",), (100, 1000, 10000)),
        ("3.11", 300, ("pybpfprof",), (10000,)),
        ("3.13", 300, ("pybpfprof",), (10000,)),
        ("3.14", 300, ("pybpfprof",), (10000,)),
        ("3.15", 300, ("pybpfprof",), (10000,)),
    ],
    "sat_reps": 3,
    "sat_seconds": 4.0,
    "sat_base_every": 3,
    "sat_rates": [100, 1000, 10000],
}
SMOKE = {
    "twin_reps": 1,
    "twin_seconds": 1.0,
    "twin_base_every": 99,
    "twin_groups": [
        ("3.15", DEPTH, ("pybpfprof", "pybpfprof --no-bpf", "peer"), (1000,)),
        ("3.11", DEPTH, ("pybpfprof",), (1000,)),
        ("3.13", 300, ("pybpfprof",), (10000,)),
    ],
    "sat_reps": 1,
    "sat_seconds": 1.0,
    "sat_base_every": 99,
    "sat_rates": [1000],
}
# At their default rate, 100 Hz, on their default clocks (one per CPU); the last one is
# `record -a` on the scheduler's tick instead, for comparison.
HOST_WIDE = ("pybpfprof record -a", "pybpfprof agent")
HOST_WIDE_TICK = "pybpfprof record -a --clock tick"
# The tick runs at HZ (100 at least): rows on it only at rates no kernel ticks below.
TICK_ROWS_UP_TO = 100
# --native rows up to this rate: a walk costs tens of µs, and 10 kHz of them is not how
# it is used.
NATIVE_ROWS_UP_TO = 1000


# --------------------------------------------------------------------------------------
# Targets

def interp(env, ver):
    """argv running CPython ver, and the bench's scripts' directory as it sees it."""
    if ver in HOST_VERSIONS:
        return [f"/usr/bin/python{ver}"], env.host(env.work)
    return bench.chroot_argv(env.root, f"/usr/bin/python{ver}"), env.work


def last_cpu():
    return max(0, (os.cpu_count() or 1) - 1)


def cgroup_root():
    """Where this process's cgroup v2 directory is, or None without one."""
    for mnt in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(mnt, "cgroup.controllers")):
            with open("/proc/self/cgroup") as f:
                for line in f:
                    if line.startswith("0::"):
                        return mnt + line[3:].strip().rstrip("/")
    return None


class Targets:
    """work_loop.py processes, each pinned to its CPU, that work over one window."""

    def __init__(self, env, specs, own_cgroups=False):
        """specs: [(cpu, CPython version, frames)]. own_cgroups: each in a cgroup of
        its own below ours, as a service or a container runs: record -p's clocks then
        tick while the target's cgroup runs, not while its neighbour runs."""
        self.procs, self.errs, self.cgroups = [], [], []
        try:
            for cpu, ver, depth in specs:
                py, where = interp(env, ver)
                err = env.scratch("work_loop") + ".stderr"
                with open(err, "wb") as fe:
                    self.procs.append(subprocess.Popen(
                        ["taskset", "-c", str(cpu)] + py +
                        [where + "/work_loop.py", "--depth", str(depth)],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fe, text=True))
                self.errs.append(err)
            self.pids = [self._line(k, "ready", bench.READY_TIMEOUT_S)["ready"]
                         for k in range(len(self.procs))]
            if own_cgroups:
                self._own_cgroups()
        except BaseException:
            self.close()
            raise

    def _line(self, k, what, timeout):
        p = self.procs[k]
        ready, _, _ = select.select([p.stdout], [], [], timeout)
        line = p.stdout.readline() if ready else ""
        try:
            return json.loads(line)
        except ValueError:
            raise bench.BenchError(f"work_loop.py gave no {what} line: {line!r} "
                                   f"{bench.read(self.errs[k])[-800:]}")

    def work(self, seconds, watch=None):
        """Every target works from LEAD_S from now for seconds; their results. watch (a
        Watch) is told when the window starts and when the last result came."""
        start = time.monotonic() + LEAD_S
        for p in self.procs:
            p.stdin.write(f"{start:.6f} {start + seconds:.6f}\n")
            p.stdin.flush()
        if watch:
            time.sleep(max(0.0, start - time.monotonic()))
            watch.begin()
        out = [self._line(k, "result", LEAD_S + seconds + 30) for k in range(len(self.procs))]
        if watch:
            watch.end()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                raise bench.BenchError("work_loop.py still running 10 s after its result")
        return out

    def _own_cgroups(self):
        root = cgroup_root()
        if not root:
            raise bench.BenchError("no cgroup v2 directory to give each target its own")
        for k, pid in enumerate(self.pids):
            d = f"{root}/pbp-bench-{os.getpid()}-{k}"
            os.mkdir(d)
            self.cgroups.append(d)
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(pid))

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for d in self.cgroups:
            for _ in range(50):     # an exiting process leaves its cgroup a moment late
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.02)
        self.cgroups = []


def outputs(env, prof):
    """(the -o argument, where the host finds it): the peer writes inside the chroot."""
    stem = env.scratch(prof.name.replace(" ", "-"))
    if prof.kind == "ours":
        return stem + ".txt", stem + ".txt"
    arg = f"{env.work}/out/{os.path.basename(stem)}.txt"
    return arg, env.host(arg)


def must_have_written(name, path, res):
    """A profiler that did not start, or sampled nothing, must not look free."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = -1
    if size <= 0 or not res.get("samples"):
        raise bench.BenchError(f"{name}: no profile written ({path}: "
                               f"{'missing' if size < 0 else f'{size} bytes'}) or no "
                               f"samples ({res.get('samples')})")


class Watch:
    """One profiler attached to one target for one window: what it delivered, and its
    own CPU time over exactly the targets' window."""

    def __init__(self, env, prof, pid, pin):
        self.prof, self.out_host, self.cpu = prof, None, [None, None]
        if isinstance(prof, HostWide):
            self.run = prof.start(pid)      # checks its own output
        else:
            out_arg, self.out_host = outputs(env, prof)
            self.run = prof.start(pid, out_arg, pin=pin)

    def begin(self):
        self.cpu[0], self.w0 = bench.cpu_ns(self.run["proc"].pid), time.monotonic()

    def end(self):
        self.cpu[1], self.w1 = bench.cpu_ns(self.run["proc"].pid), time.monotonic()

    def finish(self, seconds):
        res = self.prof.finish(self.run)
        if self.out_host:
            must_have_written(self.prof.name, self.out_host, res)
        if None not in self.cpu:
            res["prof_cpu_s"] = (self.cpu[1] - self.cpu[0]) / 1e9
            res["window_s"] = self.w1 - self.w0
        if self.prof.kind == "peer" and res.get("expected"):
            # Its wall mode samples from attach to exit, the idle wait before the window
            # too: keep the window's share of its samples ('Captured N samples in S s').
            whole = res["expected"] / self.prof.rate
            res["samples_all"] = res["samples"]
            res["samples"] = res["samples"] * min(1.0, seconds / whole) if whole else None
        return res


class HostWide:
    """`record -a` or the agent, at their default rate: every CPU ticks and every
    Python process on the host is a target. start/finish as Profiler's."""

    def __init__(self, env, name):
        self.env, self.name, self.kind = env, name, "ours"

    def start(self, pid, out=None, pin=False):
        stem = self.env.scratch(self.name.replace(" ", "-"))
        run = {"stderr": stem + ".stderr", "pid": pid, "stats": stem + ".stats.json",
               "out": stem + ".txt", "dir": stem + ".d"}
        if " -a" in self.name:
            argv = [bench.BIN, "record", "-v", "-a", "-o", run["out"],
                    "--stats-file", run["stats"]] + \
                (["--clock", "tick"] if self.name == HOST_WIDE_TICK else [])
            ready = "Python processes, and those that start"
        else:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                run["port"] = s.getsockname()[1]
            argv = [bench.BIN, "agent", "--output-dir", run["dir"],
                    "--metrics-addr", f"127.0.0.1:{run['port']}"]
            ready = "agent running"
        with open(run["stderr"], "wb") as fe:
            run["proc"] = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL, stderr=fe)
        run["rss"] = bench.PeakRss(run["proc"].pid)
        deadline = time.monotonic() + bench.READY_TIMEOUT_S
        while ready not in bench.read(run["stderr"]):
            if run["proc"].poll() is not None or time.monotonic() > deadline:
                run["proc"].kill()
                run["proc"].wait()
                run["rss"].stop()
                raise bench.BenchError(f"{' '.join(argv)} did not start "
                                       f"({run['proc'].returncode}):\n"
                                       f"{bench.read(run['stderr'])[-1500:]}")
            time.sleep(0.01)
        run["rss"].sample()
        return run

    def finish(self, run):
        res = {}
        run["rss"].sample()
        if "port" in run:
            try:
                res["samples"] = agent_samples(run["port"])
            except (OSError, ValueError) as e:
                res["samples"] = None
                bench.log(f"{self.name}: /metrics: {e}")
        run["proc"].send_signal(signal.SIGTERM if "port" in run else signal.SIGINT)
        try:
            rc, ru = bench.wait_rusage(run["proc"], bench.EXIT_TIMEOUT_S)
        finally:
            res["maxrss_mb"] = run["rss"].stop()
        if rc != 0:
            raise bench.BenchError(f"{self.name} exited {rc}:\n"
                                   f"{bench.read(run['stderr'])[-1500:]}")
        res["cpu_total_s"] = ru.ru_utime + ru.ru_stime
        if "port" in run:
            # Its files are APP-PID-TIME.pb.gz; the profiled target must have one.
            files = [f for f in os.listdir(run["dir"]) if f"-{run['pid']}-" in f
                     and f.endswith(".pb.gz")] if os.path.isdir(run["dir"]) else []
            must_have_written(self.name, os.path.join(run["dir"], files[0]) if files
                              else run["dir"] + "/(none for the profiled target)", res)
            return res
        try:
            with open(run["stats"]) as f:
                st = json.load(f)
        except (OSError, ValueError) as e:
            raise bench.BenchError(f"{self.name}: no stats file: {e}")
        res.update(stats=st, samples=st["samples_delivered"],
                   delivered=st["samples_delivered"], expected=st["samples_expected"])
        must_have_written(self.name, run["out"], res)
        return res


def agent_samples(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("pybpfprof_samples_total "):
                return float(line.split()[1])
    return None


def profilers(env, names, rate):
    for n in names:
        if n == "pybpfprof":
            yield bench.ours(env, rate)
        elif n == "pybpfprof --clock tick":
            if rate <= TICK_ROWS_UP_TO:
                yield bench.Profiler(env, n, "ours", rate, ["--clock", "tick"])
        elif n == "pybpfprof --no-bpf":
            yield bench.ours(env, rate, live=True)
        elif n == "pybpfprof --native":
            # C stacks copied by BPF, unwound and named by the parsing worker, whose
            # CPU counts as the profiler's (run.cpu_ns).
            if rate <= NATIVE_ROWS_UP_TO:
                yield bench.Profiler(env, n, "ours", rate, ["--native"])
        elif n == "peer":
            yield bench.peer(env, rate, PEER_MODE)
        else:
            raise ValueError(n)


def schedule(names, rep, every):
    """Repetition rep's order: the configurations rotated rep places, an unprofiled run
    before every `every` of them."""
    k = rep % len(names) if names else 0
    seq = []
    for i, n in enumerate(names[k:] + names[:k]):
        if i % every == 0:
            seq.append("unprofiled")
        seq.append(n)
    return seq


def slim(r):
    return {k: v for k, v in r.items() if k not in ("stats", "done")}


def max_sample_rate():
    try:
        with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------------------
# Part 9: paired twins

def group_name(ver, depth):
    return f"{ver}, {depth} frames"


def part_twins(env, cfg):
    rate0 = max_sample_rate()
    groups = {}
    for ver, depth, names, rates in cfg["twin_groups"]:
        profs = {}
        for rate in rates:
            for p in profilers(env, names, rate):
                profs[f"{p.name} @ {rate}"] = p
        groups[group_name(ver, depth)] = (ver, depth, profs,
                                          {n: [] for n in ["unprofiled"] + list(profs)})
    for rep in range(cfg["twin_reps"]):
        for gname, (ver, depth, profs, runs) in groups.items():
            for name in schedule(list(profs), rep, cfg["twin_base_every"]):
                runs[name].append(bench.safe(twin_run, env, ver, depth, profs.get(name),
                                             cfg["twin_seconds"]))
        bench.log(f"part 9: repetition {rep + 1}/{cfg['twin_reps']} done")
    rows = {g: twin_rows(runs) for g, (_, _, _, runs) in groups.items()}
    return {"rows": rows, "seconds": cfg["twin_seconds"], "reps": cfg["twin_reps"],
            "peer_mode": PEER_MODE, "max_sample_rate": [rate0, max_sample_rate()],
            "runs": {g: {n: [slim(r) for r in rs] for n, rs in runs.items()}
                     for g, (_, _, _, runs) in groups.items()}}


def twin_run(env, ver, depth, prof, seconds):
    t = Targets(env, [(last_cpu(), ver, depth)] * 2, own_cgroups=True)
    run = None
    try:
        if prof:
            watch = Watch(env, prof, t.pids[0], pin=True)
            run = watch.run
        a, b = t.work(seconds, watch if prof else None)
        if not a["work"] or not b["work"]:
            raise bench.BenchError(f"a twin did no work: {a} {b}")
        res = {"work_a": a["work"], "work_b": b["work"], "ratio": a["work"] / b["work"],
               "cpu_a": a["cpu"], "cpu_b": b["cpu"]}
        if prof:
            res.update(watch.finish(seconds))
        return res
    finally:
        t.close()
        bench.kill_left(None, run)


def twin_rows(runs):
    """Per configuration: A/B against the median unprofiled A/B of the group, whose
    runs are its own noise; for profiled ones, A's lost time per sample."""
    base = bench.med(r["ratio"] for r in bench.ok_runs(runs["unprofiled"]))
    rows = []
    for name, rs in runs.items():
        ok = bench.ok_runs(rs)
        row = {"config": name, "runs": len(rs), "failed": len(rs) - len(ok),
               "errors": [r["error"][:300] for r in rs if "error" in r][:2]}
        slow = [100.0 * (1 - r["ratio"] / base) for r in ok] if base else []
        if slow:
            row.update(ratio=bench.med(r["ratio"] for r in ok), slowdown_pct=bench.med(slow),
                       slowdown_min_pct=min(slow), slowdown_max_pct=max(slow),
                       cpu_a_s=bench.med(r["cpu_a"] for r in ok))
        if name != "unprofiled" and ok and base:
            sts = [r.get("stats") or {} for r in ok]
            row.update(
                samples=bench.med(r.get("samples") for r in ok),
                delivered=bench.med(r.get("delivered") for r in ok),
                expected=bench.med(r.get("expected") for r in ok),
                # What A lost, in CPU time, for each sample taken of it.
                lost_us_per_sample=bench.med(
                    1e6 * (1 - r["ratio"] / base) * r["cpu_a"] / r["samples"]
                    for r in ok if r.get("samples")),
                prof_cpu_pct=bench.med(bench.cpu_share(r) for r in ok),
                prof_us_per_sample=bench.med(bench.per_sample_us(r) for r in ok),
                bpf_ns=bench.med(st.get("bpf_ns_per_target_sample") for st in sts
                                 if st.get("mode") == "bpf"),
                decode_ns=bench.med(st.get("decode_ns_per_sample") for st in sts))
        rows.append(row)
    return rows


# --------------------------------------------------------------------------------------
# Part 10: saturated machine

def part_saturated(env, cfg):
    rate0 = max_sample_rate()
    profs = {}
    for rate in cfg["sat_rates"]:
        for p in profilers(env, ("pybpfprof", "pybpfprof --clock tick", "pybpfprof --native",
                                 "pybpfprof --no-bpf", "peer"), rate):
            profs[f"{p.name} @ {rate}"] = p
    for name in HOST_WIDE + (HOST_WIDE_TICK,):
        profs[name] = HostWide(env, name)
    ncpu = os.cpu_count() or 1
    seq = []
    for rep in range(cfg["sat_reps"]):
        for name in schedule(list(profs), rep, cfg["sat_base_every"]):
            seq.append((name, bench.safe(saturated_run, env, profs.get(name), ncpu,
                                         cfg["sat_seconds"])))
        bench.log(f"part 10: repetition {rep + 1}/{cfg['sat_reps']} done")
    # One more, so that the last runs have an unprofiled neighbour after them too.
    seq.append(("unprofiled", bench.safe(saturated_run, env, None, ncpu, cfg["sat_seconds"])))
    return {"rows": saturated_rows(seq, list(profs), ncpu, cfg["sat_seconds"]),
            "seconds": cfg["sat_seconds"], "reps": cfg["sat_reps"], "cpus": ncpu,
            "peer_mode": PEER_MODE, "max_sample_rate": [rate0, max_sample_rate()],
            "runs": [(n, slim(r)) for n, r in seq]}


def saturated_run(env, prof, ncpu, seconds):
    t = Targets(env, [(cpu, "3.15", DEPTH) for cpu in range(ncpu)])
    run = None
    try:
        if prof:
            watch = Watch(env, prof, t.pids[-1], pin=False)
            run = watch.run
        res = t.work(seconds, watch if prof else None)
        out = {"work": sum(r["work"] for r in res), "cpu": sum(r["cpu"] for r in res)}
        if prof:
            out.update(watch.finish(seconds))
        return out
    finally:
        t.close()
        bench.kill_left(None, run)


def saturated_rows(seq, names, ncpu, seconds):
    """Each profiled run against the mean of the unprofiled runs nearest before and
    after it in the run's order: this VM's speed drifts over minutes, and neighbours
    share the drift."""
    base_at = [i for i, (n, r) in enumerate(seq) if n == "unprofiled" and "error" not in r]
    losses = {n: [] for n in names}
    for i, (name, r) in enumerate(seq):
        if name == "unprofiled" or "error" in r:
            continue
        before = [j for j in base_at if j < i][-1:]
        after = [j for j in base_at if j > i][:1]
        near = [seq[j][1]["work"] for j in before + after]
        if near:
            losses[name].append((r, 1 - r["work"] / (sum(near) / len(near))))
    bases = [seq[j][1]["work"] for j in base_at]
    unprof = {"config": "unprofiled", "runs": sum(1 for n, _ in seq if n == "unprofiled"),
              "failed": sum(1 for n, r in seq if n == "unprofiled" and "error" in r),
              "work": bench.med(bases),
              # Spread of the unprofiled runs: drift and noise both.
              "spread_pct": 100.0 * (max(bases) - min(bases)) / bench.med(bases)
              if len(bases) >= 2 else None}
    rows = [unprof]
    for name in names:
        rs = [r for n, r in seq if n == name]
        lost = [x for _, x in losses[name]]
        row = {"config": name, "runs": len(rs), "failed": sum(1 for r in rs if "error" in r),
               "errors": [r["error"][:300] for r in rs if "error" in r][:2]}
        if lost:
            ok = [r for r, _ in losses[name]]
            row.update(
                work=bench.med(r["work"] for r in ok), lost_pct=100.0 * bench.med(lost),
                lost_min_pct=100.0 * min(lost), lost_max_pct=100.0 * max(lost),
                samples=bench.med(r.get("samples") for r in ok),
                delivered=bench.med(r.get("delivered") for r in ok),
                expected=bench.med(r.get("expected") for r in ok),
                # The machine's lost CPU time (every target CPU over the window) per sample.
                machine_us_per_sample=bench.med(1e6 * x * ncpu * seconds / r["samples"]
                                                for r, x in losses[name] if r.get("samples")),
                prof_cpu_pct=bench.med(bench.cpu_share(r) for r in ok),
                prof_us_per_sample=bench.med(bench.per_sample_us(r) for r in ok),
                maxrss_mb=bench.med(r.get("maxrss_mb") for r in ok))
        rows.append(row)
    return rows


# --------------------------------------------------------------------------------------
# Goals and report

def fnum(v, fmt="{:.1f}"):
    return bench.fnum(v, fmt)


def by_config(rows):
    return {r["config"]: r for r in rows}


def goals(res, cfg):
    """[(goal, verdict, detail)] of issue 19, each met or missed by how much."""
    out = []
    sat = res.get("saturated") or {}
    if sat.get("rows"):
        by = by_config(sat["rows"])
        spread = by.get("unprofiled", {}).get("spread_pct")
        noise = f"; unprofiled runs spread over {fnum(spread)}% of their median" \
            if spread is not None else ""

        def lost(name):
            return by.get(name, {}).get("lost_pct")
        v = lost("pybpfprof @ 1000")
        out.append(("saturated machine: at most 2% of its work lost at 1 kHz",
                    verdict(v, 2.0, spread),
                    f"pybpfprof {pct(v)} lost (--no-bpf {pct(lost('pybpfprof --no-bpf @ 1000'))}"
                    f", CPython's profiler {pct(lost(f'profiling.sampling {PEER_MODE} @ 1000'))})"
                    f"{miss(v, 2.0)}{noise} (part 10)"))
        o, p = lost("pybpfprof @ 10000"), lost(f"profiling.sampling {PEER_MODE} @ 10000")
        lim = None if p is None else p / 2
        out.append(("saturated machine: at most half the peer's work lost at 10 kHz",
                    verdict(o, lim, spread),
                    f"pybpfprof {pct(o)}, CPython's profiler {pct(p)}, so the bound is "
                    f"{pct(lim)}{miss(o, lim)}{noise} (part 10)"))
        hw = [(n, lost(n)) for n in HOST_WIDE]
        worst = max((v for _, v in hw if v is not None), default=None)
        out.append(("saturated machine: `record -a` and the agent at their default rate "
                    "(100 Hz) under 0.5% lost",
                    "not measured" if any(v is None for _, v in hw) else
                    verdict(worst, 0.5, spread),
                    ", ".join(f"{n} {pct(v)}" for n, v in hw) + miss(worst, 0.5) + noise +
                    " (part 10)"))
    tw = res.get("twins") or {}
    if tw.get("rows"):
        g = by_config(tw["rows"].get(group_name("3.15", DEPTH), []))
        base = g.get("unprofiled", {})
        better, worse, rates = [], [], sorted({int(k.split(" @ ")[1]) for k in g if " @ " in k})
        spread = None
        if base.get("slowdown_min_pct") is not None and base.get("runs", 0) - \
                base.get("failed", 0) >= 2:
            spread = base["slowdown_max_pct"] - base["slowdown_min_pct"]
        beyond = 0
        for rate in rates:
            o = g.get(f"pybpfprof @ {rate}", {}).get("slowdown_pct")
            p = g.get(f"profiling.sampling {PEER_MODE} @ {rate}", {}).get("slowdown_pct")
            if o is None or p is None:
                continue
            inside = spread is not None and o - p <= spread
            beyond += o > p and not inside
            (better if o <= p else worse).append(
                f"{rate} Hz: {spct(o)} vs {spct(p)}" +
                ("" if o <= p else f", missed by {o - p:.1f} points" +
                 (" (inside the noise)" if inside else "")))
        out.append(("in-target slowdown (paired twins, 3.15) at or below the peer's at "
                    "every rate",
                    "not measured" if not better and not worse else
                    "missed" if beyond else "missed inside the noise" if worse else "met",
                    "pybpfprof vs CPython's profiler: " + "; ".join(worse + better) +
                    (f" (unprofiled pairs spread over {spread:.1f} points)"
                     if spread is not None else "") + " (part 9)"))
        per, seen = [], set()
        for gname, rows in tw["rows"].items():
            ver, depth = gname.split(", ")[0], int(gname.split(", ")[1].split()[0])
            if depth < 300:
                continue
            for r in rows:
                if r["config"].startswith("pybpfprof @ ") and r.get("lost_us_per_sample") \
                        is not None:
                    per.append((ver, r["config"].split(" @ ")[1], r["lost_us_per_sample"]))
                    seen.add(ver)
        worst = max((u for _, _, u in per), default=None)
        unmeasured = [v for v in ("3.11", "3.12", "3.13", "3.14", "3.15") if v not in seen]
        out.append(("in-target cost at most 1.5 µs per sample with a 300-frame stack on "
                    "every supported version",
                    "not measured" if worst is None else
                    verdict(worst, 1.5) + (" where measured" if unmeasured and worst <= 1.5
                                           else ""),
                    ", ".join(f"{v} @ {r} Hz: {u:.2f} µs" for v, r, u in per) +
                    miss(worst, 1.5, "µs") +
                    (f"; not measured in this run: {', '.join(unmeasured)}"
                     if unmeasured else "") + " (part 9)"))
    return out


def verdict(v, limit, noise=None):
    """noise: the unprofiled runs' spread, in the same points as v; a verdict closer to
    its bound than that is said to be inside the noise."""
    if v is None or limit is None:
        return "not measured"
    out = "met" if v <= limit else "missed"
    return out + (" inside the noise" if noise is not None and abs(v - limit) <= noise
                  else "")


def miss(v, limit, unit="points"):
    if v is None or limit is None or v <= limit:
        return ""
    return f", missed by {v - limit:.2f} {unit}" if unit == "µs" else \
        f", missed by {v - limit:.1f} {unit}"


def pct(v):
    return bench.fnum(v, "{:.1f}%")


def spct(v):
    return bench.fnum(v, "{:+.1f}%")


def rate_note(r):
    m = r.get("max_sample_rate") or [None, None]
    return (f"The kernel's `perf_event_max_sample_rate` was {fnum(m[0], '{:.0f}')} before "
            f"the part and {fnum(m[1], '{:.0f}')} after: the kernel lowers it when "
            f"sampling interrupts take too long, and a rate above it is then refused at "
            f"start or throttled, which delivered / expected shows.")


def report(w, res, cfg):
    """Sections 9 to 11 of report.md, through run.py's line writer w."""
    tw, sat = res.get("twins") or {}, res.get("saturated") or {}
    if tw.get("rows"):
        write_twins(w, tw)
    if sat.get("rows"):
        write_saturated(w, sat)
    if tw.get("rows"):
        write_breakdown(w, tw, sat)
        write_why(w, tw)


def write_twins(w, tw):
    w(f"## 9. In-target cost: paired twins ({tw['reps']} repetitions of "
      f"{tw['seconds']:g} s windows)")
    w("")
    w("Two identical `work_loop.py` targets (an arithmetic loop under a stack of the "
      "frames shown, counting its iterations over a fixed window of wall time) run "
      "pinned together to the last CPU; only twin A is profiled, by a profiler pinned "
      "to CPU 0. The scheduler gives both the same CPU time, and these kernels have no "
      "IRQ time accounting, so the timer interrupt and the BPF program are charged to "
      "the task they interrupt: A's work over B's work, set against the median of the "
      "same ratio unprofiled (interleaved in the same run, the order rotating), is what "
      "the profiled target pays. Slowdown = (1 - ratio / unprofiled ratio) x 100, "
      "median with min..max; the unprofiled row's min..max is the method's noise. "
      "µs lost / sample: A's CPU time over the window times the slowdown, per sample "
      "delivered (pybpfprof's --stats-file; the peer's 'Captured N samples in S s', "
      "scaled to the window since its wall mode samples the wait before it too). "
      "Profiler CPU: its own process over the window, per second and per sample. A point of "
      "slowdown is 10 µs per sample at 1 kHz but 100 µs at 100 Hz: at low rates µs lost "
      "/ sample is mostly the method's noise. "
      f"CPython's profiler runs in its default mode (`--mode {tw.get('peer_mode')}`) and "
      "only on 3.15, the version it ships with. Each twin runs in a cgroup of its own, "
      "as a service or a container does: `record -p`'s clocks, one per CPU scoped to "
      "the target's cgroup, tick only while A runs; with `--clock tick` (100 Hz "
      "rows) it samples on the scheduler's tick instead, which interrupts the twins "
      "anyway, and adds no interrupt of its own. " + rate_note(tw))
    for gname, rows in tw["rows"].items():
        w("")
        w(f"**CPython {gname}**")
        w("")
        w("| configuration | A / B work | slowdown | min..max | delivered / expected | "
          "µs lost / sample | profiler CPU % | profiler µs / sample |")
        w("|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r.get("slowdown_pct") is None:
                w(f"| {r['config']} | failed ({r['failed']} of {r['runs']}): "
                  f"{'; '.join(r.get('errors') or [])[:200]} | | | | | | |")
                continue
            w(f"| {r['config']}{failed(r)} | {r['ratio']:.4f} | {spct(r['slowdown_pct'])} | "
              f"{spct(r['slowdown_min_pct'])}..{spct(r['slowdown_max_pct'])} | "
              f"{fnum(r.get('delivered'), '{:.0f}')} / {fnum(r.get('expected'), '{:.0f}')} | "
              f"{fnum(r.get('lost_us_per_sample'), '{:.2f}')} | "
              f"{fnum(r.get('prof_cpu_pct'))} | {fnum(r.get('prof_us_per_sample'))} |")
    w("")


def write_saturated(w, sat):
    w(f"## 10. Machine cost: a saturated machine ({sat['reps']} repetitions of "
      f"{sat['seconds']:g} s windows, {sat['cpus']} CPUs)")
    w("")
    w(f"One `work_loop.py` on CPython 3.15 ({DEPTH} frames) pinned to each CPU, so no CPU "
      "is idle; the profiler is not pinned and competes for them; `record -p` and "
      "CPython's profiler sample the target on the last CPU, `record -a` and the agent "
      "run at their default rate (100 Hz) and sample every target, on a clock of their "
      "own on every CPU (`record -a --clock tick`: on the scheduler's tick instead, "
      "adding no interrupt). Work lost: 1 - the "
      "targets' total work over the mean of the unprofiled runs just before and after "
      "(interleaved in the same run, the order rotating), median with min..max. Machine "
      "µs / sample: the lost share of every CPU over the window, per sample delivered "
      "(for the agent, from its /metrics, at most a second behind): the profiler's "
      "own timer ticks on every CPU (none on the scheduler's tick), the BPF program and "
      "the profiler's process together. "
      "The unprofiled row's spread takes in the drift over the whole part as well, so "
      "it bounds the noise of a comparison of neighbours from above; a verdict closer "
      "to its goal than that spread is said to be inside the noise. " + rate_note(sat))
    w("")
    w("| configuration | work (M iterations) | work lost | min..max | delivered / expected "
      "| machine µs / sample | profiler CPU % | profiler µs / sample | RSS MB |")
    w("|---|---|---|---|---|---|---|---|---|")
    for r in sat["rows"]:
        if r["config"] == "unprofiled":
            w(f"| unprofiled{failed(r)} | {fnum(m(r.get('work')), '{:.1f}')} | – | spread "
              f"{pct(r.get('spread_pct'))} | | | | | |")
            continue
        if r.get("lost_pct") is None:
            w(f"| {r['config']} | failed ({r['failed']} of {r['runs']}): "
              f"{'; '.join(r.get('errors') or [])[:200]} | | | | | | | |")
            continue
        w(f"| {r['config']}{failed(r)} | {fnum(m(r['work']), '{:.1f}')} | {pct(r['lost_pct'])} | "
          f"{pct(r['lost_min_pct'])}..{pct(r['lost_max_pct'])} | "
          f"{fnum(r.get('delivered'), '{:.0f}')} / {fnum(r.get('expected'), '{:.0f}')} | "
          f"{fnum(r.get('machine_us_per_sample'))} | {fnum(r.get('prof_cpu_pct'))} | "
          f"{fnum(r.get('prof_us_per_sample'))} | {fnum(r.get('maxrss_mb'))} |")
    w("")


def failed(r):
    return f" ({r['failed']} of {r['runs']} failed)" if r.get("failed") else ""


def m(v):
    return None if v is None else v / 1e6


def write_breakdown(w, tw, sat):
    w("## 11. Cost breakdown per sample (pybpfprof, BPF mode)")
    w("")
    w("From the runs above, in µs per sample. In the target: what twin A lost (part 9). "
      "BPF program: its run time per target sample (`bpf_ns_per_target_sample`: reading "
      "the thread state, copying the stack into the ring buffer, submitting; on the "
      "scheduler's tick, also its quick return at every other timer's expiry on every "
      "CPU). Timer "
      "interrupt and the rest: in the target minus BPF program, an estimate (the "
      "difference of a noisy measure and an exact one; cache and TLB effects on the "
      "target land here too). Decoding: the profiler's `decode_ns_per_sample`. Profiler "
      "process: its CPU time over the window per sample, of which outside decoding "
      "(waking, reading the ring buffer, aggregating) is the rest. On the machine: part "
      "10's machine µs per sample at the same rate (3.15 only), which adds the ticks "
      "on CPUs other than the target's.")
    w("")
    w("| CPython | rate | in the target | BPF program | timer interrupt and the rest "
      "(estimate) | decoding | profiler process | of which outside decoding | on the "
      "machine |")
    w("|---|---|---|---|---|---|---|---|---|")
    mach = {r["config"]: r.get("machine_us_per_sample") for r in sat.get("rows", [])}
    for gname, rows in tw["rows"].items():
        for r in rows:
            if not r["config"].startswith(("pybpfprof @ ", "pybpfprof --clock tick @ ")):
                continue
            rate = r["config"].split(" @ ")[1] + \
                (" (--clock tick)" if "--clock tick" in r["config"] else "")
            lost, bpf = r.get("lost_us_per_sample"), us(r.get("bpf_ns"))
            dec, prof = us(r.get("decode_ns")), r.get("prof_us_per_sample")
            on_machine = mach.get(r["config"]) if gname == group_name("3.15", DEPTH) else None
            w(f"| {gname} | {rate} | {fnum(lost, '{:.2f}')} | {fnum(bpf, '{:.2f}')} | "
              f"{fnum(None if lost is None or bpf is None else lost - bpf, '{:.2f}')} | "
              f"{fnum(dec, '{:.2f}')} | {fnum(prof, '{:.2f}')} | "
              f"{fnum(None if prof is None or dec is None else prof - dec, '{:.2f}')} | "
              f"{fnum(on_machine, '{:.2f}')} |")
    w("")


def write_why(w, tw):
    """Where the in-target cost at high rates comes from, in this run's numbers: the
    interrupt that takes a sample, not the program it runs."""
    g = by_config(tw["rows"].get(group_name("3.15", DEPTH), []))
    parts = []
    for gname, rows in tw["rows"].items():
        for r in rows:
            lost, bpf = r.get("lost_us_per_sample"), us(r.get("bpf_ns"))
            if r["config"] == "pybpfprof @ 10000" and lost is not None and bpf is not None:
                parts.append((gname, lost, bpf))
    if not parts:
        return
    share = bench.med(100.0 * b / lo for _, lo, b in parts if lo > 0)
    rest = bench.med(lo - b for _, lo, b in parts)
    line = (f"Why the in-target goals are missed at high rates: at 10 kHz the BPF program "
            f"is {fnum(share)}% of what the target loses per sample (median over the "
            f"{len(parts)} groups above); the rest, about {fnum(rest)} µs a sample, is the "
            "interrupt that takes it. On timers, each sample is a timer interrupt of the "
            "target's own CPU, and in a VM taking and re-arming that timer traps to the "
            "hypervisor whatever the program does, so no cheaper program can reach the "
            "1.5 µs goal there. CPython's profiler interrupts nothing: it reads the "
            "target's memory from another CPU, so it costs the target nothing and pays "
            "with torn stacks (part 3).")
    tick = g.get("pybpfprof --clock tick @ 100", {}).get("slowdown_pct")
    live = g.get("pybpfprof --no-bpf @ 10000", {}).get("slowdown_pct")
    if tick is not None:
        line += (f" Where the rate is at most HZ, `--clock tick` takes the samples on the "
                 f"scheduler's tick, an interrupt the target takes anyway: {spct(tick)} at "
                 "100 Hz (3.15).")
    if live is not None:
        line += (f" Above HZ, `--no-bpf` reads from outside as the peer does: {spct(live)} "
                 "at 10 kHz (3.15), every stack checked by reading it twice.")
    w(line)
    w("")


def us(ns):
    return None if ns is None else ns / 1000.0
