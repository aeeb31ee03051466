"""Calls and selects: ``te.exp``/``log``/``sqrt``/``tanh``/``sigmoid``/``abs``/``power``,
``te.if_then_else``, ``te.all``/``te.any`` and the :class:`Select` node, built as TVM 0.27
builds them (op names ``tirx.exp``, ``prim.if_then_else``, ...; ``abs`` of an integer is a
Select).

``if_then_else(c, a, b)`` evaluates only the branch ``c`` picks (TVM's rule), so a load in a
branch may be out of bounds where the branch is not taken (padding); ``Select`` evaluates both.

>>> from aliasflow import te
>>> A = te.placeholder((5,), name="A")
>>> P = te.compute((6,), lambda i: te.if_then_else(i >= 1, A[i - 1], 0.0), name="P")
>>> P.op.body[0]
Call(prim.if_then_else, (i >= 1), A[(i - 1)], 0.0f)
"""
from __future__ import annotations

import numpy as np

from ...core.errors import AliasflowError
from .expr import PrimExpr, GE, Sub, And, Or, as_expr, binary, const, is_const, _match


class Call(PrimExpr):
    """An intrinsic call ``op_name(*args)`` (TVM's ``Call``); visitors enter the args."""

    __slots__ = ("dtype", "op_name", "args")

    def __init__(self, dtype: str, op_name: str, args):
        self.dtype, self.op_name, self.args = dtype, op_name, tuple(args)

    def _children(self):
        return list(self.args)

    def __str__(self):
        return f"Call({self.op_name}, {', '.join(map(str, self.args))})"
    __repr__ = __str__


class Select(PrimExpr):
    """``true_value if condition else false_value``, both sides evaluated."""

    __slots__ = ("dtype", "condition", "true_value", "false_value")
    fields = ("condition", "true_value", "false_value")

    def __init__(self, condition, true_value, false_value):
        self.condition, self.true_value, self.false_value = condition, true_value, false_value
        self.dtype = true_value.dtype

    def __str__(self):
        return f"Select({self.condition}, {self.true_value}, {self.false_value})"
    __repr__ = __str__


def _float_call(name):
    def fn(x):
        x = as_expr(x)
        return Call(x.dtype, f"tirx.{name}", [x])
    fn.__name__ = name
    fn.__doc__ = f"``{name}(x)`` elementwise (TVM's ``tirx.{name}`` call)."
    return fn


exp, log, sqrt, tanh, sigmoid = (_float_call(n) for n in ("exp", "log", "sqrt", "tanh",
                                                          "sigmoid"))


def abs(x):  # noqa: A001
    """``|x|``: ``tirx.fabs`` for floats; for integers ``Select(x >= 0, x, 0 - x)``."""
    x = as_expr(x)
    if is_const(x):  # TVM folds abs of a constant
        return const(-x.value if x.value < 0 else x.value, x.dtype)
    if np.dtype(x.dtype).kind == "f":
        return Call(x.dtype, "tirx.fabs", [x])
    return Select(binary(GE, x, 0), x, binary(Sub, 0, x))


def power(x, y):
    """``x ** y`` (TVM's ``tirx.pow``)."""
    x, y = _match(x, y)
    return Call(x.dtype, "tirx.pow", [x, y])


def _condition(cond, what):
    cond = as_expr(cond)
    if cond.dtype != "bool":
        raise AliasflowError(f"{what}: condition {cond} must be boolean, got {cond.dtype}")
    return cond


def if_then_else(cond, t, f):
    """``t`` where ``cond`` holds, else ``f``; only the chosen side is evaluated."""
    cond = _condition(cond, "if_then_else")
    t, f = _match(t, f)
    if is_const(cond):
        return t if cond.value else f
    return Call(t.dtype, "prim.if_then_else", [cond, t, f])


def select(cond, t, f):
    """``Select(cond, t, f)``: both sides are evaluated."""
    t, f = _match(t, f)
    return Select(_condition(cond, "select"), t, f)


def all(*conds):  # noqa: A001
    """``c0 && c1 && ...``."""
    return _chain(And, conds, "all")


def any(*conds):  # noqa: A001
    """``c0 || c1 || ...``."""
    return _chain(Or, conds, "any")


def _chain(cls, conds, what):
    if not conds:
        raise AliasflowError(f"te.{what}: needs at least one condition")
    out = _condition(conds[0], what)
    for c in conds[1:]:
        out = binary(cls, out, _condition(c, what))
    return out


__all__ = ["Call", "Select", "exp", "log", "sqrt", "tanh", "sigmoid", "abs", "power",
           "if_then_else", "select", "all", "any"]
