# SPDX-License-Identifier: GPL-2.0-only
"""Writes the benchmark report that `make bench` made to docs/performance.md (its chart
beside it as docs/bench-chart.svg), and replaces README.md's "## Performance" section (up
to the next "## " heading) with the report's verdicts (its Goals table) and a link to the
whole report.

Usage: readme_perf.py [REPORT [README [DOC]]]
       (default build/bench/report.md, README.md, docs/performance.md beside README)"""
import os
import re
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = "bench-chart.svg"
REPRODUCE = ("Reproduce with `sudo make bench` (root: BPF, chroot, /proc in the chroot). It "
             "writes build/bench/report.md and build/bench/chart.svg and then generates "
             "this page and README's verdicts from them (`tools/bench/run.py`, "
             "`tools/bench/readme_perf.py`); how long it took and how loaded the machine "
             "was are in the first paragraph. Some parts alone: `sudo /usr/bin/python3 "
             "tools/bench/run.py --parts 9,10` (numbered as below; 8 and 11 are drawn from "
             "the others).")


def body(report):
    """The report without its title line."""
    lines = report.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return lines


def doc(report):
    out = ["# Performance", "", REPRODUCE]
    out += [line.replace("](chart.svg)", f"]({CHART})") for line in body(report)]
    return "\n".join(out).rstrip() + "\n"


def goals(report):
    """The report's "## Goals" section, without its heading."""
    m = re.search(r"^## Goals\n(.*?)(?=^## |\Z)", report, re.M | re.S)
    if not m:
        raise SystemExit("readme_perf: the report has no '## Goals' section")
    return m.group(1).strip()


def section(report, doc_link):
    return "\n".join([
        "## Performance", "",
        "What `sudo make bench` measured against each goal, side by side with CPython "
        f"3.15's own profiler; every table, the method and the machine are in "
        f"[{doc_link}]({doc_link}).", "",
        goals(report), ""])


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
    target = sys.argv[3] if len(sys.argv) > 3 else \
        os.path.join(os.path.dirname(readme), "docs", "performance.md")
    with open(report) as f:
        text = f.read()
    if "SMOKE RUN" in text:
        raise SystemExit("readme_perf: refusing a smoke run's report")
    with open(readme) as f:
        old = f.read()
    link = os.path.relpath(os.path.abspath(target), os.path.dirname(os.path.abspath(readme)))
    new = replace(old, section(text, link))
    chart = os.path.join(os.path.dirname(report), "chart.svg")
    if os.path.exists(chart):
        shutil.copyfile(chart, os.path.join(os.path.dirname(target), CHART))
    with open(target, "w") as f:
        f.write(doc(text))
    with open(readme, "w") as f:
        f.write(new)
    print(f"readme_perf: {target} written and {readme}'s Performance section replaced "
          f"from {report}")


if __name__ == "__main__":
    main()
