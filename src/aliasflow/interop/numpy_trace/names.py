"""Which calls the rewriter routes through the runtime, decided from the call's syntax alone.

The rewriter cannot know what ``np.add`` or ``x.sort`` will be when the line runs, so it
routes every call that *could* be a NumPy write (by the called name and the arguments given)
through the runtime, which looks at the real callee and lets anything that is not NumPy pass
untouched. The tables are built from the installed NumPy's own signatures (where ``out`` sits
among the positional parameters) plus the in-place methods and functions, whose names are
fixed.
"""
from __future__ import annotations

import inspect

import numpy as np

# Calls that write into an argument whatever their arguments are (functions and methods).
ALWAYS = frozenset({
    "copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "at", "sort",
    "partition", "fill", "shuffle", "setfield", "byteswap", "resize", "nan_to_num",
    "itemset",
})

# ufunc methods whose ``out`` may be given by position: name -> 0-based position.
_UFUNC_METHOD_OUT = {"reduce": 3, "accumulate": 3, "reduceat": 4}

# ndarray methods that take ``out`` by position (their function twins take one more argument).
_METHOD_OUT = {"all": 1, "any": 1, "argmax": 1, "argmin": 1, "choose": 1, "clip": 2,
               "compress": 2, "cumprod": 2, "cumsum": 2, "dot": 1, "max": 1, "mean": 2,
               "min": 1, "prod": 2, "round": 1, "std": 2, "sum": 2, "take": 2, "trace": 4,
               "var": 2}

# Names bound by ``name = <call>`` that return views (what a stale view can come from).
VIEW_METHODS = frozenset({
    "reshape", "view", "transpose", "swapaxes", "moveaxis", "ravel", "squeeze", "diagonal",
    "as_strided", "sliding_window_view", "broadcast_to", "expand_dims", "flip", "fliplr",
    "flipud", "rot90", "atleast_1d", "atleast_2d", "atleast_3d", "permute_dims",
    "matrix_transpose", "real", "imag", "asarray", "frombuffer",
})
VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})

# Attribute assignments that write the array's memory.
WRITING_ATTRIBUTES = frozenset({"real", "imag", "flat"})


def _out_positions() -> dict[str, int]:
    """name -> the smallest 0-based positional index at which some NumPy callable of that
    name takes ``out`` (ufuncs: after their inputs)."""
    table = dict(_UFUNC_METHOD_OUT)
    for name, index in _METHOD_OUT.items():
        table[name] = min(table.get(name, index), index)
    for name in dir(np):
        obj = getattr(np, name, None)
        if isinstance(obj, np.ufunc):
            table[name] = min(table.get(name, obj.nin), obj.nin)
            continue
        if not callable(obj) or isinstance(obj, type):
            continue
        try:
            params = list(inspect.signature(obj).parameters.values())
        except (TypeError, ValueError):
            continue
        for i, p in enumerate(params):
            if p.name == "out" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                table[name] = min(table.get(name, i), i)
    return table


OUT_POSITION = _out_positions()


def may_write(name: str | None, n_positional: int, starred: bool, keywords) -> bool:
    """Could a call of ``name`` with these arguments write into one of them?"""
    if "out" in keywords:
        return True
    if name is None:
        return False
    if name in ALWAYS:
        return True
    position = OUT_POSITION.get(name)
    return position is not None and (starred or n_positional > position)
