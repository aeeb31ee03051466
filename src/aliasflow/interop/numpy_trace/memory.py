"""Arrays as the trace sees them: exact byte layouts, lifetimes, and exact overlap.

A *layout* is ``(address, shape, strides, dtype, gen)``: the address of element
``(0, ..., 0)``, NumPy's shape and byte strides (any sign, zero, not multiples of the
itemsize), the dtype (byte order and all) and ``gen``, the lifetime of the memory (the
number of its base-most ndarray, see :mod:`.fastpath` and the recorder). This is the model of :func:`aliasflow.from_numpy` and of the PyTorch
tracer's byte regions: two layouts alias exactly when their bytes meet, whatever arrays,
dtypes or imports they come through.

Overlap is decided by the compiled solver (:mod:`aliasflow.solver`) on byte layouts: each
layout is its element grid with the element's bytes as a last dimension, so reinterpreted
dtypes, unaligned and byte-swapped views are exact too.
"""
from __future__ import annotations

import numpy as np

from ...core.storage import array_address
from ...solver import api as _solver

_ndarray = np.ndarray
_native = _solver._native


def extent(address, shape, strides, itemsize):
    """``(first byte, end)`` of the bytes a layout touches; ``(address, address)`` if empty."""
    lo = hi = address
    for n, s in zip(shape, strides):
        if n == 0:
            return address, address
        if s > 0:
            hi += s * (n - 1)
        else:
            lo += s * (n - 1)
    return lo, hi + itemsize


def layout_extent(lay):
    return extent(lay[0], lay[1], lay[2], lay[3].itemsize)


def byte_layout(lay, base: int):
    """``(offset, shape, stride)`` in bytes from ``base``, the element's bytes a last
    dimension: the integer layout the solver takes."""
    return (lay[0] - base, tuple(lay[1]) + (lay[3].itemsize,), tuple(lay[2]) + (1,))


def overlap(a, b) -> bool:
    """Exactly: do layouts ``a`` and ``b`` share a byte?"""
    alo, ahi = layout_extent(a)
    blo, bhi = layout_extent(b)
    if ahi <= blo or bhi <= alo or alo == ahi or blo == bhi:
        return False
    base = min(alo, blo)
    return _solver.intersects(byte_layout(a, base), byte_layout(b, base))


def same_elements(a, b) -> bool:
    """The very same elements in the same order, read as the same dtype."""
    return a[0] == b[0] and a[1] == b[1] and a[2] == b[2] and a[3] == b[3]


def internal_overlap(lay) -> bool:
    """Exactly: do two indices of the layout share a byte (``as_strided`` windows)?"""
    shape, strides, isz = lay[1], lay[2], lay[3].itemsize
    dims = sorted((abs(s), n) for n, s in zip(shape, strides) if n > 1)
    reach = isz - 1
    for s, n in dims:   # each stride steps past all the smaller ones reach: no repeat
        if s <= reach:
            return bool(_solver.has_internal_overlap(
                (0, tuple(shape) + (isz,), tuple(strides) + (1,))))
        reach += s * (n - 1)
    return False


def element_addresses(a: np.ndarray, key) -> np.ndarray:
    """Start address of each element ``a[key]`` selects, in the shape of ``a[key]`` (any
    NumPy index: integer arrays, masks, slices, mixed). Costs O(ndim * selected)."""
    address = array_address(a)
    total = None
    nd = a.ndim
    for dim, (n, s) in enumerate(zip(a.shape, a.strides)):
        steps = (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (nd - dim - 1))
        part = np.broadcast_to(steps, a.shape)[key]
        total = part if total is None else total + part
    if total is None:
        return np.full(np.empty((), np.int8)[key].shape, address, np.int64)
    return np.asarray(total, dtype=np.int64) + address


def flat_positions(size: int, key) -> np.ndarray:
    """The flat (C-order) positions ``range(size)[key]`` selects, without building the
    range for a slice or an integer."""
    if isinstance(key, slice):
        return np.arange(*key.indices(size), dtype=np.int64)
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
        k = int(key)
        return np.array([k + size if k < 0 else k], dtype=np.int64)
    arr = np.asarray(key)
    if arr.dtype == bool:
        return np.flatnonzero(arr).astype(np.int64)
    arr = arr.astype(np.int64)
    return np.where(arr < 0, arr + size, arr)


def flat_addresses(a: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Start addresses of the elements at C-order flat ``positions`` of ``a``."""
    address = array_address(a)
    if a.ndim == 0:
        return np.full(positions.shape, address, np.int64)
    coords = np.unravel_index(positions, a.shape)
    total = np.full(positions.shape, address, np.int64)
    for c, s in zip(coords, a.strides):
        total += c.astype(np.int64) * s
    return total


def element_starts(lay) -> np.ndarray:
    """Start address of every element of a layout, with repeats (brute force)."""
    starts = np.full((), lay[0], dtype=np.int64)
    for n, s in zip(lay[1], lay[2]):
        starts = np.add.outer(starts, np.arange(n, dtype=np.int64) * s)
    return starts.reshape(-1)
