"""Tensor contents in program files: dtypes, numbers, ``init`` values, exact float text.

JSON has no NaN or infinities, so they are written as the strings ``"nan"``, ``"inf"`` and
``"-inf"`` (the non-standard tokens ``NaN``/``Infinity`` that Python's json module writes are
read as well). Floats are written with the shortest text that reads back to the same bits:
float64 through Python's ``repr``, float32/float16 through NumPy's shortest repr for that type,
checked and replaced by the float64 ``repr`` (exact for any narrower float) if it would not.
So every value keeps its exact bits (``-0.0``, subnormals, infinities too), except that all NaNs
are written as ``"nan"``: a NaN's sign and payload are not kept.
"""
from __future__ import annotations

import math
import re
from math import prod

import numpy as np

from ..core.errors import AliasflowError
from ..core.values import fit_array, fit_scalar, show_value

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_NUMBER = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?"
_JSON_NUMBER = re.compile(_NUMBER + r"\Z")
_JSON_NUMBERS = re.compile(rf"(?:(?:{_NUMBER})(?:\n(?:{_NUMBER}))*)?\Z")
MAX_ERRORS_PER_ARRAY = 5


def show(value, limit: int = 60) -> str:
    """A value as it looks in JSON, shortened for messages."""
    import json
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return show_value(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = show_value(value, limit)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def check_scalar(value, dtype: np.dtype):
    """``(value, None)`` when ``value`` is a valid element of ``dtype``, else ``(None, problem)``.

    JSON types are strict (``true``/``false`` for bool, ints for int dtypes, numbers or
    ``"nan"``/``"inf"``/``"-inf"`` for floats); whether the number fits is the one rule of
    :mod:`aliasflow.core.values`, as for Python code.
    """
    kind = dtype.kind
    if kind == "b":
        if isinstance(value, bool):
            return value, None
        return None, f"expected true or false for dtype bool, got {show(value)}"
    if isinstance(value, bool):
        return None, f"expected a number for dtype {dtype.name}, got {show(value)}"
    if kind in "iu":
        if not isinstance(value, int):
            return None, f"expected an int for dtype {dtype.name}, got {show(value)}"
    elif isinstance(value, str) and value in NONFINITE:
        return NONFINITE[value], None
    elif not isinstance(value, (int, float)):
        return None, (f"expected a number (or \"nan\", \"inf\", \"-inf\") for dtype "
                      f"{dtype.name}, got {show(value)}")
    try:
        fit_scalar(value, dtype, "")
    except AliasflowError as exc:
        return None, str(exc).removeprefix(": ")
    return value, None


def parse_data(data, shape: tuple, dtype: np.dtype, path: str, errors: list) -> np.ndarray | None:
    """Check nested lists ``data`` against ``shape`` and ``dtype``; return the array or None.

    Problems are appended to ``errors`` as ``path[i][j]: message`` (at most a few per array).
    """
    found: list[str] = []

    def bad(where: str, message: str) -> bool:
        found.append(f"{where}: {message}")
        return len(found) < MAX_ERRORS_PER_ARRAY

    def walk(value, depth: int, where: str):
        """Returns the (possibly rewritten) value, or raises StopIteration to give up."""
        if depth == len(shape):
            v, problem = check_scalar(value, dtype)
            if problem and not bad(where, problem):
                raise StopIteration
            return v
        n = shape[depth]
        if not isinstance(value, list):
            if not bad(where, f"expected a list of {n} element{'s' if n != 1 else ''} (data "
                              f"must have shape {list(shape)}), got {show(value)}"):
                raise StopIteration
            return None
        if len(value) != n:
            if not bad(where, f"expected {n} element{'s' if n != 1 else ''} (data must have "
                              f"shape {list(shape)}), got {len(value)}"):
                raise StopIteration
            return None
        if depth == len(shape) - 1 and dtype.kind != "b":  # fast path for clean rows
            types = set(map(type, value))
            if dtype.kind in "iu":
                info = np.iinfo(dtype)
                if types <= {int} and (not value or (info.min <= min(value)
                                                     and max(value) <= info.max)):
                    return value
            elif types <= {float}:
                return value
        return [walk(v, depth + 1, f"{where}[{i}]") for i, v in enumerate(value)]

    try:
        clean = walk(data, 0, path)
    except StopIteration:
        found.append(f"{path}: ... (stopped after {MAX_ERRORS_PER_ARRAY} problems)")
    errors.extend(found)
    if found:
        return None
    try:  # the fast path let clean float rows through: the one rule checks their range
        return fit_array(clean, dtype, path).reshape(shape)
    except AliasflowError as exc:
        errors.append(str(exc))
        return None


def parse_init(init, shape: tuple, dtype: np.dtype, path: str, errors: list) -> np.ndarray | None:
    """The initial contents described by ``init`` (see the program module's docstring)."""
    if init == "zeros":
        return None  # the Tensor constructor's default
    if init == "ones":
        return np.ones(shape, dtype)
    if init == "arange":
        if dtype.kind == "b":
            errors.append(f"{path}: \"arange\" needs a numeric dtype, not bool")
            return None
        n = prod(shape)
        if dtype.kind in "iu" and n - 1 > np.iinfo(dtype).max:
            errors.append(f"{path}: \"arange\" up to {n - 1} does not fit dtype {dtype.name}")
            return None
        if n:
            try:
                fit_scalar(n - 1, dtype, "")
            except AliasflowError as exc:
                errors.append(f"{path}: \"arange\" up to {n - 1}: "
                              f"{str(exc).removeprefix(': ')}")
                return None
        return np.arange(n).astype(dtype).reshape(shape)
    if isinstance(init, dict):
        keys = list(init)
        if len(keys) != 1 or keys[0] not in ("fill", "data"):
            errors.append(f"{path}: expected {{\"fill\": value}} or {{\"data\": nested lists}}, "
                          f"got an object with keys {show(keys)}")
            return None
        if keys[0] == "fill":
            value, problem = check_scalar(init["fill"], dtype)
            if problem:
                errors.append(f"{path}.fill: {problem}")
                return None
            return np.full(shape, value, dtype)
        return parse_data(init["data"], shape, dtype, f"{path}.data", errors)
    errors.append(f"{path}: expected \"zeros\", \"ones\", \"arange\", {{\"fill\": value}} or "
                  f"{{\"data\": nested lists}}, got {show(init)}")
    return None


# ---- writing ---------------------------------------------------------------------------------
def encode_float(x: float) -> str:
    """JSON text for a Python float (float64): exact, non-finite values as strings."""
    if math.isnan(x):
        return '"nan"'
    if math.isinf(x):
        return '"inf"' if x > 0 else '"-inf"'
    return repr(float(x))


def _float_texts(flat: np.ndarray) -> list[str]:
    """Exact JSON texts for a 1-D float array, shortest for its own dtype."""
    values = flat.tolist()
    if flat.dtype == np.float64:
        return [repr(x) if math.isfinite(x) else encode_float(x) for x in values]
    texts = [str(x) for x in flat]  # NumPy's shortest repr for float32/float16
    finite = np.isfinite(flat)
    with np.errstate(all="ignore"):
        back = np.fromiter(map(float, texts), np.float64, len(texts)).astype(flat.dtype)
    uint = f"u{flat.dtype.itemsize}"
    wrong = finite & (back.view(uint) != flat.view(uint))
    numbers = [t for t, ok in zip(texts, finite.tolist()) if ok]
    if not _JSON_NUMBERS.match("\n".join(numbers)):  # one C-level check for the usual case
        wrong |= finite & np.array([_JSON_NUMBER.match(t) is None for t in texts], bool)
    for i in np.flatnonzero(wrong).tolist():
        texts[i] = repr(values[i])  # float64 holds any narrower float exactly
    for i in np.flatnonzero(~finite).tolist():
        texts[i] = encode_float(values[i])
    return texts


def scalar_texts(arr: np.ndarray) -> list[str]:
    """JSON text for every element of ``arr`` in row-major order."""
    flat = arr.reshape(-1)
    if arr.dtype.kind == "b":
        return ["true" if x else "false" for x in flat.tolist()]
    if arr.dtype.kind in "iu":
        return [str(x) for x in flat.tolist()]
    return _float_texts(flat)


def encode_array(arr: np.ndarray, indent: int) -> str:
    """Nested JSON lists for ``arr``; innermost rows on one line, outer rows one per line."""
    texts = scalar_texts(arr)
    if arr.ndim == 0:
        return texts[0]

    def render(start: int, depth: int, col: int) -> str:
        if depth == arr.ndim - 1:
            n = arr.shape[-1]
            return "[" + ", ".join(texts[start:start + n]) + "]"
        n = arr.shape[depth]
        block = prod(arr.shape[depth + 1:])
        if n == 0:
            return "[]"
        pad = " " * (col + 2)
        rows = [pad + render(start + i * block, depth + 1, col + 2) for i in range(n)]
        return "[\n" + ",\n".join(rows) + "\n" + " " * col + "]"

    return render(0, 0, indent)


def is_all_zero(arr: np.ndarray) -> bool:
    """True when ``arr`` is bit-for-bit zeros (so ``"zeros"`` reproduces it; -0.0 is not)."""
    if arr.size == 0:
        return True
    return not np.any(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))
