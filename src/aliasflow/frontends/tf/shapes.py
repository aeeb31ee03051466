"""Static shape inference in TensorFlow's rules (broadcasting with unknown dims, ``MatMul``,
``Sum``, ``StridedSlice``, ``Fill``), used when ops are made and again at run time with the
shapes actually fed."""
from __future__ import annotations

from itertools import zip_longest

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import show_value
from .dtypes import TensorShape
from .graph import Operation


def _broadcast(op_name: str, a: TensorShape, b: TensorShape) -> TensorShape:
    if a.dims is None or b.dims is None:
        return TensorShape(None)
    out = []
    for x, y in zip_longest(reversed(a.dims), reversed(b.dims), fillvalue=1):
        if x is None and y is None:
            d = None
        elif x is None:
            d = None if y == 1 else y
        elif y is None:
            d = None if x == 1 else x
        elif x == y or y == 1:
            d = x
        elif x == 1:
            d = y
        else:
            raise AliasflowError(f"{op_name}: dimensions must be equal, but are {x} and {y} "
                                 f"(input shapes {a} and {b})")
        out.append(d)
    return TensorShape(out[::-1])


def _matmul_shape(op_name: str, a: TensorShape, b: TensorShape) -> TensorShape:
    if a.dims is None or b.dims is None:
        return TensorShape([None, None])
    if len(a.dims) != 2 or len(b.dims) != 2:
        raise AliasflowError(f"{op_name}: MatMul needs two matrices, got shapes {a} and {b}")
    if a.dims[1] is not None and b.dims[0] is not None and a.dims[1] != b.dims[0]:
        raise AliasflowError(f"{op_name}: inner dimensions differ: shapes {a} and {b}")
    return TensorShape([a.dims[0], b.dims[1]])


def _batch_matmul_shape(op_name: str, a: TensorShape, b: TensorShape) -> TensorShape:
    if a.dims is None or b.dims is None:
        return TensorShape(None)
    if len(a.dims) < 2 or len(b.dims) < 2:
        raise AliasflowError(f"{op_name}: BatchMatMulV2 needs inputs of rank >= 2, got shapes "
                             f"{a} and {b}")
    batch = _broadcast(op_name, TensorShape(a.dims[:-2]), TensorShape(b.dims[:-2]))
    inner = _matmul_shape(op_name, TensorShape(a.dims[-2:]), TensorShape(b.dims[-2:]))
    return TensorShape(batch.dims + inner.dims)


def _normalize_axes(op_name: str, axis, rank: int) -> list[int]:
    axes = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis).ravel())
    out = []
    for a in axes:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise AliasflowError(f"{op_name}: axis must be ints, got {show_value(axis)}")
        if not -rank <= a < rank:
            raise AliasflowError(f"{op_name}: axis {int(a)} is out of range for rank {rank}")
        out.append(int(a) % rank)
    return out


def _sum_shape(op_name: str, x: TensorShape, axis, keepdims: bool) -> TensorShape:
    if x.dims is None:
        return TensorShape(None)
    axes = set(_normalize_axes(op_name, axis, len(x.dims)))
    if keepdims:
        return TensorShape([1 if k in axes else d for k, d in enumerate(x.dims)])
    return TensorShape([d for k, d in enumerate(x.dims) if k not in axes])


def _expand_index(op_name: str, index, rank: int) -> list:
    """The index with ``...`` replaced by full slices (TensorFlow: missing dims are kept)."""
    real = sum(1 for i in index if i is not None and i is not Ellipsis)
    if real > rank:
        raise AliasflowError(f"{op_name}: index {show_value(index)} has {real} entries for rank {rank}")
    out = []
    for item in index:
        if item is Ellipsis:
            out.extend([slice(None)] * (rank - real))
            real = rank
        else:
            out.append(item)
    return out


def _slice_shape(op_name: str, x: TensorShape, index) -> TensorShape:
    if x.dims is None:
        return TensorShape(None)
    out, k = [], 0
    for item in _expand_index(op_name, index, len(x.dims)):
        if item is None:
            out.append(1)
            continue
        d = x.dims[k]
        k += 1
        if isinstance(item, slice):
            out.append(None if d is None else len(range(*item.indices(d))))
        elif d is not None and not -d <= item < d:
            raise AliasflowError(f"{op_name}: index {item} is out of bounds for dimension "
                                 f"{k - 1} of size {d}")
    return TensorShape(out + x.dims[k:])


def output_shapes(op: Operation, in_shapes: list[TensorShape]) -> list[TensorShape]:
    """The shapes of ``op``'s outputs for these input shapes (static or at run time)."""
    t, attrs = op.type, op._attrs
    if t in ("AddV2", "Sub", "Mul", "RealDiv"):
        return [_broadcast(op.name, *in_shapes)]
    if t == "MatMul":
        return [_matmul_shape(op.name, *in_shapes)]
    if t == "BatchMatMulV2":
        return [_batch_matmul_shape(op.name, *in_shapes)]
    if t == "Sum":
        return [_sum_shape(op.name, in_shapes[0], attrs["_axis"], attrs["keep_dims"])]
    if t == "StridedSlice":
        return [_slice_shape(op.name, in_shapes[0], attrs["_index"])]
    if t in ("Neg", "Identity", "Cast", "Assign", "AssignAdd", "AssignSub",
             "StridedSliceAssign", "ZerosLike"):
        return [in_shapes[0]]
    if t == "Shape":
        return [TensorShape([in_shapes[0].rank])]
    return [o.shape for o in op.outputs]


def fill_dims(op: Operation, shape_of) -> TensorShape:
    """The shape a ``Fill`` makes: its dims come from a ``Const`` or a ``Shape`` op
    (``shape_of(tensor)`` gives a tensor's shape, static or at run time)."""
    dims_op = op.inputs[0].op
    if dims_op.type == "Const":
        return TensorShape([int(d) for d in dims_op._attrs["value"]])
    if dims_op.type == "Shape":
        return TensorShape(shape_of(dims_op.inputs[0]))
    raise AliasflowError(f"Fill {op.name!r}: dims must come from a Const or a Shape op")
