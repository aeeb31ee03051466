"""``te.lower``: a te graph as an aliasflow program whose ops read exact views.

A load ``A[f_0(v), ..., f_r(v)]`` whose indices are affine in the loop variables ``v`` (an
integer combination plus a constant) touches, over the op's whole iteration domain (axes then
reduce axes), exactly the strided view with the domain's extents as shape and
``stride_d = sum_r coeff(f_r, v_d) * rowstride_r``; a loop variable the load does not use gets
stride 0 (a broadcast-like view: reading through it is fine). Anything else (``A[i * j]``,
``A[i // 2]``, a data-dependent ``A[B[i]]``, a load read only where an ``if_then_else`` or
``where=`` condition holds) is reported as such, never approximated.

>>> from aliasflow import te
>>> import aliasflow as af
>>> A = te.placeholder((4, 4), name="A")
>>> B = te.compute((3, 4), lambda i, j: A[i + 1, j] * 2, name="B")
>>> k = te.reduce_axis((0, 4), name="k")
>>> C = te.compute((3,), lambda i: te.sum(B[i, k], axis=k), name="C")
>>> prog = te.lower([C])
>>> [(op.name, [(v.offset, v.shape, v.stride) for v in op.input_views]) for op in prog]
[('B', [(4, (3, 4), (4, 1))]), ('C', [(0, (3, 4), (4, 1))])]
>>> [(d.src, d.dst, d.kind) for d in af.analyze(prog).dependencies]
[('B', 'C', 'RAW')]
"""
from __future__ import annotations

import numpy as np

from ...core.errors import AliasflowError
from ...core.primitives import PRIMITIVES, Primitive
from ...core.record import Access, OpRecord
from ...core.values import show_value
from ...core.view import Tensor as AfTensor
from ...core.view import TensorView
from .build import _tensors, as_view, topo_ops
from .codec import Decoded, decode, encode
from .evaluate import Domain, gather, int_value, load_guards, op_values
from .expr import (Var, IntImm, Cast, Add, Sub, Mul, FloorDiv, FloorMod, Min, Max,
                   ProducerLoad, post_order_visit)
from .tensor import ComputeOp, Tensor


class NonAffineIndexError(AliasflowError):
    """A load index that is not an integer affine function of the loop variables."""


def affine_form(expr, domain: Domain, binds: dict) -> tuple[list[int], int]:
    """``(coefficients per domain dim, constant)`` of an affine index, else
    :class:`NonAffineIndexError` saying why. Bound symbolic sizes count as constants."""
    nd = len(domain.vars)

    def go(e):
        if isinstance(e, IntImm):
            return [0] * nd, e.value
        if isinstance(e, Var):
            if id(e) in domain.position:
                c = [0] * nd
                c[domain.position[id(e)]] = 1
                return c, 0
            if id(e) in binds:
                return [0] * nd, int(binds[id(e)])
            raise NonAffineIndexError(f"var {e.name!r} is neither a loop variable nor bound")
        if isinstance(e, (Add, Sub)):
            (ca, ka), (cb, kb) = go(e.a), go(e.b)
            s = 1 if isinstance(e, Add) else -1
            return [x + s * y for x, y in zip(ca, cb)], ka + s * kb
        if isinstance(e, Mul):
            (ca, ka), (cb, kb) = go(e.a), go(e.b)
            if any(ca) and any(cb):
                raise NonAffineIndexError(f"{e} multiplies two loop-dependent terms")
            if any(ca):
                return [x * kb for x in ca], ka * kb
            return [y * ka for y in cb], ka * kb
        if isinstance(e, (FloorDiv, FloorMod, Min, Max)):
            (ca, ka), (cb, kb) = go(e.a), go(e.b)
            if any(ca) or any(cb):
                raise NonAffineIndexError(f"{e} ({type(e).__name__}) of a loop-dependent term "
                                          f"is not affine")
            if isinstance(e, (FloorDiv, FloorMod)) and kb == 0:
                raise NonAffineIndexError(f"{e} divides by zero")
            fn = {FloorDiv: lambda a, b: a // b, FloorMod: lambda a, b: a % b,
                  Min: min, Max: max}[type(e)]
            return [0] * nd, fn(ka, kb)
        if isinstance(e, Cast) and np.can_cast(e.value.dtype, e.dtype, "safe"):
            return go(e.value)  # a widening integer cast keeps every value
        if isinstance(e, ProducerLoad):
            raise NonAffineIndexError(f"{e} is data-dependent (loads from {e.producer.name!r})")
        raise NonAffineIndexError(f"{e} ({type(e).__name__}) is not an affine index")
    return go(expr)


def load_view(load: ProducerLoad, domain: Domain, base: TensorView, binds: dict,
              name: str) -> TensorView:
    """The exact view ``load`` reads over ``domain`` (element ``t`` of the view is the element
    read at loop point ``mins + t``), bounds checked per dimension. ``base`` is the producer's
    memory: a view of the producer's shape (its strides compose with the load's)."""
    nd = len(domain.vars)
    forms = [affine_form(e, domain, binds) for e in load.indices]
    if 0 in domain.extents:  # nothing is read
        return TensorView(name, base.tensor, base.offset, domain.shape, (0,) * nd, base.dtype)
    for d, ((coef, c), size) in enumerate(zip(forms, base.shape)):
        at_min = c + sum(a * lo for a, lo in zip(coef, domain.mins))
        span = [a * (ext - 1) for a, ext in zip(coef, domain.extents)]
        lo = at_min + sum(s for s in span if s < 0)
        hi = at_min + sum(s for s in span if s > 0)
        if lo < 0 or hi >= size:
            raise AliasflowError(f"load {load}: index {d} ranges over [{lo}, {hi}], outside "
                                 f"[0, {size}) of {load.producer.name!r}")
    offset = base.offset + sum(r * (c + sum(a * lo for a, lo in zip(coef, domain.mins)))
                               for r, (coef, c) in zip(base.stride, forms))
    stride = tuple(sum(r * coef[v] for r, (coef, _) in zip(base.stride, forms))
                   for v in range(nd))
    return TensorView(name, base.tensor, offset, domain.shape, stride, base.dtype)


def _evaluate(decoded: Decoded, inputs) -> list:
    """Run a decoded te compute op's body with NumPy over its domain: one value per output."""
    reads = decoded.reads

    def load(node, idx, mask):
        k, whole = reads[id(node)]
        if whole:
            return gather(node.producer.name, inputs[k], idx, mask)
        return inputs[k]
    return [np.array(r) for r in op_values(decoded.op, decoded.domain, load, decoded.env)]


def _compute_kernel(params, inputs):
    return _evaluate(decode("te.compute", params), inputs)


def _prepare_compute(params):
    decoded = decode("te.compute", params)
    return lambda inputs: _evaluate(decoded, inputs)


def _check_compute(rec) -> None:
    """The record's views fit its op: each load reads an operand that exists (of the loop
    nest's shape, or with as many dims as indices when read whole), one written view per
    output, of the output axes' shape."""
    decoded = decode(rec.name, rec.params)
    ins, outs, domain = rec.input_views, rec.output_views, decoded.domain
    for node_id, (k, whole) in decoded.reads.items():
        if k >= len(ins):
            raise AliasflowError(f"op {rec.name!r}: a load reads operand {k}, the op reads "
                                 f"{len(ins)} view(s)")
    loads = []
    for e in decoded.op.body:
        post_order_visit(e, lambda n: loads.append(n) if isinstance(n, ProducerLoad) else None)
    for n in loads:
        k, whole = decoded.reads[id(n)]
        want = len(n.indices) if whole else domain.shape
        got = ins[k].ndim if whole else ins[k].shape
        if got != want:
            raise AliasflowError(f"op {rec.name!r}: load {n} reads view {ins[k].name!r} of "
                                 f"shape {ins[k].shape}; it needs "
                                 f"{f'{want} dims' if whole else f'shape {want}'}")
    out_shape = domain.shape[:domain.naxis]
    if len(outs) != len(decoded.op._outputs) or any(v.shape != out_shape for v in outs):
        raise AliasflowError(f"op {rec.name!r}: writes {[v.shape for v in outs]}; its "
                             f"{len(decoded.op._outputs)} output(s) have shape {out_shape}")


# A te compute op: reads one exact view per distinct load (or, for a non-affine load under
# ``non_affine="whole"``, the producer's whole tensor), writes each output tensor whole. Its
# parameters are the op's loop nest and expressions as JSON data (:mod:`.codec`).
COMPUTE = PRIMITIVES.register(Primitive(
    "te.compute", _compute_kernel,
    params={"op": "str", "loops": "json", "naxis": "int", "results": "json", "nodes": "json",
            "body": "json"}, outputs="each", check=_check_compute,
    check_params=lambda op_name, params: decode(op_name, params), prepare=_prepare_compute,
    doc="A te compute op, run with NumPy over its domain."), replace=True)


def compute_record(name, te_op, domain, binds, reads, inputs, outputs) -> OpRecord:
    """The op record of one te compute op (``reads``: id(load) -> (input position, whole
    tensor?))."""
    n = len(inputs)
    return OpRecord(name, "te.compute", [Access(k, "R", v) for k, v in enumerate(inputs)]
                    + [Access(n + k, "W", v) for k, v in enumerate(outputs)],
                    encode(te_op, domain, binds, reads), 0)


class LoweredProgram(list):
    """The lowered ops in topological order (a list of op records); ``views`` maps each te
    tensor to the aliasflow view holding it; ``non_affine`` lists the loads read whole, and
    why."""

    def __init__(self, ops, views, non_affine):
        super().__init__(ops)
        self.views, self.non_affine = views, non_affine


def _unique(name: str, used: set) -> str:
    out, k = name, 0
    while out in used:
        k += 1
        out = f"{name}_{k}"
    used.add(out)
    return out


def lower(outputs, binds=None, non_affine: str = "error", virtual: bool = False,
          arrays=None):
    """The aliasflow program computing ``outputs``: one op record (kind ``te.compute``) per
    te compute op, in topological order. Each te tensor lives in a fresh aliasflow tensor, or in
    the caller's memory if ``arrays`` maps it to an array (NumPy or any DLPack exporter, no
    copy; arrays may share memory, and the analysis then sees through it). ``binds`` gives
    symbolic sizes (``{var or name: int}``); sizes not given are read from ``arrays``. A load
    without an exact strided footprint raises :class:`NonAffineIndexError` unless
    ``non_affine="whole"``, which reads the whole producer (a recorded superset, listed in
    ``program.non_affine``). ``virtual=True`` makes memoryless tensors (analysis only)."""
    if non_affine not in ("error", "whole"):
        raise AliasflowError(f"lower: non_affine must be 'error' or 'whole', got {non_affine!r}")
    roots = _tensors("lower outputs", outputs)
    ops = topo_ops(roots)
    bound = _binds(ops, binds or {})
    given = {}
    for t, arr in (arrays or {}).items():
        if not isinstance(t, Tensor) or t.op not in ops:
            raise AliasflowError(f"lower: arrays key {show_value(t)} is not a tensor of the graph")
        given[t] = as_view(arr, f"lower: array for {t.name!r}", t.name)
        for e, n in zip(t.shape, given[t].shape):
            if isinstance(e, Var) and id(e) not in bound:
                bound[id(e)] = n
    names: set[str] = set()
    views: dict[Tensor, TensorView] = {}
    for op in ops:
        for t in op._outputs:
            shape = tuple(int_value(e, bound, f"shape of {t.name!r}") for e in t.shape)
            if t in given:
                v = given[t]
                if v.shape != shape or v.dtype != np.dtype(t.dtype):
                    raise AliasflowError(f"lower: array for {t.name!r} is {v.shape} {v.dtype}, "
                                         f"the tensor is {shape} {t.dtype}")
                views[t] = v
                continue
            tname = _unique(t.name, names)
            tensor = AfTensor.virtual(tname, shape, t.dtype) if virtual \
                else AfTensor(tname, shape, t.dtype)
            views[t] = tensor.view(tname)
    program, skipped, opnames = [], [], set()
    for op in ops:
        if not isinstance(op, ComputeOp):
            continue
        domain = Domain(op, bound)
        reads_views, reads = _reads(op, domain, views, bound, non_affine, skipped)
        program.append(compute_record(_unique(op.name, opnames), op, domain, bound, reads,
                                      reads_views, [views[t] for t in op._outputs]))
    return LoweredProgram(program, views, skipped)


def _reads(op, domain, bases, bound, non_affine, skipped):
    """The views ``op`` reads (one per distinct window) and, per load, ``(position in those
    views, read whole?)``."""
    guarded = {k for e in op.body for k, g in load_guards(e).items() if g is not None}
    views, reads, where = [], {}, {}

    def visit(n):
        if not isinstance(n, ProducerLoad) or id(n) in reads:
            return
        base = bases[n.producer]
        try:
            if id(n) in guarded:
                raise NonAffineIndexError(
                    "it is read only where a condition holds (if_then_else or where=), so "
                    "what it reads is not a strided view over the loop nest")
            v, whole = load_view(n, domain, base, bound, str(n)), False
        except NonAffineIndexError as exc:
            if non_affine == "error":
                raise NonAffineIndexError(f"op {op.name!r}: load {n} has no exact strided "
                                          f"footprint: {exc}") from None
            skipped.append(f"op {op.name!r}: load {n} read whole: {exc}")
            v, whole = base, True
        key = (id(v.tensor), v.offset, v.shape, v.stride, v.dtype)
        if key not in where:
            where[key] = len(views)
            views.append(v)
        reads[id(n)] = (where[key], whole)
    for e in op.body:
        post_order_visit(e, visit)
    return views, reads


def _binds(ops, binds) -> dict:
    """``{var or var name: int}`` as ``{id(var): int}`` for the vars the ops use."""
    found: dict[str, list] = {}

    def collect(e):
        def f(n):
            if isinstance(n, Var):
                found.setdefault(n.name, []).append(n)
        post_order_visit(e, f)
    for op in ops:
        for e in getattr(op, "shape", ()) or ():
            collect(e)
        for t in op._outputs:
            for e in t.shape:
                collect(e)
        for iv in list(getattr(op, "axis", ())) + list(getattr(op, "reduce_axis", ())):
            collect(iv.dom.min)
            collect(iv.dom.extent)
        for e in getattr(op, "body", ()):
            collect(e)
    out = {}
    for key, value in binds.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise AliasflowError(f"lower: bind {show_value(key)} must be an int, got {show_value(value)}")
        if isinstance(key, Var):
            out[id(key)] = int(value)
        elif isinstance(key, str) and key in found:
            for v in found[key]:
                out[id(v)] = int(value)
        else:
            raise AliasflowError(f"lower: bind {show_value(key)} names no var of the graph")
    return out
