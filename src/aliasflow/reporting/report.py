"""A command's report: its findings after the policy, in JSON, text or GitHub annotations
(SARIF: :mod:`.sarif`)."""
from __future__ import annotations

import json
import textwrap
from collections import Counter
from dataclasses import dataclass, field

from .._version import __version__
from .items import RANK, SEVERITIES, Item, relative_path
from .policy import Policy

SCHEMA_VERSION = 1


@dataclass
class Report:
    """``command``'s findings (``items``, all of them) under ``policy``, with the command's
    own JSON fields (``data``) and, when asked for, ``timings`` (seconds by step).
    ``findings=False``: a command that has no findings (its JSON has no findings keys)."""
    command: str
    items: list
    policy: Policy = field(default_factory=Policy)
    data: dict = field(default_factory=dict)
    timings: dict | None = None
    findings: bool = True

    def __post_init__(self):
        self.items = sorted(self.items, key=lambda i: RANK.get(i.severity, len(RANK)))
        self.reported, self.suppressed = self.policy.apply(self.items)
        self.failing = self.policy.failing(self.reported)

    def counts(self) -> dict:
        by = Counter(i.severity for i in self.reported)
        return {s: by[s] for s in SEVERITIES if by[s]}

    def summary(self, option: str = "--fail-on") -> str:
        """``"3 finding(s) (hazard 2, order 1), 1 suppressed by comments"`` and, when some
        fail the run, how many are at or above the threshold (named as ``option``)."""
        counts = ", ".join(f"{s} {n}" for s, n in self.counts().items())
        out = f"{len(self.reported)} finding(s)" + (f" ({counts})" if counts else "")
        if self.suppressed:
            out += f", {len(self.suppressed)} suppressed by comments"
        if self.failing:
            out += f"; {len(self.failing)} at or above {option} {self.policy.fail_on}"
        return out

    def to_json(self) -> dict:
        """The JSON document: the same for the same program and options, byte for byte
        (timings only when asked for)."""
        doc = {"schema_version": SCHEMA_VERSION,
               "tool": {"name": "aliasflow", "version": __version__},
               "command": self.command}
        if self.findings:
            doc["summary"] = {"findings": len(self.reported), "by_severity": self.counts(),
                              "suppressed": len(self.suppressed),
                              "fail_on": self.policy.fail_on, "failing": len(self.failing)}
            doc["findings"] = [i.to_json() for i in self.reported]
            doc["suppressed"] = [i.to_json() for i in self.suppressed]
        doc.update(self.data)
        if self.timings is not None:
            doc["timings"] = self.timings
        return doc

    def json_text(self) -> str:
        return dumps(self.to_json())

    def text_lines(self, width: int | None = None) -> list[str]:
        """One line per finding, ``path:line: severity kind: message``, the source line and
        the hint indented below it; with ``width`` (a terminal's), the hint's prose wrapped
        to it (the finding's own line never is: tools read it whole)."""
        out = []
        for item in self.reported:
            out.extend(text_of(item, width))
        return out

    def github_lines(self) -> list[str]:
        return [github_annotation(i) for i in self.reported]


def dumps(doc) -> str:
    """JSON as every command prints it: indented, ASCII (any name prints), keys in the
    order the command built them."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def text_of(item: Item, width: int | None = None) -> list[str]:
    where = f"{item.place.shown()}: " if item.place is not None else ""
    lines = [f"{where}{item.severity} {item.kind}: {item.message}"]
    if item.source:
        lines.append(f"    {item.source}")
    related = [p.shown() for p in item.places[1:] if p is not None and p != item.place]
    if related:
        lines.append(f"    also at {', '.join(related)}")
    if item.hint:
        hint = f"    hint: {item.hint}"
        if width is not None and len(hint) > width:
            hint = textwrap.fill(hint, width=max(width, 40), subsequent_indent=" " * 10,
                                 break_on_hyphens=False)
        lines.extend(hint.split("\n"))
    return lines


_LEVEL = {"wrong": "error", "race": "error", "hazard": "warning", "stale-view": "warning",
          "order": "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(item: Item) -> str:
    """A GitHub Actions workflow command: ``::error file=F,line=L,title=T::message``."""
    props = []
    place = item.place
    if place is not None:
        props.append(f"file={_escape_property(relative_path(place.path))}")
        if place.line is not None:
            props.append(f"line={place.line}")
    props.append(f"title={_escape_property(f'aliasflow {item.severity} {item.kind}')}")
    message = item.message + (f"\n{item.hint}" if item.hint else "")
    return f"::{_LEVEL.get(item.severity, 'warning')} {','.join(props)}::{_escape_data(message)}"
