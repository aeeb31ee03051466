"""Which findings a run reports and whether they fail it: ``--select``, ``--ignore``,
``--fail-on`` and inline ``# aliasflow: ignore[...]`` comments."""
from __future__ import annotations

import linecache
import re
from dataclasses import dataclass

from ..core.errors import AliasflowError
from .items import KINDS, RANK, SEVERITIES, Item

NEVER = "none"   # --fail-on none: findings never fail the run
_NAMES = {n.lower(): n for n in KINDS + SEVERITIES}
# "# aliasflow: ignore" or "# aliasflow: ignore[hazard, RAW]" anywhere in a comment
_COMMENT = re.compile(r"#.*?\baliasflow:\s*ignore\b(?:\[([^\]]*)\])?", re.I)


class UsageError(AliasflowError):
    """A bad option or setting (exit code 2)."""


def parse_names(values, what: str) -> frozenset:
    """Kind or severity names from a list of strings, each possibly comma-separated; an
    unknown name is refused, naming ``what`` (the option or key) and the known names."""
    if isinstance(values, str):
        values = [values]
    out = set()
    for value in values or ():
        if not isinstance(value, str):
            raise UsageError(f"{what}: expected kind or severity names, got {value!r}")
        for name in value.split(","):
            name = name.strip()
            if not name:
                continue
            if name.lower() not in _NAMES:
                raise UsageError(f"{what}: unknown kind or severity {name!r} (kinds: "
                                 f"{', '.join(KINDS)}; severities: {', '.join(SEVERITIES)})")
            out.add(name.lower())
    return frozenset(out)


def parse_fail_on(value, what: str = "--fail-on") -> str:
    """A severity threshold, or ``none``."""
    name = value.strip().lower() if isinstance(value, str) else None
    if name != NEVER and name not in RANK:
        raise UsageError(f"{what}: {value!r} is not a severity (one of "
                         f"{', '.join(SEVERITIES)}, or {NEVER})")
    return name


@dataclass(frozen=True)
class Policy:
    """``select``: report only findings whose kind or severity is listed (None: all);
    ``ignore``: never report those; ``fail_on``: findings of this severity or a more serious
    one fail the run (``none``: never)."""
    select: frozenset | None = None
    ignore: frozenset = frozenset()
    fail_on: str = "hazard"

    def wants(self, item: Item) -> bool:
        if self.select is not None and not item.matches(self.select):
            return False
        return not item.matches(self.ignore)

    def fails(self, item: Item) -> bool:
        if self.fail_on == NEVER:
            return False
        return RANK.get(item.severity, len(RANK)) <= RANK[self.fail_on]

    def apply(self, items) -> tuple[list[Item], list[Item]]:
        """``(reported, suppressed)``: the selected findings, split by inline comments."""
        reported, suppressed = [], []
        for item in items:
            if not self.wants(item):
                continue
            item.suppressed_by = suppressing_comment(item)
            (reported if item.suppressed_by is None else suppressed).append(item)
        return reported, suppressed

    def failing(self, reported) -> list[Item]:
        return [i for i in reported if self.fails(i)]


def suppressing_comment(item: Item) -> str | None:
    """``"file:line"`` of an ``# aliasflow: ignore`` comment on one of the finding's lines
    that covers it (bare, or naming its kind or severity), or None."""
    for place in item.places:
        if place is None or place.line is None:
            continue
        linecache.checkcache(place.path)   # the file may have changed since it was cached
        text = linecache.getline(place.path, place.line)
        if "aliasflow" not in text:
            continue
        m = _COMMENT.search(text)
        if m is None:
            continue
        if m.group(1) is None:
            return str(place)
        names = {n.strip().lower() for n in m.group(1).split(",") if n.strip()}
        if item.matches(names):
            return str(place)
    return None
