# SPDX-License-Identifier: GPL-2.0-only
"""The SVG flame graph in a real browser: headless Chromium driven over the DevTools
protocol (tests/tools/cdp.py). What a user sees is checked, not the markup: frame
widths as rendered, a click that zooms, the reset button, the search prompt and its
matched percent, and that none of it logs an error.

The fixed profile (tests/unit/test_writers.c) is compared with its collapsed golden
file; a real `record -f svg` of the ratio workload must show fa and fb at 3:1; a
synthetic profile of 100k distinct stacks must load and say that it left frames out.
The HTML page (`-f html`, `-o x.html`) is the same flame graph inline in a web page:
the fixed profile's tests run on it too, and a real `record -o x.html` must load as an
HTML page that fetches nothing and shows fa and fb.
Every test leaves a screenshot in build/test-artifacts/svg/.
"""

import subprocess
import time

import pytest

from lib.paths import PROFILER_GRACE, REPO
from lib.browser import open_svg
from lib.harness import BAD_OUTPUT, Harness, fraction, spent_fa_share
from lib.writers import GOLDEN, build_plain

# Pages opened in headless Chromium.
pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "build" / "test-artifacts" / "svg"
PLOT_X0, PLOT_W = 10, 1180        # out_svg.c: PAD, PLOT_W
LARGE_STACKS = 100_000
RATE, DURATION = 999, 3

# Every drawn frame as the browser lays it out; hidden frames have no box.
FRAMES_JS = """
Array.from(document.querySelectorAll('#frames > g')).map(function (g) {
  var r = g.querySelector('rect'), b = r.getBoundingClientRect();
  var t = g.querySelector('title').textContent.split('\\n');
  return { name: t[0], info: t[1], x: +g.getAttribute('data-x'),
           n: +g.getAttribute('data-n'), left: b.left, top: b.top, width: b.width,
           height: b.height, y: +r.getAttribute('y'), root: g.id === 'root',
           cls: g.getAttribute('class').split(' '),
           shown: getComputedStyle(g).display !== 'none' };
})
"""


@pytest.fixture(scope="module")
def artifacts():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def screenshot(page, artifacts, name):
    path = artifacts / f"{name}.png"
    page.screenshot(path)
    print(f"screenshot: {path}")
    return path


def frames(page):
    return page.evaluate(FRAMES_JS)


def text_of(page, elem_id):
    return page.evaluate(f"(document.getElementById('{elem_id}') || {{}}).textContent")


def center(box):
    return box["left"] + box["width"] / 2, box["top"] + box["height"] / 2


def element_center(page, elem_id):
    b = page.evaluate(f"(function () {{ var b = document.getElementById('{elem_id}')"
                      ".getBoundingClientRect(); return [b.left, b.top, b.width, b.height]; })()")
    return b[0] + b[2] / 2, b[1] + b[3] / 2


def with_paths(boxes):
    """Each frame's path from the root, found from the layout alone: a frame's caller
    is the frame one row below whose sample range holds it."""
    boxes = sorted(boxes, key=lambda f: -f["y"])
    rows = {}
    for f in boxes:
        rows.setdefault(f["y"], []).append(f)
    for f in boxes:
        if f["root"]:
            f["path"] = ()
            continue
        below = [p for p in rows.get(f["y"] + 16, [])
                 if p["x"] <= f["x"] and f["x"] + f["n"] <= p["x"] + p["n"]]
        assert len(below) == 1, f"frame {f['name']!r} has {len(below)} callers below it"
        f["path"] = below[0]["path"] + (f["name"],)
    return boxes


def collapsed_tree(text):
    """path (tuple of frame texts, root first) -> samples, from collapsed stacks."""
    tree = {(): 0}
    for line in text.splitlines():
        stack, count = line.rsplit(" ", 1)
        parts = tuple(stack.split(";"))
        tree[()] += int(count)
        for i in range(1, len(parts) + 1):
            tree[parts[:i]] = tree.get(parts[:i], 0) + int(count)
    return tree


@pytest.fixture(scope="module", params=["svg", "html"])
def fixed_svg(tmp_path_factory, request):
    """The fixed profile as an SVG file, and as an HTML page."""
    out = tmp_path_factory.mktemp("svg") / f"fixed.{request.param}"
    p = subprocess.run([build_plain(), request.param], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out.write_bytes(p.stdout)
    return out


def test_fixed_profile_frames_have_the_collapsed_stacks_widths(browser, fixed_svg, artifacts):
    page = open_svg(browser, fixed_svg)
    screenshot(page, artifacts, f"fixed-{fixed_svg.suffix[1:]}")
    boxes = with_paths(frames(page))
    # The collapsed format replaces ';' in names, the SVG keeps them.
    got = {tuple(n.replace(";", "_") for n in f["path"]): f for f in boxes}
    want = collapsed_tree((GOLDEN / "collapsed.txt").read_text())
    assert sorted(got) == sorted(want), "the SVG's frames differ from the collapsed stacks"
    total = want[()]
    for path, count in want.items():
        f = got[path]
        assert f["n"] == count, f"{path}: {f['n']} samples, expected {count}"
        assert abs(f["width"] - count * PLOT_W / total) <= 1, \
            f"{path}: {f['width']:.2f} px wide for {count}/{total} samples"
        assert f["info"] == f"{count} sample{'s' if count != 1 else ''} " \
                            f"({100 * count / total:.2f}%)", f"{path}: tooltip {f['info']!r}"
    by_name = {f["name"]: f["cls"][0] for f in boxes}
    assert by_name["work (/srv/app.py:12)"] == "u"
    assert by_name["dumps (/usr/lib/python3.11/json/__init__.py:231)"] == "s"
    assert by_name['fé;"q" (<frozen a;b>:7)'] == "s"
    assert by_name["get (/srv/venv/lib/python3.11/site-packages/requests/api.py:73)"] == "t"
    assert by_name["[incomplete]"] == by_name["thread 101"] == "n"
    header = text_of(page, "title") + " | " + text_of(page, "subtitle")
    for part in ("pid 100 (python3 app.py)", "1.50 s", "100 Hz", "124 samples"):
        assert part in header, f"{part!r} not in the header {header!r}"
    assert text_of(page, "note") is None, "no frame of the fixed profile is too narrow"
    assert page.errors() == []


def test_click_zooms_a_frame_to_full_width_and_reset_returns(browser, fixed_svg, artifacts):
    page = open_svg(browser, fixed_svg)
    before = {f["name"]: f for f in frames(page)}
    target = before["main (/srv/app.py:32)"]
    page.move(*center(target))
    details = text_of(page, "details")
    assert details == "main (/srv/app.py:32), 30 samples (24.19%)", details
    page.click(*center(target))
    after = {f["name"]: f for f in frames(page)}
    screenshot(page, artifacts, f"zoomed-{fixed_svg.suffix[1:]}")
    for name in ("main (/srv/app.py:32)", "dumps (/usr/lib/python3.11/json/__init__.py:231)",
                 "<module> (/srv/app.py:40)", "all"):
        f = after[name]
        assert f["shown"] and abs(f["left"] - PLOT_X0) <= 1 and \
            abs(f["width"] - PLOT_W) <= 1, f"{name} after zoom: {f}"
    for name in ("work (/srv/app.py:12)", "thread 101", "[no Python frame]"):
        assert not after[name]["shown"], f"{name} should be hidden after zoom"
    assert "a" in after["all"]["cls"] and "a" not in after["main (/srv/app.py:32)"]["cls"]
    assert page.evaluate("getComputedStyle(document.getElementById('reset'))"
                         ".visibility") == "visible"
    page.click(*element_center(page, "reset"))
    again = {f["name"]: f for f in frames(page)}
    for name, f in before.items():
        assert again[name]["shown"] and abs(again[name]["left"] - f["left"]) <= 0.5 and \
            abs(again[name]["width"] - f["width"]) <= 0.5, f"{name} after reset: {again[name]}"
    assert page.evaluate("getComputedStyle(document.getElementById('reset'))"
                         ".visibility") == "hidden"
    assert page.errors() == []


def search(page, how, term):
    """Asks for a search through the UI: the Search button or Ctrl-F, then the prompt."""
    mark = page.browser.mark()
    if how == "button":
        pending = page.click(*element_center(page, "search"), block=False)
    else:
        pending = page.key("f", code="KeyF", modifiers=2, key_code=70, block=False)
    page.handle_dialog(prompt_text=term, since=mark)
    page.finish(pending)
    return {f["name"] for f in frames(page) if "m" in f["cls"]}


@pytest.mark.parametrize("how,term,names,percent", [
    # 80 + 15 + 5 samples, though main, work and the others inside them match too.
    ("button", r"/srv/app\.py", {"<module> (/srv/app.py:40)", "main (/srv/app.py:31)",
                            "main (/srv/app.py:32)", "work (/srv/app.py:12)",
                            "Worker.run (/srv/app.py:20)", "<lambda> (/srv/app.py)"}, 80.65),
    ("ctrl-f", "^main", {"main (/srv/app.py:31)", "main (/srv/app.py:32)"}, 64.52),
    # Not a valid regular expression: searched as plain text.
    ("button", "[incomplete", {"[incomplete]"}, 4.03),
    ("ctrl-f", "x<y & z", {'process 200 python3 -c "x<y & z"'}, 19.35),
])
def test_search_highlights_matches_and_counts_each_sample_once(browser, fixed_svg, artifacts,
                                                               how, term, names, percent):
    page = open_svg(browser, fixed_svg)
    assert search(page, how, term) == names
    matched = text_of(page, "matched")
    assert matched.startswith(f"Matched: {percent:.2f}%"), matched
    if percent == 80.65:
        screenshot(page, artifacts, f"search-{fixed_svg.suffix[1:]}")
    assert text_of(page, "search") == "Clear search"
    page.click(*element_center(page, "search"))
    assert not [f for f in frames(page) if "m" in f["cls"]]
    assert text_of(page, "matched") == "" and text_of(page, "search") == "Search"
    assert page.errors() == []


def test_large_profile_loads_and_says_frames_were_merged(browser, artifacts, tmp_path):
    out = tmp_path / "large.svg"
    with open(out, "wb") as f:
        p = subprocess.run([build_plain(), "svg", "--large", str(LARGE_STACKS)], stdout=f,
                           stderr=subprocess.PIPE, timeout=300)
    assert p.returncode == 0, p.stderr
    start = time.monotonic()
    page = open_svg(browser, out, timeout=180)   # a hang guard, not a timing assertion
    loaded = time.monotonic() - start
    shown = page.evaluate("document.querySelectorAll('#frames > g').length")
    print(f"{LARGE_STACKS} stacks: {out.stat().st_size / 1e6:.1f} MB, {shown} frames drawn, "
          f"loaded in {loaded:.2f} s")
    note = text_of(page, "note") or ""
    assert "merged" in note, f"no note on the frames left out: {note!r}"
    assert 0 < shown < 100_000, f"{shown} frames drawn"
    # Zooming into the widest frame of the second row still works.
    row = max(f["y"] for f in frames(page) if not f["root"])
    widest = max((f for f in frames(page) if f["y"] == row), key=lambda f: f["width"])
    page.click(*center(widest))
    assert page.evaluate("getComputedStyle(document.getElementById('reset'))"
                         ".visibility", timeout=120) == "visible"
    screenshot(page, artifacts, "large-zoomed")
    assert page.errors() == []


def record_svg(h, pid, out, fmt=True, duration=DURATION):
    args = ["record", "-p", pid, "-r", RATE, "-d", duration, "-o", out]
    if fmt:
        args += ["-f", "svg"]
    run = h.run_profiler(args, duration + PROFILER_GRACE, out=out)
    assert run.rc == 0 and not BAD_OUTPUT.search(run.stderr), run.describe()
    assert out.exists(), f"no {out}\n{run.describe()}"
    return run


def check_fa_share(boxes, w, before, run):
    """fa's share of the fa+fb width is the one the ratio workload spent."""
    width = {fn: sum(f["width"] for f in boxes if f["name"].startswith(f"{fn} ("))
             for fn in ("fa", "fb")}
    share = fraction(width["fa"], width["fa"] + width["fb"])
    want = spent_fa_share(w, before)
    assert width["fb"] >= 10 and abs(share - want) <= 0.05, (
        f"fa's share of fa+fb width is {share:.3f} ({width}), the workload spent "
        f"{want:.3f} (+- 0.05; its iterations promise "
        f"{w.truth['expected_fa_share']:.2f})\n{run.describe()}")


def test_record_svg_shows_fa_and_fb_at_3_to_1(py, browser, artifacts, tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(py, "ratio")
        before = w.read_truth()
        out = tmp_path / "ratio.svg"
        run = record_svg(h, w.pid, out)
    finally:
        h.close()
    page = open_svg(browser, out)
    screenshot(page, artifacts, f"ratio-{py.id}")
    boxes = frames(page)
    check_fa_share(boxes, w, before, run)
    script = py.script("ratio")
    for fn in ("fa", "fb"):
        assert any(f["name"].startswith(f"{fn} ({script}:") for f in boxes), \
            f"no {fn} frame of {script}"
    assert page.errors() == []


def test_svg_suffix_picks_the_svg_format(py311, tmp_path, profiler_bin):
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(py311, "ratio")
        out = tmp_path / "by-suffix.svg"
        record_svg(h, w.pid, out, fmt=False, duration=1)
    finally:
        h.close()
    head = out.read_bytes()[:300]
    assert head.startswith(b"<?xml") and b"<svg " in head, head


@pytest.mark.parametrize("name", ["ratio.html", "ratio.HTM"])
def test_html_suffix_writes_a_flame_graph_page_that_works_in_the_browser(
        py311, browser, artifacts, tmp_path, profiler_bin, name):
    """`-o profile.html` (any case, .htm too): an HTML page with the interactive flame
    graph, as CPython's profilers and py-spy users expect, not collapsed text."""
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(py311, "ratio")
        before = w.read_truth()
        out = tmp_path / name
        run = record_svg(h, w.pid, out, fmt=False)
    finally:
        h.close()
    assert out.read_bytes().startswith(b"<!DOCTYPE html>"), out.read_bytes()[:200]
    page = open_svg(browser, out)
    screenshot(page, artifacts, f"ratio-{name.replace('.', '-')}")
    boxes = frames(page)
    check_fa_share(boxes, w, before, run)
    fa = max((f for f in boxes if f["name"].startswith("fa (")), key=lambda f: f["width"])
    page.move(*center(fa))
    assert text_of(page, "details").startswith(fa["name"] + ", "), text_of(page, "details")
    page.click(*center(fa))
    zoomed = {f["name"]: f for f in frames(page) if f["shown"]}
    assert abs(zoomed[fa["name"]]["width"] - PLOT_W) <= 1, zoomed[fa["name"]]
    assert search(page, "ctrl-f", "^fb ") and text_of(page, "matched").startswith("Matched: ")
    assert page.evaluate("document.title").startswith("pybpfprof: pid "), \
        page.evaluate("document.title")
    assert page.errors() == []
