"""Named kernels: the functions ops may use by name (and program files must use)."""
from __future__ import annotations

import numpy as np

from .errors import AliasflowError

UNARY = {
    "copy": lambda x: x.copy(),
    "negative": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sqrt": np.sqrt, "square": np.square,
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
}
REDUCE = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean,
}
REGISTRIES = {"unary": UNARY, "binary": BINARY, "reduce": REDUCE}


def resolve(op_name: str, family: str, fn):
    """Return ``(callable, name)`` for ``fn``: a callable, or a name from ``family``'s registry."""
    table = REGISTRIES[family]
    if callable(fn):
        return fn, getattr(fn, "__name__", repr(fn))
    if isinstance(fn, str) and fn in table:
        return table[fn], fn
    raise AliasflowError(f"op {op_name!r}: unknown {family} function {fn!r}; "
                         f"choose one of {', '.join(sorted(table))} or pass a callable")
