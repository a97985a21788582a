"""The spine benchmark, `make bench`: target slowdown at 100 Hz and 1,000 Hz against the
same workload unprofiled, side by side with CPython 3.15's own sampling profiler
(python3.15 -m profiling.sampling) in the same run, plus BPF cost per sample with a
200-frame stack and decoder cost with a 50-frame stack. Runs are interleaved so that
drift of the machine hits every configuration alike; medians are reported."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(REPO, "build", "pybpfprof")
ROOT = subprocess.run(["bash", os.path.join(REPO, "tools", "test-interpreters.sh")],
                      capture_output=True, text=True, check=True).stdout.strip()
PY = ["chroot", ROOT, "/usr/bin/python3.15"]
WORK_DIR = "/tmp/pbp-bench"
REPS = int(os.environ.get("PBP_BENCH_REPS", "5"))
N = int(os.environ.get("PBP_BENCH_N", "6000000"))


def sh(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p


def install():
    """Returns True if it mounted /proc in the chroot (CPython's profiler reads
    /proc/PID/maps from inside it), so that main() can unmount it again."""
    mounted = False
    if not os.path.exists(ROOT + "/proc/self"):
        sh(["mount", "-t", "proc", "proc", ROOT + "/proc"])
        mounted = True
    os.makedirs(ROOT + WORK_DIR, exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "cpu_bound.py")) as f:
        src = f.read()
    with open(ROOT + WORK_DIR + "/cpu_bound.py", "w") as f:
        f.write(src)
    return mounted


def workload(n=N, depth=0):
    return PY + [WORK_DIR + "/cpu_bound.py", str(n), str(depth)]


def seconds(p):
    """The workload's own timing line; profilers may print around it."""
    for line in p.stdout.splitlines():
        try:
            return float(line)
        except ValueError:
            continue
    sys.exit(f"bench: no timing in the output of {' '.join(p.args)}:\n{p.stdout[-1000:]}")


def ours(rate, stats=None, n=N, depth=0, extra=()):
    argv = [BIN, "record", "-r", str(rate), "-o", "/dev/null"] + list(extra)
    if stats:
        argv += ["--stats-file", stats]
    return argv + ["--"] + workload(n, depth)


def peer(rate):
    return PY + ["-m", "profiling.sampling", "run", "-r", str(rate), "--collapsed",
                 "-o", "/dev/null", WORK_DIR + "/cpu_bound.py", str(N), "0"]


def overhead():
    configs = {
        "unprofiled": lambda: workload(),
        "pybpfprof 100 Hz": lambda: ours(100),
        "profiling.sampling 100 Hz": lambda: peer(100),
        "pybpfprof 1000 Hz": lambda: ours(1000),
        "profiling.sampling 1000 Hz": lambda: peer(1000),
    }
    times = {k: [] for k in configs}
    for rep in range(REPS):
        for name, argv in configs.items():
            times[name].append(seconds(sh(argv())))
        print(f"  repetition {rep + 1}/{REPS} done", file=sys.stderr)
    base = statistics.median(times["unprofiled"])
    rows = []
    for name, t in times.items():
        med = statistics.median(t)
        rows.append((name, med, 100.0 * (med - base) / base, min(t), max(t)))
    return rows


def stats_of(rate, depth, n, extra=()):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh(ours(rate, f.name, n, depth, extra))
        with open(f.name) as g:
            return json.load(g)


def main():
    mounted = install()
    try:
        report()
    finally:
        if mounted:
            subprocess.run(["umount", ROOT + "/proc"])


def report():
    print(f"pybpfprof spine benchmark: CPython 3.15 ({ROOT}), {N} steps, {REPS} interleaved "
          f"repetitions, {os.cpu_count()} CPUs", flush=True)
    rows = overhead()
    print("\n| configuration | median s | slowdown | min s | max s |")
    print("|---|---|---|---|---|")
    for name, med, slow, lo, hi in rows:
        print(f"| {name} | {med:.3f} | {slow:+.1f}% | {lo:.3f} | {hi:.3f} |")
    deep = stats_of(1000, 200, N // 2)
    mid = stats_of(1000, 50, N // 2)
    print("\n| measure | value |")
    print("|---|---|")
    print(f"| BPF ns per program run, 200-frame stack (run_time_ns / run_cnt) | "
          f"{deep['bpf_ns_per_sample']:.0f} |")
    print(f"| BPF ns per target sample, 200-frame stack (run_time_ns / target ticks) | "
          f"{deep['bpf_ns_per_target_sample']:.0f} |")
    print(f"| in-target CPU at 1000 Hz, 200 frames (ns per target sample x 1000) | "
          f"{deep['bpf_ns_per_target_sample'] * 1000 / 1e6:.2f} ms/s |")
    print(f"| bytes copied per sample, 200 frames | {deep['bpf_bytes_copied_per_sample']:.0f} |")
    print(f"| decode ns per sample, 50-frame stack | {mid['decode_ns_per_sample']:.0f} |")
    print(f"| live reads per sample, 50-frame stack | {mid['live_reads_per_sample']:.2f} |")
    print(f"| delivered / expected, 1000 Hz, 200 frames | "
          f"{deep['samples_delivered']} / {deep['samples_expected']} |")
    print(f"| complete stacks, 200 frames | {deep['samples_decoded']} of "
          f"{deep['samples_delivered']} |")
    cache_effect()


def cache_effect():
    """The frame cache on a 300-frame stable stack, on and off, in both modes."""
    print("\nFrame cache, 300-frame stable stack, 1000 Hz:\n")
    print("| mode | cache | live reads / sample | BPF bytes / sample | BPF ns / target "
          "sample | decode ns / sample | complete |")
    print("|---|---|---|---|---|---|---|")
    for mode, extra in (("bpf", []), ("live", ["--no-bpf"])):
        for cache, flag in (("on", []), ("off", ["--no-frame-cache"])):
            st = stats_of(1000, 300, N // 2, extra + flag)
            bpf_cols = (f"{st['bpf_bytes_copied_per_sample']:.0f} | "
                        f"{st['bpf_ns_per_target_sample']:.0f}" if mode == "bpf" else "- | -")
            print(f"| {mode} | {cache} | {st['live_reads_per_sample']:.2f} | {bpf_cols} | "
                  f"{st['decode_ns_per_sample']:.0f} | {st['samples_decoded']} of "
                  f"{st['samples_delivered']} |")


main()
