"""What a NumPy trace adds to a trace report (its findings go through the reporting layer
like any tracer's): what was and was not watched, the operations NumPy refused, as JSON (no
timings: two runs of one program give the same JSON) and as text lines; and the HTML page
model of a joint trace (NumPy's findings and PyTorch's on one page)."""
from __future__ import annotations

import numpy as np

from ..findings.source import relative
from .findings import line_of

SCHEMA_VERSION = 1


def watched(trace) -> dict:
    """What the trace watched: modules rewritten and the constructs in them, and what it
    left alone (constructs not rewritten, with lines; packages imported unrewritten)."""
    modules, constructs, unwatched = [], {}, {}
    for summary in trace.modules:
        modules.append(relative(summary.path))
        for kind, n in summary.watched.items():
            constructs[kind] = constructs.get(kind, 0) + n
        for why, lines in summary.unwatched.items():
            unwatched.setdefault(why, []).extend(
                f"{relative(summary.path)}:{line}" for line in lines)
    return {"modules": modules, "constructs": dict(sorted(constructs.items())),
            "unwatched": unwatched,
            "not_rewritten": sorted(getattr(trace, "not_rewritten", ()))}


def to_json(trace) -> dict:
    """The NumPy side of a trace report (the findings are the report's own)."""
    rec = trace.recorder
    return {
        "schema_version": SCHEMA_VERSION,
        "numpy": np.__version__,
        "operations": rec.count(),
        "failed": [{"op": f"{rec.note(i)[1]}#{i}", "line": line_of(rec.note(i)),
                    "error": rec.errors[i]} for i in sorted(rec.errors)],
        "untracked": [{"op": f"{rec.note(i)[1]}#{i}", "line": line_of(rec.note(i)),
                       "why": rec.untracked_ops[i]} for i in sorted(rec.untracked_ops)],
        "watched": watched(trace),
    }


def watch_lines(trace) -> list[str]:
    """Text: how much was recorded, what was watched and what not, what NumPy refused."""
    w = watched(trace)
    rec = trace.recorder
    out = [f"NumPy {np.__version__}: {rec.count()} operation(s) recorded"]
    if w["modules"]:
        kinds = ", ".join(f"{n} {k}" for k, n in w["constructs"].items())
        out.append(f"watched: {', '.join(w['modules'])} ({kinds or 'nothing to rewrite'})")
    not_watched = ["code not rewritten (NumPy itself, installed packages) except calls of "
                   "NumPy functions through the numpy module"]
    if w["not_rewritten"]:
        not_watched.append("imported without rewriting: " + ", ".join(w["not_rewritten"]) +
                           " (--include PACKAGE to watch one)")
    for why, lines in sorted(w["unwatched"].items()):
        not_watched.append(f"{why} at {', '.join(lines[:5])}" +
                           (f" and {len(lines) - 5} more" if len(lines) > 5 else ""))
    out.append("not watched: " + "; ".join(not_watched))
    if rec.errors:
        first = min(rec.errors)
        out.append(f"refused by NumPy: {len(rec.errors)} operation(s), first "
                   f"{line_of(rec.note(first))}: {rec.errors[first]}")
    if rec.untracked_ops:
        first = min(rec.untracked_ops)
        out.append(f"not recorded: {len(rec.untracked_ops)} operation(s), first "
                   f"{line_of(rec.note(first))}: {rec.untracked_ops[first]}")
    return out


def html_model(joint, all: bool = False) -> dict:  # noqa: A002
    """The page model (:func:`aliasflow.viz.report.write_html` renders it) of a
    :class:`~.joint.JointTrace`: NumPy's findings, then PyTorch's, in the one finding JSON
    both tracers share. The dependency graph is PyTorch's when the program used PyTorch (op
    indices are per tracer, so one graph shows one tracer's ops), else NumPy's. Each
    finding has its footprint grid (:func:`aliasflow.interop.findings.page.grid`)."""
    from ..findings.page import graph, grid
    from ..findings.render import SCHEMA_VERSION
    trace = joint.numpy
    found = trace.findings(all)
    mine = [f.to_json() for f in found]
    side = to_json(trace)
    if joint.torch is not None:
        page = joint.torch.html_model(all)
        data = dict(page["data"])
        grids = list(page.get("grids", ()))
    else:
        records = trace.ops
        page = {"title": "aliasflow trace report",
                "graph": graph([f for f in found if f.severity != "order"] or found,
                               [r.info for r in records], records)}
        data = {"schema_version": SCHEMA_VERSION, "tool": "aliasflow trace",
                "aten_calls": 0, "storages": 0, "findings": [], "failed": [],
                "untracked": []}
        grids = []
    data["numpy_operations"] = side["operations"]
    data["findings"] = mine + list(data["findings"])
    data["counts"] = {s: sum(1 for f in data["findings"] if f["severity"] == s)
                      for s in ("wrong", "hazard", "stale-view", "order")}
    data["failed"] = side["failed"] + list(data.get("failed") or [])
    data["untracked"] = side["untracked"] + list(data.get("untracked") or [])
    return dict(page, data=data, grids=[grid(f, f.names) for f in found] + grids)
