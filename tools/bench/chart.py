# SPDX-License-Identifier: GPL-2.0-only
"""A small SVG line chart writer for the benchmark report: side-by-side panels that
share nothing but their style, each with its own x values and series. Plain SVG 1.1,
no script, no external fonts."""
import math
from xml.sax.saxutils import escape

PANEL_W, PANEL_H = 330, 250
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 58, 14, 34, 46
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def _nice_max(v):
    if v <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(v))
    for step in (1, 2, 2.5, 5, 10):
        if step * mag >= v:
            return step * mag
    return 10 * mag


def _fmt(v):
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}".rstrip("0").rstrip(".")
    return f"{v:.2f}".rstrip("0").rstrip(".")


def panel(out, x0, spec):
    """spec: {title, xlabel, ylabel, x: [values], series: {name: [y or None]}, note}"""
    w, h = PANEL_W - MARGIN_L - MARGIN_R, PANEL_H - MARGIN_T - MARGIN_B
    ox, oy = x0 + MARGIN_L, MARGIN_T
    out.append(f'<text x="{x0 + PANEL_W / 2}" y="18" class="t">{escape(spec["title"])}</text>')
    out.append(f'<rect x="{ox}" y="{oy}" width="{w}" height="{h}" class="frame"/>')
    xs = spec.get("x") or []
    ys = [y for ser in spec.get("series", {}).values() for y in ser if y is not None]
    if not xs or not ys:
        out.append(f'<text x="{ox + w / 2}" y="{oy + h / 2}" class="t">'
                   f'{escape(spec.get("note") or "no data")}</text>')
        return
    # Headroom above the highest point keeps the lines clear of the legend.
    ymax = _nice_max(max(ys) * (1.1 + 0.1 * len(spec["series"])))
    for k in range(5):
        yv = ymax * k / 4
        py = oy + h - h * k / 4
        out.append(f'<line x1="{ox}" y1="{py:.1f}" x2="{ox + w}" y2="{py:.1f}" class="grid"/>')
        out.append(f'<text x="{ox - 4}" y="{py + 4:.1f}" class="yl">{_fmt(yv)}</text>')
    # x positions: evenly spaced categories (depths and counts span decades)
    n = len(xs)
    px = [ox + (w * (i + 0.5) / n) for i in range(n)]
    for i, xv in enumerate(xs):
        out.append(f'<text x="{px[i]:.1f}" y="{oy + h + 16}" class="xl">{xv}</text>')
    out.append(f'<text x="{ox + w / 2}" y="{oy + h + 36}" class="xl">'
               f'{escape(spec["xlabel"])}</text>')
    out.append(f'<text x="{x0 + 14}" y="{oy + h / 2}" class="xl" '
               f'transform="rotate(-90 {x0 + 14} {oy + h / 2})">{escape(spec["ylabel"])}</text>')
    for si, (name, ser) in enumerate(spec["series"].items()):
        c = COLOURS[si % len(COLOURS)]
        pts = [(px[i], oy + h - h * y / ymax) for i, y in enumerate(ser) if y is not None]
        if len(pts) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{c}"/>')
        ly = oy + 12 + 14 * si
        out.append(f'<line x1="{ox + 6}" y1="{ly - 4}" x2="{ox + 20}" y2="{ly - 4}" '
                   f'stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{ox + 24}" y="{ly}" class="lg">{escape(name)}</text>')
    if spec.get("note"):
        out.append(f'<text x="{ox + w / 2}" y="{oy + h - 8}" class="xl">'
                   f'{escape(spec["note"])}</text>')


def write(path, title, panels):
    width = PANEL_W * len(panels)
    height = PANEL_H + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
           '<style>.t{font-size:12px;text-anchor:middle;font-weight:bold}'
           '.xl{font-size:10px;text-anchor:middle}.yl{font-size:10px;text-anchor:end}'
           '.lg{font-size:10px}.grid{stroke:#ddd}.frame{fill:none;stroke:#888}</style>',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="{height - 6}" class="xl">{escape(title)}</text>']
    for i, spec in enumerate(panels):
        panel(out, i * PANEL_W, spec)
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
