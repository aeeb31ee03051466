"""Lowering: a program's accesses as an integer table every analysis walks.

Each access (an op reading or writing one view) becomes one row: the op's position, the mode
(read or write; an operand an op reads and writes appears once in each), the **memory
group** (storages whose address ranges intersect, directly or through others: accesses in
different groups never alias), and the view as a cell layout ``(offset, shape, stride)``
counted from the group's base address in cells of the group's ``unit`` bytes, the largest
size dividing every byte offset, stride and itemsize in the group. In the usual case (one
dtype, aligned storages) a cell is an element; a reinterpreting view (``int8`` over
``float32``) makes the group's cells bytes. Rows also carry the layout's extent
``[low, high]`` and whether it is dense (every cell of the extent touched exactly once).

Python identity plays no part: two imports of one buffer land in one group at the same
cells.
"""
from __future__ import annotations

from math import gcd
from typing import NamedTuple

import numpy as np

from ..core.storage import memory_groups

READ, WRITE = 0, 1


class Access(NamedTuple):
    """The fields of one row of the table (rows themselves are plain tuples in this order:
    ``Access._make(row)`` names them)."""

    op: int
    mode: int
    group: int
    low: int
    high: int
    dense: bool
    layout: tuple  # (offset, shape, stride) in cells of the group
    view: object   # the TensorView, for reporting


class AccessTable:
    """The accesses of a program, in program order (ops in order; per op, reads then writes).

    ``rows`` holds tuples with the fields of :class:`Access`; ``units[g]`` and ``bases[g]`` give group ``g``'s
    cell size in bytes and base address. :meth:`columns` gives the same as NumPy arrays.
    """

    __slots__ = ("rows", "units", "bases", "n_ops", "op_starts")

    def __init__(self, rows, units, bases, n_ops, op_starts):
        self.rows: list[tuple] = rows
        self.units: list[int] = units
        self.bases: list[int] = bases
        self.n_ops = n_ops
        self.op_starts: list[int] = op_starts  # rows of op j: op_starts[j]:op_starts[j+1]

    def __len__(self) -> int:
        return len(self.rows)

    def columns(self) -> dict[str, np.ndarray]:
        """Struct-of-arrays form: ``op, mode, group, low, high, dense, ndim, offset`` per row,
        and ``shape``/``stride`` flattened with ``dims_start`` (``len(rows) + 1`` entries: row
        ``r``'s dims are ``dims_start[r]:dims_start[r + 1]``). Cells must fit in int64."""
        rows = [Access._make(r) for r in self.rows]
        ndim = np.fromiter((len(r.layout[1]) for r in rows), np.int64, len(rows))
        starts = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(ndim, out=starts[1:])
        return {
            "op": np.fromiter((r.op for r in rows), np.int64, len(rows)),
            "mode": np.fromiter((r.mode for r in rows), np.int8, len(rows)),
            "group": np.fromiter((r.group for r in rows), np.int64, len(rows)),
            "low": np.fromiter((r.low for r in rows), np.int64, len(rows)),
            "high": np.fromiter((r.high for r in rows), np.int64, len(rows)),
            "dense": np.fromiter((r.dense for r in rows), np.bool_, len(rows)),
            "ndim": ndim,
            "offset": np.fromiter((r.layout[0] for r in rows), np.int64, len(rows)),
            "dims_start": starts,
            "shape": np.fromiter((n for r in rows for n in r.layout[1]), np.int64,
                                 int(starts[-1])),
            "stride": np.fromiter((s for r in rows for s in r.layout[2]), np.int64,
                                  int(starts[-1])),
        }


def _extent_dense(offset, shape, stride):
    """Extent ``(low, high)`` and density of a non-empty cell layout."""
    low = high = offset
    dims = []
    for n, s in zip(shape, stride):
        if s < 0:
            low += s * (n - 1)
        else:
            high += s * (n - 1)
        if n != 1:
            dims.append((abs(s), n))
    dims.sort()
    expected = 1
    for s, n in dims:
        if s != expected:
            return low, high, False
        expected *= n
    return low, high, True


def unique_views(views):
    """Each view object once, in order (an op reading a view twice reads it once)."""
    if len(views) > 2 or (len(views) == 2 and views[0] is views[1]):
        return list({id(v): v for v in views}.values())
    return views


def place_tensors(tensors):
    """Memory groups of ``tensors``: ``units[g]`` and ``bases[g]`` per group (the unit as far
    as the tensors alone set it) and ``shift[id(t)] = (g, byte offset of t in its group)``."""
    groups = memory_groups(t.storage for t in tensors)
    n_groups = 1 + max((g for g, _ in groups.values()), default=-1)
    units = [0] * n_groups
    bases = [0] * n_groups
    # A view of its tensor's own dtype has byte offset and strides that are multiples of the
    # tensor's itemsize, so the tensor alone sets its contribution to the group's unit.
    shift = {}
    for t in tensors:
        g, base = groups[id(t.storage)]
        bases[g] = base
        shift[id(t)] = (g, t.storage.address - base)
        units[g] = gcd(units[g], t.dtype.itemsize, t.storage.address - base)
    return units, bases, shift


def element_cells(tensors):
    """For programs whose views all have their tensor's dtype: ``(groups, shifts)`` per
    tensor when every group's cell is its tensors' element (``shifts`` in elements), else
    None. The compiled walker lowers such programs itself (the fast path of :func:`lower`)."""
    units, _, shift = place_tensors(tensors)
    groups, shifts = [], []
    for t in tensors:
        g, delta = shift[id(t)]
        if units[g] != t.dtype.itemsize:
            return None
        groups.append(g)
        shifts.append(delta // units[g])
    return tuple(groups), tuple(shifts)


def lower(ops) -> AccessTable:
    """The access table of ``ops`` (in program order). Empty views make no rows."""
    storages = {}
    for op in ops:
        for v in op.input_views:
            storages[id(v.tensor)] = v.tensor
        for v in op.output_views:
            storages[id(v.tensor)] = v.tensor
    tensors = list(storages.values())
    units, bases, shift = place_tensors(tensors)
    odd = []  # reinterpreting views: their own bytes count too
    for op in ops:
        for v in (*op.input_views, *op.output_views):
            if v.dtype is not v.tensor.dtype and v.dtype != v.tensor.dtype:
                g = shift[id(v.tensor)][0]
                unit = gcd(units[g], v.dtype.itemsize, v.byte_offset, *v.byte_strides)
                units[g] = unit
                odd.append(v)
    rows: list[tuple] = []
    op_starts = []
    for j, op in enumerate(ops):
        op_starts.append(len(rows))
        for mode, views in ((READ, op.input_views), (WRITE, op.output_views)):
            for v in unique_views(views):
                extent = v.extent
                if extent is None:
                    continue
                t = v.tensor
                g, delta = shift[id(t)]
                unit = units[g]
                isz = t.dtype.itemsize
                if unit == isz and v.dtype.itemsize == isz:
                    d = delta // isz  # cells are elements: the view's own numbers, shifted
                    rows.append((j, mode, g, extent[0] + d, extent[1] + d, v.is_dense,
                                 (v.offset + d, v.shape, v.stride), v))
                    continue
                k = isz // unit
                shape, stride = v.shape, tuple(s * k for s in v.stride)
                span = v.dtype.itemsize // unit
                if span > 1:
                    shape, stride = shape + (span,), stride + (1,)
                layout = ((delta + v.offset * isz) // unit, shape, stride)
                low, high, dense = _extent_dense(*layout)
                rows.append((j, mode, g, low, high, dense, layout, v))
    op_starts.append(len(rows))
    return AccessTable(rows, units, bases, len(ops), op_starts)
