# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`: pybpfprof's costs and accuracy, side by side with CPython 3.15's own
sampling profiler (python3.15 -m profiling.sampling), on python3.15 from the test chroot.

  1. target slowdown: fixed work, unprofiled vs each profiler at 100, 1,000, 10,000 Hz
  2. profiler cost: CPU per second and per sample, BPF and decode cost by stack depth
  3. accuracy: impossible stacks of the aba and depth_walk workloads at 1, 10, 50 kHz
  4. scale: system-wide mode over 10, 50, 200 processes of 10 threads
  5. wall mode: switch-heavy targets, and waits found against the truth
  6. asyncio: tasks found and their CPU shares against the truth, and what --async
     costs per sample, beside the peer's --async-aware
  7. native stacks: what --native copies and costs per sample, in the target and in
     user space, and how many walks reach _start, on 3.13 and 3.15
  8. the chart: cost growth with depth, threads and processes
  9. in-target cost, paired twins: two identical targets pinned to one CPU, only one
     profiled; their work ratio against the unprofiled one, at 100, 1,000, 10,000 Hz,
     on 3.15 beside the peer and on 3.11, 3.13, 3.14 for pybpfprof (machine_cost.py)
 10. machine cost: a busy target pinned to every CPU, one profiled (or all, by record -a
     and the agent); the work every CPU lost (machine_cost.py)
 11. cost breakdown per sample: timer interrupt, BPF program, decoding, the profiler's
     process, from parts 9 and 10
 12. time to first sample: from starting each profiler, attached to a running target or
     running it, idle and beside two busy loops (first_sample.py)
 13. real programs: Django, aiohttp and the standard library's callbacks under load on
     3.11, 3.13, 3.14 and 3.15, complete stacks, costs per sample and CPU shares against
     each program's truth, beside the peer on 3.15 (real_programs.py)
 14. the reading side: one recording each, as many samples as 10 minutes at 100 Hz,
     turned into every format and a terminal table, beside the peer's replay
     (reading.py)

Every comparison is interleaved in one run (A, B, C, A, B, C, ...; the order rotates
from one repetition to the next) so that drift of the machine hits every configuration
alike; tables give medians with min and max. Targets run pinned to one CPU and
profilers to the other (part 10: one target per CPU, profilers unpinned).

Writes OUT/report.md, OUT/chart.svg and OUT/results.json (OUT: build/bench, or --out).
--smoke (or PBP_BENCH_SMOKE=1): one short repetition of every part, for the tests."""
import argparse
import fcntl
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import chart  # noqa: E402
import judge  # noqa: E402
# machine_cost.py (parts 9 to 11) uses this module's harness through `import run`: let
# that find this very module when it runs as a script, not load a second copy.
sys.modules.setdefault("run", sys.modules[__name__])
import machine_cost  # noqa: E402
import first_sample  # noqa: E402
import reading  # noqa: E402
import real_programs  # noqa: E402

BIN = os.path.join(REPO, "build", "pybpfprof")
# The peer runs through peer_attach.py, which says on stderr when it has attached.
PEER_ATTACHED = "pbp-bench: peer attached"
EXIT_TIMEOUT_S = 90.0     # a profiler still running this long after its target: killed
READY_TIMEOUT_S = 30.0

FULL = {
    "reps": 6,
    "rates": [100, 1000, 10000],
    # name: (cpu_bound.py arguments, peer needs --all-threads)
    "targets": {
        "mixed": (["--kind", "mixed", "--work", "180000"], False),
        "8 threads": (["--kind", "mixed", "--work", "180000", "--threads", "8"], True),
        "300 frames": (["--kind", "deep", "--depth", "300", "--work", "55000"], False),
    },
    "cost_reps": 2,
    "cost_rate": 10000,
    "depths": [10, 50, 200, 500],
    "depth_work": 90000,
    "thread_counts": [1, 8, 32],
    "acc_rates": [1000, 10000, 50000],
    "acc_seconds": 3.0,
    "scale_procs": [10, 50, 200],
    "scale_seconds": 10.0,
    "scale_probes": 5,
    "wall_reps": 5,
    "wall_rate": 100,
    # The switch-heavy service (tens of thousands of switches a second) and a
    # storm of bare handoffs (hundreds of thousands), each run by switch_bound.py.
    "wall_loads": {
        "queue service": ["--via", "queue", "--handoffs", "30000", "--work", "2500"],
        "lock storm": ["--via", "locks", "--handoffs", "400000"],
    },
    "wall_seconds": 4.0,
    "async_reps": 3,
    "async_rate": 1000,
    "async_seconds": 5.0,    # whole seconds: the peer's -d takes an integer
    "native_reps": 3,
    "native_rate": 100,
    "native_seconds": 5.0,
    **machine_cost.FULL,
    **first_sample.FULL,
    **real_programs.FULL,
    **reading.FULL,
}
SMOKE = {
    "reps": 1,
    "rates": [1000],
    "targets": {
        "mixed": (["--kind", "mixed", "--work", "15000"], False),
        "8 threads": (["--kind", "mixed", "--work", "15000", "--threads", "8"], True),
        "300 frames": (["--kind", "deep", "--depth", "300", "--work", "5000"], False),
    },
    "cost_reps": 1,
    "cost_rate": 10000,
    "depths": [10, 200],
    "depth_work": 8000,
    "thread_counts": [1, 4],
    "acc_rates": [10000],
    "acc_seconds": 1.0,
    "scale_procs": [3],
    "scale_seconds": 4.0,
    "scale_probes": 2,
    "wall_reps": 1,
    "wall_rate": 100,
    "wall_loads": {
        "queue service": ["--via", "queue", "--handoffs", "2000", "--work", "2500"],
        "lock storm": ["--via", "locks", "--handoffs", "20000"],
    },
    "wall_seconds": 1.0,
    "async_reps": 1,
    "async_rate": 1000,
    "async_seconds": 3.0,    # whole seconds: the peer's -d takes an integer
    "native_reps": 1,
    "native_rate": 100,
    "native_seconds": 2.0,
    **machine_cost.SMOKE,
    **first_sample.SMOKE,
    **real_programs.SMOKE,
    **reading.SMOKE,
}


def kernel_max_rate():
    """pybpfprof takes rates up to the kernel's limit for a perf clock."""
    try:
        with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 100000


OURS_MAX_RATE = kernel_max_rate()


class BenchError(Exception):
    pass


def chroot_argv(root, exe):
    """@exe run in the chroot @root. The peer reads the target's /proc/PID/maps from
    inside it, so Env.setup() mounts /proc there, in our mount namespace: in one of its
    own, the paths the maps name could not be resolved against the target's mounts."""
    return ["chroot", root, exe]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Environment

class Env:
    def __init__(self, out_dir, work_dir):
        self.out = out_dir
        self.work = work_dir                        # as the chroot sees it
        self.tmp = os.path.join(out_dir, "tmp")     # host-side scratch
        p = subprocess.run(["bash", os.path.join(REPO, "tools", "test-interpreters.sh")],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise BenchError(f"tools/test-interpreters.sh failed:\n{p.stderr[-2000:]}")
        self.root = p.stdout.strip().splitlines()[-1]
        self.py = chroot_argv(self.root, "/usr/bin/python3.15")
        ncpu = os.cpu_count() or 1
        self.target_cpu = ["taskset", "-c", str(ncpu - 1)] if ncpu >= 2 else []
        self.prof_cpu = ["taskset", "-c", "0"] if ncpu >= 2 else []
        self.mounted = False
        self.proc_lock = None
        self.seq = 0

    def host(self, chroot_path):
        return self.root + chroot_path

    def setup(self):
        # The peer reads /proc/PID/maps from inside the chroot, which every checkout's
        # runs share: each holds this lock shared while it runs, so that the one that
        # mounted /proc leaves it mounted for another still running (whose peer would
        # find no maps).
        self.proc_lock = open(self.root + "/.pbp-bench-proc.lock", "a")
        fcntl.flock(self.proc_lock, fcntl.LOCK_SH)
        if not os.path.exists(self.root + "/proc/self"):
            subprocess.run(["mount", "-t", "proc", "proc", self.root + "/proc"], check=True)
            self.mounted = True
        os.makedirs(self.tmp, exist_ok=True)
        dest = self.host(self.work)
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        os.makedirs(dest + "/out")
        for name in ("cpu_bound.py", "scale_worker.py", "switch_bound.py", "work_loop.py",
                     "peer_attach.py", "phases.py"):
            shutil.copy(os.path.join(HERE, name), dest)
        for name in ("aba.py", "depth_walk.py", "pbp_common.py", "waits.py", "async_burn.py",
                     "native_calls.py", "django_app.py", "aiohttp_app.py", "callbacks.py"):
            shutil.copy(os.path.join(REPO, "tests", "workloads", name), dest)

    def teardown(self):
        if not self.proc_lock:
            return
        try:
            fcntl.flock(self.proc_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if self.mounted:
                subprocess.run(["umount", self.root + "/proc"])
        except BlockingIOError:
            pass    # another run uses it; the next to mount finds it there
        self.proc_lock.close()

    def lost_target(self, pid, target=None):
        """Which cause, as things are now, a profiler that could not find @pid had:
        the target gone, or the chroot's /proc not showing it."""
        rc = target.poll() if target is not None else None
        if rc is not None:
            return f"target PID {pid} had exited (status {rc}) before the profiler attached"
        stat = read(f"/proc/{pid}/stat")
        if not stat or stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return f"target PID {pid} had exited before the profiler attached"
        if not os.path.exists(self.host("/proc/self")):
            return f"target PID {pid} runs, but no /proc is mounted in {self.root}"
        if not os.path.exists(self.host(f"/proc/{pid}")):
            return (f"target PID {pid} runs, but {self.root}/proc does not show it (a proc "
                    f"of another PID namespace is mounted there)")
        return f"target PID {pid} runs, and {self.root}/proc shows it"

    def scratch(self, stem):
        self.seq += 1
        return os.path.join(self.tmp, f"{self.seq:04d}-{stem}")


def cpu_ns(pid, workers=True):
    """CPU time of every live thread of pid, in ns (schedstat: exact, unlike ticks), and
    of pybpfprof's parsing worker (--native), a child process of its own that does the
    unwinding: its cost is the profiler's. A target the profiler started is not counted."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                children = f.read().split()
        except (OSError, ValueError, IndexError):
            continue
        for child in children if workers else ():
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv[1:2] == [b"__native-worker"]:
                total += cpu_ns(int(child), workers=False) or 0
    return total


class PeakRss:
    """Polls a process's VmHWM. Not wait4's ru_maxrss: a child started by vfork and exec
    inherits its parent's high-water mark, so that figure would be the harness's."""

    def __init__(self, pid, period=0.05):
        import threading
        self.pid, self.period, self.kb = pid, period, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def sample(self):
        """One reading now. The poll alone can miss a short life: a profiler whose target
        ends within one period is read only at its exec, before it has mapped anything;
        so callers also read it at the moments they know it is up (attached, work done)."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.kb = max(self.kb, int(line.split()[1]))
        except (OSError, ValueError):
            pass

    def _run(self):
        while not self.done.is_set():
            self.sample()
            self.done.wait(self.period)

    def stop(self):
        self.done.set()
        self.thread.join()
        return self.kb / 1024


def wait_rusage(proc, timeout):
    """Reap proc with wait4 (its own rusage: a profiler attached by PID has no children
    worth counting); kill it after timeout. Returns (exit code, rusage)."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, ru
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, ru = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            raise BenchError(f"{' '.join(proc.args)} still running {timeout:.0f} s "
                             f"after its target ended; killed")
        time.sleep(0.01)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


# --------------------------------------------------------------------------------------
# Profilers

class Profiler:
    """How to attach one profiler configuration to a PID, and what it delivered."""

    def __init__(self, env, name, kind, rate, extra=()):
        self.env, self.name, self.kind, self.rate, self.extra = env, name, kind, rate, list(extra)

    def argv(self, pid, out, stats, duration=None):
        if self.kind == "ours":
            a = [BIN, "record", "-v", "-p", str(pid), "-r", str(self.rate), "-o", out,
                 "--stats-file", stats] + self.extra
            return a + (["-d", f"{duration:g}"] if duration else [])
        a = self.env.py + [self.env.work + "/peer_attach.py", "attach", "-r", str(self.rate),
                           "--collapsed", "-o", out] + self.extra
        return a + (["-d", f"{duration:g}"] if duration else []) + [str(pid)]

    def start(self, pid, out="/dev/null", duration=None, pin=True, target=None):
        """pin: on the profilers' CPU (else wherever the scheduler puts it). Returns once
        the profiler has attached; target: the target's Popen, to say why if it cannot."""
        stem = self.env.scratch(re.sub(r"\W+", "-", self.name))
        so, se, st = stem + ".stdout", stem + ".stderr", stem + ".stats.json"
        argv = (self.env.prof_cpu if pin else []) + self.argv(pid, out, st, duration)
        with open(so, "wb") as fo, open(se, "wb") as fe:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
        run = {"proc": proc, "stdout": so, "stderr": se, "stats": st, "t0": time.monotonic(),
               "rss": PeakRss(proc.pid)}
        ready = "profiling pid" if self.kind == "ours" else PEER_ATTACHED
        deadline = time.monotonic() + READY_TIMEOUT_S
        while ready not in read(se):
            if proc.poll() is not None:
                raise BenchError(f"{self.env.lost_target(pid, target)}; "
                                 f"{' '.join(argv)} exited {proc.returncode}:\n"
                                 f"{read(se)[-1500:]}")
            if time.monotonic() > deadline:
                proc.kill()
                raise BenchError(f"{' '.join(argv)}: not attached after "
                                 f"{READY_TIMEOUT_S:.0f} s; "
                                 f"{self.env.lost_target(pid, target)}")
            time.sleep(0.01)
        run["rss"].sample()
        return run

    def finish(self, run):
        """Reap the profiler; returns what it reports about itself."""
        try:
            rc, ru = wait_rusage(run["proc"], EXIT_TIMEOUT_S)
        finally:
            rss_mb = run["rss"].stop()
        err = read(run["stderr"])
        if rc != 0:
            raise BenchError(f"{self.name} exited {rc}:\n{err[-1500:]}")
        res = {"maxrss_mb": rss_mb, "cpu_total_s": ru.ru_utime + ru.ru_stime}
        if self.kind == "ours":
            try:
                with open(run["stats"]) as f:
                    st = json.load(f)
            except (OSError, ValueError) as e:
                raise BenchError(f"{self.name}: no stats file: {e}\n{err[-1500:]}")
            res["stats"] = st
            if st.get("mode") == "live":
                res["delivered"], res["expected"] = st["live_ticks"], st["samples_expected"]
                res["samples"] = st["samples_delivered"]
            else:
                res["delivered"], res["expected"] = st["samples_delivered"], \
                    st["samples_expected"]
                res["samples"] = st["samples_delivered"]
        else:
            out = read(run["stdout"])
            m = re.search(r"Captured (\d+) samples in ([\d.]+) seconds", out)
            if not m:
                raise BenchError(f"{self.name}: no 'Captured N samples' line:\n"
                                 f"{out[-800:]}{err[-800:]}")
            n, secs = int(m.group(1)), float(m.group(2))
            res["delivered"], res["expected"] = n, round(secs * self.rate)
            res["samples"] = n
            m = re.search(r"Error rate: ([\d.]+)", out)
            res["peer_error_rate"] = float(m.group(1)) if m else None
        return res


def ours(env, rate, live=False):
    return Profiler(env, "pybpfprof --no-bpf" if live else "pybpfprof", "ours", rate,
                    ["--no-bpf"] if live else [])


def peer(env, rate, mode, all_threads=False):
    return Profiler(env, f"profiling.sampling {mode}", "peer", rate,
                    ["--mode", mode] + (["-a"] if all_threads else []))


# --------------------------------------------------------------------------------------
# One gated run of cpu_bound.py

def gated_run(env, target_args, prof=None, script="cpu_bound.py"):
    """Start the target, attach prof (if any) while it waits, let it do its work.
    Returns the target's own timing plus the profiler's costs over the work window."""
    argv = env.target_cpu + env.py + [env.work + "/" + script] + target_args
    err = env.scratch("target") + ".stderr"
    with open(err, "wb") as fe:
        t = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fe,
                             text=True)
    run = None
    try:
        line = t.stdout.readline()
        try:
            pid = json.loads(line)["ready"]
        except (ValueError, KeyError):
            raise BenchError(f"target {' '.join(argv)} did not start: {line!r} "
                             f"{read(err)[-800:]}")
        if prof:
            run = prof.start(pid, target=t)
            c0 = cpu_ns(run["proc"].pid)
        w0 = time.monotonic()
        t.stdin.write("go\n")
        t.stdin.flush()
        line = t.stdout.readline()
        w1 = time.monotonic()
        c1 = cpu_ns(run["proc"].pid) if prof else None
        if prof:
            run["rss"].sample()
        try:
            res = json.loads(line)
        except ValueError:
            raise BenchError(f"target gave no timing: {line!r} {read(err)[-800:]}")
        t.wait(30)
        if prof:
            res.update(prof.finish(run))
            if c0 is not None and c1 is not None:
                res["prof_cpu_s"] = (c1 - c0) / 1e9
                res["window_s"] = w1 - w0
        return res
    finally:
        kill_left(t, run)


def kill_left(target, run):
    """Whatever of a gated run is still running once it is over or has failed."""
    for proc in (target, run and run["proc"]):
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()


def safe(fn, *a, **kw):
    try:
        return fn(*a, **kw)
    except BenchError as e:
        log(f"run failed: {e}")
        return {"error": str(e)[:2000]}


# --------------------------------------------------------------------------------------
# 5. Wall mode: the cost of following the scheduler, and the waits each profiler finds

WAIT_THREADS = ("sleeper", "reader", "locker")
BURNERS = ("gil_a", "gil_b")


def ours_wall(env, rate):
    return Profiler(env, "pybpfprof --mode wall", "ours", rate, ["--mode", "wall", "--threads"])


def part_wall(env, cfg):
    """Each of cfg's switch-heavy loads (switch_bound.py) timed unprofiled, under
    pybpfprof --mode wall and under the peer's --mode wall, interleaved; then waits.py
    under each, its threads' own timing against what each profile charges to their
    waiting lines."""
    rate = cfg["wall_rate"]
    profs = {"unprofiled": None, "pybpfprof --mode wall": ours_wall(env, rate),
             "profiling.sampling wall": peer(env, rate, "wall", all_threads=True)}
    names = list(profs)
    loads = {}
    for load, args in cfg["wall_loads"].items():
        runs = {k: [] for k in profs}
        for rep in range(cfg["wall_reps"]):
            for name in names[rep % len(names):] + names[:rep % len(names)]:
                runs[name].append(safe(gated_run, env, args, profs[name],
                                       script="switch_bound.py"))
            log(f"part 5: {load}: repetition {rep + 1}/{cfg['wall_reps']} done")
        loads[load] = wall_rows(runs)
    acc = {}
    for name in ("pybpfprof --mode wall", "profiling.sampling wall"):
        acc[name] = safe(waits_run, env, profs[name], cfg)
        log(f"part 5: waits under {name} done")
    return {"loads": loads, "accuracy": acc, "rate": rate,
            "load_args": {k: " ".join(v) for k, v in cfg["wall_loads"].items()}}


def wall_rows(runs):
    """Per profiler: median wall time, slowdown against unprofiled, and what the
    profile and BPF counted. The slowdown is the median of each repetition's ratio to
    the unprofiled run beside it: this VM's speed drifts by tens of percent over
    minutes, and a ratio of neighbours cancels the drift that a ratio of medians
    keeps."""
    base = runs["unprofiled"]
    slow = {}
    for name, rs in runs.items():
        ok = ok_runs(rs)
        wall = med(r["wall"] for r in ok)
        ratios = [r["wall"] / b["wall"] - 1 for r, b in zip(rs, base)
                  if "error" not in r and "error" not in b and b.get("wall")]
        row = {"wall_s": wall, "slowdown_pct": None if not ratios else 100 * med(ratios),
               "errors": len(rs) - len(ok),
               "switches_per_s": med(r["switches"] / r["wall"] for r in ok
                                     if r.get("switches") and r.get("wall"))}
        sts = [r["stats"] for r in ok if "stats" in r]
        if sts:
            row["switches"] = med(st["switch_events"] for st in sts)
            row["sampled"] = med(st["off_cpu_sampled"] for st in sts)
            row["bpf_ns_per_switch"] = med(st["switch_bpf_ns_per_target_switch"] for st in sts)
            row["drops"] = max(st["ringbuf_drops"] for st in sts)
            row["estimate_err_pct"] = med(
                100 * abs(st["off_cpu_ns"] - st["off_cpu_intervals_ns"]) /
                max(1, st["off_cpu_intervals_ns"]) for st in sts)
        slow[name] = row
    return slow


def waits_run(env, prof, cfg):
    """waits.py profiled from before its threads start to its exit; per thread, the
    share of its time each profile puts at its waiting line (or, for the burners, on
    the CPU) against the thread's own measure."""
    tag = f"w{env.seq}"
    truth, go = f"{env.work}/out/{tag}.json", f"{env.work}/out/{tag}.go"
    # The peer runs in the chroot and writes where the chroot sees it.
    out_arg = env.scratch("waits") + ".txt" if prof.kind == "ours" else \
        f"{env.work}/out/{tag}.txt"
    out = out_arg if prof.kind == "ours" else env.host(out_arg)
    argv = env.target_cpu + env.py + [env.work + "/waits.py", "--truth", truth, "--go", go,
                                      "--seconds", f"{cfg['wall_seconds']:g}"]
    t = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    run = None
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not os.path.exists(env.host(truth)):
            if t.poll() is not None or time.monotonic() > deadline:
                raise BenchError("waits.py did not start")
            time.sleep(0.02)
        run = prof.start(t.pid, out_arg)
        open(env.host(go), "w").close()
        t.wait(cfg["wall_seconds"] + 60)
        prof.finish(run)
        with open(env.host(truth) + ".done") as f:
            threads = json.load(f)["threads"]
    finally:
        kill_left(t, run)
    stacks = parse_waits_profile(read(out))
    rows = {}
    for name, th in threads.items():
        life = th["end"] - th["start"]
        mine = [(fr, n) for fr, n in stacks if any(f[0] == name for f in fr)]
        total = sum(n for _, n in mine) or 1
        if name in WAIT_THREADS:
            at = sum(n for fr, n in mine if fr[-1][:2] == (name, th["line"]))
            rows[name] = {"truth_pct": 100 * th["waited"] / life, "found_pct": 100 * at / total}
        elif name in BURNERS:
            on = sum(n for fr, n in mine if fr[-1][0] == name and fr[-1][1] is not None
                     and not fr[-1][2])
            rows[name] = {"truth_pct": 100 * th["cpu"] / life,
                          "found_pct": 100 * on / total if prof.kind == "ours" else None}
    return {"threads": rows}


def parse_waits_profile(text):
    """[(frames, count)]: frames are (function, line, waited) root first, without thread
    frames; a pybpfprof wait leaf marks the frame above it waited. Reads pybpfprof's
    collapsed ("QUALNAME (FILE:LINE)") and the peer's ("FILE:FUNC:LINE")."""
    out = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames, waited = [], False
        for part in stack.split(";"):
            m = re.match(r"^(.+) \((.+):(\d+)\)$", part) or None
            if m:
                frames.append((m.group(1).rsplit(".", 1)[-1], int(m.group(3)), False))
                continue
            m = re.match(r"^([^:]+):([^:]+):(\d+)$", part)
            if m:
                frames.append((m.group(2), int(m.group(3)), False))
            elif part.startswith(("[off-CPU", "[runnable", "[stolen")):
                waited = True
        if frames:
            if waited:
                frames[-1] = (frames[-1][0], frames[-1][1], True)
            out.append((frames, int(count)))
    return out


# --------------------------------------------------------------------------------------
# Part 6: asyncio

ASYNC_BURNERS = ("worker-a", "worker-b", "lonely")


def part_async(env, cfg):
    """async_burn.py (tests/workloads) under pybpfprof, pybpfprof --async and the
    peer's --async-aware, interleaved: which burner tasks each names, their shares of
    the burners' samples against their own CPU time, how many of those samples carry
    the right chain of awaiting tasks, and the cost per sample."""
    rate = cfg["async_rate"]
    profs = [Profiler(env, "pybpfprof", "ours", rate),
             Profiler(env, "pybpfprof --async", "ours", rate, ["--async"]),
             Profiler(env, "profiling.sampling --async-aware", "peer", rate,
                      ["--async-aware"])]
    runs = {p.name: [] for p in profs}
    for rep in range(cfg["async_reps"]):
        order = profs[rep % len(profs):] + profs[:rep % len(profs)]
        for p in order:
            runs[p.name].append(safe(async_run, env, p, cfg))
        log(f"part 6: repetition {rep + 1}/{cfg['async_reps']} done")
    rows = {}
    for name, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        rows[name] = {
            "runs": len(ok), "errors": [r["error"] for r in rs if "error" in r][:2],
            "tasks_found": med(r["tasks_found"] for r in ok),
            "share_err_pts": med(r["share_err_pts"] for r in ok),
            "chains_right_pct": med(r["chains_right_pct"] for r in ok),
            "samples": med(r["samples"] for r in ok),
            "bpf_ns": med(r.get("bpf_ns") for r in ok),
            "decode_ns": med(r.get("decode_ns") for r in ok),
            "prof_cpu_s": med(r.get("prof_cpu_s") for r in ok),
        }
    return {"rate": rate, "rows": rows, "seconds": cfg["async_seconds"]}


def async_run(env, prof, cfg):
    tag = f"a{env.seq}"
    truth, go = f"{env.work}/out/{tag}.json", f"{env.work}/out/{tag}.go"
    out_arg = env.scratch("async") + ".txt" if prof.kind == "ours" else \
        f"{env.work}/out/{tag}.txt"
    out = out_arg if prof.kind == "ours" else env.host(out_arg)
    secs = cfg["async_seconds"]
    extra = ["-f", "collapsed"] if prof.kind == "ours" else []
    prof = Profiler(env, prof.name, prof.kind, prof.rate, prof.extra + extra)
    argv = env.target_cpu + env.py + [env.work + "/async_burn.py", "--truth", truth,
                                      "--go", go, "--seconds", f"{secs:g}"]
    t = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    run = None
    try:
        time.sleep(1.0)     # the interpreter up and asyncio imported
        if t.poll() is not None:
            raise BenchError("async_burn.py did not start")
        run = prof.start(t.pid, out_arg, duration=secs - 1)
        open(env.host(go), "w").close()
        res = prof.finish(run)
        # It writes its truth when its burners are done, then idles until killed.
        deadline = time.monotonic() + secs + 60
        while not os.path.exists(env.host(truth)):
            if t.poll() is not None or time.monotonic() > deadline:
                raise BenchError("async_burn.py wrote no truth")
            time.sleep(0.05)
        with open(env.host(truth)) as f:
            tr = json.load(f)
    finally:
        kill_left(t, run)
    counts, right, total = {}, 0, 0
    for chain, leaf, n in parse_task_stacks(read(out)):
        if leaf != "burn" or not chain or chain[-1] not in ASYNC_BURNERS:
            continue
        counts[chain[-1]] = counts.get(chain[-1], 0) + n
        total += n
        right += n if chain == tr["tasks"][chain[-1]]["chain"] else 0
    cpu = sum(tr["cpu"][k] for k in ASYNC_BURNERS)
    errs = [abs(100 * counts.get(k, 0) / total - 100 * tr["cpu"][k] / cpu)
            for k in ASYNC_BURNERS] if total else [None]
    row = {"tasks_found": len(counts), "samples": res["samples"],
           "share_err_pts": max(errs) if counts else None,
           "chains_right_pct": 100 * right / total if total and counts else None,
           "prof_cpu_s": res["cpu_total_s"]}
    st = res.get("stats") or {}
    row["bpf_ns"] = st.get("bpf_ns_per_sample")
    row["decode_ns"] = st.get("decode_ns_per_sample")
    return row


def parse_task_stacks(text):
    """[(task chain root first, leaf function, count)] from pybpfprof's collapsed
    ("task NAME" frames) or the peer's ("<task>:NAME:0")."""
    out = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        chain, leaf = [], None
        for part in stack.split(";"):
            if part.startswith("task "):
                chain.append(part[5:])
            elif part.startswith("<task>:"):
                chain.append(part[7:].rsplit(":", 1)[0])
            else:
                m = re.match(r"^(.+) \(.+:\d+\)$", part) or \
                    re.match(r"^[^:]+:([^:]+):\d+$", part)
                leaf = m.group(1).rsplit(".", 1)[-1] if m else part
        out.append((chain, leaf, int(count)))
    return out


# --------------------------------------------------------------------------------------
# Part 7: native stacks

NATIVE_VERSIONS = ("3.13", "3.15")


def part_native(env, cfg):
    """native_calls.py --mode qsort (tests/workloads: Python sorts through ctypes and
    libc's qsort with a Python comparator, so a sample holds C frames between two runs
    of Python frames) on 3.13 and 3.15, profiled by pybpfprof without --native, with it
    copying the stack (dwarf) and with it walking frame pointers (fp: what auto picks on
    3.15), interleaved."""
    rate, rows = cfg["native_rate"], {}
    for ver in NATIVE_VERSIONS:
        py = chroot_argv(env.root, f"/usr/bin/python{ver}")
        profs = [Profiler(env, "pybpfprof", "ours", rate),
                 Profiler(env, "pybpfprof --native (dwarf)", "ours", rate,
                          ["--native", "--native-unwind", "dwarf"]),
                 Profiler(env, "pybpfprof --native (fp)", "ours", rate,
                          ["--native", "--native-unwind", "fp"])]
        runs = {p.name: [] for p in profs}
        for rep in range(cfg["native_reps"]):
            k = rep % len(profs)
            for p in profs[k:] + profs[:k]:
                runs[p.name].append(safe(native_run, env, p, py, cfg))
        for name, rs in runs.items():
            ok = ok_runs(rs)
            rows[f"{ver} {name}"] = {
                "version": ver, "profiler": name, "runs": len(ok),
                "errors": [r["error"] for r in rs if "error" in r][:2],
                **{k: med(r.get(k) for r in ok) for k in NATIVE_KEYS},
            }
        log(f"part 7: {ver} done")
    return {"rate": rate, "seconds": cfg["native_seconds"], "rows": rows}


NATIVE_KEYS = ("samples", "bytes", "fp_records", "bpf_ns", "in_target_pct", "decode_ns",
               "walk_us", "frames", "outermost_pct", "no_fp_pct", "matched_pct", "cut_pct")


def native_run(env, prof, py, cfg):
    secs = cfg["native_seconds"]
    argv = env.target_cpu + py + [env.work + "/native_calls.py", "--mode", "qsort",
                                  "--seconds", f"{secs + 30:g}"]
    t = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    run = None
    try:
        time.sleep(1.0)     # the interpreter up, ctypes loaded
        if t.poll() is not None:
            raise BenchError("native_calls.py did not start")
        c0 = cpu_ns(t.pid)
        run = prof.start(t.pid, env.scratch("native") + ".txt", duration=secs)
        res = prof.finish(run)
        c1 = cpu_ns(t.pid)
    finally:
        kill_left(t, run)
    st = res["stats"]
    walks = st.get("native_walks") or 0
    copied = st.get("bpf_native_copied") or 0
    cpu = (c1 - c0) if c0 is not None and c1 is not None else 0
    records = st.get("bpf_native_fp_records") or 0
    return {
        "samples": st["samples_delivered"],
        # Stack bytes and, with fp, 16 per frame record.
        "bytes": (st["bpf_native_bytes"] + 16 * records) / copied if copied else None,
        "fp_records": records / copied if copied and st.get("bpf_native_fp_walks") else None,
        "bpf_ns": st.get("bpf_ns_per_target_sample"),
        # BPF runs on the target's CPU, in its time slice: its share of the target's CPU.
        "in_target_pct": 100.0 * st["bpf_run_time_ns"] / cpu if cpu else None,
        "decode_ns": st.get("decode_ns_per_sample"),
        "walk_us": st["native_ns_per_walk"] / 1000 if walks else None,
        "frames": st.get("native_frames_per_walk") if walks else None,
        "outermost_pct": 100.0 * st["native_end_outermost"] / walks if walks else None,
        # fp: walks that ended at the first frame without a frame pointer (libc below
        # main, or qsort's libffi/libc): complete for the merge when it lies below the
        # outermost eval loop.
        "no_fp_pct": 100.0 * st.get("native_end_no_fp", 0) / walks if walks else None,
        "matched_pct": 100.0 * st["native_matched"] / walks if walks else None,
        "cut_pct": 100.0 * st["native_cut"] / walks if walks else None,
    }


# --------------------------------------------------------------------------------------
# Statistics helpers

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ok_runs(runs):
    return [r for r in runs if "error" not in r]


def per_sample_us(r):
    if r.get("prof_cpu_s") is None or not r.get("samples"):
        return None
    return 1e6 * r["prof_cpu_s"] / r["samples"]


def cpu_share(r):
    if r.get("prof_cpu_s") is None or not r.get("window_s"):
        return None
    return 100.0 * r["prof_cpu_s"] / r["window_s"]


def in_target_pct(r):
    """CPU the BPF program took from the target, as % of the target's own CPU time."""
    st = r.get("stats") or {}
    if st.get("mode") != "bpf" or not r.get("cpu"):
        return None
    return 100.0 * st["bpf_run_time_ns"] / 1e9 / r["cpu"]


# --------------------------------------------------------------------------------------
# Part 1: target slowdown

def part_slowdown(env, cfg):
    results = {}
    configs = {}
    for tname, (targs, all_threads) in cfg["targets"].items():
        names = ["unprofiled"]
        for rate in cfg["rates"]:
            for p in (ours(env, rate), ours(env, rate, live=True),
                      peer(env, rate, "cpu", all_threads), peer(env, rate, "wall", all_threads)):
                key = f"{p.name} @ {rate}"
                configs[(tname, key)] = p
                names.append(key)
        results[tname] = {n: [] for n in names}
    for rep in range(cfg["reps"]):
        for tname, (targs, _) in cfg["targets"].items():
            names = list(results[tname])
            k = rep % len(names)
            for name in names[k:] + names[:k]:
                prof = configs.get((tname, name))
                results[tname][name].append(safe(gated_run, env, targs, prof))
        log(f"part 1: repetition {rep + 1}/{cfg['reps']} done")
    summary = {}
    for tname, byname in results.items():
        base = med([r["wall"] for r in ok_runs(byname["unprofiled"])])
        base_cpu = med([r["cpu"] for r in ok_runs(byname["unprofiled"])])
        rows = []
        for name, runs in byname.items():
            good = ok_runs(runs)
            walls = [r["wall"] for r in good]
            row = {"config": name, "runs": len(runs), "failed": len(runs) - len(good)}
            if walls:
                m = med(walls)
                row.update(median_s=m, min_s=min(walls), max_s=max(walls),
                           slowdown_pct=100.0 * (m - base) / base if base else None,
                           slowdown_min_pct=100.0 * (min(walls) - base) / base if base else None,
                           slowdown_max_pct=100.0 * (max(walls) - base) / base if base else None,
                           cpu_s=med([r["cpu"] for r in good]))
                row["cpu_slowdown_pct"] = 100.0 * (row["cpu_s"] - base_cpu) / base_cpu \
                    if base_cpu else None
            if name != "unprofiled" and good:
                row.update(
                    delivered=med([r.get("delivered") for r in good]),
                    expected=med([r.get("expected") for r in good]),
                    prof_cpu_pct=med([cpu_share(r) for r in good]),
                    prof_us_per_sample=med([per_sample_us(r) for r in good]),
                    maxrss_mb=med([r["maxrss_mb"] for r in good]),
                    in_target_pct=med([in_target_pct(r) for r in good]))
            rows.append(row)
        summary[tname] = rows
    return {"runs": results, "rows": summary}


# --------------------------------------------------------------------------------------
# Part 2 (and 5): cost by stack depth and by thread count

def cost_row(runs):
    good = ok_runs(runs)
    if not good:
        return {"failed": len(runs), "error": runs[0].get("error") if runs else "no runs"}
    st = lambda k: med([r["stats"].get(k) for r in good])  # noqa: E731
    row = {
        "runs": len(runs), "failed": len(runs) - len(good),
        "delivered": med([r["delivered"] for r in good]),
        "expected": med([r["expected"] for r in good]),
        "samples": med([r["samples"] for r in good]),
        "prof_cpu_pct": med([cpu_share(r) for r in good]),
        "prof_us_per_sample": med([per_sample_us(r) for r in good]),
        "maxrss_mb": med([r["maxrss_mb"] for r in good]),
        "decode_ns_per_sample": st("decode_ns_per_sample"),
        "live_reads_per_sample": st("live_reads_per_sample"),
        "bpf_ns_per_sample": st("bpf_ns_per_sample"),
        "bpf_ns_per_target_sample": st("bpf_ns_per_target_sample"),
        "bpf_bytes_copied_per_sample": st("bpf_bytes_copied_per_sample"),
        "incomplete": st("samples_incomplete"),
        "drops": st("ringbuf_drops"),
        "in_target_pct": med([in_target_pct(r) for r in good]),
    }
    decoded = [r["stats"]["samples_decoded"] / r["prof_cpu_s"] for r in good
               if r.get("prof_cpu_s")]
    row["decoded_per_cpu_s"] = med(decoded)
    return row


def part_cost(env, cfg):
    rate = cfg["cost_rate"]
    cases = []
    for d in cfg["depths"]:
        for live in (False, True):
            cases.append((("depth", d, "live" if live else "bpf"),
                          ["--kind", "deep", "--depth", str(d), "--work", str(cfg["depth_work"])],
                          live))
    for n in cfg["thread_counts"]:
        cases.append((("threads", n, "bpf"),
                      ["--kind", "deep", "--depth", "50", "--threads", str(n),
                       "--work", str(cfg["depth_work"])], False))
    runs = {key: [] for key, _, _ in cases}
    for rep in range(cfg["cost_reps"]):
        k = rep % len(cases)
        for key, targs, live in cases[k:] + cases[:k]:
            runs[key].append(safe(gated_run, env, targs, ours(env, rate, live)))
        log(f"part 2: repetition {rep + 1}/{cfg['cost_reps']} done")
    rows = []
    for (axis, value, mode), rs in runs.items():
        row = cost_row(rs)
        row.update(axis=axis, value=value, mode=mode, rate=rate)
        rows.append(row)
    return {"rows": rows}


# --------------------------------------------------------------------------------------
# Part 3: accuracy under load

def part_accuracy(env, cfg):
    rates = cfg["acc_rates"]
    secs = cfg["acc_seconds"]
    profs = []
    for rate in rates:
        profs += [ours(env, rate), ours(env, rate, live=True), peer(env, rate, "wall")]
    out = {}
    for wl, judge_fn in (("aba", judge.judge_aba), ("depth_walk", judge.judge_walk)):
        # Each profiler run costs its duration plus attach and exit, which at 50 kHz
        # (decoding a million samples) takes tens of seconds; the target is killed
        # once the last has run, so its own limit only has to be out of reach.
        life = len(profs) * (secs + 60) + 60
        truth_in = f"{env.work}/out/{wl}-truth.json"
        argv = env.target_cpu + env.py + [f"{env.work}/{wl}.py", "--truth", truth_in,
                                          "--seconds", str(life)]
        err = env.scratch(wl) + ".log"
        with open(err, "wb") as fe:
            t = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fe, stderr=fe)
        rows = []
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(env.host(truth_in)):
                if t.poll() is not None or time.monotonic() > deadline:
                    raise BenchError(f"{wl} wrote no truth: {read(err)[-800:]}")
                time.sleep(0.02)
            with open(env.host(truth_in)) as f:
                truth = json.load(f)
            for p in profs:
                row = {"profiler": p.name, "rate": p.rate}
                if p.kind == "ours" and p.rate > OURS_MAX_RATE:
                    row["not_run"] = f"pybpfprof accepts at most {OURS_MAX_RATE} Hz"
                    rows.append(row)
                    continue
                row.update(safe(accuracy_run, env, p, t.pid, secs, judge_fn, truth))
                rows.append(row)
                if t.poll() is not None:
                    raise BenchError(f"{wl} exited early: {read(err)[-800:]}")
        except BenchError as e:
            log(f"part 3: {wl}: {e}")
            rows.append({"error": str(e)[:2000]})
        finally:
            if t.poll() is None:
                t.kill()
            t.wait()
        out[wl] = rows
        log(f"part 3: {wl} done")
    return out


def accuracy_run(env, prof, pid, secs, judge_fn, truth):
    stem = re.sub(r"\W+", "-", f"{prof.name}-{prof.rate}")
    if prof.kind == "ours":
        out_host = env.scratch(stem) + ".txt"
        out_arg = out_host
    else:
        out_arg = f"{env.work}/out/{stem}-{env.seq}.txt"
        out_host = env.host(out_arg)
    run = prof.start(pid, out_arg, duration=secs)
    res = prof.finish(run)
    text = read(out_host)
    stacks = judge.parse_ours(text) if prof.kind == "ours" else judge.parse_peer(text)
    verdicts = judge_fn(stacks, truth)
    total, bad, flagged = judge.summary(verdicts)
    return {"delivered": res["delivered"], "expected": res["expected"], "samples": total,
            "impossible": bad, "flagged": flagged, "verdicts": dict(verdicts),
            "impossible_pct": 100.0 * bad / total if total else None,
            "flagged_pct": 100.0 * flagged / total if total else None,
            "peer_error_rate": res.get("peer_error_rate")}


# --------------------------------------------------------------------------------------
# Part 4: system-wide scale

def system_wide_available():
    """-a is there if record refuses '-a -p 1' for naming two targets, not as unknown."""
    p = subprocess.run([BIN, "record", "-a", "-p", "1"], capture_output=True, text=True)
    return "-a profiles every process" in p.stderr


def part_scale(env, cfg):
    if not system_wide_available():
        return {"not_run": "system-wide mode missing (`pybpfprof record -a` is not in "
                           "this build)"}
    rows = []
    for n in cfg["scale_procs"]:
        rows.append(dict(safe(scale_run, env, n, cfg), processes=n))
        log(f"part 4: {n} processes done")
    return {"rows": rows}


class LineClock:
    """Reads a pipe in a thread and keeps each line with the time it arrived."""

    def __init__(self, pipe):
        import threading
        self.lines = []
        self.thread = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self.thread.start()

    def _run(self, pipe):
        for line in iter(pipe.readline, ""):
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def find(self, pattern):
        for t, line in list(self.lines):
            m = re.search(pattern, line)
            if m:
                return t, m
        return None, None

    def text(self):
        return "\n".join(line for _, line in self.lines)


def scale_run(env, n, cfg):
    rate, secs = 100, cfg["scale_seconds"]
    busy = 2
    workers, probes = [], []
    stem = env.scratch(f"scale-{n}")
    out, stats = stem + ".txt", stem + ".stats.json"
    prof = None
    try:
        # About 1.2 CPUs of load in all, however many processes share it.
        duty = min(1.0, 1.2 / (n * busy))
        for _ in range(n):
            workers.append(subprocess.Popen(
                env.py + [f"{env.work}/scale_worker.py", "--threads", "10", "--busy",
                          str(busy), "--seconds", "0", "--duty", f"{duty:.4f}"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True))
        pids = {json.loads(w.stdout.readline())["ready"] for w in workers}
        argv = [BIN, "record", "-v", "-a", "-r", str(rate), "-d", f"{secs:g}",
                "--stats-file", stats, "-o", out]
        prof = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        clock = LineClock(prof.stderr)
        rss = PeakRss(prof.pid)
        deadline = time.monotonic() + READY_TIMEOUT_S + n * 0.1
        while clock.find(r"profiling \d+ Python process")[0] is None:
            if prof.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"{' '.join(argv)} did not start ({prof.poll()}): "
                                 f"{clock.text()[-1000:]}")
            time.sleep(0.01)
        c0, w0 = cpu_ns(prof.pid), time.monotonic()
        # Late starters: how long from spawn until the profiler follows and samples them.
        probe_s = min(3.0, secs / 3)
        spawned = {}
        for _ in range(cfg["scale_probes"]):
            t = time.monotonic()
            p = subprocess.Popen(env.py + [f"{env.work}/scale_worker.py", "--threads", "2",
                                           "--busy", "1", "--seconds", f"{probe_s:g}"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
            probes.append(p)
            spawned[p.pid] = t
            time.sleep(0.2)
        probe_res = []
        for p in probes:
            lines = p.communicate(timeout=60)[0].splitlines()
            probe_res.append(json.loads(lines[-1]) if lines else {})
        c1, w1 = cpu_ns(prof.pid), time.monotonic()
        try:
            rc, ru = wait_rusage(prof, secs + EXIT_TIMEOUT_S)
        finally:
            rss_mb = rss.stop()
        clock.thread.join(5)
        if rc != 0:
            raise BenchError(f"record -a exited {rc}: {clock.text()[-1000:]}")
        with open(stats) as f:
            st = json.load(f)
        per_pid = {}
        for pid, count in judge.parse_ours_processes(read(out)):
            per_pid[pid] = per_pid.get(pid, 0) + count
        follow = [clock.find(rf"following pid {pid}\b")[0] for pid in spawned]
        follow_ms = [1000 * (t - spawned[pid]) for pid, t in zip(spawned, follow) if t]
        delivered = st.get("samples_delivered") or 0
        dur = st.get("duration_s") or secs
        window_samples = delivered * (w1 - w0) / dur if dur else 0
        return {
            "drops": st.get("ringbuf_drops"), "event_drops": st.get("process_event_drops"),
            "processes_seen": st.get("processes"),
            "workers_sampled": sum(1 for pid in pids if per_pid.get(pid)),
            "delivered": delivered, "expected": st.get("samples_expected"),
            "incomplete": st.get("samples_incomplete"),
            "bpf_ns_per_sample": st.get("bpf_ns_per_sample"),
            "decode_ns_per_sample": st.get("decode_ns_per_sample"),
            "prof_cpu_pct": 100.0 * (c1 - c0) / 1e9 / (w1 - w0) if c0 and c1 else None,
            "prof_us_per_sample": 1e6 * (c1 - c0) / 1e9 / window_samples
            if c0 and c1 and window_samples else None,
            "maxrss_mb": rss_mb,
            "follow_ms": med(follow_ms),
            "probes_sampled": sum(1 for r in probe_res if per_pid.get(r.get("pid"), 0)),
            "load1": os.getloadavg()[0],
        }
    finally:
        for p in workers:
            if p.poll() is None:
                try:
                    p.stdin.close()
                except OSError:
                    pass
        for p in workers + probes + ([prof] if prof else []):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


# --------------------------------------------------------------------------------------
# Report

def fnum(v, fmt="{:.0f}", none="–"):
    if v is None:
        return none
    return fmt.format(v)


def pct(v):
    return fnum(v, "{:+.1f}%")


def goals(res, cfg):
    """[(goal, verdict, detail)]"""
    out = []
    p1 = res["slowdown"]["rows"]
    mixed = {r["config"]: r for r in p1.get("mixed", [])}
    base = mixed.get("unprofiled", {})
    noise = None
    if base.get("median_s"):
        noise = 100.0 * (base["max_s"] - base["min_s"]) / base["median_s"]
    for rate, limit in ((100, 1.0), (1000, 3.0)):
        goal = f"under {limit:g}% slowdown at {rate} Hz"
        r = mixed.get(f"pybpfprof @ {rate}")
        if not r or r.get("slowdown_pct") is None:
            out.append((goal, "not measured", "rate not in this run"))
            continue
        sw, sc, it = r["slowdown_pct"], r.get("cpu_slowdown_pct"), r.get("in_target_pct")
        why = (f"mixed workload: median wall-clock slowdown {sw:+.1f}%, target CPU time "
               f"{pct(sc)}; in-target CPU of the BPF program {fnum(it, '{:.2f}')}% of the "
               f"target's")
        if noise is not None and noise > limit:
            verdict = "wall clock inconclusive; in-target " + (
                "met" if it is not None and it < limit else "missed")
            why += (f". Identical unprofiled runs spread over {noise:.0f}% of their median "
                    f"in this run (the machine was shared: see the load average above), "
                    f"so no wall-clock difference under that can be told from noise. The "
                    f"in-target figure is exact but a lower bound: it leaves out cache "
                    f"and TLB effects on the target")
        else:
            verdict = "met" if sw < limit else "missed"
        out.append((goal, verdict, why))
    lower, worse = [], []
    for tname, rows in p1.items():
        by = {r["config"]: r for r in rows}
        for rate in cfg["rates"]:
            o = by.get(f"pybpfprof @ {rate}", {}).get("slowdown_pct")
            peers = [by.get(f"profiling.sampling {m} @ {rate}", {}).get("slowdown_pct")
                     for m in ("cpu", "wall")]
            peers = [p for p in peers if p is not None]
            if o is None or not peers:
                continue
            (lower if o < min(peers) else worse).append(f"{tname} @ {rate} Hz "
                                                        f"({o:+.1f}% vs {min(peers):+.1f}%)")
    ratios = []
    for tname, rows in p1.items():
        by = {r["config"]: r for r in rows}
        for rate in cfg["rates"]:
            o = by.get(f"pybpfprof @ {rate}", {}).get("prof_cpu_pct")
            pc = [by.get(f"profiling.sampling {m} @ {rate}", {}).get("prof_cpu_pct")
                  for m in ("cpu", "wall")]
            pc = [x for x in pc if x is not None]
            if o and pc:
                ratios.append(min(pc) / o)
    verdict = "met" if lower and not worse else "missed" if worse else "not measured"
    if worse and noise is not None and noise > 3.0:
        verdict = "wall clock inconclusive"
    out.append(("lower slowdown than CPython 3.15's profiler at every rate", verdict,
                ("lower in " + ", ".join(lower) if lower else "") +
                ("; not lower in " + ", ".join(worse) +
                 " (medians of wall time; differences inside the noise above are not "
                 "significant)" if worse else "") +
                (f". Profiler-side CPU, which is steadier: pybpfprof's process used "
                 f"{min(ratios):.1f} to {max(ratios):.1f} times less than the peer's "
                 f"(fewer times in the peer's favour: {sum(1 for x in ratios if x < 1)} of "
                 f"{len(ratios)})" if ratios else "")))
    loads = (res.get("wall") or {}).get("loads", {})
    svc, storm = loads.get("queue service", {}), loads.get("lock storm", {})
    v = svc.get("pybpfprof --mode wall", {}).get("slowdown_pct")
    ours_storm = storm.get("pybpfprof --mode wall", {})
    out.append(("wall mode: under 3% slowdown of a switch-heavy target (tens of thousands "
                "of switches a second)",
                "not measured" if v is None else "met" if v < 3.0 else "missed",
                f"{pct(v)} on the queue service "
                f"({fnum(svc.get('unprofiled', {}).get('switches_per_s'))} switches/s "
                f"unprofiled), the peer's wall mode "
                f"{pct(svc.get('profiling.sampling wall', {}).get('slowdown_pct'))}; on the "
                f"lock storm ({fnum(storm.get('unprofiled', {}).get('switches_per_s'))} "
                f"switches/s) {pct(ours_storm.get('slowdown_pct'))}, "
                f"{fnum(ours_storm.get('bpf_ns_per_switch'))} BPF ns per target switch "
                "(part 5)" if loads else "part 5 not run"))
    cost = {(r["axis"], r["value"], r["mode"]): r for r in res["cost"]["rows"]}
    d200 = cost.get(("depth", 200, "bpf"), {})
    v = d200.get("bpf_ns_per_sample")
    out.append(("bpf_ns_per_sample under 5,000 at 200 frames",
                "not measured" if v is None else "met" if v < 5000 else "missed",
                f"{fnum(v)} ns per program run at 200 frames; "
                f"{fnum(d200.get('bpf_bytes_copied_per_sample'))} bytes copied per sample"
                + ("" if v is None or v < 5000 else
                   "; part 2 shows how it grows with depth and what it copies")))
    d50 = cost.get(("depth", 50, "bpf"), {})
    dec = d50.get("decoded_per_cpu_s")
    ns = d50.get("decode_ns_per_sample")
    out.append((">= 200,000 decoded samples per profiler CPU-second at 50 frames",
                "not measured" if dec is None else "met" if dec >= 200000 else "missed",
                f"{fnum(dec)} per CPU-second of the whole profiler process (schedstat over "
                f"the work window, ring-buffer polling included); decoding alone "
                f"{fnum(ns)} ns per sample = {fnum(1e9 / ns if ns else None)} per second"))
    bad, good, na, peer_bad = [], [], [], []
    for wl, rows in res["accuracy"].items():
        for r in rows:
            where = f"{wl} @ {r.get('rate')} Hz"
            if r.get("profiler", "").startswith("profiling.sampling") and r.get("impossible"):
                peer_bad.append(f"{where}: {r['impossible']} ({r['impossible_pct']:.2f}%)")
            if r.get("profiler") != "pybpfprof":
                continue
            if r.get("not_run"):
                na.append(where)
            elif r.get("impossible") is not None:
                (bad if r["impossible"] else good).append(
                    f"{where}: {r['impossible']} of {r['samples']}")
    verdict = ("missed" if bad else "met where run" if good and na else "met" if good
               else "not measured")
    detail = ("impossible samples from pybpfprof: " + ", ".join(bad) if bad else
              f"0 impossible in each of {len(good)} pybpfprof runs")
    if na:
        detail += (f"; not run at {', '.join(na)}: pybpfprof's rate limit is "
                   f"{OURS_MAX_RATE} Hz, so 50 kHz cannot be asked of it")
    detail += (". CPython's profiler, same target processes: " +
               (", ".join(peer_bad) if peer_bad else "0 impossible"))
    out.append(("0 impossible stacks at every rate", verdict, detail))
    sc = res["scale"]
    if sc.get("not_run"):
        out.append(("0 drops at 200 processes", "not run", sc["not_run"]))
    else:
        r200 = [r for r in sc["rows"] if r.get("processes") == max(cfg["scale_procs"])]
        d = r200[0].get("drops") if r200 else None
        rss = r200[0].get("maxrss_mb") if r200 else None
        out.append((f"0 drops at {max(cfg['scale_procs'])} processes",
                    "not measured" if d is None else "met" if d == 0 else "missed",
                    f"{fnum(d)} ring-buffer drops, "
                    f"{fnum(r200[0].get('event_drops') if r200 else None)} process-event "
                    f"drops; a process started during the run was followed after "
                    f"{fnum(r200[0].get('follow_ms') if r200 else None)} ms (median)" +
                    (f", with a load average of {r200[0]['load1']:.0f} on the machine"
                     if r200 and r200[0].get("load1") is not None else "")))
        why = f"peak RSS {fnum(rss, '{:.1f}')} MB"
        pts = sorted((r["processes"], r["maxrss_mb"]) for r in sc["rows"]
                     if r.get("maxrss_mb") is not None)
        if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
            per = (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])
            one = [r.get("maxrss_mb") for r in p1.get("mixed", [])
                   if r["config"].startswith("pybpfprof @")]
            one = med(one)
            why += (f"; it grows with the processes followed, from {pts[0][1]:.0f} MB at "
                    f"{pts[0][0]} to {pts[-1][1]:.0f} MB at {pts[-1][0]}: about "
                    f"{1024 * per:.0f} KB more per process, in the profiler's heap "
                    f"(per-target user-space state; which structure dominates was not "
                    f"broken down)")
            if one is not None:
                why += (f", on top of the fixed part, mostly the mapped ring buffer and "
                        f"BPF maps ({one:.0f} MB for one process in part 1)")
        out.append((f"agent RSS under 100 MB at {max(cfg['scale_procs'])} processes",
                    "not measured" if rss is None else "met" if rss < 100 else "missed",
                    why))
    return out + machine_cost.goals(res, cfg) + first_sample.goals(res, cfg) + \
        real_programs.goals(res, cfg) + reading.goals(res, cfg)


def write_report(res, cfg, path, meta):
    L = []
    w = L.append
    w("# pybpfprof benchmark")
    w("")
    w(f"{meta['date']}, commit {meta['commit']}, {meta['machine']}. CPython "
      f"{meta['python']} from the test chroot; CPython's own profiler is "
      f"`python3.15 -m profiling.sampling attach` (\"peer\" below). "
      f"{'SMOKE RUN: one short repetition, numbers not meaningful. ' if meta['smoke'] else ''}"
      f"Took {meta['duration_s'] / 60:.1f} min; load average {meta['load_before']} before, "
      f"{meta['load_after']} after.")
    w("")
    w("Targets run pinned to the last CPU, profilers to CPU 0; every profiler attaches by "
      "PID to a target that waits, then the target does a fixed amount of work and times "
      "itself. Configurations are interleaved within each repetition, the order rotating "
      "between repetitions.")
    w("")
    w("## Goals")
    w("")
    w("| goal | result | detail |")
    w("|---|---|---|")
    for g, v, d in goals(res, cfg):
        w(f"| {g} | **{v}** | {d} |")
    w("")
    w(f"## 1. Target slowdown ({cfg['reps']} repetitions)")
    w("")
    w("Slowdown: median wall time of the target's work against the median unprofiled, "
      "with the slowdowns of the fastest and slowest run; CPU-time slowdown: the same "
      "with the target's own CPU time, which leaves out time spent waiting for a CPU. "
      "Delivered/expected: pybpfprof's "
      "own count (BPF: target CPU time x rate; --no-bpf: ticks, each sampling every "
      "thread); peer: its 'Captured N samples in S s' against S x rate. Profiler CPU: "
      "the profiler process over the work window (schedstat), per second and per "
      "delivered sample. In-target: BPF run time (record -p's clocks tick only the "
      "target's threads, so every run is one of its samples) as a share of the target's "
      "own CPU. RSS: the profiler's VmHWM.")
    for tname, rows in res["slowdown"]["rows"].items():
        w("")
        w(f"**{tname}** (`cpu_bound.py {' '.join(cfg['targets'][tname][0])}`)")
        w("")
        w("| configuration | median s | slowdown | min..max | CPU-time slowdown | "
          "delivered / expected | profiler CPU % | µs / sample | in-target % | RSS MB |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r.get("median_s") is None:
                w(f"| {r['config']} | failed ({r['failed']} of {r['runs']}) | | | | | | | | |")
                continue
            w(f"| {r['config']} | {r['median_s']:.3f} | {pct(r['slowdown_pct'])} | "
              f"{pct(r['slowdown_min_pct'])}..{pct(r['slowdown_max_pct'])} | "
              f"{pct(r.get('cpu_slowdown_pct'))} | {fnum(r.get('delivered'))} / {fnum(r.get('expected'))} | "
              f"{fnum(r.get('prof_cpu_pct'), '{:.1f}')} | "
              f"{fnum(r.get('prof_us_per_sample'), '{:.1f}')} | "
              f"{fnum(r.get('in_target_pct'), '{:.2f}')} | {fnum(r.get('maxrss_mb'), '{:.1f}')} |"
              + (f" ({r['failed']} failed)" if r.get("failed") else ""))
    w("")
    w(f"## 2. Profiler cost by stack depth ({res['cost']['rows'][0]['rate'] if res['cost']['rows'] else '?'} Hz, "
      f"{cfg['cost_reps']} repetitions)")
    w("")
    w("A stable stack of N frames with an arithmetic loop at the bottom (`cpu_bound.py "
      "--kind deep`). BPF ns: run_time_ns / run_cnt of the perf-event program (kernel "
      "side, charged to the target). Profiler µs / sample: CPU of the whole profiler "
      "process over the work window per delivered sample (steady state, start-up "
      "excluded). Decoded / CPU-s: complete samples per CPU-second of the profiler.")
    w("")
    w("| frames | mode | delivered / expected | BPF ns / sample | BPF bytes / sample | "
      "decode ns / sample | live reads / sample | profiler CPU % | profiler µs / sample | "
      "decoded / CPU-s | incomplete | RSS MB |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in res["cost"]["rows"]:
        if r["axis"] != "depth":
            continue
        if r.get("error"):
            w(f"| {r['value']} | {r['mode']} | failed: {r['error'][:120]} |" + " |" * 9)
            continue
        bpf = r["mode"] == "bpf"
        w(f"| {r['value']} | {r['mode']} | {fnum(r['delivered'])} / {fnum(r['expected'])} | "
          f"{fnum(r['bpf_ns_per_sample']) if bpf else '–'} | "
          f"{fnum(r['bpf_bytes_copied_per_sample']) if bpf else '–'} | "
          f"{fnum(r['decode_ns_per_sample'])} | {fnum(r['live_reads_per_sample'], '{:.2f}')} | "
          f"{fnum(r['prof_cpu_pct'], '{:.1f}')} | {fnum(r['prof_us_per_sample'], '{:.2f}')} | "
          f"{fnum(r['decoded_per_cpu_s'])} | {fnum(r['incomplete'])} | "
          f"{fnum(r['maxrss_mb'], '{:.1f}')} |")
    w("")
    w("By thread count (50-frame stacks, every thread busy, BPF):")
    w("")
    w("| threads | delivered / expected | BPF ns / sample | decode ns / sample | "
      "profiler µs / sample | decoded / CPU-s | RSS MB |")
    w("|---|---|---|---|---|---|---|")
    for r in res["cost"]["rows"]:
        if r["axis"] != "threads":
            continue
        if r.get("error"):
            w(f"| {r['value']} | failed: {r['error'][:120]} |" + " |" * 5)
            continue
        w(f"| {r['value']} | {fnum(r['delivered'])} / {fnum(r['expected'])} | "
          f"{fnum(r['bpf_ns_per_sample'])} | {fnum(r['decode_ns_per_sample'])} | "
          f"{fnum(r['prof_us_per_sample'], '{:.2f}')} | {fnum(r['decoded_per_cpu_s'])} | "
          f"{fnum(r['maxrss_mb'], '{:.1f}')} |")
    w("")
    w(f"## 3. Accuracy under load ({cfg['acc_seconds']:g} s per profiler and rate, "
      "one target process per workload profiled by each in turn)")
    w("")
    w("Impossible: samples that mix chain a and chain b, put a frame under the wrong "
      "parent or a parent on a line other than its call, or do not start at `<module>`. "
      "Flagged: samples pybpfprof itself marked `[incomplete]` (partial, and said so). "
      "Peer error rate: the peer's own count of failed reads.")
    for wl, rows in res["accuracy"].items():
        w("")
        w(f"**{wl}**")
        w("")
        w("| profiler | rate | delivered / expected | samples | impossible | flagged | "
          "wrong: mixed / parent / line / root | peer error rate |")
        w("|---|---|---|---|---|---|---|---|")
        for r in rows:
            if "profiler" not in r:
                w(f"| failed: {r.get('error', '')[:200]} | | | | | | | |")
                continue
            if r.get("not_run"):
                w(f"| {r['profiler']} | {r['rate']} | not run: {r['not_run']} | | | | | |")
                continue
            if r.get("error"):
                w(f"| {r['profiler']} | {r['rate']} | failed: {r['error'][:150]} | | | | | |")
                continue
            v = r["verdicts"]
            w(f"| {r['profiler']} | {r['rate']} | {r['delivered']} / {r['expected']} | "
              f"{r['samples']} | {r['impossible']} ({r['impossible_pct']:.2f}%) | "
              f"{r['flagged']} ({r['flagged_pct']:.2f}%) | {v.get('mixed', 0)} / "
              f"{v.get('wrong_parent', 0)} / {v.get('wrong_line', 0)} / "
              f"{v.get('not_module', 0)} | {fnum(r.get('peer_error_rate'), '{:.2f}')} |")
    w("")
    w("## 4. Scale: system-wide (`record -a`), 10 threads per process, 100 Hz")
    w("")
    sc = res["scale"]
    if sc.get("not_run"):
        w(f"not run: {sc['not_run']}.")
    else:
        w(f"N processes of `scale_worker.py` (10 threads, 2 of them busy, about 1.2 CPUs "
          f"of load in all), started before the profiler; {cfg['scale_seconds']:g} s of "
          f"`pybpfprof record -a -r 100`. Anything else running on the host is profiled "
          f"too. Then {cfg['scale_probes']} single-busy-thread probes start while it runs: "
          "follow ms is the time from spawning a probe (a chroot and an interpreter "
          "start-up included) to the profiler's 'following pid' line, median; from then "
          "on the probe is a target, so its first sample comes at its next on-CPU tick "
          "(within 10 ms at 100 Hz for a busy thread); probes sampled says that it came. "
          "Profiler CPU over the steady window; µs / sample against the samples of that "
          "window. RSS: the profiler's VmHWM. Load average: 1-minute, at the end of the run.")
        w("")
        w("| processes | seen | workers sampled | drops (ring / events) | delivered / "
          "expected | incomplete | BPF ns / sample | decode ns / sample | profiler CPU % | "
          "µs / sample | RSS MB | follow ms | probes sampled | load average |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in sc["rows"]:
            if r.get("error"):
                w(f"| {r['processes']} | failed: {r['error'][:200]} |" + " |" * 12)
                continue
            w(f"| {r['processes']} | {fnum(r['processes_seen'])} | "
              f"{r['workers_sampled']} of {r['processes']} | {fnum(r['drops'])} / "
              f"{fnum(r['event_drops'])} | {fnum(r['delivered'])} / {fnum(r['expected'])} | "
              f"{fnum(r['incomplete'])} | {fnum(r['bpf_ns_per_sample'])} | "
              f"{fnum(r['decode_ns_per_sample'])} | {fnum(r['prof_cpu_pct'], '{:.1f}')} | "
              f"{fnum(r['prof_us_per_sample'], '{:.1f}')} | {fnum(r['maxrss_mb'], '{:.1f}')} | "
              f"{fnum(r['follow_ms'])} | "
              f"{r['probes_sampled']} of {cfg['scale_probes']} | "
              f"{fnum(r.get('load1'), '{:.1f}')} |")
    w("")
    write_wall(w, res.get("wall") or {})
    write_async(w, res.get("async") or {})
    write_native(w, res.get("native") or {})
    w("## 8. Cost growth")
    w("")
    w("![profiler cost per sample by stack depth, thread count and process count]"
      "(chart.svg)")
    w("")
    machine_cost.report(w, res, cfg)
    first_sample.report(w, res, cfg)
    real_programs.report(w, res, cfg)
    reading.report(w, res, cfg)
    with open(path, "w") as f:
        f.write("\n".join(L))


def write_wall(w, wall):
    if not wall.get("loads"):
        return
    w(f"## 5. Wall mode: switch-heavy targets, and waits found against the truth "
      f"({wall['rate']} Hz, pybpfprof's default rate, for both profilers)")
    w("")
    w("`switch_bound.py`: two threads of CPython 3.15 on one CPU hand a token back and "
      "forth. The queue service passes it through two `queue.Queue`, the receiver "
      "computing for tens of microseconds per handoff, like two threads of a service passing "
      "requests; the lock storm passes it through two bare locks, every handoff a futex "
      "wake and a wait and nothing else. Each one's median wall time unprofiled, under "
      "`pybpfprof record --mode wall` (default --min-block) and under `profiling.sampling "
      "attach --mode wall -a`, interleaved. Switches/s: the target's context switches per "
      "second of its run. BPF ns per target switch: the scheduler and system-call "
      "programs' run time (one run in 64 timed) over the target's switches (an upper "
      "bound: they run for every task on the host). Estimate error: the off-CPU time in "
      "the profile, with short waits drawn, against the sum BPF measured of every wait.")
    w("")
    for load, rows in wall["loads"].items():
        w(f"**{load}** (`switch_bound.py {wall.get('load_args', {}).get(load, '')}`)")
        w("")
        w("| profiler | wall s | slowdown | switches/s | target switches | stacks taken "
          "| BPF ns / switch | estimate error | ring-buffer drops |")
        w("|---|---|---|---|---|---|---|---|---|")
        for name, r in rows.items():
            w(f"| {name} | {fnum(r.get('wall_s'), '{:.3f}')} | {pct(r.get('slowdown_pct'))} "
              f"| {fnum(r.get('switches_per_s'))} | {fnum(r.get('switches'))} | "
              f"{fnum(r.get('sampled'))} | {fnum(r.get('bpf_ns_per_switch'))} | "
              f"{fnum(r.get('estimate_err_pct'), '{:.2f}%')} | {fnum(r.get('drops'))} |")
        w("")
    w("`waits.py` (tests/workloads): sleeper sleeps, reader blocks on a pipe, locker waits "
      "for a lock another thread keeps, gil_a and gil_b burn CPU and contend for the GIL; "
      "each thread times itself. Found: the share of the thread's profiled time at its "
      "waiting line (for the burners: on the CPU, which the peer's wall mode cannot tell "
      "from waiting for the GIL), against the thread's own measure.")
    w("")
    acc = wall.get("accuracy", {})
    names = sorted({t for a in acc.values() for t in a.get("threads", {})})
    w("| thread | truth | " + " | ".join(acc) + " |")
    w("|---|---|" + "---|" * len(acc))
    for t in names:
        truth = next((a["threads"][t]["truth_pct"] for a in acc.values()
                      if t in a.get("threads", {})), None)
        cells = [fnum((a.get("threads", {}).get(t) or {}).get("found_pct"), "{:.1f}%")
                 for a in acc.values()]
        w(f"| {t} | {fnum(truth, '{:.1f}%')} | " + " | ".join(cells) + " |")
    w("")


def write_async(w, a):
    if not a.get("rows"):
        return
    w(f"## 6. asyncio tasks ({a['rate']} Hz, {a['seconds'] - 1:g} s per run)")
    w("")
    w("`async_burn.py` (tests/workloads) on CPython 3.15: 'parent' awaits a gather of "
      "'worker-a' and 'worker-b', 'waiter' awaits the task 'lonely'; the three burn in "
      "their own coroutines for 4, 2 and 2 ms of CPU and yield, and time themselves; short "
      "tasks end and are replaced. Tasks found: how many of the three burners the profile "
      "names. Share error: the largest gap, in points, between a burner's share of the "
      "burners' samples and its share of their CPU time. Chains right: of those samples, "
      "the share whose chain of tasks (main, parent or waiter, the burner) is the truth. "
      "Cost: pybpfprof's BPF and decoding ns per sample (`--async` reads the awaiting "
      "tasks live as it decodes), and each profiler's own CPU time over the run, start "
      "included.")
    w("")
    w("| profiler | tasks found | share error | chains right | samples | BPF ns / sample "
      "| decode ns / sample | profiler CPU s |")
    w("|---|---|---|---|---|---|---|---|")
    for name, r in a["rows"].items():
        w(f"| {name} | {fnum(r.get('tasks_found'))} of 3 | "
          f"{fnum(r.get('share_err_pts'), '{:.1f} pts')} | "
          f"{fnum(r.get('chains_right_pct'), '{:.1f}%')} | {fnum(r.get('samples'))} | "
          f"{fnum(r.get('bpf_ns'))} | {fnum(r.get('decode_ns'))} | "
          f"{fnum(r.get('prof_cpu_s'), '{:.2f}')} |")
    w("")


def write_native(w, n):
    if not n.get("rows"):
        return
    w(f"## 7. Native stacks: `--native` ({n['rate']} Hz, {n['seconds']:g} s per run)")
    w("")
    w("`native_calls.py --mode qsort` (tests/workloads): Python sorts through ctypes and "
      "libc's qsort with a Python comparator that burns, so samples carry C frames (ctypes, "
      "libffi, libc) between two runs of Python frames. dwarf: BPF copies the C stack, "
      "unwound with CFI; fp: BPF walks frame pointers (16 bytes a frame record) beside a "
      "1 KiB copy for top frames without them. Bytes: copied per sample (stack bytes and "
      "frame records). BPF ns: the program's time per target sample. In target: BPF time "
      "as a share of the target's CPU time. Walk: pybpfprof's user-space unwinding, naming "
      "and merging per sample (not in the target). To _start: walks that reached the "
      "outermost frame; no FP: fp walks that ended at the first function without a frame "
      "pointer (libffi or libc under the comparator here: the Python frames that called "
      "qsort then follow the C frames, cut); matched: walks whose every Python run sat "
      "in its eval-loop frame; cut: walks that ended above an activation.")
    w("")
    w("| CPython | profiler | samples | bytes / sample | FP records | BPF ns / sample | "
      "in target | decode ns / sample | walk µs | frames / walk | to _start | no FP | "
      "matched | cut |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in n["rows"].values():
        w(f"| {r['version']} | {r['profiler']} | {fnum(r.get('samples'))} | "
          f"{fnum(r.get('bytes'))} | {fnum(r.get('fp_records'), '{:.1f}')} | "
          f"{fnum(r.get('bpf_ns'))} | "
          f"{fnum(r.get('in_target_pct'), '{:.3f}%')} | {fnum(r.get('decode_ns'))} | "
          f"{fnum(r.get('walk_us'), '{:.1f}')} | {fnum(r.get('frames'), '{:.1f}')} | "
          f"{fnum(r.get('outermost_pct'), '{:.1f}%')} | "
          f"{fnum(r.get('no_fp_pct'), '{:.1f}%')} | "
          f"{fnum(r.get('matched_pct'), '{:.1f}%')} | {fnum(r.get('cut_pct'), '{:.1f}%')} |")
    w("")


def write_chart(res, path):
    rows = res["cost"]["rows"]
    rate_txt = f"{rows[0]['rate'] / 1000:g} kHz" if rows else "?"

    def series(axis, mode, key, scale=1.0):
        rs = [r for r in rows if r["axis"] == axis and r["mode"] == mode]
        return [r["value"] for r in rs], [None if r.get(key) is None else r[key] * scale
                                          for r in rs]

    dx, d_user = series("depth", "bpf", "prof_us_per_sample")
    _, d_bpf = series("depth", "bpf", "bpf_ns_per_sample", 1e-3)
    _, d_live = series("depth", "live", "prof_us_per_sample")
    tx, t_user = series("threads", "bpf", "prof_us_per_sample")
    _, t_bpf = series("threads", "bpf", "bpf_ns_per_sample", 1e-3)
    panels = [
        {"title": f"by stack depth ({rate_txt})", "xlabel": "frames", "ylabel": "µs per sample", "x": dx,
         "series": {"BPF: profiler process": d_user, "BPF: kernel program": d_bpf,
                    "--no-bpf: profiler process": d_live}},
        {"title": f"by thread count (50 frames, {rate_txt})", "xlabel": "busy threads",
         "ylabel": "µs per sample", "x": tx,
         "series": {"BPF: profiler process": t_user, "BPF: kernel program": t_bpf}},
    ]
    sc = res["scale"]
    if sc.get("not_run"):
        panels.append({"title": "by process count (-a, 100 Hz)", "xlabel": "processes",
                       "ylabel": "µs per sample", "note": "not run: system-wide mode missing"})
    else:
        good = [r for r in sc["rows"] if not r.get("error")]
        panels.append({"title": "by process count (-a, 100 Hz)", "xlabel": "processes",
                       "ylabel": "µs per sample", "x": [r["processes"] for r in good],
                       "series": {"BPF: profiler process": [r.get("prof_us_per_sample")
                                                            for r in good],
                                  "BPF: kernel program": [
                                      None if r.get("bpf_ns_per_sample") is None
                                      else r["bpf_ns_per_sample"] / 1000 for r in good]}})
    chart.write(path, "pybpfprof: CPU per sample (lower is better)", panels)


def git_commit():
    p = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    return p.stdout.strip() or "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", default=os.environ.get(
        "PBP_BENCH_SMOKE") == "1")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench"))
    ap.add_argument("--parts", default="1,2,3,4,5,6,7,9,10,12,13,14",
                    help="comma-separated parts to run (8, the chart, and 11, the cost "
                    "breakdown, come from the others)")
    ap.add_argument("--from-results", metavar="JSON", help="write the report and chart "
                    "again from a results.json of an earlier run, running nothing")
    a = ap.parse_args()
    if a.from_results:
        with open(a.from_results) as f:
            res = json.load(f)
        cfg = SMOKE if res["meta"]["smoke"] else FULL
        os.makedirs(a.out, exist_ok=True)
        write_report(res, cfg, os.path.join(a.out, "report.md"), res["meta"])
        write_chart(res, os.path.join(a.out, "chart.svg"))
        return
    if os.geteuid() != 0:
        sys.exit("bench: needs root (BPF, chroot, mounting /proc in the chroot)")
    if not os.access(BIN, os.X_OK):
        sys.exit(f"bench: {BIN} missing: run make first")
    cfg = SMOKE if a.smoke else FULL
    parts = set(a.parts.split(","))
    os.makedirs(a.out, exist_ok=True)
    env = Env(a.out, os.environ.get("PBP_BENCH_DIR", "/tmp/pbp-bench"))
    t0 = time.monotonic()
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    res = {"slowdown": {"rows": {}}, "cost": {"rows": []}, "accuracy": {},
           "scale": {"not_run": "not selected"}, "wall": {}}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env.setup()
    try:
        if "1" in parts:
            res["slowdown"] = part_slowdown(env, cfg)
        if "2" in parts:
            res["cost"] = part_cost(env, cfg)
        if "3" in parts:
            res["accuracy"] = part_accuracy(env, cfg)
        if "4" in parts:
            res["scale"] = part_scale(env, cfg)
        if "5" in parts:
            res["wall"] = part_wall(env, cfg)
        if "6" in parts:
            res["async"] = part_async(env, cfg)
        if "7" in parts:
            res["native"] = part_native(env, cfg)
        if "9" in parts:
            res["twins"] = machine_cost.part_twins(env, cfg)
        if "10" in parts:
            res["saturated"] = machine_cost.part_saturated(env, cfg)
        if "12" in parts:
            res["first_sample"] = first_sample.part_first_sample(env, cfg)
        if "13" in parts:
            res["real"] = real_programs.part_real(env, cfg)
        if "14" in parts:
            res["reading"] = reading.part_reading(env, cfg)
    finally:
        env.teardown()
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": git_commit(),
        "machine": f"{os.cpu_count()} CPUs, Linux {platform.release()}",
        "python": "3.15", "smoke": a.smoke, "duration_s": time.monotonic() - t0,
        "load_before": load0, "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    res["meta"] = meta
    res["goals"] = goals(res, cfg)
    slim = json.loads(json.dumps(res, default=str))
    for rows in slim["slowdown"].get("runs", {}).values():
        for runs in rows.values():
            for r in runs:
                r.pop("stats", None)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(slim, f, indent=1)
    write_report(res, cfg, os.path.join(a.out, "report.md"), meta)
    write_chart(res, os.path.join(a.out, "chart.svg"))
    shutil.rmtree(env.tmp, ignore_errors=True)
    log(f"bench: wrote {a.out}/report.md and chart.svg in {meta['duration_s'] / 60:.1f} min")


if __name__ == "__main__":
    main()
