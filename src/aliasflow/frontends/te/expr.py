"""TVM's scalar expression nodes (``tvm.tir``, ``tvm.tirx`` in TVM 0.27), with TVM's type
rules and constant folding.

Nodes are immutable trees. Python operators build them the way TVM's do: a Python number
becomes a constant of the other side's dtype (a float next to an int expression becomes a
``float32`` constant and the int side is cast), mismatched dtypes are cast to the wider one
(an int to a float), ``/`` on integers is refused, ``//`` and ``%`` are floor division and
floor modulo, ``-x`` is ``x * -1``, and the folds TVM applies while building (two constants,
``x + 0``, ``x * 1``, ``x * 0``, ``0 / x``, ``x // 1``, ``x % 1``, ``max(x, x)``) are applied too.

>>> from aliasflow import te
>>> i = te.var("i")
>>> e = (i + 0) * 2 + 1.5
>>> type(e).__name__, e.dtype, str(e)
('Add', 'float32', '(float32((i * 2)) + 1.5f)')
"""
from __future__ import annotations

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import fit_scalar, show_value


def _dtype_name(dtype, what: str) -> str:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise AliasflowError(f"{what}: unknown dtype {show_value(dtype)}") from None
    if dt.kind not in "iufb":
        raise AliasflowError(f"{what}: dtype {dt} is not a number type")
    return "bool" if dt.kind == "b" else dt.name


class PrimExpr:
    """A scalar expression with a ``dtype`` (a NumPy dtype name such as ``"float32"``)."""

    __slots__ = ()
    dtype: str
    fields: tuple[str, ...] = ()

    def _children(self) -> list:
        """Sub-expressions in the order TVM's ExprVisitor visits them."""
        return [getattr(self, f) for f in self.fields]

    # Python operators build nodes (TVM's ExprOp).
    def __add__(self, o): return binary(Add, self, o)
    def __radd__(self, o): return binary(Add, o, self)
    def __sub__(self, o): return binary(Sub, self, o)
    def __rsub__(self, o): return binary(Sub, o, self)
    def __mul__(self, o): return binary(Mul, self, o)
    def __rmul__(self, o): return binary(Mul, o, self)
    def __truediv__(self, o): return binary(Div, self, o)
    def __rtruediv__(self, o): return binary(Div, o, self)
    def __floordiv__(self, o): return binary(FloorDiv, self, o)
    def __rfloordiv__(self, o): return binary(FloorDiv, o, self)
    def __mod__(self, o): return binary(FloorMod, self, o)
    def __rmod__(self, o): return binary(FloorMod, o, self)
    def __neg__(self): return binary(Mul, self, -1)
    def __lt__(self, o): return binary(LT, self, o)
    def __le__(self, o): return binary(LE, self, o)
    def __gt__(self, o): return binary(GT, self, o)
    def __ge__(self, o): return binary(GE, self, o)
    # == and != build EQ/NE nodes, as in TVM; their truth value is "same node" (TVM's
    # EqualOp), so a dict or ``in`` check on expressions still means identity
    def __eq__(self, o): return binary(EQ, self, o) if _operand(o) else NotImplemented
    def __ne__(self, o): return binary(NE, self, o) if _operand(o) else NotImplemented
    __hash__ = object.__hash__

    def astype(self, dtype) -> "PrimExpr":
        return cast(dtype, self)

    def __bool__(self):
        raise AliasflowError(f"expression {self} has no truth value (it is symbolic)")


class Var(PrimExpr):
    """A named integer (or other) variable: a loop variable or a symbolic size."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str = "tindex", dtype="int32"):
        if not isinstance(name, str) or not name:
            raise AliasflowError(f"var name must be a non-empty string, got {name!r}")
        self.name = name
        self.dtype = _dtype_name(dtype, f"var {name!r}")

    def __str__(self): return self.name
    def __repr__(self): return self.name


class IntImm(PrimExpr):
    """An integer constant (``int(c)``, ``c.value``, equal to Python ints of its value)."""

    __slots__ = ("dtype", "value")

    def __init__(self, dtype, value: int):
        self.dtype = _dtype_name(dtype, "IntImm")
        if self.dtype == "bool":
            self.value = int(bool(value))
            return
        value = int(value)
        info = np.iinfo(self.dtype)
        if not info.min <= value <= info.max:  # TVM: "Literal value ... exceeds ..."
            raise AliasflowError(f"literal value {show_value(value)} does not fit {self.dtype} "
                                 f"({info.min}..{info.max})")
        self.value = value

    def __int__(self): return self.value
    def __index__(self): return self.value
    def __bool__(self): return bool(self.value)

    def __eq__(self, o):  # a number compares as a number; an expression builds EQ
        if isinstance(o, (int, np.integer, IntImm)) and not isinstance(o, bool):
            return int(o) == self.value
        return binary(EQ, self, o) if _operand(o) else NotImplemented

    def __ne__(self, o):
        if isinstance(o, (int, np.integer, IntImm)) and not isinstance(o, bool):
            return int(o) != self.value
        return binary(NE, self, o) if _operand(o) else NotImplemented

    def __hash__(self): return hash(self.value)
    def __str__(self): return str(self.value) if self.dtype != "bool" else str(bool(self.value))
    __repr__ = __str__


class FloatImm(PrimExpr):
    """A floating-point constant."""

    __slots__ = ("dtype", "value")

    def __init__(self, dtype, value: float):
        self.dtype = _dtype_name(dtype, "FloatImm")
        # a finite value beyond the dtype's range is refused, as TVM refuses it
        self.value = float(fit_scalar(value, np.dtype(self.dtype), "literal"))

    def __float__(self): return self.value
    def __str__(self): return f"{self.value!r}{'f' if self.dtype == 'float32' else ''}"
    __repr__ = __str__


class Cast(PrimExpr):
    __slots__ = ("dtype", "value")
    fields = ("value",)

    def __init__(self, dtype, value: PrimExpr):
        self.dtype, self.value = _dtype_name(dtype, "Cast"), value

    def __str__(self): return f"{self.dtype}({self.value})"
    __repr__ = __str__


class BinaryOpExpr(PrimExpr):
    __slots__ = ("a", "b", "dtype")
    fields = ("a", "b")
    symbol = "?"

    def __init__(self, a: PrimExpr, b: PrimExpr):
        self.a, self.b, self.dtype = a, b, a.dtype

    def __str__(self):
        if self.symbol.isalpha():
            return f"{self.symbol}({self.a}, {self.b})"
        return f"({self.a} {self.symbol} {self.b})"
    __repr__ = __str__


class Add(BinaryOpExpr): symbol = "+"
class Sub(BinaryOpExpr): symbol = "-"
class Mul(BinaryOpExpr): symbol = "*"
class Div(BinaryOpExpr): symbol = "/"
class FloorDiv(BinaryOpExpr): symbol = "floordiv"
class FloorMod(BinaryOpExpr): symbol = "floormod"
class Min(BinaryOpExpr): symbol = "min"
class Max(BinaryOpExpr): symbol = "max"


class CmpOpExpr(BinaryOpExpr):
    """A comparison; its dtype is ``bool`` (for ``where=`` conditions)."""

    def __init__(self, a: PrimExpr, b: PrimExpr):
        super().__init__(a, b)
        self.dtype = "bool"


class EQ(CmpOpExpr):
    symbol = "=="
    def __bool__(self): return self.a is self.b


class NE(CmpOpExpr):
    symbol = "!="
    def __bool__(self): return self.a is not self.b


class And(CmpOpExpr): symbol = "&&"
class Or(CmpOpExpr): symbol = "||"


class LT(CmpOpExpr): symbol = "<"
class LE(CmpOpExpr): symbol = "<="
class GT(CmpOpExpr): symbol = ">"
class GE(CmpOpExpr): symbol = ">="


class ProducerLoad(PrimExpr):
    """``producer[indices]``: one element of a tensor; ``producer`` is a :class:`Tensor`.

    Visitors descend into the indices, never into the producer (TVM's rule)."""

    __slots__ = ("producer", "indices", "dtype")
    fields = ()

    def __init__(self, producer, indices):
        self.producer, self.indices, self.dtype = producer, tuple(indices), producer.dtype

    def _children(self): return list(self.indices)
    def __str__(self): return f"{self.producer.name}[{', '.join(map(str, self.indices))}]"
    __repr__ = __str__


def is_const(e) -> bool:
    return isinstance(e, (IntImm, FloatImm))


def const(value, dtype=None) -> PrimExpr:
    """A constant: ``int`` → ``int32`` (``int64`` when it needs it, as TVM does), ``float`` →
    ``float32`` unless ``dtype`` is given. A value that does not fit is refused.

    (TVM 0.27's ``te.const(1.5)`` gives the int32 constant 1; this gives float32 1.5.)"""
    if isinstance(value, (bool, np.bool_)):
        raise AliasflowError(f"boolean constant {show_value(value)} is not supported in expressions")
    if isinstance(value, (IntImm, FloatImm)):
        value = value.value
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise AliasflowError(f"constant must be a number, got {show_value(value)}")
    if dtype is None:
        if isinstance(value, (int, np.integer)):
            dtype = "int32" if -2**31 <= value < 2**31 else "int64"
        else:
            dtype = "float32"
    dtype = _dtype_name(dtype, f"constant {show_value(value)}")
    if np.dtype(dtype).kind == "f":
        return FloatImm(dtype, value)
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise AliasflowError(f"constant {show_value(value)} is not an integer, cannot be {dtype}")
    return IntImm(dtype, int(value))


def as_expr(x) -> PrimExpr:
    """``x`` as an expression: expressions pass, an IterVar gives its var, numbers give
    constants; anything else is refused."""
    if isinstance(x, PrimExpr):
        return x
    conv = getattr(x, "_as_expr", None)
    if conv is not None:
        return conv()
    return const(x)


def cast(dtype, value) -> PrimExpr:
    value = as_expr(value)
    dtype = _dtype_name(dtype, "cast")
    if value.dtype == dtype:
        return value
    if is_const(value):  # TVM folds casts of constants
        return const(value.value if np.dtype(dtype).kind == "f" else int(value.value), dtype)
    return Cast(dtype, value)


def _kind(dtype: str) -> str:
    return np.dtype(dtype).kind


def _fits_int(value, dtype: str) -> bool:
    info = np.iinfo(dtype)
    return isinstance(value, (int, np.integer)) and info.min <= value <= info.max


def _operand(x) -> bool:
    """Can ``x`` stand in an expression (else ``==`` falls back to identity)?"""
    return isinstance(x, PrimExpr) or hasattr(x, "_as_expr") or _python_number(x)


def _python_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(
        x, (bool, np.bool_))


def _match(a, b) -> tuple[PrimExpr, PrimExpr]:
    """TVM's operand conversion: numbers take the expression's dtype, then dtypes meet."""
    if _python_number(a) and not _python_number(b):
        b, a = _match(b, a)
        return a, b
    a = as_expr(a)
    if _python_number(b):
        if isinstance(b, (float, np.floating)) and _kind(a.dtype) != "f":
            b = const(b, "float32")
        elif _kind(a.dtype) in "iu" and not _fits_int(b, a.dtype):
            b = const(b)  # int64 (or refused), as TVM widens: i + 2**32 is int64
        else:
            b = const(b, a.dtype)
    b = as_expr(b)
    if a.dtype == b.dtype:
        return a, b
    ka, kb = _kind(a.dtype), _kind(b.dtype)
    if ka == "f" and kb != "f":
        return a, cast(a.dtype, b)
    if kb == "f" and ka != "f":
        return cast(b.dtype, a), b
    if ka == kb:
        wide = a.dtype if np.dtype(a.dtype).itemsize >= np.dtype(b.dtype).itemsize else b.dtype
        return cast(wide, a), cast(wide, b)
    raise AliasflowError(f"cannot combine {a} ({a.dtype}) with {b} ({b.dtype}): "
                         f"signed/unsigned/bool mixes are not supported")


_FOLD = {
    "Add": lambda x, y: x + y, "Sub": lambda x, y: x - y, "Mul": lambda x, y: x * y,
    "Div": lambda x, y: x / y, "FloorDiv": lambda x, y: x // y, "FloorMod": lambda x, y: x % y,
    "Min": min, "Max": max, "LT": lambda x, y: x < y, "LE": lambda x, y: x <= y,
    "GT": lambda x, y: x > y, "GE": lambda x, y: x >= y, "EQ": lambda x, y: x == y,
    "NE": lambda x, y: x != y, "And": lambda x, y: bool(x and y),
    "Or": lambda x, y: bool(x or y),
}


def binary(cls, a, b) -> PrimExpr:
    """Build ``cls(a, b)`` with TVM's conversions, checks and constant folds."""
    a, b = _match(a, b)
    is_int = _kind(a.dtype) in "iub"
    if cls is Div and is_int:
        raise AliasflowError(f"{a} / {b}: integer division is ambiguous (as in TVM); use // "
                             f"(floor division) or te.floordiv")
    if cls in (FloorDiv, FloorMod) and not is_int:
        raise AliasflowError(f"{cls.__name__}({a}, {b}): needs integer operands, got {a.dtype}")
    if cls in (And, Or) and a.dtype != "bool":
        raise AliasflowError(f"{cls.__name__}({a}, {b}): needs boolean operands, got {a.dtype}")
    zero = lambda e: is_const(e) and e.value == 0  # noqa: E731
    one = lambda e: is_const(e) and e.value == 1  # noqa: E731
    if is_const(a) and is_const(b):
        if cls in (FloorDiv, FloorMod, Div) and b.value == 0:
            raise AliasflowError(f"{cls.__name__}({a}, {b}): division by zero")
        value = _FOLD[cls.__name__](a.value, b.value)
        if issubclass(cls, CmpOpExpr):
            return IntImm("bool", int(value))
        return const(value, a.dtype)
    if cls is Add:
        if zero(a):
            return b
        if zero(b):
            return a
    elif cls is Sub:
        if zero(b):
            return a
    elif cls is Mul:
        if one(a) or zero(b):
            return b
        if one(b) or zero(a):
            return a
    elif cls in (Div, FloorDiv, FloorMod):
        if zero(b):
            raise AliasflowError(f"{cls.__name__}({a}, {b}): division by zero")
        if zero(a):
            return a
        if one(b):
            return const(0, a.dtype) if cls is FloorMod else a
    elif cls in (Min, Max):
        if a is b:
            return a
    elif cls in (And, Or):  # true && x is x, false && x is false; dually for ||
        absorbing = 0 if cls is And else 1
        for c, other in ((a, b), (b, a)):
            if is_const(c):
                return c if c.value == absorbing else other
    return cls(a, b)


def floordiv(a, b): return binary(FloorDiv, a, b)
def floormod(a, b): return binary(FloorMod, a, b)


def post_order_visit(expr, fvisit) -> None:
    """Call ``fvisit`` on every node of ``expr`` after its children, each node once (TVM's
    ``PostOrderVisit``: children in ExprVisitor order, a node reached again is skipped; a
    ``ProducerLoad``'s producer is not entered).

    >>> from aliasflow import te
    >>> A = te.placeholder((4,), name="A")
    >>> C = te.compute((4,), lambda i: A[i] + A[i] * 2, name="C")
    >>> seen = []
    >>> te.post_order_visit(C.op.body[0], lambda n: seen.append(type(n).__name__))
    >>> seen
    ['Var', 'ProducerLoad', 'ProducerLoad', 'FloatImm', 'Mul', 'Add']
    """
    visited: set[int] = set()
    # an explicit stack, so deep expression chains do not hit Python's recursion limit
    stack: list[tuple[object, bool]] = [(as_expr(expr), False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            fvisit(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for child in reversed(node._children()):
            if id(child) not in visited:
                stack.append((child, False))
