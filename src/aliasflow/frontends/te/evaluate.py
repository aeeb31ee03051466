"""Vectorised NumPy evaluation of a compute op's body over its whole iteration domain.

The domain is the op's axes followed by its reduce axes; loop variable ``d`` is an
``arange`` shaped to broadcast along dimension ``d``, so every sub-expression is an array
broadcastable to the domain and the whole op is a handful of NumPy calls, never a Python loop
per element.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import AliasflowError
from .expr import (PrimExpr, Var, IntImm, FloatImm, Cast, Add, Sub, Mul, Div, FloorDiv,
                   FloorMod, Min, Max, LT, LE, GT, GE, ProducerLoad, post_order_visit)
from .tensor import Reduce

_UFUNCS = {Add: np.add, Sub: np.subtract, Mul: np.multiply, Div: np.true_divide,
           FloorDiv: np.floor_divide, FloorMod: np.mod, Min: np.minimum, Max: np.maximum,
           LT: np.less, LE: np.less_equal, GT: np.greater, GE: np.greater_equal}


def int_value(expr: PrimExpr, binds: dict, what: str) -> int:
    """The integer an expression of bound symbolic vars stands for."""
    env = {}
    for n in _nodes(expr):
        if isinstance(n, Var):
            if id(n) not in binds:
                raise AliasflowError(f"{what}: {expr} uses var {n.name!r}, which is not bound")
            env[id(n)] = np.asarray(binds[id(n)], dtype=n.dtype)
    return int(evaluate(expr, env, None, ()))


def _nodes(expr):
    out = []
    post_order_visit(expr, out.append)
    return out


class Domain:
    """The loop nest of a compute op: ``vars`` with integer ``mins`` and ``extents``."""

    def __init__(self, op, binds: dict):
        ivs = list(op.axis) + list(op.reduce_axis)
        self.vars = [iv.var for iv in ivs]
        self.mins = [int_value(iv.dom.min, binds, f"op {op.name!r}: loop {iv.var.name}")
                     for iv in ivs]
        self.extents = [int_value(iv.dom.extent, binds, f"op {op.name!r}: loop {iv.var.name}")
                        for iv in ivs]
        for v, e in zip(self.vars, self.extents):
            if e < 0:
                raise AliasflowError(f"op {op.name!r}: loop {v.name} has negative extent {e}")
        self.naxis = len(op.axis)
        self.position = {id(v): k for k, v in enumerate(self.vars)}

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.extents)

    def grids(self, first: range | None = None) -> dict:
        """Loop variables as broadcastable aranges; ``first`` restricts the first loop."""
        nd = len(self.vars)
        env = {}
        for d, (v, lo, ext) in enumerate(zip(self.vars, self.mins, self.extents)):
            values = range(lo, lo + ext) if d or first is None else first
            shape = [1] * nd
            shape[d] = len(values)
            env[id(v)] = np.arange(values.start, values.stop, dtype=v.dtype).reshape(shape)
        return env


def evaluate(expr: PrimExpr, env: dict, load, reduce_dims: tuple[int, ...]):
    """Value of ``expr``: vars from ``env`` (id → array), ``load(node, index_arrays)`` for
    ProducerLoads; a top-level Reduce reduces over ``reduce_dims`` of the domain."""
    values: dict[int, np.ndarray] = {}

    def visit(n):
        values[id(n)] = _node_value(n, values, env, load, reduce_dims)
    with np.errstate(all="ignore"):  # integer wrap-around and inf/nan follow NumPy, as in C
        post_order_visit(expr, visit)
    return values[id(expr)]


def _node_value(n, values, env, load, reduce_dims):
    if isinstance(n, Var):
        if id(n) not in env:
            raise AliasflowError(f"var {n.name!r} is neither a loop variable nor bound")
        return env[id(n)]
    if isinstance(n, (IntImm, FloatImm)):
        return np.asarray(n.value, dtype=n.dtype)
    if isinstance(n, Cast):
        return values[id(n.value)].astype(n.dtype)
    ufunc = _UFUNCS.get(type(n))
    if ufunc is not None:
        return np.asarray(ufunc(values[id(n.a)], values[id(n.b)])).astype(n.dtype, copy=False)
    if isinstance(n, ProducerLoad):
        return load(n, [values[id(i)] for i in n.indices])
    if isinstance(n, Reduce):
        return _reduce(n, values, env, reduce_dims)
    raise AliasflowError(f"cannot evaluate expression node {type(n).__name__}: {n}")


def _reduce(n: Reduce, values, env, reduce_dims):
    src = values[id(n.source[n.value_index])]
    shape = np.broadcast_shapes(*(np.shape(g) for g in env.values()), np.shape(src))
    src = np.broadcast_to(src, shape)
    identity = n.combiner.identity().value
    cond = values[id(n.condition)]
    if not (cond.ndim == 0 and bool(cond)):
        src = np.where(np.broadcast_to(cond, shape), src, np.asarray(identity, n.dtype))
    axes = tuple(reduce_dims)
    if n.combiner.name == "sum":
        return np.sum(src, axis=axes, dtype=n.dtype)
    fn = np.max if n.combiner.name == "max" else np.min
    return fn(src, axis=axes, initial=np.asarray(identity, n.dtype))


def gather(name: str, array: np.ndarray, indices: list) -> np.ndarray:
    """``array[indices]`` for broadcastable integer index arrays, bounds checked per dim."""
    for d, (idx, size) in enumerate(zip(indices, array.shape)):
        if np.size(idx) == 0:
            return np.empty(np.broadcast_shapes(*(np.shape(i) for i in indices)), array.dtype)
        lo, hi = int(np.min(idx)), int(np.max(idx))
        if lo < 0 or hi >= size:
            raise AliasflowError(f"load from {name!r}: index {d} ranges over [{lo}, {hi}], "
                                 f"outside [0, {size}) (shape {array.shape})")
    return array[tuple(indices)] if indices else array[()]


# Points evaluated at once: a reduction holds its whole source over the chunk's domain, so
# the first loop is cut into chunks of at most this many domain points each.
CHUNK_POINTS = 1 << 22


def op_values(op, domain: Domain, load, env_extra: dict) -> list[np.ndarray]:
    """Every output of ``op`` as an array of the op's output shape."""
    out_shape = domain.shape[:domain.naxis]
    reduce_dims = tuple(range(domain.naxis, len(domain.vars)))
    if domain.naxis == 0 or 0 in domain.shape:
        chunks = [None]
    else:
        per_row = int(np.prod(domain.shape[1:], dtype=np.int64))
        step = max(1, CHUNK_POINTS // max(per_row, 1))
        lo, ext = domain.mins[0], domain.extents[0]
        chunks = [range(a, min(a + step, lo + ext)) for a in range(lo, lo + ext, step)]
    results = [np.empty(out_shape, t.dtype) for t in op._outputs] if len(chunks) > 1 else None
    for rows in chunks:
        env = dict(env_extra)
        env.update(domain.grids(rows))
        shape = out_shape if rows is None else (len(rows),) + out_shape[1:]
        values = [np.broadcast_to(np.asarray(evaluate(e, env, load, reduce_dims), t.dtype), shape)
                  for e, t in zip(op.body, op._outputs)]
        if results is None:
            return values
        start = rows.start - domain.mins[0]
        for r, v in zip(results, values):
            r[start:start + len(rows)] = v
    return results
