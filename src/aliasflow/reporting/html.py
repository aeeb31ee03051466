"""Findings as an HTML table, for Jupyter (``Trace._repr_html_``, ``%%aliasflow``)."""
from __future__ import annotations

from html import escape

from .items import RANK

_STYLE = {"wrong": "#b00020", "race": "#b00020", "hazard": "#b45f06",
          "stale-view": "#7a5c00", "order": "#555"}


def items_table(items, caption: str = "") -> str:
    """A ``<table>`` of items (most serious first): severity, kind, where, what, hint."""
    items = sorted(items, key=lambda i: RANK.get(i.severity, len(RANK)))
    rows = []
    for i in items:
        colour = _STYLE.get(i.severity, "#555")
        where = escape(str(i.place)) if i.place is not None else ""
        source = f"<br><code>{escape(i.source)}</code>" if i.source else ""
        rows.append(
            f'<tr class="aliasflow-finding" data-severity="{escape(i.severity)}">'
            f'<td style="color:{colour};font-weight:bold">{escape(i.severity)}</td>'
            f"<td>{escape(i.kind)}</td><td>{where}{source}</td>"
            f"<td>{escape(i.message)}</td><td>{escape(i.hint or '')}</td></tr>")
    if not rows:
        rows.append('<tr><td colspan="5">no findings</td></tr>')
    head = "".join(f'<th style="text-align:left">{h}</th>'
                   for h in ("severity", "kind", "where", "what", "hint"))
    cap = f"<caption style=\"text-align:left\">{escape(caption)}</caption>" if caption else ""
    return (f'<table class="aliasflow-findings">{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def trace_html(trace) -> str:
    """A trace's summary and its findings (races too) as HTML."""
    from .traces import trace_items
    items = trace_items(trace)
    calls = len(getattr(trace, "raw", ()))
    caption = (f"aliasflow trace: {calls} calls, {len(getattr(trace, 'storages', ()))} "
               f"storages, {len(items)} finding(s)")
    return items_table(items, caption)


def finding_html(finding) -> str:
    from .adapter import item_from_finding
    return items_table([item_from_finding(finding)])
