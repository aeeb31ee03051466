"""One self-contained HTML page for a PyTorch trace: findings, the dependency graph among
the ops involved (an SVG drawn here, no Graphviz binary), and a footprint grid per finding.
No scripts, fonts or images are loaded from anywhere: the page is one file.
"""
from __future__ import annotations

from html import escape
from pathlib import Path

GRID_CELLS = 1024   # a storage with more elements shows the window around the finding
COLORS = {"in-op-overlap": "#c0392b", "self-overlap-write": "#d35400", "RAW": "#8e44ad",
          "WAW": "#2c3e50", "WAR": "#16a085"}

CSS = """
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;font-size:13px;text-align:left;vertical-align:top}
code{font-size:12px}
.grid{display:inline-block;margin:.3em 0 1em 0}
.cell{width:12px;height:12px;display:inline-block;margin:1px;background:#eee}
.cell.v0{background:#9ecae1}.cell.v1{background:#fdd0a2}.cell.v0.v1{background:#bcbddc}
.cell.hit{background:#e6550d !important;outline:1px solid #000}
.row{white-space:nowrap;line-height:0}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px}
"""


def _grid(f) -> str:
    ref = f.views[0]
    k = ref.itemsize
    total = max(ref.gen.nbytes // k, 1)
    hits = set(f.elements())
    marks = [set(f.view_elements(n)) for n in range(min(2, len(f.views)))]
    lo, hi = 0, total
    if total > GRID_CELLS:
        centre = min(hits) if hits else 0
        lo = max(0, centre - GRID_CELLS // 4)
        hi = min(total, lo + GRID_CELLS)
    cols = ref.sizes[-1] * ref.strides[-1] if ref.sizes and ref.strides and \
        ref.sizes[-1] * ref.strides[-1] <= 64 else 32
    cols = max(cols, ref.strides[0] if ref.strides and 0 < ref.strides[0] <= 64 else cols)
    rows, cells = [], []
    for e in range(lo, hi):
        cls = ["cell"]
        for n, m in enumerate(marks):
            if e in m:
                cls.append(f"v{n}")
        if e in hits:
            cls.append("hit")
        cells.append(f'<span class="{" ".join(cls)}" title="element {e}"></span>')
        if len(cells) == cols:
            rows.append('<div class="row">' + "".join(cells) + "</div>")
            cells = []
    if cells:
        rows.append('<div class="row">' + "".join(cells) + "</div>")
    note = "" if (lo, hi) == (0, total) else f" (elements {lo}..{hi - 1} of {total})"
    return (f'<div class="grid" data-storage="{f.storage.name}">'
            f"<div>{escape(f.storage.name)}, {total} elements{note}</div>"
            + "".join(rows) + "</div>")


def _svg(trace, findings) -> str:
    """Arc diagram: the ops in findings (program order, top to bottom), their dependency
    edges from ``af.analyze`` among them in grey, the findings' pairs in colour."""
    from ..analysis.dependencies import analyze
    involved = sorted({op.index for f in findings for op in f.ops})
    if not involved:
        return "<p>No findings: nothing to draw.</p>"
    ops = {op.index: op for op in trace.ops}
    y = {i: 30 + 26 * n for n, i in enumerate(involved)}
    width, height = 760, 30 + 26 * len(involved)
    parts = [f'<svg width="{width}" height="{height}" '
             f'class="graph">']
    live = [op for op in trace.ops if not op.failed and op.accesses]
    names = {op.name: op.index for op in live}
    graph = analyze(live) if len(live) <= 20000 else None
    drawn = set()
    if graph is not None:
        for d in graph.dependencies:
            a, b = names[d.src], names[d.dst]
            if a in y and b in y and (a, b) not in drawn:
                drawn.add((a, b))
                parts.append(_arc(y[a], y[b], "#bbb", 1, d.kind))
    for f in findings:
        if len(f.ops) == 2:
            parts.append(_arc(y[f.ops[0].index], y[f.ops[1].index],
                              COLORS.get(f.kind, "#000"), 2, f.kind))
    for i in involved:
        op = ops[i]
        flagged = [f.kind for f in findings if len(f.ops) == 1 and f.ops[0].index == i]
        fill = COLORS.get(flagged[0], "#fff") if flagged else "#fff"
        parts.append(f'<circle cx="20" cy="{y[i]}" r="6" fill="{fill}" stroke="#333"/>')
        label = f"#{i} {op.aten}  {op.line.rsplit('/', 1)[-1]}" + (" (failed)" if op.failed else "")
        parts.append(f'<text x="32" y="{y[i] + 4}" font-size="12" font-family="monospace">'
                     f"{escape(label)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _arc(y1, y2, color, w, kind) -> str:
    bend = 340 + min(380, abs(y2 - y1) // 2)
    return (f'<path d="M 320 {y1} C {bend} {y1}, {bend} {y2}, 320 {y2}" fill="none" '
            f'stroke="{color}" stroke-width="{w}"><title>{kind}</title></path>')


def to_html(trace) -> str:
    findings = trace.findings()
    reuse = trace.reuse()
    rows = []
    for n, f in enumerate(findings):
        ops = "<br>".join(escape(f"{op.name}{' (failed)' if op.failed else ''}")
                          for op in f.ops)
        lines = "<br>".join(escape(f"{line}") for line in f.lines)
        src = "<br>".join(f"<code>{escape(op.source)}</code>" for op in f.ops)
        rows.append(
            f'<tr class="finding" id="finding-{n}" data-kind="{escape(f.kind)}" '
            f'data-count="{f.count}" data-ops="{escape(" ".join(op.name for op in f.ops))}">'
            f'<td>{n}</td><td style="color:{COLORS.get(f.kind, "#000")}"><b>{escape(f.kind)}'
            f"</b></td><td>{ops}</td><td>{f.count}</td><td>{lines}</td><td>{src}</td>"
            f"<td>{escape(', '.join(v.describe() for v in f.views))}</td></tr>")
    grids = "".join(f"<h3>Finding {n}: {escape(f.describe())}</h3>{_grid(f)}"
                    for n, f in enumerate(findings))
    reuse_rows = "".join(
        f"<tr><td>{escape(f.kind)}</td><td>{escape(' -> '.join(op.name for op in f.ops))}"
        f"</td><td>{f.count}</td></tr>" for f in reuse[:200])
    legend = ('<div class="legend"><span style="background:#9ecae1"></span>first view'
              '<span style="background:#fdd0a2"></span>second view'
              '<span style="background:#bcbddc"></span>both'
              '<span style="background:#e6550d"></span>elements of the finding</div>')
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>aliasflow trace report'
        f"</title><style>{CSS}</style></head><body>"
        f"<h1>aliasflow trace report</h1><p>{len(trace.raw)} aten calls, "
        f"{len(trace.storages)} storages, <span id='nfindings'>{len(findings)}</span> "
        f"finding(s), {len(reuse)} conflict(s) across memory reuse.</p>"
        "<h2>Findings</h2><table><tr><th>#</th><th>kind</th><th>ops</th><th>elements</th>"
        "<th>lines</th><th>source</th><th>views</th></tr>" + "".join(rows) + "</table>"
        "<h2>Dependency graph (ops in findings)</h2>" + _svg(trace, findings) +
        "<h2>Footprints</h2>" + legend + grids +
        "<h2>Across memory reuse</h2><table><tr><th>kind</th><th>ops</th><th>elements</th>"
        "</tr>" + reuse_rows + "</table></body></html>")


def write_html(trace, path) -> None:
    """Write :func:`to_html` of ``trace`` to ``path``."""
    Path(path).write_text(to_html(trace), encoding="utf-8")
