"""A NumPy trace as JSON (no timings: two runs of one script give the same JSON) and as text,
with what was and was not watched."""
from __future__ import annotations

import numpy as np

from .findings import line_of, relative

SCHEMA_VERSION = 1


def watched(trace) -> dict:
    """What the trace watched: modules rewritten and the constructs in them, and what it
    left alone (constructs not rewritten, with lines; modules imported unrewritten)."""
    modules, constructs, unwatched = [], {}, {}
    for summary in trace.modules:
        modules.append(relative(summary.path))
        for kind, n in summary.watched.items():
            constructs[kind] = constructs.get(kind, 0) + n
        for why, lines in summary.unwatched.items():
            unwatched.setdefault(why, []).extend(
                f"{relative(summary.path)}:{line}" for line in lines)
    return {"modules": modules, "constructs": constructs, "unwatched": unwatched,
            "not_rewritten": sorted(getattr(trace, "not_rewritten", ()))}


def to_json(trace, all: bool = False) -> dict:
    rec = trace.recorder
    return {
        "schema_version": SCHEMA_VERSION,
        "numpy": np.__version__,
        "operations": rec.count(),
        "findings": [f.to_json() for f in trace.findings(all)],
        "failed": [{"op": f"{rec.ops[i][1]}#{i}", "line": line_of(rec.ops[i]),
                    "error": rec.errors[i]} for i in sorted(rec.errors)],
        "untracked": [{"op": f"{rec.ops[i][1]}#{i}", "line": line_of(rec.ops[i]),
                       "why": rec.untracked_ops[i]} for i in sorted(rec.untracked_ops)],
        "watched": watched(trace),
    }


def _value(v):
    return repr(v) if not isinstance(v, list) else "one of " + ", ".join(map(repr, v))


def to_text(trace, all: bool = False) -> str:
    findings = trace.findings(all)
    w = watched(trace)
    rec = trace.recorder
    out = [f"NumPy {np.__version__}: {rec.count()} operation(s), {len(findings)} finding(s)"]
    if w["modules"]:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(w["constructs"].items()))
        out.append(f"watched: {', '.join(w['modules'])} ({kinds or 'nothing to rewrite'})")
    not_watched = ["code not rewritten (NumPy itself, installed packages) except calls of "
                   "NumPy functions through the numpy module"]
    if w["not_rewritten"]:
        not_watched.append("imported without rewriting: " + ", ".join(w["not_rewritten"]) +
                           " (--include NAME to watch a package)")
    for why, lines in sorted(w["unwatched"].items()):
        not_watched.append(f"{why} at {', '.join(lines[:5])}" +
                           (f" and {len(lines) - 5} more" if len(lines) > 5 else ""))
    out.append("not watched: " + "; ".join(not_watched))
    for f in findings:
        op_lines = " -> ".join(f.lines)
        out.append(f"\n{op_lines}: {' | '.join(dict.fromkeys(f.sources))}")
        what = f"  {f.severity} ({f.kind}): {', '.join(f.names)}"
        if f.severity == "wrong" and f.differs is not None:
            what += f": {f.differs} element(s) differ from copy semantics"
            if f.example is not None and f.example[0] is not None:
                index = "".join(f"[{i}]" for i in f.example[0]) or "[()]"
                what += f"; e.g. {f.names[0]}{index} is {f.example[1]!r}, expected " \
                        f"{_value(f.example[2])}"
            elif f.example is not None and f.kind == "duplicate-index":
                what += f"; values written to one element: {_value(f.example[2])}"
            elif f.example is not None:
                what += f"; it also wrote bytes outside {f.names[0]} (a byte is " \
                        f"{f.example[1]}, was {f.example[2]})"
        else:
            what += f": {f.count} element(s)"
        if f.numpy:
            what += f" (NumPy {f.numpy})"
        if f.occurrences > 1:
            what += f" [{f.occurrences} occurrences]"
        out.append(what)
        out.append(f"  hint: {f.hint}")
    if rec.errors:
        first = min(rec.errors)
        out.append(f"\nrefused by NumPy: {len(rec.errors)} operation(s), first "
                   f"{line_of(rec.ops[first])}: {rec.errors[first]}")
    untracked = sorted(rec.untracked_ops)
    if untracked:
        out.append(f"not recorded: {len(untracked)} operation(s), first "
                   f"{line_of(rec.ops[untracked[0]])}: {rec.untracked_ops[untracked[0]]}")
    return "\n".join(out)
