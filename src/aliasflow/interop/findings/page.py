"""The data of the HTML report (rendered by :mod:`aliasflow.viz.report`): the findings'
JSON, a footprint grid per finding, and the dependency graph among their ops.

Everything here is plain data (lists, dicts, ints, strings), so the page shows exactly what
the JSON says, and any tracer that produces findings gets the same report.
"""
from __future__ import annotations

import numpy as np

GRID_CELLS = 1024    # storages up to this many elements get a full grid with index labels
RANGES = 24          # a larger storage's summary lists at most this many ranges


def _starts(slot, limit=1 << 20):
    """Start addresses of the slot's elements in index order (None if too many)."""
    n = int(np.prod(slot.shape, dtype=np.int64)) if slot.shape else 1
    if n > limit:
        return None
    starts = np.full((), slot.start, dtype=np.int64)
    for size, stride in zip(slot.shape, slot.strides):
        starts = np.add.outer(starts, np.arange(size, dtype=np.int64) * (stride * slot.itemsize))
    return starts.reshape(-1)


def _ranges(sorted_ints) -> list[list[int]]:
    out = []
    for e in sorted_ints:
        if out and e == out[-1][1] + 1:
            out[-1][1] = e
        else:
            out.append([e, e])
    return out


def _columns(slots, base: int, k: int, total: int) -> int:
    """Grid columns: the row stride of a view with rows that do not overlap (the written
    one first), else the stride of a column (a 1-d view stepping 3 or more elements: a
    row written from a column), else one row (16 columns for a large storage)."""
    usable = [s for s in slots if s.view is not None and s.itemsize == k
              and s.view.tensor.storage.address == base and not (s.start - base) % k]
    for slot in usable:
        if len(slot.shape) >= 2:
            row = abs(slot.strides[-2])
            if 0 < row <= 64 and row >= slot.shape[-1] * abs(slot.strides[-1]) and \
                    total % row == 0:
                return row
    for slot in usable:
        if len(slot.shape) == 1 and slot.shape[0] > 1:
            row = abs(slot.strides[0])
            if 3 <= row <= 64 and total % row == 0:
                return row
    return total if total <= 64 else 16


def grid(f, names: list[str]) -> dict:
    """Footprint data of finding ``f``: storage size in elements of the first slot's dtype,
    which elements each of the first two slots touches, the finding's elements, and for
    each of those its index in the first slot's view (``labels[0, 3]``)."""
    if not f.slots:   # a finding that does not carry its views (a NumPy order fact)
        return {}
    s0 = f.slots[0]
    if s0.view is None:
        return {"storage": "no memory", "total": 0}
    base = s0.view.tensor.storage.address
    k = s0.itemsize
    total = max(s0.view.tensor.storage.nbytes // k, 1)
    hits = [int(e) for e in f.elements()]
    marks = []
    for slot in f.slots[:2]:
        starts = _starts(slot)
        if starts is None or slot.view is None or slot.view.tensor.storage.address != base:
            marks.append(None)
            continue
        marks.append(sorted({int(e) for e in (starts - base) // k}))
    labels = {}
    starts = _starts(s0, 1 << 16)
    if starts is not None:
        hit = set(hits)
        name = names[0] if names else "?"
        shape = tuple(s0.shape)
        for flat, e in enumerate(((starts - base) // k).tolist()):
            if e in hit and e not in labels:
                index = np.unravel_index(flat, shape) if shape else ()
                labels[e] = f"{name}[{', '.join(str(int(i)) for i in index)}]"
    cols = _columns(f.slots[:2], base, k, total)
    out = {"storage": f"s{s0.storage}", "dtype": s0.dtype, "total": total, "cols": cols,
           "hits": hits[:4096], "labels": {str(e): v for e, v in list(labels.items())[:4096]},
           "names": names[:2]}
    if total <= GRID_CELLS:
        out["marks"] = [m for m in marks]
    else:
        out["ranges"] = _ranges(hits)[:RANGES]
        out["extents"] = [[m[0], m[-1], len(m)] if m else None for m in marks]
    return out


def graph(findings, infos, records, limit: int = 20000) -> dict:
    """The ops in findings (program order) and the dependency edges among them
    (``af.analyze`` of the trace's records), plus the findings' own pairs, labelled."""
    from ...analysis.dependencies import analyze
    involved = sorted({op.index for f in findings for op in f.ops})
    if not involved:
        return {"nodes": [], "edges": []}
    nodes = []
    for i in involved:
        info = infos[i]
        flagged = [f.severity for f in findings if len(f.ops) == 1 and f.ops[0].index == i]
        nodes.append({"index": i, "label": info.label, "line": info.line,
                      "severity": flagged[0] if flagged else None, "failed": info.failed})
    edges = []
    inside = set(involved)
    live = [op for op, info in zip(records, infos) if op.accesses and not info.failed]
    if len(live) <= limit:
        position = {info.name: info.index for info in infos}
        seen = set()
        for d in analyze(live).dependencies:
            a, b = position[d.src], position[d.dst]
            if a in inside and b in inside and (a, b, d.kind) not in seen:
                seen.add((a, b, d.kind))
                edges.append({"src": a, "dst": b, "kind": d.kind, "severity": None})
    for f in findings:
        if len(f.ops) == 2:
            edges.append({"src": f.ops[0].index, "dst": f.ops[1].index, "kind": f.kind,
                          "severity": f.severity})
    return {"nodes": nodes, "edges": edges}


def model(data: dict, findings, infos, records, title: str) -> dict:
    """Everything the page shows: ``data`` (the JSON), a grid per finding, the graph."""
    return {"title": title, "data": data,
            "grids": [grid(f, f.names) for f in findings],
            "graph": graph([f for f in findings if f.severity != "order"] or findings,
                           infos, records)}
