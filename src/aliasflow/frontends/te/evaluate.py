"""Vectorised NumPy evaluation of a compute op's body over its whole iteration domain.

The domain is the op's axes followed by its reduce axes; loop variable ``d`` is an
``arange`` shaped to broadcast along dimension ``d``, so every sub-expression is an array
broadcastable to the domain and the whole op is a handful of NumPy calls, never a Python loop
per element.

A load under ``if_then_else`` or in a reduction with ``where=`` is *guarded*: it is read only
at the points where its guards hold (TVM's semantics), so it is gathered, and bounds checked,
only there.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import check_nbytes, show_value
from .expr import (PrimExpr, Var, IntImm, FloatImm, Cast, Add, Sub, Mul, Div, FloorDiv,
                   FloorMod, Min, Max, LT, LE, GT, GE, EQ, NE, And, Or, ProducerLoad,
                   is_const, post_order_visit)
from .intrin import Call, Select
from .tensor import Reduce

# TVM compiles max(a, b) to ``a > b ? a : b`` and min(a, b) to ``a < b ? a : b`` (so a NaN
# operand gives b); NumPy's maximum/minimum would always give the NaN.
_UFUNCS = {Add: np.add, Sub: np.subtract, Mul: np.multiply, Div: np.true_divide,
           FloorDiv: np.floor_divide, FloorMod: np.mod,
           Min: lambda a, b: np.where(a < b, a, b), Max: lambda a, b: np.where(a > b, a, b),
           LT: np.less, LE: np.less_equal, GT: np.greater, GE: np.greater_equal,
           EQ: np.equal, NE: np.not_equal, And: np.logical_and, Or: np.logical_or}
_CALLS = {"tirx.exp": np.exp, "tirx.log": np.log, "tirx.sqrt": np.sqrt, "tirx.tanh": np.tanh,
          "tirx.sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tirx.fabs": np.abs,
          "tirx.pow": np.power}
IF_THEN_ELSE = "prim.if_then_else"


def int_value(expr: PrimExpr, binds: dict, what: str) -> int:
    """The integer an expression of bound symbolic vars stands for."""
    env = {}
    for n in _nodes(expr):
        if isinstance(n, Var):
            if id(n) not in binds:
                raise AliasflowError(f"{what}: {expr} uses var {n.name!r}, which is not bound")
            value = binds[id(n)]
            info = np.iinfo(n.dtype)
            if not info.min <= value <= info.max:
                raise AliasflowError(f"{what}: var {n.name!r} = {show_value(value)} does not "
                                     f"fit its dtype {n.dtype}")
            env[id(n)] = np.asarray(value, dtype=n.dtype)
    return int(Evaluator(env, None, ()).value(expr))


def _nodes(expr):
    out = []
    post_order_visit(expr, out.append)
    return out


def load_guards(expr) -> dict[int, list[tuple] | None]:
    """For each load in ``expr`` (by id): ``None`` if some path reaches it unconditionally,
    else the guard paths, each a tuple of ``(condition, wanted truth value)``."""
    out: dict[int, list[tuple] | None] = {}
    seen: set = set()
    stack: list[tuple[object, tuple]] = [(expr, ())]
    while stack:
        node, guard = stack.pop()
        key = (id(node), tuple((id(c), b) for c, b in guard))
        if key in seen:
            continue
        seen.add(key)
        if isinstance(node, ProducerLoad):
            if not guard:
                out[id(node)] = None
            elif out.get(id(node), []) is not None:
                out.setdefault(id(node), []).append(guard)
        if isinstance(node, Call) and node.op_name == IF_THEN_ELSE:
            c, t, f = node.args
            stack += [(c, guard), (t, guard + ((c, True),)), (f, guard + ((c, False),))]
        elif isinstance(node, Reduce) and not (is_const(node.condition)
                                               and node.condition.value):
            inner = guard + ((node.condition, True),)
            bounds = [e for iv in node.axis for e in (iv.dom.min, iv.dom.extent)]
            stack += [(x, guard) for x in bounds + list(node.init) + [node.condition]]
            stack += [(x, inner) for x in node.source]
        else:
            stack += [(x, guard) for x in node._children()]
    return out


class Domain:
    """The loop nest of a compute op: ``vars`` with integer ``mins`` and ``extents``."""

    def __init__(self, op, binds: dict):
        ivs = list(op.axis) + list(op.reduce_axis)
        self._set(op.name, [iv.var for iv in ivs],
                  [int_value(iv.dom.min, binds, f"op {op.name!r}: loop {iv.var.name}")
                   for iv in ivs],
                  [int_value(iv.dom.extent, binds, f"op {op.name!r}: loop {iv.var.name}")
                   for iv in ivs], len(op.axis))

    @classmethod
    def of(cls, op_name: str, vars, mins, extents, naxis: int) -> "Domain":
        """The loop nest of ``vars`` (the first ``naxis`` are output axes) over integer
        ``mins`` and ``extents``, checked as a te op's are."""
        domain = cls.__new__(cls)
        domain._set(op_name, list(vars), list(mins), list(extents), naxis)
        return domain

    def _set(self, op_name, vars, mins, extents, naxis) -> None:
        self.vars, self.mins, self.extents = vars, mins, extents
        for v, e in zip(self.vars, self.extents):
            if e < 0:
                raise AliasflowError(f"op {op_name!r}: loop {v.name} has negative extent {e}")
        self.points = prod(self.extents)
        if self.points > MAX_POINTS:
            raise AliasflowError(f"op {op_name!r}: its loop nest {tuple(self.extents)} has "
                                 f"{self.points} points, more than the {MAX_POINTS} it may have")
        self.naxis = naxis
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


class Evaluator:
    """Values of the nodes of one body: vars from ``env`` (id → array); ``load(node, index
    arrays, mask)`` gives a load's values (``mask``: where it is read, or None for
    everywhere); a Reduce reduces over ``reduce_dims`` of the domain."""

    def __init__(self, env: dict, load, reduce_dims: tuple[int, ...], guards=None):
        self.env, self.load, self.reduce_dims = env, load, reduce_dims
        self.guards = guards or {}
        self.values: dict[int, np.ndarray] = {}

    def value(self, expr):
        if id(expr) not in self.values:
            with np.errstate(all="ignore"):  # integer wrap-around, inf and nan as in C
                post_order_visit(expr, self._visit)
        return self.values[id(expr)]

    def _visit(self, n):
        if id(n) not in self.values:
            self.values[id(n)] = self._node(n)

    def _mask(self, n):
        paths = self.guards.get(id(n))
        if paths is None:
            return None
        mask = False
        for path in paths:
            m = True
            for cond, want in path:
                c = self.value(cond)
                m = np.logical_and(m, c if want else np.logical_not(c))
            mask = np.logical_or(mask, m)
        return np.asarray(mask)

    def _node(self, n):
        v = self.values
        if isinstance(n, Var):
            if id(n) not in self.env:
                raise AliasflowError(f"var {n.name!r} is neither a loop variable nor bound")
            return self.env[id(n)]
        if isinstance(n, (IntImm, FloatImm)):
            return np.asarray(n.value, dtype=n.dtype)
        if isinstance(n, Cast):
            return v[id(n.value)].astype(n.dtype)
        ufunc = _UFUNCS.get(type(n))
        if ufunc is not None:
            return np.asarray(ufunc(v[id(n.a)], v[id(n.b)])).astype(n.dtype, copy=False)
        if isinstance(n, ProducerLoad):
            return self.load(n, [v[id(i)] for i in n.indices], self._mask(n))
        if isinstance(n, Select):
            return np.where(v[id(n.condition)], v[id(n.true_value)], v[id(n.false_value)])
        if isinstance(n, Call):
            args = [v[id(a)] for a in n.args]
            if n.op_name == IF_THEN_ELSE:
                return np.where(*args).astype(n.dtype, copy=False)
            fn = _CALLS.get(n.op_name)
            if fn is None:
                raise AliasflowError(f"cannot evaluate call {n.op_name!r}")
            return np.asarray(fn(*args)).astype(n.dtype, copy=False)
        if isinstance(n, Reduce):
            return self._reduce(n)
        raise AliasflowError(f"cannot evaluate expression node {type(n).__name__}: {n}")

    def _reduce(self, n: Reduce):
        src = self.values[id(n.source[n.value_index])]
        shape = np.broadcast_shapes(*(np.shape(g) for g in self.env.values()), np.shape(src))
        src = np.broadcast_to(src, shape)
        identity = n.combiner.identity().value
        cond = self.values[id(n.condition)]
        if not (cond.ndim == 0 and bool(cond)):
            src = np.where(np.broadcast_to(cond, shape), src, np.asarray(identity, n.dtype))
        axes = tuple(self.reduce_dims)
        if n.combiner.name == "sum":  # contiguous: the summation order (and so the rounding)
            # then does not depend on how the inputs were laid out
            return np.sum(np.ascontiguousarray(src), axis=axes, dtype=n.dtype)
        valid = None if cond.ndim == 0 and bool(cond) else np.broadcast_to(cond, shape)
        return _fold_extreme(n.combiner.name, src, valid, len(axes), identity, n.dtype)


def _fold_extreme(name, src, valid, nred, identity, dtype):
    """TVM's max/min reduction, ``acc = acc > v ? acc : v`` (``<`` for min) from ``identity``
    over the reduce points in loop order (the trailing ``nred`` dims of ``src``), skipping
    points where ``valid`` is false. Without NaNs that is the plain max/min; a NaN replaces
    ``acc`` and the next point replaces the NaN, so the result is the extreme of the points
    after the last NaN (no identity), or NaN if none follows it."""
    fn = np.max if name == "max" else np.min
    ident = np.asarray(identity, dtype)
    out_shape = src.shape[:src.ndim - nred]
    flat = src.reshape(out_shape + (-1,))
    keep = np.ones(flat.shape, bool) if valid is None else valid.reshape(flat.shape)
    nan = np.isnan(flat) & keep if np.dtype(dtype).kind == "f" else None
    if nan is None or not nan.any():
        return fn(np.where(keep, flat, ident), axis=-1, initial=ident)
    r = flat.shape[-1]
    last = r - 1 - np.argmax(nan[..., ::-1], axis=-1)        # the last NaN of each row
    after = keep & (np.arange(r) > last[..., None])
    beyond = np.asarray(-np.inf if name == "max" else np.inf, dtype)
    tail = fn(np.where(after, flat, beyond), axis=-1, initial=beyond)
    plain = fn(np.where(keep, flat, ident), axis=-1, initial=ident)
    has_nan = nan.any(axis=-1)
    return np.where(has_nan, np.where(after.any(axis=-1), tail, np.asarray(np.nan, dtype)),
                    plain).astype(dtype, copy=False)


def gather(name: str, array: np.ndarray, indices: list, mask=None) -> np.ndarray:
    """``array[indices]`` for broadcastable integer index arrays, bounds checked per dim at
    the points ``mask`` selects (everywhere if None); elsewhere the result is unspecified."""
    shape = np.broadcast_shapes(*(np.shape(i) for i in indices),
                                *(() if mask is None else (np.shape(mask),)))
    if mask is not None:
        where = np.broadcast_to(mask, shape)
        if not where.any():
            return np.zeros(shape, array.dtype)
        indices = [np.where(where, np.broadcast_to(i, shape), 0) for i in indices]
        for d, idx in enumerate(indices):
            _check(name, d, idx[where], array.shape)
    else:
        for d, idx in enumerate(indices):
            _check(name, d, idx, array.shape)
    out = array[tuple(indices)] if indices else array[()]
    return out if mask is None else np.broadcast_to(out, shape)


def _check(name, d, idx, shape):
    if np.size(idx) == 0:
        return
    lo, hi = int(np.min(idx)), int(np.max(idx))
    if lo < 0 or hi >= shape[d]:
        raise AliasflowError(f"load from {name!r}: index {d} ranges over [{lo}, {hi}], "
                             f"outside [0, {shape[d]}) (shape {shape})")


# Points evaluated at once: a reduction holds its whole source over the chunk's domain, so
# the first loop is cut into chunks of at most this many domain points each.
CHUNK_POINTS = 1 << 22
# A loop nest's points are counted in int64 (TVM's loop variables are at most 64 bits), and
# one row of the first loop (the smallest chunk) may hold at most MAX_ROW_POINTS of them.
MAX_POINTS = 2**63 - 1
MAX_ROW_POINTS = CHUNK_POINTS << 4


def op_values(op, domain: Domain, load, env_extra: dict) -> list[np.ndarray]:
    """Every output of ``op`` as an array of the op's output shape."""
    out_shape = domain.shape[:domain.naxis]
    reduce_dims = tuple(range(domain.naxis, len(domain.vars)))
    for t in op._outputs:  # every size checked before anything is allocated
        check_nbytes(out_shape, np.dtype(t.dtype), f"op {op.name!r}: output {t.name!r}")
    try:
        return _op_values(op, domain, load, env_extra, out_shape, reduce_dims)
    except MemoryError:
        raise AliasflowError(f"op {op.name!r}: not enough memory to evaluate its loop nest "
                             f"{domain.shape} ({domain.points} points)") from None


def _op_values(op, domain, load, env_extra, out_shape, reduce_dims) -> list[np.ndarray]:
    if domain.naxis == 0 and domain.points > MAX_ROW_POINTS:
        raise AliasflowError(f"op {op.name!r}: its loop nest {domain.shape} has "
                             f"{domain.points} points; aliasflow.te evaluates at most "
                             f"{MAX_ROW_POINTS} points at a time")
    if domain.naxis == 0 or 0 in domain.shape:
        chunks = [None]
    else:
        per_row = prod(domain.shape[1:])
        # a chunk holds at least one row of the first loop, every point of it at once:
        # bounded before anything is allocated or computed
        if per_row > MAX_ROW_POINTS:
            raise AliasflowError(f"op {op.name!r}: one row of its loop nest {domain.shape} has "
                                 f"{per_row} points; aliasflow.te evaluates at most "
                                 f"{MAX_ROW_POINTS} points at a time")
        step = max(1, CHUNK_POINTS // max(per_row, 1))
        lo, ext = domain.mins[0], domain.extents[0]
        chunks = [range(a, min(a + step, lo + ext)) for a in range(lo, lo + ext, step)]
    guards = [load_guards(e) for e in op.body]
    results = [np.empty(out_shape, t.dtype) for t in op._outputs] if len(chunks) > 1 else None
    for rows in chunks:
        env = dict(env_extra)
        env.update(domain.grids(rows))
        shape = out_shape if rows is None else (len(rows),) + out_shape[1:]
        values = [np.broadcast_to(np.asarray(Evaluator(env, load, reduce_dims, g).value(e),
                                             t.dtype), shape)
                  for e, t, g in zip(op.body, op._outputs, guards)]
        if results is None:
            return values
        start = rows.start - domain.mins[0]
        for r, v in zip(results, values):
            r[start:start + len(rows)] = v
    return results
