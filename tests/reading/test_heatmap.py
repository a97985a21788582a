# SPDX-License-Identifier: GPL-2.0-only
"""The source heatmap (-f heatmap): every line's self and total are the collapsed file's
of the same run; in wall mode a line's self is split by what the time went to, as the
waits.py threads timed it; the text is the file as it was when sampled, read through
the target's root only where the target's user may read it, never through a link, and
the page loads in Chromium without an error and without a reference out."""

import html
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from lib.collapsed import parse_collapsed
from lib.harness import Harness, Once, sibling, unpriv_prefix
from lib.interpreters import make_interp
from lib.waits import profile_waits


SECTION = re.compile(r'<section class="file" id="f\d+">\n<h2>(?P<file>.*?)</h2>(?P<body>.*?)'
                     r'</section>', re.S)
ROW = re.compile(r'<tr id="f\d+-(?P<line>-?\d+)" data-line="-?\d+"(?P<attrs>[^>]*)>'
                 r'(?P<cells>.*?)</tr>')
ATTR = re.compile(r'data-([a-z-]+)="(\d+)"')
SRC = re.compile(r'<td class="src">(.*?)</td>$')
SHARE_POINTS = 5.0


def parse_heatmap(text):
    """{(file, line): {"self": n, "total": n, ..., "text": source line or None}}."""
    out = {}
    for sec in SECTION.finditer(text):
        file = html.unescape(sec["file"])
        for row in ROW.finditer(sec["body"]):
            d = {k: int(v) for k, v in ATTR.findall(row["attrs"])}
            src = SRC.search(row["cells"])
            d["text"] = html.unescape(src[1]) if src and src[1] else None
            out[(file, int(row["line"]))] = d
    return out


def collapsed_lines(profile):
    """{(file, line): (self, total)} of Python frames, as the heatmap counts them."""
    self_, total = Counter(), Counter()
    for s in profile:
        code = [fr for fr in s.frames if fr.file]
        if code:
            self_[(code[-1].file, code[-1].line)] += s.count
        for k in {(fr.file, fr.line) for fr in code}:
            total[k] += s.count
    return self_, total


def record_ratio(tmpdir, profiler, interp, *formats):
    h = Harness(tmpdir, profiler)
    try:
        w = h.start_workload(interp, "ratio", seconds=60)
        base = Path(tmpdir) / f"ratio-{w.pid}"
        outs = [a for s in formats for a in ("-o", f"{base}{s}")]
        run = h.run_profiler(["record", "-p", w.pid, "-d", 2, "-r", 997, *outs], 60)
        assert run.rc == 0, run.describe()
    finally:
        h.close()
    return base


@pytest.mark.parametrize("version", ["3.11", "3.15"])
def test_heatmap_line_counts_are_the_collapsed_files(version, sid_root, workloads_installed,
                                                     tmp_path, profiler_bin):
    interp = make_interp(version, sid_root)
    base = record_ratio(tmp_path, profiler_bin, interp, ".heatmap.html", ".txt")
    rows = parse_heatmap(Path(f"{base}.heatmap.html").read_text())
    self_, total = collapsed_lines(parse_collapsed(Path(f"{base}.txt").read_text()))
    got_self = Counter({k: r["self"] for k, r in rows.items() if r.get("self")})
    got_total = Counter({k: r["total"] for k, r in rows.items() if r.get("total")})
    assert got_self == +self_ and got_total == +total, \
        f"self {set(got_self.items()) ^ set(self_.items())}"
    # The burn lines carry their text, read from the target's copy of the workload.
    burns = [r for r in rows.values() if r.get("self") and r["text"] and "# BURN:fa" in r["text"]]
    assert burns, "no sampled line shows the text of fa's burn"


def test_heatmap_keeps_the_source_as_it_was_when_sampled(tmp_path, profiler_bin):
    """A profile file keeps the text: edits made after the run shift no line."""
    script = tmp_path / "app.py"
    script.write_text("import time\n\n\ndef spin(until):\n    while time.monotonic() < until:\n"
                      "        pass  # THE SPIN\n\n\nspin(time.monotonic() + 1.5)\n")
    pbp = tmp_path / "app.pbp"
    p = subprocess.run([profiler_bin, "record", "-o", pbp, "--", "/usr/bin/python3", script],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    script.write_text("# a comment\n" * 5 + script.read_text())
    out = tmp_path / "later.heatmap.html"
    p = subprocess.run([profiler_bin, "convert", pbp, "-o", out], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows = parse_heatmap(out.read_text())
    hot = max(rows.items(), key=lambda kv: kv[1].get("self", 0))
    assert hot[0] in ((str(script), 5), (str(script), 6)) and "THE SPIN" in rows[
        (str(script), 6)]["text"], hot


@pytest.fixture(scope="module")
def waits_page(sid_root, workloads_installed, module_tmp, profiler_bin):
    interp = make_interp("3.13", sid_root)

    def go():
        truth, _, out, _ = profile_waits(module_tmp / "waits", profiler_bin, interp,
                                         also=(".heatmap.html",))
        return truth, parse_heatmap(sibling(out, ".heatmap.html").read_text())
    return Once(go)


@pytest.mark.parametrize("name,column", [("sleeper", "sleep"), ("reader", "io"),
                                         ("locker", "lock")])
def test_wall_heatmap_splits_each_line_by_what_its_time_went_to(name, column, waits_page):
    """The line a waits.py thread blocks in: its self time is the thread's measured time
    in the call (with the GIL it takes back), within 5 points of its life."""
    truth, rows = waits_page.get()
    t = truth["threads"][name]
    mine = [r for (file, line), r in rows.items()
            if file.endswith("waits.py") and line == t["line"]]
    assert len(mine) == 1, f"no row for {name}'s line {t['line']}"
    r = mine[0]
    life_ns = (t["end"] - t["start"]) * 1e9
    got = 100 * (r.get(column, 0) + r.get("gil", 0)) / life_ns
    want = 100 * t["waited"] * 1e9 / life_ns
    assert abs(got - want) <= SHARE_POINTS, f"{name}: {got:.1f}% vs {want:.1f}%: {r}"
    assert r.get(column, 0) >= 0.75 * r["self"], r


HOSTILE = """
import os, sys, time
paths = sys.argv[1:]
fns = []
for i, p in enumerate(paths):
    ns = {}
    exec(compile("def f(until):\\n    while time.monotonic() < until:\\n        pass\\n", p,
                 "exec"), {"time": time}, ns)
    fns.append(ns["f"])
print("ready", flush=True)
end = time.monotonic() + 30
while time.monotonic() < end:
    for f in fns:
        f(time.monotonic() + 0.02)
"""


def test_sources_are_read_only_as_the_target_may(request, tmp_path, unpriv_user,
                                                 profiler_bin):
    """A target names files by co_filename: root reads none that its user could not,
    none through a link, no FIFO (which would block) and nothing over the cap; a file of
    its own it may read is shown."""
    # pytest's own directories are root's alone: the target's files go where it may look.
    d = Path(tempfile.mkdtemp(prefix="pbp-heatmap-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(d, ignore_errors=True))
    os.chmod(d, 0o755)
    secret = d / "secret.py"
    secret.write_text("SECRET-ROOT-ONLY\n" * 3)
    os.chmod(secret, 0o600)
    (d / "link.py").symlink_to(secret)
    os.mkfifo(d / "fifo.py")
    os.chmod(d / "fifo.py", 0o644)
    big = d / "big.py"
    big.write_text("BIG-FILE-TEXT\n" + "#" * (5 << 20) + "\n")
    os.chmod(big, 0o644)
    good = d / "good.py"
    good.write_text("GOOD-LINE-1\nGOOD-LINE-2\nGOOD-LINE-3\n")
    os.chmod(good, 0o644)
    script = d / "hostile.py"
    script.write_text(HOSTILE)
    os.chmod(script, 0o644)
    names = [secret, d / "link.py", d / "fifo.py", big, good]
    proc = subprocess.Popen(unpriv_prefix(unpriv_user) + ["/usr/bin/python3", script,
                                                          *map(str, names)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        out = tmp_path / "hostile.heatmap.html"
        p = subprocess.run([profiler_bin, "record", "-p", str(proc.pid), "-d", "2", "-o", out,
                            "-o", tmp_path / "hostile.txt"], capture_output=True, text=True,
                           timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert p.returncode == 0, p.stderr
    page = out.read_text()
    rows = parse_heatmap(page)
    sampled = {f for f, _ in rows}
    assert {str(n) for n in names} <= sampled, f"not every file was sampled: {sampled}"
    assert "SECRET-ROOT-ONLY" not in page and "BIG-FILE-TEXT" not in page, \
        "a file the target may not read, or over the cap, was shown"
    assert rows[(str(good), 2)]["text"] == "GOOD-LINE-2", rows[(str(good), 2)]


@pytest.mark.browser
def test_heatmap_loads_in_chromium_offline_and_without_errors(browser, sid_root,
                                                              workloads_installed, tmp_path,
                                                              profiler_bin):
    interp = make_interp("3.14", sid_root)
    base = record_ratio(tmp_path, profiler_bin, interp, ".heatmap.html")
    path = Path(f"{base}.heatmap.html")
    text = path.read_text()
    # Offline: the only references are to the page's own sections.
    assert not re.search(r"src\s*=|@import|url\(|<script", text), "the page refers out"
    assert set(re.findall(r'href="([^"#][^"]*)"', text)) == set(), "a link leads out"
    page = browser.new_page()
    page.navigate(path.resolve().as_uri())
    found = page.evaluate("document.querySelectorAll('section.file').length + ' ' + "
                          "document.body.innerText.includes('# BURN:fa') + ' ' + "
                          "document.querySelectorAll('tr.hot').length")
    nfiles, has_burn, hot = found.split()
    assert int(nfiles) >= 1 and has_burn == "true" and int(hot) >= 2, found
    assert not page.errors(), page.errors()
