"""What running one op record means: the checks before, then read, compute, write.

Semantics (see SPEC): an op reads every input before it writes any output, so an output that
overlaps one of its own inputs sees the old values; writing through a view with internal
overlap is ambiguous and refused for every op but a uniform one (Fill); shape and dtype
mismatches are refused before anything is written. :func:`check` says everything that can
be known without running; :func:`execute` runs one record the reference way. The runners
(:mod:`aliasflow.execution`) check once per distinct kind, parameters and layouts and then
run prepared kernels, with the same outcome.
"""
from __future__ import annotations

import numpy as np

from .errors import AliasflowError, ExecutionError
from .primitives import Primitive, lookup


def check(rec) -> Primitive:
    """The record's primitive, or an error if the record cannot run (:class:`ExecutionError`
    when its kernel refuses the inputs' dtypes, else :class:`AliasflowError`): its kind
    is not runnable, a parameter is unknown, missing or of the wrong type, its arity is wrong, a view has no memory, an output is read-only or
    maps two indices to one element (unless the kind is uniform), the primitive's own check
    refuses it, or its predicted result does not fit an output."""
    prim = lookup(rec.prim, rec.name)
    if prim.kernel is None:
        raise AliasflowError(f"op {rec.name!r}: kind {prim.name!r} has no kernel (analysis "
                             f"only)")
    prim.bind(rec.name, rec.params)  # every parameter known, present and of its type
    ins, outs = rec.input_views, rec.output_views
    if prim.arity is not None and len(ins) != prim.arity:
        raise AliasflowError(f"op {rec.name!r} ({prim.name}) needs {prim.arity} input(s), "
                             f"has {len(ins)}")
    for v in ins:
        if not v.storage.has_memory:
            raise AliasflowError(f"op {rec.name!r}: input {v.name!r} is on virtual tensor "
                                 f"{v.tensor.name!r} (analysis only), which has no memory")
    for out in outs:
        if not out.storage.has_memory:
            raise AliasflowError(f"op {rec.name!r}: output {out.name!r} is on virtual tensor "
                                 f"{out.tensor.name!r} (analysis only), which has no memory")
        if out.storage.readonly:
            raise AliasflowError(f"op {rec.name!r}: output {out.name!r} is on read-only "
                                 f"storage {out.storage.name!r}")
        if not prim.uniform and out.has_internal_overlap():
            raise AliasflowError(
                f"op {rec.name!r}: output view {out.name!r} (shape {out.shape}, stride "
                f"{out.stride}) maps several indices to one element; writing through it is "
                f"ambiguous")
    if prim.check is not None:
        prim.check(rec)
    if prim.result is not None and prim.outputs == "all" and outs:
        try:
            predicted = prim.result(rec.params, [(v.shape, v.dtype) for v in ins])
        except AliasflowError:
            raise
        except Exception as exc:  # the kernel refuses these dtypes: it cannot run
            raise ExecutionError(rec.name, f"kernel {kernel_label(rec, prim)!r} raised "
                                           f"{type(exc).__name__}: {exc}") from exc
        if predicted is not None:
            shape, dtype = predicted
            for out in outs:
                fits_result(rec.name, shape, dtype, out)
    return prim


def fits_result(op_name: str, shape, dtype, out) -> None:
    """Refuse a result of ``shape``/``dtype`` that cannot be written to view ``out``."""
    fits_shape(op_name, shape, out)
    fits_dtype(op_name, dtype, out)


def fits_shape(op_name: str, shape, out) -> None:
    """Refuse a result of ``shape`` that does not broadcast to view ``out``'s shape."""
    try:
        fits = np.broadcast_shapes(shape, out.shape) == out.shape
    except ValueError:
        fits = False
    if not fits:
        raise AliasflowError(f"op {op_name!r}: result of shape {tuple(shape)} does not fit "
                             f"output {out.name!r} of shape {out.shape}")


def fits_dtype(op_name: str, dtype, out) -> None:
    """Refuse a result of ``dtype`` that cannot be cast to view ``out``'s (``same_kind``)."""
    if not np.can_cast(dtype, out.dtype, "same_kind"):
        raise AliasflowError(f"op {op_name!r}: result dtype {dtype} cannot be written to "
                             f"output {out.name!r} of dtype {out.dtype}")


def kernel_label(rec, prim: Primitive) -> str:
    """How a message names the op's kernel: its ``fn`` parameter's name, else the kind."""
    fn = rec.params.get("fn")
    if fn is None:
        return prim.name
    return fn if isinstance(fn, str) else getattr(fn, "__name__", repr(fn))


def compute(rec, prim: Primitive, inputs: list, outputs: list) -> list:
    """Run the kernel on ``inputs`` (arrays of the read operands) and write ``outputs``
    (arrays of the written operands); return the op's values (what it returns without
    writing memory). Nothing is written unless the kernel succeeded and its value fits."""
    params = rec.params
    try:
        if len(outputs) == 1 and prim.into is not None and prim.into(params, inputs,
                                                                      outputs[0]):
            return []
        got = prim.kernel(params, inputs)
    except (AliasflowError, ExecutionError):
        raise
    except Exception as exc:  # a kernel's bug: say whose, keep the original chained
        raise ExecutionError(rec.name, f"kernel {kernel_label(rec, prim)!r} raised "
                                       f"{type(exc).__name__}: {exc}") from exc
    if prim.outputs == "each":
        values = [np.asarray(v) for v in got]
        if len(values) != len(outputs) + rec.n_values:
            raise ExecutionError(rec.name, f"kernel {kernel_label(rec, prim)!r} returned "
                                           f"{len(values)} values for {len(outputs)} "
                                           f"output(s) and {rec.n_values} value(s)")
        pairs = list(zip(values, outputs))
        rest = values[len(outputs):]
    else:
        value = np.asarray(got)
        pairs = [(value, out) for out in outputs]
        rest = [value] if not outputs else []
    # a value kept as a result must not change when later ops write its storage
    kept = []
    for value in rest:
        kept.append(value.copy() if _may_share(value, outputs or inputs) else value)
    checked = []
    for (value, out), view in zip(pairs, rec.output_views):
        if _may_share(value, outputs):  # a kernel returning a view of an output
            value = value.copy()
        fits_shape(rec.name, value.shape, view)
        if not prim.uniform:
            fits_dtype(rec.name, value.dtype, view)
        checked.append((value, out))
    for value, out in checked:
        out[...] = value
    return kept


def arrays(rec) -> tuple[list, list]:
    """NumPy arrays over the record's read operands and written operands (slot order)."""
    return [v.numpy() for v in rec.input_views], [v._ndarray() for v in rec.output_views]


def execute(rec) -> list:
    """Check and run one record the reference way; return its values."""
    prim = check(rec)
    inputs, outputs = arrays(rec)
    return compute(rec, prim, inputs, outputs)


def _may_share(value: np.ndarray, arrays) -> bool:
    """Whether ``value`` may share memory with one of ``arrays`` (``np.may_share_memory``'s
    bounds test, which is never wrong when it answers False).

    A kernel's result that NumPy allocated itself (it owns its memory, no base) shares none
    with an array whose memory another live ndarray owns: two live allocations are disjoint.
    That common case is answered here, holding the GIL: ``np.may_share_memory`` releases it,
    and in a parallel run each release with a thread waiting for the GIL wakes that thread
    (thousands of context switches per second of tiny ops)."""
    if value.base is None and value.flags.owndata:
        for arr in arrays:
            owner = arr if arr.base is None else arr.base  # NumPy collapses bases to the owner
            if owner is value or not (type(owner) is np.ndarray and owner.base is None
                                      and owner.flags.owndata):
                break
        else:
            return False
    return any(np.may_share_memory(value, arr) for arr in arrays)

