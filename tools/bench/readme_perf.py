# SPDX-License-Identifier: GPL-2.0-only
"""Replaces README.md's "## Performance" section (up to the next "## " heading) with the
benchmark report that `make bench` wrote, its own headings moved one level down and its
chart linked from where the README can see it.

Usage: readme_perf.py [REPORT [README]]   (default build/bench/report.md, README.md)"""
import os
import re
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = "docs/bench-chart.svg"


def section(report):
    lines = report.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    out = ["## Performance", "",
           "Reproduce with `sudo make bench` (root: BPF, chroot, /proc in the chroot). It "
           "writes build/bench/report.md and build/bench/chart.svg and then generates this "
           "section from them (`tools/bench/run.py`, `tools/bench/readme_perf.py`); how "
           "long it took and how loaded the machine was are in the first paragraph. Some "
           "parts alone: `sudo /usr/bin/python3 tools/bench/run.py --parts 9,10` (numbered "
           "as below; 8 and 11 are drawn from the others)."]
    for line in lines:
        if line.startswith("#"):
            line = "#" + line
        out.append(line.replace("](chart.svg)", f"]({CHART})"))
    return "\n".join(out).rstrip() + "\n"


def replace(readme, new):
    m = re.search(r"^## Performance\n.*?(?=^## )", readme, re.M | re.S)
    if not m:
        raise SystemExit("readme_perf: README has no '## Performance' section followed "
                         "by another '## ' section")
    return readme[:m.start()] + new + "\n" + readme[m.end():]


def main():
    report = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "build", "bench",
                                                                "report.md")
    readme = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "README.md")
    with open(report) as f:
        text = f.read()
    if "SMOKE RUN" in text:
        raise SystemExit("readme_perf: refusing a smoke run's report")
    with open(readme) as f:
        old = f.read()
    new = replace(old, section(text))
    chart = os.path.join(os.path.dirname(report), "chart.svg")
    if os.path.exists(chart):
        shutil.copyfile(chart, os.path.join(os.path.dirname(readme), CHART))
    with open(readme, "w") as f:
        f.write(new)
    print(f"readme_perf: {readme} Performance section replaced from {report}")


if __name__ == "__main__":
    main()
