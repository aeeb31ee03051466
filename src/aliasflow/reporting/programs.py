"""Findings of program files (``aliasflow analyze``, ``aliasflow races``) as items placed
at the ops' entries in the JSON file."""
from __future__ import annotations

import json
from pathlib import Path

from ..solver import TooLargeError, UndecidedError
from .items import Item, Place

_decoder = json.JSONDecoder()
_WS = " \t\n\r"


def op_lines(path: Path) -> dict[str, int]:
    """Op name -> line (from 1) where its entry in the file's top-level ``"ops"`` array
    starts; {} when the file is not such a JSON object (it was validated when loaded)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        return _op_lines(text)
    except (OSError, ValueError, IndexError, KeyError, TypeError, AttributeError):
        return {}


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _op_lines(text: str) -> dict[str, int]:
    i = _skip(text, 0)
    if text[i] != "{":
        return {}
    i = _skip(text, i + 1)
    while text[i] != "}":
        key, i = _decoder.raw_decode(text, i)
        i = _skip(text, i)
        assert text[i] == ":"
        i = _skip(text, i + 1)
        if key == "ops" and text[i] == "[":
            return _entries(text, i)
        _, i = _decoder.raw_decode(text, i)
        i = _skip(text, i)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return {}


def _entries(text: str, i: int) -> dict[str, int]:
    out: dict[str, int] = {}
    i = _skip(text, i + 1)
    while text[i] != "]":
        entry, end = _decoder.raw_decode(text, i)
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and name not in out:
            out[name] = text.count("\n", 0, i) + 1
        i = _skip(text, end)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return out


def _count(dep) -> int | None:
    try:
        return int(dep.count)
    except (TooLargeError, UndecidedError):
        return None


def dependency_item(dep, severity: str, path: Path, lines: dict[str, int],
                    elements: bool = False, counted: bool = True) -> Item:
    """An implicit dependency (``severity`` ``order``) or a race (``race``) between two ops
    of the program file ``path``, placed at the later op's entry, the earlier one related.
    ``counted=False`` leaves the shared elements uncounted (``count`` None)."""
    count = _count(dep) if counted else None
    how = f"{dep.src_view} / {dep.dst_view}" if dep.implicit else dep.src_view
    what = ", " + (f"{count} element(s)" if count is not None else
                   "(too many elements to count)") if counted else ""
    message = (f"{dep.src} -> {dep.dst}: {'unordered ' if severity == 'race' else ''}"
               f"{dep.kind} through {how}{what} of {dep.tensor}")
    places = [Place(str(path), lines.get(dep.dst)), Place(str(path), lines.get(dep.src))]
    record = {"severity": severity, "kind": dep.kind if severity != "race" else "race",
              "conflict": dep.kind, "ops": [dep.src, dep.dst],
              "lines": [str(p) for p in places], "names": [dep.src_view, dep.dst_view],
              "tensor": dep.tensor, "implicit": dep.implicit, "count": count}
    if elements:
        record["elements"] = dep.elements
    return Item(severity=severity, kind=record["kind"], message=message, places=places,
                ops=[dep.src, dep.dst], names=[dep.src_view, dep.dst_view],
                count=count or 0, record=record)
