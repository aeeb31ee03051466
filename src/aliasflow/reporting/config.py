"""``[tool.aliasflow]`` in ``pyproject.toml``: the nearest such table from the working
directory upward, checked key by key (a bad key or value is refused in one line naming it).

Keys: ``select`` and ``ignore`` (lists of kind or severity names), ``fail-on`` (a severity
or ``"none"``), ``format`` (``text``, ``json``, ``sarif`` or ``github``). Options given on
the command line win over the table.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from .policy import UsageError, parse_fail_on, parse_names

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FORMATS = ("text", "json", "sarif", "github")
KEYS = ("select", "ignore", "fail-on", "format")


@dataclass(frozen=True)
class Config:
    """The table's settings (None: not set) and the file they came from."""
    path: Path | None = None
    select: frozenset | None = None
    ignore: frozenset | None = None
    fail_on: str | None = None
    format: str | None = None


def find_pyproject(start: Path) -> tuple[Path, dict] | None:
    """The nearest ``pyproject.toml`` at or above ``start`` with a ``[tool.aliasflow]``
    table, and that table; None if there is none. An unreadable or invalid file on the
    way is refused (it may hold the table)."""
    for folder in [start, *start.parents]:
        path = folder / "pyproject.toml"
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read: {exc}") from None
        if "aliasflow" not in text:   # cheap: most pyproject.toml files do not name us
            continue
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path}: invalid TOML: {exc}") from None
        table = doc.get("tool", {}).get("aliasflow") if isinstance(doc.get("tool"), dict) \
            else None
        if table is not None:
            return path, table
    return None


def load_config(start: Path | None = None) -> Config:
    """The settings of the nearest ``[tool.aliasflow]`` table (an empty :class:`Config`
    when there is none)."""
    found = find_pyproject((start or Path.cwd()).resolve())
    if found is None:
        return Config()
    path, table = found
    where = f"{path}: [tool.aliasflow]"
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table")
    for key in table:
        if key not in KEYS:
            raise UsageError(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
    for key in ("select", "ignore"):
        value = table.get(key)
        if value is not None and not (isinstance(value, list)
                                      and all(isinstance(v, str) for v in value)):
            raise UsageError(f"{where}: {key} must be a list of strings, got {value!r}")
    fmt = table.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"{where}: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    fail_on = table.get("fail-on")
    return Config(
        path=path,
        select=parse_names(table["select"], f"{where}: select") if "select" in table else None,
        ignore=parse_names(table["ignore"], f"{where}: ignore") if "ignore" in table else None,
        fail_on=parse_fail_on(fail_on, f"{where}: fail-on") if fail_on is not None else None,
        format=fmt)
