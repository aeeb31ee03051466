"""A report as a SARIF 2.1.0 log, for code-scanning services and editors: one result per
finding at its line (suppressed findings carry an ``inSource`` suppression), one rule per
kind, the severity as the result's level and in its properties."""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from .._version import __version__
from .items import KINDS, Item, Place
from .report import Report

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"wrong": "error", "race": "error", "hazard": "warning", "stale-view": "warning",
         "order": "note"}
RULES = {
    "in-op-overlap": "An op writes memory that another of its own arguments reads or writes "
                     "through a different view; the result depends on the kernel's loop order.",
    "self-overlap-write": "An op writes through a view that maps several indices to one "
                          "element; which write lands last decides the result.",
    "duplicate-index": "A data-dependent write (index_put_, scatter_) repeats an index; "
                       "which write lands last decides the result.",
    "kernel": "NumPy computes an operation wrongly for its operands' layout although "
              "nothing overlaps (a NumPy bug, confirmed by re-running it on copies).",
    "RAW": "An op reads memory an earlier op wrote through a different view (implicit "
           "read-after-write).",
    "WAR": "An op overwrites memory an earlier op read through a different view (implicit "
           "write-after-read).",
    "WAW": "An op overwrites memory an earlier op wrote through a different view (implicit "
           "write-after-write).",
    "race": "Two conflicting accesses that the intended ordering leaves unordered.",
}
SRCROOT = "SRCROOT"


def _uri(path: str, root: Path) -> tuple[str, bool]:
    """``(uri, relative)``: a path under ``root`` as a relative URI, else a file URI."""
    p = Path(path)
    absolute = p if p.is_absolute() else (root / p)
    try:
        rel = Path(os.path.normpath(absolute)).relative_to(root)
        return quote(rel.as_posix()), True
    except ValueError:
        return Path(os.path.normpath(absolute)).as_uri(), False


def _location(place: Place, root: Path) -> dict:
    uri, relative = _uri(place.path, root)
    artifact = {"uri": uri}
    if relative:
        artifact["uriBaseId"] = SRCROOT
    loc = {"physicalLocation": {"artifactLocation": artifact}}
    if place.line is not None:
        loc["physicalLocation"]["region"] = {"startLine": place.line}
    return loc


def _result(item: Item, rule_index: dict, root: Path) -> dict:
    result = {"ruleId": item.kind, "ruleIndex": rule_index[item.kind],
              "level": LEVEL.get(item.severity, "warning"),
              "message": {"text": item.message + (f" Hint: {item.hint}" if item.hint else "")}}
    places = [p for p in item.places if p is not None]
    if places:
        result["locations"] = [_location(places[0], root)]
        related = [dict(_location(p, root), id=k) for k, p in enumerate(places[1:], 1)
                   if p != places[0]]
        if related:
            result["relatedLocations"] = related
    props = {"severity": item.severity, "count": item.count, "ops": item.ops}
    if item.names:
        props["names"] = item.names
    result["properties"] = props
    if item.suppressed_by is not None:
        result["suppressions"] = [{"kind": "inSource",
                                   "justification": f"aliasflow: ignore comment at "
                                                    f"{item.suppressed_by}"}]
    return result


def to_sarif(report: Report, root: Path | None = None) -> dict:
    """The SARIF log of ``report``; paths under ``root`` (default: the working directory)
    are relative to the ``SRCROOT`` base."""
    root = (root or Path.cwd()).resolve()
    shown = report.reported + report.suppressed
    kinds = sorted({i.kind for i in shown}, key=lambda k: (KINDS.index(k) if k in KINDS
                                                           else len(KINDS), k))
    rules = [{"id": k, "shortDescription": {"text": RULES.get(k, k)}} for k in kinds]
    rule_index = {k: n for n, k in enumerate(kinds)}
    base = root.as_uri()
    run = {"tool": {"driver": {"name": "aliasflow", "version": __version__,
                               "semanticVersion": __version__, "rules": rules}},
           "originalUriBaseIds": {SRCROOT: {"uri": base if base.endswith("/") else base + "/"}},
           "results": [_result(i, rule_index, root) for i in shown],
           "properties": {"command": report.command}}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
