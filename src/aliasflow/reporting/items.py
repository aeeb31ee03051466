"""What the commands report, in one shape: an :class:`Item` per finding.

A finding has a ``severity`` (what it means for the program's result) and a ``kind`` (the
mechanism). Severities, most serious first:

- ``wrong``: a result came out different from copy semantics (confirmed);
- ``race``: two conflicting accesses that the intended ordering (streams, events) leaves
  unordered: the result depends on timing;
- ``hazard``: the result depends on a kernel's loop order or on which of repeated writes
  lands last (this run may have agreed with copy semantics);
- ``stale-view``: a read through a view made before its bytes were written through another;
- ``order``: implicit data flow between different ops through different views; it decides
  the result only when someone reorders or parallelises the ops.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

SEVERITIES = ("wrong", "race", "hazard", "stale-view", "order")
KINDS = ("in-op-overlap", "self-overlap-write", "duplicate-index", "kernel", "RAW", "WAR",
         "WAW", "race")
RANK = {s: k for k, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Place:
    """A place in a file: ``path`` as the finding gave it, ``line`` from 1 (None: unknown)."""
    path: str
    line: int | None = None

    def __str__(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"

    def shown(self) -> str:
        """As :func:`str`, the path relative to the working directory when below it."""
        path = relative_path(self.path)
        return path if self.line is None else f"{path}:{self.line}"


def place_of(text: str) -> Place | None:
    """``"file:line"`` as a :class:`Place`; None for an unknown place (``"?"``)."""
    if not text or text == "?":
        return None
    path, sep, line = text.rpartition(":")
    if sep and line.isdigit():
        return Place(path, int(line))
    return Place(text)


def relative_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it (as annotations and
    editors want it), else unchanged."""
    if not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:   # another drive
        return path
    return path if rel.startswith(os.pardir) else rel


@dataclass
class Item:
    """One finding as reported: ``severity``, ``kind``, a one-line ``message``, ``places``
    (the first one is where it is reported; None entries are unknown places), the ``ops``
    and ``names`` involved, ``count`` (elements), an optional ``hint``, ``record`` (the
    JSON object for it), ``source`` (the text of the reported line, if known) and, once the
    policy has looked at it, ``suppressed_by`` (the comment that suppresses it)."""
    severity: str
    kind: str
    message: str
    places: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    names: list = field(default_factory=list)
    count: int = 0
    hint: str | None = None
    record: dict = field(default_factory=dict)
    source: str | None = None
    suppressed_by: str | None = None

    @property
    def place(self) -> Place | None:
        """Where the finding is reported: its first known place."""
        return next((p for p in self.places if p is not None), None)

    def matches(self, names) -> bool:
        """Is the finding's kind or severity among ``names`` (compared case-insensitively)?"""
        return self.kind.lower() in names or self.severity.lower() in names

    def to_json(self) -> dict:
        rec = dict(self.record)
        rec.setdefault("severity", self.severity)
        rec.setdefault("kind", self.kind)
        rec["message"] = self.message
        if self.suppressed_by is not None:
            rec["suppressed_by"] = self.suppressed_by
        return rec
