"""A trace's findings as JSON and as text grouped by source line."""
from __future__ import annotations

from collections import OrderedDict


def to_json(trace, elements: bool = False) -> dict:
    """Findings (most serious first), reuse edges, races and failed ops, as plain data."""
    findings = trace.findings()
    return {
        "aten_calls": len(trace.raw),
        "storages": len(trace.storages),
        "findings": [f.to_json(elements) for f in findings],
        "reuse": [f.to_json(elements) for f in trace.reuse()],
        "races": [f.to_json(elements) for f in trace.races()],
        "failed": [{"op": op.name, "line": op.line, "error": op.error}
                   for op in trace.ops if op.failed],
        "untracked": [{"op": op.name, "line": op.line, "why": op.untracked}
                      for op in trace.ops if op.untracked],
    }


def to_text(trace) -> str:
    """Findings grouped by the source line of their first op, most serious group first."""
    findings = trace.findings()
    groups: OrderedDict = OrderedDict()
    for f in findings:
        groups.setdefault(f.lines[0], []).append(f)
    out = [f"{len(trace.raw)} aten calls, {len(trace.storages)} storages, "
           f"{len(findings)} finding(s), {len(trace.reuse())} conflict(s) across memory reuse"]
    for line, group in groups.items():
        first = group[0].ops[0]
        out.append(f"\n{line}: {first.source}")
        for f in group:
            ops = " -> ".join(f"{op.aten} (#{op.index}{', failed' if op.failed else ''})"
                              for op in f.ops)
            where = "" if len(f.lines) == 1 else f" [{' -> '.join(f.lines)}]"
            out.append(f"  {f.kind}: {ops}: {f.count} element(s) of {f.storage.name}{where}")
    for op in trace.ops:
        if op.failed:
            out.append(f"\nfailed: {op.name} at {op.line}: {op.error}")
        if op.untracked:
            out.append(f"\nnot recorded (its tensors are not plain strided memory): "
                       f"{op.name} at {op.line}: {op.untracked}")
    return "\n".join(out)
