# SPDX-License-Identifier: GPL-2.0-only
"""`pybpfprof diff`: a node or function is coloured (and called grown or shrunk in the
table) only when its change is beyond sampling noise.

Hand-made profiles (tests/lib/pbp_format.py) pin the statistics without BPF: equal
counts are noise, a doubling is not, a handful of samples never is, and the two
profiles' rates and durations (--per-second) set what "equal" means. Real runs of the
diffwork workload, a fixed amount of work recorded to its end, give the ground truth:
two runs of the same work colour nothing, and a run with slow_me() made twice as slow
colours exactly slow_me and its callers, red. Profiles of other modes are refused with
one line and exit 2. The pages load in headless Chromium without an error."""

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lib.harness import BAD_OUTPUT, Harness
from lib.interpreters import make_interp
from lib.paths import BIN, PROFILER_GRACE, REPO, RUN_DIR
from lib.pbp_format import PYTHON, WAIT, profile, stack, write

RATE = 997
# The CPU time of the work without --slow, whatever the machine's speed. The root holds
# slow_me's growth (about 30 %) diluted by start-up, and the speed the diff corrects for
# is itself measured from the fast functions' samples: in 0.6 s on a fast machine the
# root's change came out below the Bonferroni line, in 1.5 s it is far above it.
BASE_CPU_S = 1.5
WORK = "diffwork"
FAST = ["fast_a", "fast_b", "fast_c"]
CALLERS = ["one_round", "main", "<module>"]

# Every node as out_svg.c writes it: its sample range, its row, its mark, its text.
NODE = re.compile(r'<g class="[a-z]"( id="root")? data-x="(\d+)" data-n="(\d+)"'
                  r'(?: data-mark="([a-z]+)")?><title>([^\n<]*)\n[^<]*</title>'
                  r'<rect x="[\d.]+" y="(\d+)"')


def nodes_of(path):
    """The nodes of a flame graph: dicts of name, x, n, y, mark, root."""
    out = [dict(root=bool(m[1]), x=int(m[2]), n=int(m[3]), mark=m[4],
                name=html.unescape(m[5]), y=int(m[6]))
           for m in NODE.finditer(Path(path).read_text())]
    assert out and sum(o["root"] for o in out) == 1, f"no flame graph in {path}"
    return out


def is_caller(a, b):
    """Whether node @a is on the path from the root to node @b (the root is at the
    bottom: a caller is lower, and its samples hold the callee's)."""
    return a["y"] > b["y"] and a["x"] <= b["x"] and b["x"] + b["n"] <= a["x"] + a["n"]


def parse_table(text):
    """The table's rows: function -> (base, new, p, verdict)."""
    lines = text.splitlines()
    head = [i for i, ln in enumerate(lines) if ln.split()[:2] in (["base", "s"],
                                                                  ["base", "s/s"])]
    assert len(head) == 1, f"no table header in:\n{text}"
    rows = {}
    for ln in lines[head[0] + 1:]:
        base, new, _change, _pct, p, verdict, function = ln.split(None, 6)
        rows[function] = (float(base), float(new), float(p), verdict)
    return rows


def function_name(row_name):
    return row_name.split(" (", 1)[0]


# ---- the statistics, on hand-made profiles ---------------------------------------------

@pytest.fixture(scope="module")
def diff_bin():
    """The profiler, built unless PBP_NO_BUILD=1; these tests load no BPF."""
    if os.environ.get("PBP_NO_BUILD") != "1":
        p = subprocess.run(["make", "-C", str(REPO)], capture_output=True, text=True,
                           timeout=900)
        assert p.returncode == 0, p.stderr[-3000:]
    assert os.access(BIN, os.X_OK), f"no {BIN}"
    return str(BIN)


STRINGS = ["", "main", "/srv/app.py", "hot", "cold", "tiny", "[off-CPU: sleep]"]


def made(tmp_path, name, hot, cold=3000, tiny=0, **kw):
    """main -> hot @hot times, main -> cold @cold times, main -> tiny @tiny times."""
    frames = {"hot": 3, "cold": 4, "tiny": 5}
    body = b""
    for fn, count in (("hot", hot), ("cold", cold), ("tiny", tiny)):
        if count:
            leaf = (WAIT, 6, 0, -1) if kw.get("mode") == "wall" and fn == "cold" else \
                (PYTHON, frames[fn], 2, 10 + frames[fn])
            body += stack(count, 10, 10, [(PYTHON, 1, 2, 30 + frames[fn]), leaf])
    path = tmp_path / f"{name}.pbp"
    write(path, profile(STRINGS, body, **kw))
    return path


def diff(binary, *args):
    p = subprocess.run([binary, "diff", *map(str, args)], capture_output=True, text=True,
                       timeout=60)
    assert not BAD_OUTPUT.search(p.stderr), p.stderr
    return p


def verdicts(binary, tmp_path, base, new, *args):
    """function -> verdict, and node text -> mark, of the diff of @base and @new."""
    out = tmp_path / "d.svg"
    p = diff(binary, base, new, "-o", out, *args)
    assert p.returncode == 0, p.stderr
    rows = parse_table(p.stdout)
    return ({function_name(k): v[3] for k, v in rows.items()},
            {n["name"]: n["mark"] for n in nodes_of(out)})


def test_equal_counts_are_noise(diff_bin, tmp_path):
    rows, marks = verdicts(diff_bin, tmp_path, made(tmp_path, "a", 1000),
                           made(tmp_path, "b", 1000))
    assert set(rows.values()) == {"-"}, rows
    assert set(marks.values()) == {"same"}, marks


def test_a_doubling_is_beyond_noise_and_so_are_its_callers_only(diff_bin, tmp_path):
    rows, marks = verdicts(diff_bin, tmp_path, made(tmp_path, "a", 1000),
                           made(tmp_path, "b", 2000))
    assert rows == {"hot": "grew", "main": "grew", "cold": "-"}, rows
    assert marks == {"all": "grew", "main (/srv/app.py:33)": "grew",
                     "hot (/srv/app.py:13)": "grew", "main (/srv/app.py:34)": "same",
                     "cold (/srv/app.py:14)": "same"}, marks


def test_a_halving_shrank(diff_bin, tmp_path):
    rows, _ = verdicts(diff_bin, tmp_path, made(tmp_path, "a", 2000),
                       made(tmp_path, "b", 1000))
    assert rows["hot"] == "shrank" and rows["cold"] == "-", rows


@pytest.mark.parametrize("base,new", [(3, 0), (0, 5), (7, 0), (2, 9)])
def test_a_handful_of_samples_is_never_a_change(diff_bin, tmp_path, base, new):
    """Even all of 7 samples in one profile and none in the other could be chance,
    once corrected for the number of nodes compared."""
    rows, marks = verdicts(diff_bin, tmp_path, made(tmp_path, "a", 1000, tiny=base),
                           made(tmp_path, "b", 1000, tiny=new))
    assert rows.get("tiny", "-") == "-" and set(marks.values()) == {"same"}, (rows, marks)


def test_rates_are_weighed_in_totals(diff_bin, tmp_path):
    """1000 samples at 100 Hz are the same 10 s as 2000 at 200 Hz."""
    rows, marks = verdicts(diff_bin, tmp_path, made(tmp_path, "a", 1000, rate=100),
                           made(tmp_path, "b", 2000, cold=6000, rate=200), "--no-scale")
    assert set(rows.values()) == {"-"} and set(marks.values()) == {"same"}, (rows, marks)


def test_per_second_weighs_durations(diff_bin, tmp_path):
    """Twice the samples in twice the time: the same per second, not the same total."""
    base = made(tmp_path, "a", 1000, duration_ns=10**9)
    new = made(tmp_path, "b", 2000, cold=6000, duration_ns=2 * 10**9)
    rows, _ = verdicts(diff_bin, tmp_path, base, new, "--per-second", "--no-scale")
    assert set(rows.values()) == {"-"}, rows
    rows, _ = verdicts(diff_bin, tmp_path, base, new, "--no-scale")
    assert rows == {"hot": "grew", "cold": "grew", "main": "grew"}, rows


def test_a_uniform_slowdown_is_the_programs_speed_not_a_change(diff_bin, tmp_path):
    """Every function 1.4 times as long (a busy machine) is no change; compared as they
    are (--no-scale) every one grew; and one function doubling on top of it is."""
    base = made(tmp_path, "a", 1000)
    new = made(tmp_path, "b", 1400, cold=4200)
    rows, marks = verdicts(diff_bin, tmp_path, base, new)
    assert set(rows.values()) == {"-"} and set(marks.values()) == {"same"}, (rows, marks)
    rows, _ = verdicts(diff_bin, tmp_path, base, new, "--no-scale")
    assert set(rows.values()) == {"grew"}, rows
    rows, _ = verdicts(diff_bin, tmp_path, base, made(tmp_path, "c", 2800, cold=4200))
    assert rows == {"hot": "grew", "main": "grew", "cold": "-"}, rows


def test_wall_time_is_counted_in_samples_of_the_clock(diff_bin, tmp_path):
    """10 s of thread time at 100 Hz is 1000 sample-equivalents: 10 s against 10 s is
    noise, against 20 s is not, and 0.05 s against 0 s (5 samples) is noise."""
    ns = 10**7       # one tick at 100 Hz
    base = made(tmp_path, "a", 1000 * ns, cold=3000 * ns, tiny=5 * ns, mode="wall")
    same = made(tmp_path, "b", 1000 * ns, cold=3000 * ns, mode="wall")
    slow = made(tmp_path, "c", 2000 * ns, cold=3000 * ns, tiny=5 * ns, mode="wall")
    rows, _ = verdicts(diff_bin, tmp_path, base, same)
    assert set(rows.values()) == {"-"}, rows
    rows, _ = verdicts(diff_bin, tmp_path, base, slow)
    assert rows == {"hot": "grew", "main": "grew", "tiny": "-"}, rows


def test_modes_that_differ_are_refused_with_one_line(diff_bin, tmp_path):
    p = diff(diff_bin, made(tmp_path, "a", 1000), made(tmp_path, "b", 1000, mode="wall"))
    assert p.returncode == 2 and not p.stdout, p
    assert len(p.stderr.splitlines()) == 1 and "cpu" in p.stderr and "wall" in p.stderr, \
        p.stderr


def test_a_file_that_is_no_profile_exits_10(diff_bin, tmp_path):
    bad = tmp_path / "bad.pbp"
    bad.write_bytes(b"\x1f\x8b not really")
    p = diff(diff_bin, made(tmp_path, "a", 1000), bad)
    assert p.returncode == 10 and len(p.stderr.splitlines()) == 1, p.stderr


def test_an_output_that_is_no_flame_graph_is_a_usage_error(diff_bin, tmp_path):
    p = diff(diff_bin, made(tmp_path, "a", 1000), made(tmp_path, "b", 1000), "-o",
             tmp_path / "d.txt")
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr


# ---- real runs ---------------------------------------------------------------------------

def record(h, interp, name, *workload_args, mode=None):
    """diffwork run to its end under record: the .pbp and the workload's truth."""
    out = h.tmp / f"{name}.pbp"
    truth = f"{RUN_DIR}/{WORK}-{name}-{os.getpid()}.json"
    cmd = interp.argv + [interp.script(WORK), "--truth", truth, *workload_args]
    run = h.run_profiler(["record", "-r", RATE, *(["--mode", mode] if mode else []), "-o",
                          out, "--"] + cmd, timeout=PROFILER_GRACE + 60)
    assert run.rc == 0, run.describe()
    assert out.exists(), run.describe()
    t = interp.host_path(truth)
    assert t.exists(), f"the workload did not finish its work\n{run.describe()}"
    return out, t


@pytest.fixture(scope="module", params=["3.11", "3.14"], ids=lambda v: f"py{v}")
def runs(request, sid_root, workloads_installed, module_tmp, profiler_bin):
    """Two runs of the same work and one with slow_me twice as slow, recorded."""
    interp = make_interp(request.param, sid_root)
    interp.require()
    p = subprocess.run(interp.argv + [interp.script(WORK), "--calibrate", str(BASE_CPU_S)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip().isdigit(), p
    rounds = ("--rounds", p.stdout.strip())
    h = Harness(module_tmp / request.param, profiler_bin)
    try:
        out = {name: record(h, interp, f"{name}", *rounds, *args)[0] for name, args in
               (("base", ()), ("again", ()), ("slow", ("--slow",)))}
    finally:
        h.close()
    out["interp"] = interp
    return out


def run_diff(profiler, base, new, out):
    p = subprocess.run([profiler, "diff", base, new, "-o", out, "-l", "0"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and not BAD_OUTPUT.search(p.stderr), p.stderr
    return parse_table(p.stdout), p.stdout


def test_two_runs_of_the_same_work_colour_nothing(runs, profiler_bin, tmp_path):
    rows, text = run_diff(profiler_bin, runs["base"], runs["again"], tmp_path / "d.svg")
    changed = {k: v for k, v in rows.items() if v[3] != "-"}
    assert not changed, f"changes beyond noise in the same work:\n{text}"
    assert any(function_name(k) == "slow_me" for k in rows), text
    coloured = [n for n in nodes_of(tmp_path / "d.svg") if n["mark"] != "same"]
    assert not coloured, f"coloured nodes: {coloured}\n{text}"


def test_slow_me_made_twice_as_slow_colours_it_and_its_callers_only(runs, profiler_bin,
                                                                    tmp_path):
    rows, text = run_diff(profiler_bin, runs["base"], runs["slow"], tmp_path / "d.html")
    by_name = {function_name(k): v for k, v in rows.items()}
    assert by_name["slow_me"][3] == "grew", text
    for fn in FAST:
        assert by_name[fn][3] == "-", f"{fn} did not change\n{text}"
    grown = {function_name(k) for k, v in rows.items() if v[3] != "-"}
    assert grown <= {"slow_me", *CALLERS}, f"{grown} changed\n{text}"
    assert all(v[3] == "grew" for k, v in rows.items() if v[3] != "-"), text

    nodes = nodes_of(tmp_path / "d.html")
    slow = [n for n in nodes if n["name"].startswith("slow_me (")]
    assert slow, f"no slow_me frame drawn\n{text}"
    coloured = [n for n in nodes if n["mark"] != "same"]
    stray = [n for n in coloured if not n["name"].startswith("slow_me (") and
             not any(is_caller(n, s) for s in slow)]
    assert not stray, f"coloured beyond slow_me and its callers: {stray}"
    assert all(n["mark"] == "grew" for n in coloured), coloured
    hottest = max(slow, key=lambda n: n["n"])
    chain = [n for n in nodes if is_caller(n, hottest)] + [hottest]
    assert all(n["mark"] == "grew" for n in chain), chain
    names = {function_name(n["name"]) for n in chain}
    assert names >= {"all", "slow_me", *CALLERS}, names


def test_a_wall_profile_against_a_cpu_one_is_refused(runs, profiler_bin, tmp_path):
    h = Harness(tmp_path, profiler_bin)
    try:
        wall, _ = record(h, runs["interp"], "wall", mode="wall")
    finally:
        h.close()
    p = subprocess.run([profiler_bin, "diff", runs["base"], wall, "-o", tmp_path / "d.svg"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pybpfprof: ") and "wall" in lines[0], \
        p.stderr
    assert not (tmp_path / "d.svg").exists() and not p.stdout


# ---- in a browser ---------------------------------------------------------------------------

sys.path.insert(0, str(REPO / "tests" / "tools"))
from lib.browser import open_svg  # noqa: E402


@pytest.mark.browser
@pytest.mark.parametrize("suffix", [".svg", ".html"])
def test_the_diff_pages_load_and_show_what_grew(runs, profiler_bin, browser, tmp_path,
                                                suffix):
    out = tmp_path / f"diff{suffix}"
    run_diff(profiler_bin, runs["base"], runs["slow"], out)
    page = open_svg(browser, out)
    subtitle = page.evaluate("document.getElementById('subtitle').textContent")
    assert subtitle.startswith("diff of ") and "against BASE" in subtitle, subtitle
    legend = page.evaluate("document.getElementById('legend').textContent")
    assert legend == "grewshrankwithin noise", legend
    # The heaviest slow_me frame is drawn red: more red than blue, as rendered.
    fill = page.evaluate("""(function () {
      var best = null;
      document.querySelectorAll('#frames > g').forEach(function (g) {
        var t = g.querySelector('title').textContent;
        if (t.indexOf('slow_me (') === 0 && (!best || +g.getAttribute('data-n') >
            +best.getAttribute('data-n'))) best = g;
      });
      return best && [best.getAttribute('data-mark'),
                      getComputedStyle(best.querySelector('rect')).fill];
    })()""")
    assert fill and fill[0] == "grew", fill
    r, g, b = map(int, re.findall(r"\d+", fill[1])[:3])
    assert r > 150 and r > b + 60, fill
    assert page.errors() == []
