"""A trace (of any tracer) as a report: its findings and stream races as items, and what
else it knows (calls, storages, failed and untracked calls)."""
from __future__ import annotations

from .adapter import item_from_finding
from .policy import Policy
from .report import Report


def trace_items(trace, all: bool = False) -> list:  # noqa: A002
    """The trace's findings (with ``all``, the order facts too), then its stream races, as
    items."""
    items = [item_from_finding(f) for f in (trace.findings(all=True) if all
                                            else trace.findings())]
    races = getattr(trace, "races", None)
    if races is not None:
        items += [item_from_finding(f, race=True) for f in races()]
    return items


def trace_report(trace, policy: Policy | None = None, reuse: bool = False, timings=None,
                 status: int | None = None, command: str = "trace",
                 all: bool = False) -> Report:  # noqa: A002
    """``trace`` as a :class:`Report`. ``reuse`` adds the conflicts across memory reuse
    (they depend on the allocator, so two runs of one program may differ); ``status`` is
    the traced program's exit status."""
    data = {"aten_calls": len(getattr(trace, "raw", ())),
            "storages": len(getattr(trace, "storages", ()))}
    if status is not None:
        data["exit_status"] = status
    if reuse:
        data["reuse"] = [f.to_json() for f in trace.reuse()]
    # what a tracer knows of each op beyond its accesses rides on the record (``info``)
    ops = [getattr(op, "info", None) or op for op in getattr(trace, "ops", ())]
    data["failed"] = [{"op": op.name, "line": op.line, "error": op.error}
                      for op in ops if getattr(op, "failed", False)]
    data["untracked"] = [{"op": op.name, "line": op.line, "why": op.untracked}
                         for op in ops if getattr(op, "untracked", None)]
    return Report(command, trace_items(trace, all), policy or Policy(), data, timings)
