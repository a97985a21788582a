# SPDX-License-Identifier: GPL-2.0-only
"""`make bench` part 13: real programs, side by side with CPython 3.15's own profiler.

The programs of the test suite's corpus (tests/workloads/): a Django site served by
wsgiref, a thread per request (django_app.py); an aiohttp service with a thread pool
(aiohttp_app.py); the standard library calling back into Python from C, and generator
pipelines (callbacks.py). The web programs start a client process of their own that
keeps them loaded. Each times the CPU of the functions it is about
(time.thread_time() around their bodies) into buckets, and publishes them in its truth
file with the process's CPU at the same moment (pbp_common.CpuBuckets).

Each program runs on 3.11 (the host's, with bookworm's Django and aiohttp) and on 3.13,
3.14 and 3.15 (the test chroot's); 3.12, a pyenv build, has no Django nor aiohttp, and
is left out. While it runs, pybpfprof profiles it by PID at 1 kHz for a few seconds,
and on 3.15 so does the peer; the truth is read before and after each profile. Per
program, version and profiler: the share of complete stacks and why the others were
cut, the BPF program's and the decoder's cost per sample, and the share error: for
each bucket, its share of the samples (those with a frame of its functions) against
its share of the process's CPU between the two readings, the largest difference in
points.

run.py runs it (`--parts 13`) and calls report() and goals() from its own; this module
uses run.py's harness (Env, Profiler, log, ...) through `import run`."""
import json
import os
import re
import signal
import subprocess
import time

import run as bench

VERSIONS = ("3.11", "3.13", "3.14", "3.15")
PROGRAMS = ("django_app", "aiohttp_app", "callbacks")
# Programs that start a thread per request: per-thread CPU clocks begin each new thread
# at the start of a period, so threads shorter than one are sampled too little. Their
# share error is reported, and is no goal here.
THREAD_PER_REQUEST = {"django_app"}
PEER_VERSION = "3.15"
GOAL_COMPLETE_PCT = 99.5
GOAL_COMPLETE_LIVE_PCT = 97.0
LIVE = "pybpfprof --no-bpf"
RATE = 1000
READY_TIMEOUT_S = 120.0     # Django fills its database first; the machine may be loaded

FULL = {
    "real_reps": 2,
    "real_seconds": 5,      # whole seconds: the peer's -d takes an integer
}
SMOKE = {
    "real_reps": 1,
    "real_seconds": 1,
}

OURS_FRAME = re.compile(r"^(?P<name>.+) \((?P<file>.+):(?P<line>\d+)\)$")


def parse_collapsed(text, frame):
    """[(frames [(name, file)], count)] of collapsed stacks, each frame parsed by
    @frame: (name, file), or (the text, None) where it names no file."""
    out = []
    for raw in text.splitlines():
        stack, _, count = raw.rpartition(" ")
        if count.isdigit():
            out.append(([frame(part) for part in stack.split(";")], int(count)))
    return out


def ours_frame(part):
    m = OURS_FRAME.match(part)
    return (m["name"], m["file"]) if m else (part, None)


def peer_frame(part):
    """profiling.sampling --collapsed: 'tid:N;FILE:FUNC:LINE;... COUNT'."""
    bits = part.rsplit(":", 2)
    if len(bits) == 3 and bits[2].lstrip("-").isdigit():
        return bits[1], bits[0]
    return part, None


def parse_ours(text):
    return parse_collapsed(text, ours_frame)


def parse_peer(text):
    return parse_collapsed(text, peer_frame)


def same_function(name, qualname):
    # The peer may name a function by co_name where pybpfprof gives co_qualname.
    return name == qualname or name == qualname.rsplit(".", 1)[-1]


def share_errors(stacks, before, after, basename=False):
    """{bucket: sampled share - CPU share, in points}: as tests/record/test_real_programs.py's
    share_errors(), the samples with a frame of the bucket's functions in the
    workload's script over all samples, against the bucket's CPU over the process's,
    both as grown between the two readings of the truth. @basename: the profile names
    files by their base name only (the peer's collapsed output)."""
    script = os.path.basename(after["script"]) if basename else after["script"]
    n = sum(c for _, c in stacks)
    cpu = after["process_cpu"] - before["process_cpu"]
    if not n or cpu <= 0:
        return {}
    out = {}
    for bucket, funcs in after["bucket_functions"].items():
        inside = sum(c for frames, c in stacks if any(
            file == script and any(same_function(name, q) for q in funcs)
            for name, file in frames))
        want = (after["cpu"][bucket] - before["cpu"][bucket]) / cpu
        out[bucket] = 100.0 * (inside / n - want)
    return out


class Program:
    """One program running on one interpreter, and its truth."""

    def __init__(self, env, name, version):
        self.env, self.name, self.version = env, name, version
        tag = f"real-{name}-{version}-{env.seq}"
        self.log = env.scratch(tag) + ".log"
        if version == "3.11":
            # The host's interpreter, with the host's Django and aiohttp: the files are
            # where the chroot's copy of them lies, seen from outside.
            py = ["/usr/bin/python3.11"]
            script = env.host(f"{env.work}/{name}.py")
            truth = self.truth_host = env.host(f"{env.work}/out/{tag}.json")
        else:
            py = bench.chroot_argv(env.root, f"/usr/bin/python{version}")
            script = f"{env.work}/{name}.py"
            truth = f"{env.work}/out/{tag}.json"
            self.truth_host = env.host(truth)
        argv = env.target_cpu + py + [script, "--truth", truth, "--seconds", "3600"]
        with open(self.log, "wb") as f:
            # Its own session: the client it starts goes with it.
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid

    def output(self):
        return bench.read(self.log)[-1500:]

    def alive(self):
        if self.proc.poll() is not None:
            raise bench.BenchError(f"{self.name} on {self.version} exited "
                                   f"({self.proc.returncode}):\n{self.output()}")

    def truth(self, timeout=5.0):
        """The truth as published last (written atomically, read again if caught
        between two of its writes)."""
        deadline = time.monotonic() + timeout
        while True:
            self.alive()
            try:
                with open(self.truth_host) as f:
                    return json.load(f)
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    raise bench.BenchError(f"{self.name} on {self.version}: no truth at "
                                           f"{self.truth_host}:\n{self.output()}")
            time.sleep(0.05)

    def ready(self):
        """Waits for the truth: the program writes it once every function it times has
        run (its servers serving, its client loading them)."""
        t = self.truth(READY_TIMEOUT_S)
        if t["pid"] != self.pid:
            raise bench.BenchError(f"{self.name}: truth of PID {t['pid']}, started "
                                   f"{self.pid}")
        return t

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.pid, signal.SIGKILL)
        self.proc.wait()
        try:
            # The client, if it outlived its server for a moment.
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def profilers(env, version):
    out = [bench.Profiler(env, "pybpfprof", "ours", RATE, ["-f", "collapsed"]),
           bench.Profiler(env, LIVE, "ours", RATE, ["-f", "collapsed", "--no-bpf"])]
    if version == PEER_VERSION:
        # CPU mode, as pybpfprof's default, to be judged against CPU time; every thread
        # (-a), or the peer would see only the main thread, which in these programs
        # runs none of the timed functions but callbacks.py's.
        out.append(bench.Profiler(env, "profiling.sampling", "peer", RATE,
                                  ["--mode", "cpu", "-a"]))
    return out


def one_profile(env, program, prof, cfg):
    secs = cfg["real_seconds"]
    stem = env.scratch("real")
    if prof.kind == "ours":
        out = out_host = stem + ".txt"
    else:
        # The peer writes where the chroot sees.
        out = f"{env.work}/out/{os.path.basename(stem)}.txt"
        out_host = env.host(out)
    before = program.truth()
    run = prof.start(program.pid, out, duration=secs, target=program.proc)
    try:
        res = prof.finish(run)
    finally:
        bench.kill_left(None, run)
    after = program.truth()
    text = bench.read(out_host)
    if os.path.exists(out_host):
        os.unlink(out_host)
    stacks = parse_ours(text) if prof.kind == "ours" else parse_peer(text)
    # The peer's samples: its profile's counts, one per thread found running at a tick
    # (its 'Captured N samples' counts the ticks).
    row = {"samples": sum(c for _, c in stacks),
           "shares": share_errors(stacks, before, after, basename=prof.kind == "peer"),
           "peer_error_rate": res.get("peer_error_rate"),
           "delivered": res.get("delivered"), "expected": res.get("expected")}
    st = res.get("stats")
    if st:
        row["samples"] = st.get("samples") or 0
        row["incomplete"] = st.get("samples_incomplete") or 0
        row["reasons"] = {k: v for k, v in (st.get("incomplete_reasons") or {}).items() if v}
        row["bpf_ns"] = st.get("bpf_ns_per_target_sample")
        row["decode_ns"] = st.get("decode_ns_per_sample")
        row["bpf_bytes"] = st.get("bpf_bytes_copied_per_sample")
        row["live_reads"] = st.get("live_reads_per_sample")
        row["holds"] = st.get("live_holds")
        row["hold_ns"] = st.get("live_hold_ns")
    return row


def one_program(env, name, version, cfg):
    """{profiler: [run rows]} of one program on one interpreter."""
    profs = profilers(env, version)
    runs = {p.name: [] for p in profs}
    program = Program(env, name, version)
    try:
        program.ready()
        for rep in range(cfg["real_reps"]):
            k = rep % len(profs)
            for p in profs[k:] + profs[:k]:
                runs[p.name].append(bench.safe(one_profile, env, program, p, cfg))
    finally:
        program.stop()
    return runs


def summary(name, version, prof, rs):
    ok = bench.ok_runs(rs)
    row = {"program": name, "version": version, "profiler": prof, "runs": len(ok),
           "failed": len(rs) - len(ok),
           "errors": [r["error"][:300] for r in rs if "error" in r][:2]}
    n = sum(r["samples"] for r in ok)
    row["samples"] = n
    row["delivered"] = sum(r.get("delivered") or 0 for r in ok)
    row["expected"] = sum(r.get("expected") or 0 for r in ok)
    if prof.startswith("pybpfprof"):
        bad = sum(r["incomplete"] for r in ok)
        reasons = {}
        for r in ok:
            for k, v in r["reasons"].items():
                reasons[k] = reasons.get(k, 0) + v
        row["complete_pct"] = 100.0 * (1 - bad / n) if n else None
        row["incomplete"] = bad
        row["reasons"] = sorted(reasons.items(), key=lambda kv: -kv[1])[:3]
        if prof != LIVE:
            row["bpf_ns"] = bench.med(r.get("bpf_ns") for r in ok)
            row["bpf_bytes"] = bench.med(r.get("bpf_bytes") for r in ok)
        row["decode_ns"] = bench.med(r.get("decode_ns") for r in ok)
        row["live_reads"] = bench.med(r.get("live_reads") for r in ok)
        holds = sum(r.get("holds") or 0 for r in ok)
        row["held_pct"] = 100.0 * holds / n if n and prof == LIVE else None
        row["hold_us"] = (sum(r.get("hold_ns") or 0 for r in ok) / holds / 1000
                          if holds else None)
    else:
        row["error_rate"] = bench.med(r.get("peer_error_rate") for r in ok)
    # The largest error of a run, the median over the runs; and its bucket.
    worst = [max(r["shares"].items(), key=lambda kv: abs(kv[1])) for r in ok if r["shares"]]
    row["share_err_pts"] = bench.med(abs(v) for _, v in worst)
    row["share_err_max_pts"] = max((abs(v) for _, v in worst), default=None)
    row["worst_bucket"] = max(worst, key=lambda kv: abs(kv[1]))[0] if worst else None
    row["buckets"] = {b: bench.med(r["shares"].get(b) for r in ok)
                      for b in (ok[0]["shares"] if ok else {})}
    return row


def part_real(env, cfg):
    rows = []
    load_avg = os.getloadavg()[0]
    for name in PROGRAMS:
        for version in VERSIONS:
            try:
                runs = one_program(env, name, version, cfg)
            except bench.BenchError as e:
                bench.log(f"part 13: {name} on {version}: {e}")
                runs = {p.name: [{"error": str(e)[:2000]}] for p in profilers(env, version)}
            for prof, rs in runs.items():
                rows.append(summary(name, version, prof, rs))
            bench.log(f"part 13: {name} on {version} done")
    return {"rate": RATE, "reps": cfg["real_reps"], "seconds": cfg["real_seconds"],
            "load_avg": load_avg, "load_avg_after": os.getloadavg()[0], "rows": rows}


def fnum(v, fmt="{:.0f}"):
    return "–" if v is None else fmt.format(v)


def goal_of(rows, name, pct, what):
    """(goal, verdict, why) of @name's complete stacks against @pct."""
    goal = (f"real programs: at least {pct:g} % complete stacks on every program and "
            f"version ({what}, {RATE} Hz)")
    ours = [r for r in rows if r["profiler"] == name]
    if not ours:
        return (goal, "not measured", "part 13 not run")
    missing = [f"{r['program']} on {r['version']}" for r in ours
               if r.get("complete_pct") is None]
    low = [r for r in ours if r.get("complete_pct") is not None
           and r["complete_pct"] < pct]
    measured = [r for r in ours if r.get("complete_pct") is not None]
    why = ""
    if measured:
        w = min(measured, key=lambda r: r["complete_pct"])
        why = (f"lowest {w['complete_pct']:.2f} % ({w['program']} on {w['version']}), "
               f"over {len(measured)} program x version pairs (part 13)")
    if low:
        why += "; below: " + ", ".join(f"{r['program']} on {r['version']} "
                                       f"{r['complete_pct']:.2f} %" for r in low)
    if missing:
        why += "; not measured: " + ", ".join(missing)
    verdict = "missed" if low else "not measured" if missing else "met"
    return (goal, verdict, why.lstrip("; "))


def goals(res, cfg):
    rows = (res.get("real") or {}).get("rows", [])
    return [goal_of(rows, "pybpfprof", GOAL_COMPLETE_PCT, "BPF mode"),
            goal_of(rows, LIVE, GOAL_COMPLETE_LIVE_PCT, "--no-bpf")]


def report(w, res, cfg):
    rp = res.get("real") or {}
    if not rp.get("rows"):
        return
    w(f"## 13. Real programs ({rp['reps']} x {rp['seconds']} s at {rp['rate']} Hz)")
    w("")
    w("The programs of the test suite's corpus, each under load: `django_app` (Django "
      "on sqlite, served by wsgiref, a thread per request, a client process of four "
      "connections), `aiohttp_app` (an aiohttp service with middleware and Jinja2, and a "
      "thread pool; a client process of eight requests in flight) and `callbacks` (the "
      "standard library calling back into Python from C, and generator pipelines, in "
      "two threads). Each on 3.11 (the host's, Debian's Django 3.2 and aiohttp 3.8) and "
      "on 3.13, 3.14 and 3.15 (the test chroot's; 3.12, a pyenv build without Django "
      "or aiohttp, is left out), pinned to the last CPU with its client; each profiler "
      "attached by PID, pinned to CPU 0, for the time given, the repetitions "
      "interleaved. Complete: 100 x (1 - incomplete stacks / samples) over all "
      "repetitions, with the three most frequent reasons a stack was cut and their "
      "counts. BPF ns: the BPF program's run time per sample of the target "
      "(`bpf_ns_per_target_sample`), and the bytes it copied per sample; decode µs: "
      "user-space decoding per sample (`decode_ns_per_sample`), and the reads of the "
      "target's memory it made per sample for what the copy did not hold "
      "(`live_reads_per_sample`); medians over the repetitions. `--no-bpf` reads each "
      "thread from outside, and holds a thread still for one reading when sixteen were "
      "torn: held, the share of its samples that needed a hold, and the time each took "
      "(docs/live-sampling.md); it samples running threads at wall-clock ticks, so "
      "its shares count a thread's waits for a CPU too. Share error: each "
      "program times the CPU of the functions it is about (time.thread_time() around "
      "their bodies: Django's views, aiohttp's handlers and its pool's sieve, each "
      "callback kind) into buckets; a bucket's share of the samples (those with a frame "
      "of its functions) against its share of the process's CPU between readings just "
      "before and just after the profile; the largest difference of a run in points, "
      "median (max) over the runs, and its bucket. The peer, on 3.15 only, is "
      "`python3.15 -m profiling.sampling attach --collapsed -r 1000 --mode cpu -a -d N "
      "PID` (through `peer_attach.py`): CPU mode, to be judged against CPU time, and every "
      "thread, which pybpfprof samples by default; its samples are its profile's counts "
      "(one per thread found running at a tick), delivered / expected its 'Captured N "
      "samples in S s' against S x rate, and its error rate the one it prints. "
      "pybpfprof's delivered / expected: its ticks delivered against the target's CPU "
      "time x rate. Django starts a thread "
      "per request, and per-thread CPU clocks undercount threads shorter than a period: "
      f"its share error is reported, and is no goal. The machine's 1-minute load "
      f"average was {fnum(rp.get('load_avg'), '{:.1f}')} as the part began and "
      f"{fnum(rp.get('load_avg_after'), '{:.1f}')} as it ended, on {os.cpu_count()} CPUs.")
    w("")
    w("| program | version | profiler | samples | delivered / expected | complete % | "
      "top incomplete reasons | BPF ns | BPF bytes | decode µs | live reads | held | "
      "share error pts (max) | worst bucket | peer error rate | "
      "failed |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rp["rows"]:
        ours = r["profiler"].startswith("pybpfprof")
        held = ("–" if r.get("held_pct") is None else
                f"{r['held_pct']:.1f} % x {fnum(r.get('hold_us'))} µs")
        reasons = ", ".join(f"{k} {v}" for k, v in r.get("reasons") or []) or "–"
        w(f"| {r['program']} | {r['version']} | {r['profiler']} | {fnum(r.get('samples'))} | "
          f"{fnum(r.get('delivered'))} / {fnum(r.get('expected'))} | "
          f"{fnum(r.get('complete_pct'), '{:.2f}') if ours else '–'} | "
          f"{reasons if ours else '–'} | {fnum(r.get('bpf_ns'))} | "
          f"{fnum(r.get('bpf_bytes'))} | "
          f"{fnum(None if r.get('decode_ns') is None else r['decode_ns'] / 1000, '{:.1f}')} | "
          f"{fnum(r.get('live_reads'), '{:.1f}')} | {held} | "
          f"{fnum(r.get('share_err_pts'), '{:.1f}')} "
          f"({fnum(r.get('share_err_max_pts'), '{:.1f}')}) | {r.get('worst_bucket') or '–'} | "
          f"{'–' if ours else fnum(r.get('error_rate'), '{:.2f}')} | "
          f"{r['failed']}{' ' + r['errors'][0][:120] if r['errors'] else ''} |")
    w("")
