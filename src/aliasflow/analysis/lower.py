"""Lowering: a program's accesses as an integer table every analysis walks.

Each access (an op reading or writing one view) becomes one row: the op's position, the mode
(read or write; an operand an op reads and writes appears once in each), and the view's
*entry*: every distinct view object is lowered once, as its **memory group** (storages whose
address ranges intersect, directly or through others: accesses in different groups never
alias) and its cell layout ``(offset, shape, stride)`` counted from the group's base address
in cells of the group's ``unit`` bytes, the largest size dividing every byte offset, stride
and itemsize in the group. In the usual case (one dtype, aligned storages) a cell is an
element; a reinterpreting view (``int8`` over ``float32``) makes the group's cells bytes.

The table is integers in NumPy arrays (what the compiled walk takes, and nothing else) plus
the entries' view objects for reporting. Python identity plays no part in what aliases: two
imports of one buffer land in one group at the same cells.
"""
from __future__ import annotations

from itertools import accumulate, chain
from math import gcd
from operator import attrgetter

import numpy as np

from ..core.storage import memory_groups

READ, WRITE = 0, 1
# Fields of a materialised row (:meth:`AccessTable.rows`), for the Python walkers.
OP, MODE, GROUP, LOW, HIGH, DENSE, LAYOUT, VIEW = range(8)

_fields = attrgetter("tensor", "offset", "shape", "stride", "dtype", "extent")


class AccessTable:
    """The accesses of a program, in program order (ops in order; per op, reads then writes).

    Rows: ``modes[r]`` and ``entries[r]`` (int arrays); op ``j``'s rows are
    ``op_starts[j]:op_starts[j + 1]``. Entries (distinct views): ``groups[e]``,
    ``offsets[e]``, and ``shape``/``stride`` flattened with ``dims_start`` (entry ``e``'s dims
    are ``dims_start[e]:dims_start[e + 1]``), in cells of the group; ``views[e]`` is the view.
    ``units[g]`` and ``bases[g]``: group ``g``'s cell size in bytes and base address.
    """

    __slots__ = ("n_ops", "op_starts", "modes", "entries", "views", "groups", "offsets",
                 "dims_start", "shape", "stride", "units", "bases", "_rows")

    def __len__(self) -> int:
        return len(self.modes)

    def layout(self, e: int) -> tuple:
        """Entry ``e``'s cell layout ``(offset, shape, stride)`` (the solver's form)."""
        a, b = int(self.dims_start[e]), int(self.dims_start[e + 1])
        return (int(self.offsets[e]), tuple(self.shape[a:b].tolist()),
                tuple(self.stride[a:b].tolist()))

    def rows(self) -> list[tuple]:
        """Every row as ``(op, mode, group, low, high, dense, layout, view)`` (fields named by
        this module's ``OP``..``VIEW``): what the Python walkers read."""
        if self._rows is None:
            per_entry = []
            for e in range(len(self.views)):
                layout = self.layout(e)
                low, high, dense = extent_dense(*layout)
                per_entry.append((int(self.groups[e]), low, high, dense, layout, self.views[e]))
            op_of = np.repeat(np.arange(self.n_ops), np.diff(self.op_starts))
            self._rows = [(j, m) + per_entry[e] for j, m, e in
                          zip(op_of.tolist(), self.modes.tolist(), self.entries.tolist())]
        return self._rows


def extent_dense(offset, shape, stride):
    """Extent ``(low, high)`` and density (every cell of the extent touched exactly once) of
    a non-empty cell layout."""
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


def lower(records) -> AccessTable:
    """The access table of ``records`` (op records, in program order). Empty views make no
    rows; an op reading one view object twice reads it once.

    Rows are worked out with NumPy over the ids of all views at once; only each distinct view
    object is looked at in Python (programs reuse their views a lot)."""
    n_ops = len(records)
    ins = list(map(_inputs, records))
    outs = list(map(_outputs, records))
    counts = np.zeros(2 * n_ops, np.int64)  # per op: its reads, its writes
    counts[0::2] = np.fromiter(map(len, ins), np.int64, n_ops)
    counts[1::2] = np.fromiter(map(len, outs), np.int64, n_ops)
    # every view of every op: its reads, then its writes, op by op (C loops, no bytecode)
    flat = list(chain.from_iterable(chain.from_iterable(zip(ins, outs))))
    ids = np.fromiter(map(id, flat), np.int64, len(flat))
    # distinct view objects, numbered in order of first appearance
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")
    number = np.empty(len(unique), np.int64)
    number[by_first] = np.arange(len(unique))
    entry = number[inverse.reshape(-1)]
    candidates = [flat[k] for k in first[by_first].tolist()]
    # rows: (op, mode, entry), keeping the first of repeats within one op's reads or writes,
    # and dropping empty views (no element: no row, ever)
    op = np.repeat(np.arange(n_ops, dtype=np.int64), counts[0::2] + counts[1::2])
    mode = np.repeat(np.tile(np.array([READ, WRITE], np.int8), n_ops), counts)
    empty = np.fromiter((v.extent is None for v in candidates), bool, len(candidates))
    keep = ~empty[entry] if len(entry) else np.zeros(0, bool)
    if len(entry):
        key = (op * 2 + mode) * len(candidates) + entry
        _, firsts = np.unique(key, return_index=True)
        once = np.zeros(len(key), bool)
        once[firsts] = True
        keep &= once
    op, mode, entry = op[keep], mode[keep], entry[keep]
    # entries: the non-empty views, renumbered
    used = ~empty
    renumber = np.cumsum(used) - 1
    views = [v for v, u in zip(candidates, used.tolist()) if u]
    entry = renumber[entry]
    tens = list(map(_tensor, views))
    units, bases, shift = place_tensors(list({id(t): t for t in tens}.values()))
    same = all(map(_same_dtype, views, tens))
    if not same:
        for v, t in zip(views, tens):  # reinterpreting views: their own bytes count too
            if not _same_dtype(v, t):
                g = shift[id(t)][0]
                units[g] = gcd(units[g], v.dtype.itemsize, v.byte_offset, *v.byte_strides)
    placed = list(map(shift.__getitem__, map(id, tens)))  # (group, byte offset of the tensor)
    itemsizes = [t.dtype.itemsize for t in tens]
    if same and all(units[g] == isz for (g, _), isz in zip(placed, itemsizes)):
        # the usual case: every group's cells are its tensors' elements, every view of its
        # tensor's dtype; the views' own numbers, shifted, in bulk
        shapes = list(map(_shape, views))
        groups = [g for g, _ in placed]
        offsets = [o + d // isz for o, (_, d), isz in
                   zip(map(_offset, views), placed, itemsizes)]
        shape_cells = list(chain.from_iterable(shapes))
        stride_cells = list(chain.from_iterable(map(_stride, views)))
        dims = [0]
        dims += accumulate(map(len, shapes))
    else:
        groups, offsets, dims, shape_cells, stride_cells = _cells(views, placed, units)
    table = AccessTable.__new__(AccessTable)
    table.n_ops = n_ops
    starts = np.zeros(n_ops + 1, np.int64)
    np.cumsum(np.bincount(op, minlength=n_ops), out=starts[1:])
    table.op_starts = starts
    table.modes = mode
    table.entries = entry
    table.views = views
    table.groups = np.array(groups, np.int64)
    table.offsets = _ints(offsets)
    table.dims_start = np.array(dims, np.int64)
    table.shape = _ints(shape_cells)
    table.stride = _ints(stride_cells)
    table.units, table.bases = units, bases
    table._rows = None
    return table


def _cells(views, placed, units):
    """``(groups, offsets, dims_start, shapes, strides)`` of ``views`` in cells of their
    groups, one view at a time (views whose cells are not their tensor's elements)."""
    groups, offsets, dims, shape_cells, stride_cells = [], [], [0], [], []
    for v, (g, delta) in zip(views, placed):
        t, offset, shape, stride, dtype, _ = _fields(v)
        unit, isz = units[g], t.dtype.itemsize
        groups.append(g)
        if unit == isz and dtype.itemsize == isz:
            offsets.append(offset + delta // isz)  # cells are elements: shifted
        else:
            k = isz // unit
            stride = tuple(s * k for s in stride)
            span = dtype.itemsize // unit
            if span > 1:  # an element spans several cells: a trailing dim of them
                shape, stride = shape + (span,), stride + (1,)
            offsets.append((delta + offset * isz) // unit)
        shape_cells.extend(shape)
        stride_cells.extend(stride)
        dims.append(len(shape_cells))
    return groups, offsets, dims, shape_cells, stride_cells


def _same_dtype(view, tensor) -> bool:
    return view.dtype is tensor.dtype or view.dtype == tensor.dtype


_tensor = attrgetter("tensor")
_offset = attrgetter("offset")
_shape = attrgetter("shape")
_stride = attrgetter("stride")
_inputs = attrgetter("input_views")
_outputs = attrgetter("output_views")


def _ints(values: list) -> np.ndarray:
    """``values`` as int64, or as Python ints (an object array) when some do not fit: cells of
    huge virtual storages go past 64 bits, and the walks then use the reference."""
    try:
        return np.array(values, np.int64)
    except OverflowError:
        return np.array(values, object)
