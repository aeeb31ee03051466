"""One self-contained HTML page for a traced program's findings.

It renders the page model of :func:`aliasflow.interop.findings.page.model` (the findings'
JSON, a footprint grid per finding, the dependency graph among their ops): findings in
sections by severity, most serious first, each with its names, lines, hint and confirmed
values; order facts collapsed; a footprint grid with index labels for small storages and a
range summary for large ones; a legend for every mark and colour; the graph as inline SVG
with arrows and labels. No scripts, fonts or images are loaded from anywhere.
"""
from __future__ import annotations

from html import escape
from pathlib import Path

COLORS = {"wrong": "#c0392b", "hazard": "#d35400", "stale-view": "#8e44ad",
          "order": "#2c3e50"}
SECTIONS = [("wrong", "Wrong results",
             "re-running the op on copies of its arguments gave different values"),
            ("hazard", "Hazards",
             "the result depends on the kernel's order; this run agreed, or the framework "
             "refused"),
            ("stale-view", "Stale views",
             "a view made before a write through another view changed part of its memory"),
            ("order", "Order facts",
             "implicit flows between ops through different views (not bugs in a program "
             "that runs in order)")]

CSS = """
body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1200px}
h2{border-bottom:2px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.4em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;font-size:13px;text-align:left;vertical-align:top}
code{font-size:12px;background:#f6f6f6;padding:0 .2em}
.finding{border-left:6px solid #999;padding:.3em .8em;margin:.8em 0;background:#fcfcfc}
.finding h3{margin:.2em 0;font-size:15px}
.hint{background:#eef6ee;border:1px solid #cde5cd;padding:.3em .6em;font-size:13px}
.note{color:#666;font-size:12px}
table.grid td{width:14px;height:14px;padding:0;border:1px solid #fff;background:#eee}
table.grid th{font-size:10px;font-weight:normal;color:#777;border:none;padding:0 3px}
table.grid td.v0{background:#9ecae1}table.grid td.v1{background:#fdd0a2}
table.grid td.v0.v1{background:#bcbddc}
table.grid td.hit{background:#e6550d !important;outline:1px solid #000}
.legend span.sw{display:inline-block;width:12px;height:12px;margin:0 4px 0 14px;
vertical-align:middle;border:1px solid #999}
.legend{font-size:13px;margin:.5em 0}
details{margin:.6em 0}summary{cursor:pointer;font-weight:bold}
"""


def _example(f: dict) -> str:
    ex = f.get("example")
    if not ex:
        return ""
    return (f"<tr><th>example</th><td><code>{escape(str(ex['at']))}</code> = "
            f"<b>{escape(str(ex['got']))}</b>, expected <b>{escape(str(ex['expected']))}"
            f"</b></td></tr>")


def _grid(g: dict) -> str:
    if not g or g.get("total", 0) == 0:
        return ""
    names = g.get("names", [])
    head = (f"<div class='note'>footprint in storage {escape(g['storage'])} "
            f"({g['total']} {escape(g.get('dtype', ''))} elements)</div>")
    hits = set(g.get("hits", []))
    labels = g.get("labels", {})
    if "marks" in g:
        marks = [set(m) if m is not None else set() for m in g["marks"]]
        cols = max(1, int(g["cols"]))
        rows = ["<tr><th></th>" + "".join(f"<th>{c}</th>" for c in range(cols)) + "</tr>"]
        for start in range(0, g["total"], cols):
            cells = []
            for e in range(start, min(start + cols, g["total"])):
                cls = [f"v{n}" for n, m in enumerate(marks) if e in m]
                if e in hits:
                    cls.append("hit")
                title = f"element {e}"
                if str(e) in labels:
                    title += f": {labels[str(e)]}"
                cells.append(f'<td class="{" ".join(cls)}" title="{escape(title)}"></td>')
            rows.append(f"<tr><th>{start}</th>{''.join(cells)}</tr>")
        return head + f'<table class="grid" data-storage="{escape(g["storage"])}">' + \
            "".join(rows) + "</table>" + _as_indices(g)
    parts = []
    for n, ext in enumerate(g.get("extents", [])):
        if ext:
            who = escape(names[n]) if n < len(names) else f"view {n}"
            parts.append(f"<tr><th>{who}</th><td>elements {ext[0]}..{ext[1]} "
                         f"({ext[2]} touched)</td></tr>")
    ranges = ", ".join(f"{a}..{b}" if a != b else f"{a}" for a, b in g.get("ranges", []))
    first = [labels[k] for k in list(labels)[:6]]
    parts.append(f"<tr><th>involved</th><td>{len(hits)} element(s): {escape(ranges)}"
                 + (f"<br>as indices: <code>{escape(', '.join(first))}</code>" if first else "")
                 + "</td></tr>")
    return head + f'<table class="summary" data-storage="{escape(g["storage"])}">' + \
        "".join(parts) + "</table>"


def _as_indices(g: dict, shown: int = 6) -> str:
    """The finding's elements as indices in the user's view, under a small grid (its cells
    say so only when hovered)."""
    labels = list(g.get("labels", {}).values())
    if not labels:
        return ""
    more = f" and {len(labels) - shown} more" if len(labels) > shown else ""
    return (f"<div class='note indices'>elements of the finding: <code>"
            f"{escape(', '.join(labels[:shown]))}</code>{more}</div>")


def _finding(n: int, f: dict, g: dict) -> str:
    color = COLORS.get(f["severity"], "#999")
    where = escape(f["lines"][0])   # a stale view's is the read
    source = escape(f.get("source") or (f["sources"][-1] if f["severity"] == "stale-view"
                                        else f["sources"][0]))
    ops = "<br>".join(escape(f"#{i} {label}" + (" (refused)" if i in f["failed"] else ""))
                      for i, label in zip(f["indices"], f["labels"]))
    rows = [f"<tr><th>names</th><td>{escape(', '.join(f['names']))}</td></tr>",
            f"<tr><th>ops</th><td>{ops}</td></tr>",
            f"<tr><th>lines</th><td>{escape(', '.join(f['lines']))}</td></tr>",
            f"<tr><th>elements</th><td>{f['count']}</td></tr>"]
    if f.get("contexts"):
        rows.append(f"<tr><th>run from</th><td>{escape(', '.join(f['contexts']))}</td></tr>")
    if f["occurrences"] > 1:
        rows.append(f"<tr><th>occurrences</th><td>{f['occurrences']}</td></tr>")
    if f["severity"] == "wrong":
        rows.append(f"<tr><th>differ</th><td>{f['differs']} element(s) differ from copy "
                    f"semantics</td></tr>")
        rows.append(_example(f))
    note = f"<div class='note'>{escape(f['note'])}</div>" if f.get("note") else ""
    hint = f"<div class='hint'>hint: {escape(f['hint'])}</div>" if f.get("hint") else ""
    return (f'<div class="finding" id="finding-{n}" data-severity="{escape(f["severity"])}" '
            f'data-kind="{escape(f["kind"])}" data-count="{f["count"]}" '
            f'data-ops="{escape(" ".join(f["ops"]))}" style="border-color:{color}">'
            f"<h3>{n}. <span style='color:{color}'>{escape(f['severity'])}</span> "
            f"{escape(f['kind'])} at {where}: <code>{source}</code></h3>"
            f"<table>{''.join(rows)}</table>{note}{hint}{_grid(g)}</div>")


def _svg(graph: dict) -> str:
    nodes = graph.get("nodes", [])
    if not nodes:
        return "<p>No findings: nothing to draw.</p>"
    y = {nd["index"]: 40 + 30 * k for k, nd in enumerate(nodes)}
    longest = max(len(f"#{nd['index']} {nd['label']}  {nd['line']} (refused)") for nd in nodes)
    x0 = min(40 + 7 * longest, 560)   # arrows start right of the longest label
    height = 60 + 30 * len(nodes)
    parts = [f'<svg width="980" height="{height}" class="graph" role="img" '
             f'aria-label="dependency graph">',
             '<defs>' + "".join(
                 f'<marker id="arrow-{key}" viewBox="0 0 10 10" refX="9" refY="5" '
                 f'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                 f'<path d="M 0 0 L 10 5 L 0 10 z" fill="{color}"/></marker>'
                 for key, color in [("dep", "#999")] + list(COLORS.items())) + '</defs>']
    lane = 0
    flagged = {(e["src"], e["dst"]) for e in graph.get("edges", []) if e.get("severity")}
    for e in graph.get("edges", []):
        if e["src"] not in y or e["dst"] not in y:
            continue
        if not e.get("severity") and (e["src"], e["dst"]) in flagged:
            continue   # the finding's own arrow says it
        y1, y2 = y[e["src"]], y[e["dst"]]
        sev = e.get("severity")
        color = COLORS.get(sev, "#999") if sev else "#999"
        key = sev if sev else "dep"
        bend = x0 + 50 + 50 * (lane % 5) + min(200, abs(y2 - y1))
        lane += 1
        width = 2.5 if sev else 1.2
        parts.append(f'<path d="M {x0} {y1} C {bend} {y1}, {bend} {y2}, {x0 + 4} {y2}" '
                     f'fill="none" stroke="{color}" stroke-width="{width}" '
                     f'marker-end="url(#arrow-{key})"><title>{escape(e["kind"])}: '
                     f'#{e["src"]} -> #{e["dst"]}</title></path>')
        label = e["kind"] + (f" ({sev})" if sev else "")
        parts.append(f'<text x="{int(0.75 * bend + 0.25 * x0) + 6}" '
                     f'y="{(y1 + y2) // 2 + 4}" font-size="11" fill="{color}">'
                     f'{escape(label)}</text>')
    for nd in nodes:
        fill = COLORS.get(nd["severity"], "#fff") if nd["severity"] else "#fff"
        i = nd["index"]
        parts.append(f'<circle cx="20" cy="{y[i]}" r="7" fill="{fill}" stroke="#333"/>')
        label = f"#{i} {nd['label']}  {nd['line']}" + (" (refused)" if nd["failed"] else "")
        parts.append(f'<text x="34" y="{y[i] + 4}" font-size="12" font-family="monospace">'
                     f"{escape(label)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _legend() -> str:
    sev = "".join(f'<span class="sw" style="background:{c}"></span>{escape(s)}'
                  for s, c in COLORS.items())
    marks = ('<span class="sw" style="background:#9ecae1"></span>first view (written)'
             '<span class="sw" style="background:#fdd0a2"></span>second view'
             '<span class="sw" style="background:#bcbddc"></span>both views'
             '<span class="sw" style="background:#e6550d;outline:1px solid #000"></span>'
             "elements of the finding"
             '<span class="sw" style="background:#eee"></span>other elements of the storage')
    graph = ('<span class="sw" style="background:#999"></span>dependency edge (analyze)'
             " &nbsp; coloured arrows: the findings' op pairs, filled circles: ops with a "
             "finding of their own")
    return (f'<div class="legend"><b>severity</b>{sev}</div>'
            f'<div class="legend"><b>footprint grid</b> (rows labelled by their first element, '
            f"columns by offset; hover a cell for its index){marks}</div>"
            f'<div class="legend"><b>graph</b> {graph}</div>')


def render(page: dict) -> str:
    """The HTML text of a page model."""
    data = page["data"]
    found = data["findings"]
    grids = page.get("grids", [{}] * len(found))
    counts = data.get("counts", {})
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s, _, _ in SECTIONS)
    # what each tracer saw: a NumPy-only page names no aten calls, a PyTorch-only one no
    # NumPy operations
    seen = []
    if data.get("numpy_operations") or not data.get("aten_calls"):
        seen.append(f"{data.get('numpy_operations', 0)} NumPy operations")
    if data.get("aten_calls") or "numpy_operations" not in data:
        seen.append(f"{data.get('aten_calls', 0)} aten calls, {data.get('storages', 0)} "
                    f"storages")
    body = [f"<h1>{escape(page['title'])}</h1>",
            f"<p>{escape(', '.join(seen))}: "
            f"<span id='nfindings'>{len(found)}</span> finding(s) ({escape(summary)}).</p>",
            _legend()]
    for severity, title, what in SECTIONS:
        items = [(n, f) for n, f in enumerate(found) if f["severity"] == severity]
        if not items:
            continue
        inner = "".join(_finding(n, f, grids[n] if n < len(grids) else {}) for n, f in items)
        head = f"{title} ({len(items)})"
        if severity == "order":
            body.append(f'<section id="sec-{severity}"><details><summary>{escape(head)}: '
                        f"{escape(what)}</summary>{inner}</details></section>")
        else:
            body.append(f'<section id="sec-{severity}"><h2 style="color:'
                        f'{COLORS[severity]}">{escape(head)}</h2><p class="note">'
                        f"{escape(what)}</p>{inner}</section>")
    if not found:
        body.append("<p>No findings.</p>")
    body.append("<h2>Dependency graph (ops in findings)</h2>" + _svg(page.get("graph", {})))
    for key, title in (("failed", "Refused by the framework"), ("untracked", "Not recorded")):
        rows = data.get(key) or []
        if rows:
            body.append(f"<h2>{title}</h2><table>" + "".join(
                f"<tr><td>{escape(r['op'])}</td><td>{escape(r['line'])}</td><td>"
                f"{escape(r.get('error') or r.get('why') or '')}</td></tr>" for r in rows)
                + "</table>")
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>'
            f"{escape(page['title'])}</title><style>{CSS}</style></head><body>"
            + "".join(body) + "</body></html>")


def write_html(source, path, all: bool = False) -> None:  # noqa: A002
    """Write the page of ``source`` (a page model, or anything with ``html_model(all)``: a
    trace) to ``path``."""
    page = source.html_model(all) if hasattr(source, "html_model") else source
    Path(path).write_text(render(page), encoding="utf-8")
