"""TVM's ``te`` graph (seed 003): a :class:`Tensor` is ``(op, value_index)`` with a shape and
dtype; :func:`placeholder` and :func:`compute` make the ops; :func:`sum`/:func:`max`/
:func:`min` over :func:`reduce_axis` make reductions.

>>> from aliasflow import te
>>> n = te.var("n")
>>> A = te.placeholder((n,), name="A")
>>> B = te.placeholder((n,), name="B")
>>> E = te.placeholder((n,), name="E")
>>> C = te.compute(A.shape, lambda i: A[i] + B[i] + E[i], name="C")
>>> [t.name for t in C.op.input_tensors]
['A', 'B', 'E']
>>> B0, B1 = te.compute((n,), lambda i: (A[i] + 2, B[i] * 3), name="S")
>>> B0.op == B1.op, B0.value_index, B1.value_index, B0.name
(True, 0, 1, 'S.v0')
"""
from __future__ import annotations

import inspect

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import show_value
from .expr import (PrimExpr, Var, IntImm, ProducerLoad, as_expr, binary, const, Max, Min,
                   Add, Sub, post_order_visit, _dtype_name)


def var(name: str = "tindex", dtype="int32", span=None) -> Var:
    """A symbolic scalar, e.g. a size bound when a built function is called."""
    return Var(name, dtype)


class Range:
    """``[min, min + extent)``."""

    def __init__(self, min, extent):
        self.min, self.extent = as_expr(min), as_expr(extent)

    def __repr__(self):
        return f"Range(min={self.min}, extent={self.extent})"


class IterVar:
    """A loop: ``var`` over ``dom``; ``iter_type`` is ``"DataPar"`` (an output axis) or
    ``"CommReduce"`` (a reduction axis). Usable wherever an expression is (its var)."""

    def __init__(self, dom: Range, var: Var, iter_type: str):
        self.dom, self.var, self.iter_type = dom, var, iter_type

    def _as_expr(self):
        return self.var

    def __repr__(self):
        return f"IterVar({self.var.name}, [{self.dom.min}, {self.dom.min} + {self.dom.extent}), " \
               f"{self.iter_type})"


# k + 1, k * 2, ... act on the var, as in TVM
for _op in ("add", "radd", "sub", "rsub", "mul", "rmul", "floordiv", "rfloordiv", "mod", "rmod",
            "truediv", "rtruediv", "neg", "lt", "le", "gt", "ge"):
    setattr(IterVar, f"__{_op}__",
            (lambda op: lambda self, *o: getattr(self.var, op)(*o))(f"__{_op}__"))
del _op


def reduce_axis(dom, name: str = "rv", thread_tag: str = "", span=None) -> IterVar:
    """A reduction axis over ``dom = (lo, hi)``: ``lo <= k < hi``."""
    try:
        lo, hi = dom
    except (TypeError, ValueError):
        raise AliasflowError(f"reduce_axis {name!r}: dom must be (lo, hi), got {show_value(dom)}") from None
    lo, hi = as_expr(lo), as_expr(hi)
    for bound in (lo, hi):
        if np.dtype(bound.dtype).kind not in "iu":
            raise AliasflowError(f"reduce_axis {name!r}: bound {bound} has dtype {bound.dtype}; "
                                 f"a loop domain is made of integers")
    extent = binary(Sub, hi, lo)
    return IterVar(Range(lo, extent), Var(name, "int32"), "CommReduce")


class CommReducer:
    """A commutative reduction: ``name`` is ``"sum"``, ``"max"`` or ``"min"``."""

    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype

    def identity(self) -> PrimExpr:
        if self.name == "sum":
            return const(0, self.dtype)
        info = np.finfo(self.dtype) if np.dtype(self.dtype).kind == "f" else np.iinfo(self.dtype)
        return const(info.min if self.name == "max" else info.max, self.dtype)

    def __repr__(self):
        return f"CommReducer({self.name}, {self.dtype})"


class Reduce(PrimExpr):
    """``combiner`` over ``source[value_index]`` for all ``axis`` points where ``condition``.

    TVM visits the axes' bounds, then the source, then init, then the condition."""

    __slots__ = ("combiner", "source", "axis", "condition", "value_index", "init", "dtype")

    def __init__(self, combiner, source, axis, condition, value_index=0, init=()):
        self.combiner, self.source, self.axis = combiner, tuple(source), tuple(axis)
        self.condition, self.value_index, self.init = condition, value_index, tuple(init)
        self.dtype = self.source[value_index].dtype

    def _children(self):
        bounds = [e for iv in self.axis for e in (iv.dom.min, iv.dom.extent)]
        return bounds + list(self.source) + list(self.init) + [self.condition]

    def __str__(self):
        axes = ", ".join(iv.var.name for iv in self.axis)
        return f"{self.combiner.name}({self.source[self.value_index]}, axis=[{axes}])"
    __repr__ = __str__


def _reducer(name: str, combine):
    def reducer(expr, axis=None, where=None, init=None):
        if axis is None or isinstance(axis, (PrimExpr, int, float)):
            if axis is None:
                raise AliasflowError(f"te.{name}: needs axis= (a reduce_axis or a list of them)")
            return combine(expr, axis)  # te.max(a, b): the two-operand form
        axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        for a in axes:
            if not isinstance(a, IterVar) or a.iter_type != "CommReduce":
                raise AliasflowError(f"te.{name}: axis must be reduce_axis objects, got {show_value(a)}")
        if init is not None:
            raise AliasflowError(f"te.{name}: init= is not supported")
        expr = as_expr(expr)
        cond = const(1, "bool") if where is None else as_expr(where)
        return Reduce(CommReducer(name, expr.dtype), [expr], axes, cond)
    reducer.__name__ = name
    reducer.__doc__ = (f"``te.{name}(expr, axis=k)``: the {name} of ``expr`` over the reduce "
                       f"axes ``k`` (``where=`` masks points out); ``te.{name}(a, b)`` combines "
                       f"two expressions.")
    return reducer


sum = _reducer("sum", lambda a, b: binary(Add, a, b))  # noqa: A001
max = _reducer("max", lambda a, b: binary(Max, a, b))  # noqa: A001
min = _reducer("min", lambda a, b: binary(Min, a, b))  # noqa: A001


class Operation:
    """Base of :class:`PlaceholderOp` and :class:`ComputeOp`; compared by identity."""

    name: str
    num_outputs = 1
    tag = ""

    @property
    def attrs(self) -> dict:
        return dict(self._attrs)

    _attrs: dict = {}  # never mutated: compute() gives each op its own

    def output(self, index: int) -> "Tensor":
        if not isinstance(index, int) or not 0 <= index < self.num_outputs:
            raise AliasflowError(f"op {self.name!r} has {self.num_outputs} output(s), "
                                 f"no output {show_value(index)}")
        return self._outputs[index]

    @property
    def input_tensors(self) -> list["Tensor"]:
        return []

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r})"


class PlaceholderOp(Operation):
    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, shape, dtype
        self._outputs = [Tensor(self, 0, shape, dtype)]


class ComputeOp(Operation):
    """``axis`` (one IterVar per output dim), ``reduce_axis`` (from a top-level Reduce),
    ``body`` (one expression per output)."""

    def __init__(self, name, axis, body):
        self.name, self.axis, self.body = name, tuple(axis), tuple(body)
        first = self.body[0]
        self.reduce_axis = first.axis if isinstance(first, Reduce) else ()
        shape = tuple(iv.dom.extent for iv in self.axis)
        self.num_outputs = len(self.body)
        self._outputs = [Tensor(self, k, shape, e.dtype) for k, e in enumerate(self.body)]

    @property
    def input_tensors(self) -> list["Tensor"]:
        """TVM's ``ComputeOpNode::InputTensors``: each body in post-order, the producer of
        every ProducerLoad, first occurrence first."""
        ret, seen = [], set()

        def visit(node):
            if isinstance(node, ProducerLoad) and node.producer not in seen:
                seen.add(node.producer)
                ret.append(node.producer)
        for e in self.body:
            post_order_visit(e, visit)
        return ret


class Tensor:
    """Output ``value_index`` of ``op``. ``T[i, j]`` (or ``T(i, j)``) is a ProducerLoad."""

    def __init__(self, op, value_index, shape, dtype):
        self.op, self.value_index, self.shape, self.dtype = op, value_index, shape, dtype

    @property
    def name(self) -> str:
        return self.op.name if self.op.num_outputs == 1 else f"{self.op.name}.v{self.value_index}"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __call__(self, *indices) -> ProducerLoad:
        if len(indices) == 1 and isinstance(indices[0], (tuple, list)):
            indices = tuple(indices[0])
        if len(indices) != self.ndim:
            raise AliasflowError(f"tensor {self.name!r} has {self.ndim} dims, indexed with "
                                 f"{len(indices)}: {show_value(indices)}")
        idx = []
        for k, x in enumerate(indices):
            if isinstance(x, slice):
                raise AliasflowError(f"tensor {self.name!r}: slices are not supported in te "
                                     f"expressions (index {k} is {show_value(x)})")
            e = as_expr(x)
            if np.dtype(e.dtype).kind not in "iu":
                raise AliasflowError(f"tensor {self.name!r}: index {k} ({e}) has dtype "
                                     f"{e.dtype}, not an integer")
            idx.append(e)
        return ProducerLoad(self, idx)

    def __getitem__(self, indices):
        """``A[i, j]`` is a load; ``A[i]`` of a 2-d tensor is a :class:`TensorSlice`, so
        ``A[i][j]`` works as in TVM."""
        indices = indices if isinstance(indices, tuple) else (indices,)
        if len(indices) < self.ndim:
            return TensorSlice(self, indices)
        return self(*indices)

    def __eq__(self, other):
        return isinstance(other, Tensor) and other.op is self.op \
            and other.value_index == self.value_index

    def __hash__(self):
        return hash((id(self.op), self.value_index))

    def __repr__(self):
        return f"Tensor(shape=({', '.join(map(str, self.shape))}{',' * (self.ndim == 1)}), " \
               f"op.name={self.op.name})"


class TensorSlice:
    """A tensor indexed in its leading dims only; index it further to get a load."""

    def __init__(self, tensor: Tensor, indices: tuple):
        self.tensor, self.indices = tensor, tuple(indices)

    def __getitem__(self, more):
        return self.tensor[self.indices + (more if isinstance(more, tuple) else (more,))]

    def _as_expr(self):
        raise AliasflowError(f"tensor {self.tensor.name!r} has {self.tensor.ndim} dims, indexed "
                             f"with {len(self.indices)}: {self.indices!r}")


# arithmetic on an incomplete slice reports the missing indices
for _op in ("add", "radd", "sub", "rsub", "mul", "rmul", "floordiv", "rfloordiv", "mod", "rmod",
            "truediv", "rtruediv", "neg", "lt", "le", "gt", "ge"):
    setattr(TensorSlice, f"__{_op}__", lambda self, *o: self._as_expr())
del _op


def _shape(shape, what) -> tuple[PrimExpr, ...]:
    if isinstance(shape, (int, np.integer, PrimExpr)):
        shape = (shape,)
    try:
        dims = tuple(as_expr(d) for d in shape)
    except (TypeError, AliasflowError):
        raise AliasflowError(f"{what}: shape must be a tuple of ints or int expressions, "
                             f"got {show_value(shape)}") from None
    for d in dims:
        if np.dtype(d.dtype).kind not in "iu":
            raise AliasflowError(f"{what}: shape entry {d} has dtype {d.dtype}, not an integer")
        if isinstance(d, IntImm) and d.value < 0:
            raise AliasflowError(f"{what}: negative size {d.value} in shape")
    return dims


def placeholder(shape, dtype=None, name: str = "placeholder") -> Tensor:
    """An input tensor (``float32`` unless ``dtype`` says otherwise)."""
    dtype = "float32" if dtype is None else dtype
    if not isinstance(name, str) or not name:
        raise AliasflowError(f"placeholder name must be a non-empty string, got {name!r}")
    what = f"placeholder {name!r}"
    return PlaceholderOp(name, _shape(shape, what), _dtype_name(dtype, what)).output(0)


def _has_reduce(e) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(1) if isinstance(n, Reduce) else None)
    return bool(found)


def compute(shape, fcompute, name: str = "compute", tag: str = "", attrs=None,
            varargs_names=None):
    """A tensor (or a list of tensors, if ``fcompute`` returns a tuple or list) whose element
    at ``(i, j, ...)`` is ``fcompute(i, j, ...)``. The loop variables take ``fcompute``'s
    parameter names (``varargs_names``, else ``i0, i1, ...``, for ``*args``); ``tag`` and
    ``attrs`` are kept on the op."""
    if not isinstance(name, str) or not name:
        raise AliasflowError(f"compute name must be a non-empty string, got {name!r}")
    what = f"compute {name!r}"
    dims = _shape(shape, what)
    if not callable(fcompute):
        raise AliasflowError(f"{what}: fcompute must be callable, got {fcompute!r}")
    try:
        spec = inspect.getfullargspec(fcompute)
    except TypeError:
        raise AliasflowError(f"{what}: cannot read fcompute's parameters") from None
    if spec.varargs is not None or not spec.args:  # TVM's names: i0, i1, ... for the rest
        rest = len(dims) - len(spec.args)
        if varargs_names is not None and len(varargs_names) != rest:
            raise AliasflowError(f"{what}: {rest} varargs but varargs_names has "
                                 f"{len(varargs_names)} names")
        names = list(spec.args) + list(varargs_names or [f"i{k}" for k in range(rest)])
    else:
        names = list(spec.args)
    if len(names) != len(dims) or spec.defaults or spec.kwonlyargs or spec.varkw:
        raise AliasflowError(f"{what}: fcompute must take one positional argument per dim "
                             f"({len(dims)}), got ({', '.join(spec.args)})")
    axis = [IterVar(Range(0, d), Var(n, d.dtype), "DataPar") for n, d in zip(names, dims)]
    out = fcompute(*[iv.var for iv in axis])
    many = isinstance(out, (tuple, list))
    body = [as_expr(e) for e in (out if many else [out])]
    if not body:
        raise AliasflowError(f"{what}: fcompute returned no expressions")
    for k, e in enumerate(body):
        top = isinstance(e, Reduce)
        if (top and many) or (not top and _has_reduce(e)):
            raise AliasflowError(f"{what}: a reduction must be the whole body of a "
                                 f"single-output compute (body {k} is {e})")
    op = ComputeOp(name, axis, body)
    op.tag, op._attrs = tag, dict(attrs or {})
    outs = op._outputs
    return outs if many else outs[0]


def create_schedule(ops):
    """The seed's ``tvm.create_schedule(Z.op)``: here only a record of the output ops (there
    is no scheduling; :func:`build` evaluates the default order)."""
    return Schedule(ops)


class Schedule:
    def __init__(self, ops):
        ops = list(ops) if isinstance(ops, (list, tuple)) else [ops]
        for o in ops:
            if not isinstance(o, Operation):
                raise AliasflowError(f"create_schedule: expected te operations, got {o!r}")
        self.outputs = ops


def convert(value) -> PrimExpr:
    """``tvm.convert(56)``: a number as a constant expression."""
    return as_expr(value)


class PrimFunc:
    """``te.create_prim_func(args)``: the arguments of a function, in call order, for
    :func:`build` (TVM 0.27's ``tvm.compile(te.create_prim_func([A, B, C]))``)."""

    def __init__(self, args):
        self.args = list(args)


def create_prim_func(args) -> PrimFunc:
    return PrimFunc(args)
