"""A small hand-written parser for NumPy basic-index strings such as ``"1:3, ::-2, ..., None, -1"``.

Only four kinds of item exist: ints (``-1``), slices (``1:3``, ``::2``, ``:``), ``...`` and
``None``; items are separated by commas and spaces are ignored. Nothing is evaluated: the text is
tokenised character by character, so ``"__import__('os')"`` is simply a syntax error.
"""
from __future__ import annotations

MAX_DIGITS = 19  # an int64 has at most 19 digits; longer numbers are refused, not converted


class IndexSyntaxError(ValueError):
    """A malformed index string; ``position`` is the 0-based character where parsing stopped."""

    def __init__(self, message: str, position: int):
        super().__init__(f"{message} at position {position}")
        self.position = position


def _tokens(text: str):
    """Yield ``(kind, value, position)``; kinds: int, colon, comma, ellipsis, none, end."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == ":":
            yield "colon", None, i
            i += 1
        elif c == ",":
            yield "comma", None, i
            i += 1
        elif text.startswith("...", i):
            yield "ellipsis", None, i
            i += 3
        elif text.startswith("None", i) and not (i + 4 < n and (text[i + 4].isalnum()
                                                                 or text[i + 4] == "_")):
            yield "none", None, i
            i += 4
        elif c in "+-" or "0" <= c <= "9":
            start = i
            if c in "+-":
                i += 1
            digits = i
            while i < n and "0" <= text[i] <= "9":
                i += 1
            if i == digits:
                raise IndexSyntaxError(f"expected digits after {c!r}", digits)
            if i - digits > MAX_DIGITS:
                raise IndexSyntaxError(f"integer longer than {MAX_DIGITS} digits", start)
            yield "int", int(text[start:i]), start
        else:
            raise IndexSyntaxError(f"unexpected character {c!r} (an index holds ints, slices "
                                   f"like 1:3 or ::-1, '...' and None, separated by commas)", i)
    yield "end", None, n


def parse_index(text: str) -> tuple:
    """Parse ``text`` into a tuple of ints, slices, ``Ellipsis`` and ``None``.

    The empty string (or only spaces) is the empty index ``()``, which selects the whole view.

    >>> parse_index("1:3, ::-2, ..., None, -1")
    (slice(1, 3, None), slice(None, None, -2), Ellipsis, None, -1)
    """
    if not isinstance(text, str):
        raise TypeError("index text must be a string")
    tokens = list(_tokens(text))
    pos = 0

    def peek():
        return tokens[pos]

    items: list = []
    if peek()[0] == "end":
        return ()
    while True:
        kind, value, at = peek()
        if kind == "ellipsis":
            items.append(Ellipsis)
            pos += 1
        elif kind == "none":
            items.append(None)
            pos += 1
        elif kind in ("int", "colon"):
            parts: list = [None]
            if kind == "int":
                parts[0] = value
                pos += 1
            colons = 0
            while peek()[0] == "colon" and colons < 2:
                colons += 1
                pos += 1
                if peek()[0] == "int":
                    parts.append(peek()[1])
                    pos += 1
                else:
                    parts.append(None)
            if colons == 0:
                items.append(parts[0])
            else:
                items.append(slice(*parts))
        else:
            what = "end of text" if kind == "end" else repr(text[at])
            raise IndexSyntaxError(f"expected an int, a slice, '...' or None, found {what}", at)
        kind, _, at = peek()
        if kind == "end":
            return tuple(items)
        if kind != "comma":
            raise IndexSyntaxError(f"expected ',' or end of index, found {text[at]!r}", at)
        pos += 1


def format_index(items) -> str:
    """The inverse of :func:`parse_index`: ``(slice(1, 3), None) -> "1:3, None"``."""
    if not isinstance(items, tuple):
        items = (items,)
    out = []
    for item in items:
        if item is Ellipsis:
            out.append("...")
        elif item is None:
            out.append("None")
        elif isinstance(item, slice):
            parts = ["" if p is None else str(int(p)) for p in (item.start, item.stop)]
            if item.step is not None:
                parts.append(str(int(item.step)))
            out.append(":".join(parts))
        else:
            out.append(str(int(item)))
    return ", ".join(out)
