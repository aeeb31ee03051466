"""The one place that reads a tracer's findings for the reporting layer.

The tracer's findings are being reshaped (issue 24): each will carry ``severity`` (wrong,
hazard, stale-view, order; race for stream races), ``kind`` (the mechanism), ``ops``,
``lines`` ("file:line" user frames), ``names``, ``count``, ``occurrences``, ``hint``, for
``wrong`` also ``differs`` and ``example``, and ``to_json()``. Everything else in
:mod:`aliasflow.reporting` works on :class:`~.items.Item`; this module turns a finding
into one, reading the new fields where a finding has them and today's otherwise.
"""
from __future__ import annotations

from .items import Item, place_of

# Today's findings have no severity: their kinds map to one (issue 24 replaces this).
_SEVERITY_OF_KIND = {"in-op-overlap": "hazard", "self-overlap-write": "hazard",
                     "duplicate-index": "hazard", "RAW": "order", "WAR": "order",
                     "WAW": "order"}


def severity_of(finding, race: bool = False) -> str:
    """The finding's severity class: its own ``severity`` when it has one; otherwise
    ``race`` for a finding from ``trace.races()``, ``hazard`` for in-op-overlap and
    self-overlap-write, ``order`` for RAW/WAR/WAW."""
    severity = getattr(finding, "severity", None)
    if severity:
        return severity
    if race:
        return "race"
    return _SEVERITY_OF_KIND.get(finding.kind, "order")


def item_from_finding(finding, race: bool = False) -> Item:
    """A tracer finding as an :class:`Item` (its JSON record is ``finding.to_json()`` with
    the severity and the common fields added)."""
    severity = severity_of(finding, race)
    # a stream race is its own mechanism; today's race findings name the conflict in kind
    kind = "race" if race and finding.kind in ("RAW", "WAR", "WAW") else finding.kind
    ops = list(finding.ops)
    record = dict(finding.to_json()) if hasattr(finding, "to_json") else {}
    names = list(getattr(finding, "names", None) or [])
    if not names and getattr(finding, "views", None):
        names = [v.describe() for v in finding.views]
    occurrences = int(getattr(finding, "occurrences", 1) or 1)
    hint = getattr(finding, "hint", None)
    steps = " -> ".join(f"{getattr(op, 'aten', None) or getattr(op, 'label', op.name)} "
                        f"(#{op.index}"
                        f"{', failed' if getattr(op, 'failed', False) else ''})"
                        if hasattr(op, "index") else str(op.name) for op in ops)
    what = f"{finding.count} element(s)"
    storage = getattr(finding, "storage", None)
    if getattr(finding, "names", None):
        what += f" of {', '.join(names)}"
    elif storage is not None:
        what += f" of {storage.name}"
    if getattr(finding, "differs", None):
        what += f", {finding.differs} differ"
    if occurrences > 1:
        what += f", {occurrences} times"
    if getattr(finding, "saved", None) is not None and finding.note:
        what += f" ({finding.note})"
    places = [place_of(line) for line in finding.lines]
    # the source shown is the line the finding is placed at (a stale view's read)
    first = next((op for op in ops if getattr(op, "line", None) == finding.lines[0]),
                 ops[0] if ops else None) if finding.lines else (ops[0] if ops else None)
    source = getattr(first, "source", None) or None
    if kind != finding.kind:
        record["conflict"] = finding.kind
    record.update(severity=severity, kind=kind,
                  ops=[op.name for op in ops], lines=list(finding.lines), names=names,
                  count=int(finding.count), occurrences=occurrences, hint=hint)
    return Item(severity=severity, kind=kind, message=f"{steps}: {what}",
                places=places, ops=[op.name for op in ops], names=names,
                count=int(finding.count), hint=hint, record=record, source=source)
