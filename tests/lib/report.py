# SPDX-License-Identifier: GPL-2.0-only
"""`pybpfprof report`'s table read back: its header, then one dict per row."""

import re

ROW = re.compile(r"^\s*(?P<selfp>[\d.]+)%\s+(?P<totalp>[\d.]+)%\s+(?P<rest>.*)$")


def parse_report(text):
    """(column names, rows): each row {column: number, "name": text}. The columns are
    those of the heading line ("self%", "total%", "self", "total", "on-CPU", ...); a
    row's numbers are read in their order, the rest of the line is its name."""
    lines = text.splitlines()
    head = next((i for i, line in enumerate(lines) if line.lstrip().startswith("self%")),
                None)
    assert head is not None, f"no table heading in the report:\n{text[:2000]}"
    # "self s" and "total s" (seconds) are one column each.
    cols = lines[head].replace("self s", "self").replace("total s", "total").split()[:-1]
    rows = []
    for line in lines[head + 1:]:
        m = ROW.match(line)
        if not m:
            if line.strip():
                break
            continue
        values = m["rest"].split(None, len(cols) - 2)
        numbers = [float(m["selfp"]), float(m["totalp"])] + \
            [float(v) for v in values[:len(cols) - 2]]
        row = dict(zip(cols, numbers))
        row["name"] = values[len(cols) - 2] if len(values) > len(cols) - 2 else ""
        rows.append(row)
    return cols, rows


THREAD = re.compile(r"^thread (\d+)")


def rows_by_tid(rows):
    """{tid: row} of a report --by thread."""
    out = {}
    for r in rows:
        m = THREAD.match(r["name"])
        if m:
            out[int(m[1])] = r
    return out
