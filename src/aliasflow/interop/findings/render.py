"""Findings as JSON (``schema_version`` 1) and as text, the same fields in both.

The JSON holds no addresses and no timings (unless asked), so two runs of one program give
identical JSON.
"""
from __future__ import annotations

import math

from .model import SEVERITIES, Finding
from .source import index_text

SCHEMA_VERSION = 1
TITLES = {"wrong": "wrong results (confirmed by re-running the op on copies)",
          "hazard": "hazards (the result depends on the kernel's order)",
          "stale-view": "stale views (read after another view wrote their memory)",
          "order": "order facts (implicit flows between ops; --all)"}


def plain(x):
    """A JSON-safe scalar: non-finite floats and complex numbers as text."""
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, (list, tuple)):
        return [plain(y) for y in x]
    return str(x)


def example_json(f: Finding, names: list[str]) -> dict | None:
    if f.example is None:
        return None
    index, got, expected = f.example
    name = names[0] if names else "?"
    return {"index": list(index) if index is not None else None,
            "at": index_text(name, index), "got": plain(got), "expected": plain(expected)}


def finding_json(f: Finding, names: list[str], elements: bool = False) -> dict:
    rec = {
        "severity": f.severity, "kind": f.kind,
        "ops": [op.name for op in f.ops], "labels": [op.label for op in f.ops],
        "indices": [op.index for op in f.ops], "lines": f.lines,
        "contexts": f.contexts, "sources": [op.source for op in f.ops], "source": f.source,
        "names": names, "count": f.count, "occurrences": f.occurrences, "hint": f.hint,
        "failed": [op.index for op in f.ops if op.failed],
    }
    if f.severity == "wrong":
        rec["differs"] = f.differs
        rec["example"] = example_json(f, names)
    if f.numpy is not None:
        rec["numpy"] = f.numpy
    if f.note:
        rec["note"] = f.note
    if f.reuse:
        rec["reuse"] = True
    if elements:
        rec["elements"] = f.elements()
    return rec


def _value(x) -> str:
    return repr(plain(x)) if isinstance(x, str) else str(plain(x))


def finding_text(f: Finding, names: list[str]) -> list[str]:
    """The lines describing one finding (without its section header)."""
    op = f.ops[-1] if f.severity == "stale-view" else f.ops[0]
    lines = []
    where = f" (from {op.context})" if op.context is not None else ""
    lines.append(f"  {op.line}: {op.source}{where}")
    ops = " -> ".join(f"{o.label} (#{o.index}{', refused' if o.failed else ''})" for o in f.ops)
    who = ", ".join(names)
    repeat = f"; {f.occurrences} occurrences" if f.occurrences > 1 else ""
    lines.append(f"    {f.kind} in {ops}: {who}; {f.count} element(s){repeat}")
    if f.severity == "stale-view":
        lines.append(f"    written before, at {f.ops[0].line}: {f.ops[0].source}")
    if f.severity == "wrong" and f.example is not None:
        index, got, expected = f.example
        at = index_text(names[0] if names else "?", index)
        lines.append(f"    {f.differs} element(s) differ from copy semantics, e.g. {at} = "
                     f"{_value(got)}, expected {_value(expected)}")
    elif f.severity == "wrong":
        lines.append(f"    {f.differs} element(s) differ from copy semantics")
    if f.note:
        lines.append(f"    ({f.note})")
    if f.hint:
        lines.append(f"    hint: {f.hint}")
    return lines


def text(findings: list[Finding], names_of, head: str) -> str:
    out = [head]
    for severity in SEVERITIES:
        group = [f for f in findings if f.severity == severity]
        if not group:
            continue
        out.append(f"\n{severity}: {TITLES[severity]}: {len(group)}")
        for f in group:
            out.extend(finding_text(f, names_of(f)))
    return "\n".join(out)
