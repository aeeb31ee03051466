"""Checks made on every op before a run starts, so that a refused program modifies nothing.

What can be known without running: each op's arity, that its outputs can be written (not
virtual, not read-only, no two indices on one element unless the op is a Fill), that its
inputs can be read (and, for an input that repeats its elements, that it has at most
``MAX_REPEATED_INDICES`` indices for a kernel to run through), that a Fill value fits every output's dtype, and, for the named kernels
of Transform/Binary/Reduce ops, the shape and dtype of the result (from the input shapes and
dtypes, as NumPy's rules give them) against every output. A user's callable kernel can only
be judged by running it: its result is checked when the op runs.
"""
from __future__ import annotations

from operator import attrgetter

import numpy as np

from ..core.errors import AliasflowError, ExecutionError
from ..core.operations import (BinaryOperation, FillOperation, Operation, ReduceOperation,
                               TransformOperation)
from ..core.view import MAX_REPEATED_INDICES
from ..solver.native import load


class OpRefused(AliasflowError, ExecutionError):
    """An op that cannot run, found before any op ran (both a bad-input error and an
    execution error: ``op_name`` names the first refused op in program order)."""

    def __init__(self, op_name: str, message: str):
        Exception.__init__(self, f"{message} (found before running: no op has run)")
        self.op_name = op_name


def _readonly(view) -> bool:
    return bool(view.tensor.storage.readonly)


def _virtual(view) -> bool:
    return not view.tensor.storage.has_memory


def _same(cls, op) -> bool:
    """``op`` runs ``cls``'s own kernel (not a subclass's override)."""
    return isinstance(op, cls) and type(op).compute is cls.compute


def _sample(view) -> np.ndarray:
    return np.zeros((1,) * view.ndim, view.dtype)


def predicted_result(op: Operation):
    """``(shape, dtype)`` of the op's result without running it, or None when unknowable."""
    if not getattr(op, "elementwise", False):
        return None
    ins = op.input_views
    with np.errstate(all="ignore"):
        if _same(TransformOperation, op):
            return ins[0].shape, np.asarray(op.fn(_sample(ins[0]))).dtype
        if _same(BinaryOperation, op):
            a, b = ins
            try:
                shape = np.broadcast_shapes(a.shape, b.shape)
            except ValueError:
                raise AliasflowError(f"op {op.name!r}: input shapes do not broadcast: "
                                     f"{op._shapes(ins)}") from None
            return shape, np.asarray(op.fn(_sample(a), _sample(b))).dtype
        if _same(ReduceOperation, op):
            (x,) = ins
            if isinstance(op.axis, bool) or not isinstance(op.axis, (int, np.integer)):
                raise AliasflowError(f"op {op.name!r}: axis must be an int, got {op.axis!r}")
            if not -x.ndim <= op.axis < x.ndim:
                raise AliasflowError(f"op {op.name!r}: axis {op.axis} out of range for input "
                                     f"{x.name!r} of shape {x.shape}")
            axis = op.axis % x.ndim
            shape = x.shape[:axis] + x.shape[axis + 1:]
            return shape, np.asarray(op.fn(_sample(x), axis=op.axis)).dtype
    return None


def check_op(op: Operation) -> None:
    """Raise :class:`AliasflowError` if ``op`` cannot run (see the module docstring)."""
    if op.arity is not None and len(op.input_views) != op.arity:
        raise AliasflowError(f"op {op.name!r} ({op.kind}) needs {op.arity} input(s), "
                             f"has {len(op.input_views)}")
    for v in op.input_views:
        if _virtual(v):
            raise AliasflowError(f"op {op.name!r}: input {v.name!r} is on virtual tensor "
                                 f"{v.tensor.name!r} (analysis only), which has no memory")
        if v.size > MAX_REPEATED_INDICES and v.repeats:
            raise AliasflowError(f"op {op.name!r}: input {v.name!r} (shape {v.shape}, stride "
                                 f"{v.stride}) repeats its elements over {v.size} indices; a "
                                 f"kernel runs through at most {MAX_REPEATED_INDICES} of a "
                                 f"view that repeats (analysis takes any size)")
    for out in op.output_views:
        if _virtual(out):
            raise AliasflowError(f"op {op.name!r}: output {out.name!r} is on virtual tensor "
                                 f"{out.tensor.name!r} (analysis only), which has no memory")
        if _readonly(out):
            raise AliasflowError(f"op {op.name!r}: output {out.name!r} is on read-only "
                                 f"storage {out.tensor.name!r}")
        if not op.uniform_value and out.has_internal_overlap():
            raise AliasflowError(
                f"op {op.name!r}: output view {out.name!r} (shape {out.shape}, stride "
                f"{out.stride}) maps several indices to one element; writing through it is "
                f"ambiguous")
    if isinstance(op, FillOperation):
        op.check_value()
        return
    predicted = predicted_result(op)
    if predicted is None:
        return
    shape, dtype = predicted
    for out in op.output_views:
        try:
            fits = np.broadcast_shapes(shape, out.shape) == out.shape
        except ValueError:
            fits = False
        if not fits:
            raise AliasflowError(f"op {op.name!r}: result of shape {shape} does not fit "
                                 f"output {out.name!r} of shape {out.shape}")
        if not np.can_cast(dtype, out.dtype, "same_kind"):
            raise AliasflowError(f"op {op.name!r}: result dtype {dtype} cannot be written to "
                                 f"output {out.name!r} of dtype {out.dtype}")


_VIEW_KEY = attrgetter("shape", "stride", "dtype", "tensor")
_PLAIN_NUMBERS = frozenset({int, float, np.float16, np.float32, np.float64, np.int8, np.int16,
                            np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64})


def _signature(op: Operation):
    """Everything :func:`check_op` reads of ``op``, as a hashable value: two ops with equal
    signatures pass or fail it alike (within one call, while no storage changes), or None
    when ``op`` must be checked alone. Views are immutable; a view's shape, stride (in its
    tensor's elements), dtype and tensor fix what is checked of it (its storage, internal
    overlap, result shapes and dtypes). The kernel is compared by identity (every op, so
    every kernel, is alive during the call) and never hashed: a user's object could answer
    anything to ``==``."""
    fill = None
    if isinstance(op, FillOperation):
        fill = op.fill_value
        if type(fill) not in _PLAIN_NUMBERS:
            return None
    axis = getattr(op, "axis", None)  # with its type, as the fill: 0 == 0.0 == False
    return (type(op), op.arity, op.uniform_value, getattr(op, "elementwise", None),
            id(getattr(op, "fn", None)), type(axis), axis, type(fill), fill,
            tuple(map(_VIEW_KEY, op.input_views)), tuple(map(_VIEW_KEY, op.output_views)))


def signature_groups(ops) -> list[int]:
    """For each op, the position of the first op with its :func:`_signature`, or -1 when it
    must be checked alone (the readable reference of the compiled ``signature_groups``)."""
    first: dict = {}
    groups = []
    for k, op in enumerate(ops):
        try:
            key = _signature(op)
            groups.append(-1 if key is None else first.setdefault(key, k))
        except Exception:  # noqa: BLE001 - an attribute check_op reports better: check alone
            groups.append(-1)
    return groups


#: The compiled twin of :func:`signature_groups` (``aliasflow.execution._ready``), or None.
#: Tests swap it.
compiled_groups = getattr(load(__package__ + "._ready"), "signature_groups", None)


def check_all(ops: list[Operation]) -> bytes:
    """Check every op; refuse the first (in program order) that cannot run.

    Ops with the same signature (kind, kernel and view layouts: a trace repeats a few of
    them many times) are checked once: the first of each group, in program order, so the
    first op refused is the first that cannot run. Returns, for the parallel runner, one
    byte per op: 1 for a light op (:func:`aliasflow.execution.ready.is_light`), else 0.
    """
    from .ready import is_light  # ready imports core only; deferred to keep checks leaf-like

    n = len(ops)
    if compiled_groups is not None:
        group = np.frombuffer(compiled_groups(tuple(ops), FillOperation, _PLAIN_NUMBERS),
                              np.int32)
    else:
        group = np.array(signature_groups(ops), np.int32).reshape(n)
    position = np.arange(n, dtype=np.int32)
    flags = np.zeros(n, np.uint8)
    for k in np.flatnonzero((group < 0) | (group == position)).tolist():
        op = ops[k]
        try:
            check_op(op)
        except AliasflowError as exc:
            raise OpRefused(op.name, str(exc)) from None
        flags[k] = is_light(op)
    # every other op is like the first op of its group
    return flags[np.where(group < 0, position, group)].tobytes()
