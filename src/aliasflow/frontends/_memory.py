"""One adapter between the front ends and aliasflow memory: an aliasflow view over the memory
of any NumPy array, without a copy.

Arrays over the same addresses must become views of one aliasflow storage, whoever made them
(an array, a slice of it, an array built from a raw address). When the core offers
``from_numpy`` (storages as address ranges) this module just calls it. Until then it keeps a
registry of memory regions, each an :class:`~aliasflow.Tensor` wrapping a flat array of one
dtype, and maps an array to a view of the region that contains its bytes. A region holds its
memory alive, so an address cannot be reused for different data while a recorded op still
refers to it.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..core.errors import AliasflowError
from ..core.tensor import Tensor
from ..core.view import TensorView

# start address -> (end address, dtype, weak reference to the region's Tensor)
_REGIONS: dict[int, tuple[int, np.dtype, weakref.ref]] = {}


def byte_bounds(array: np.ndarray) -> tuple[int, int]:
    """``(low, high)``: the first byte and one past the last byte ``array`` touches."""
    lo = hi = array.__array_interface__["data"][0]
    if array.size == 0:
        return lo, lo
    for n, s in zip(array.shape, array.strides):
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    return lo, hi + array.itemsize


def _core_from_numpy():
    try:
        from .. import from_numpy  # the core's address-based import, once it exists
    except ImportError:
        return None
    return from_numpy


def view_of(array: np.ndarray, name: str) -> TensorView:
    """An aliasflow view named ``name`` over exactly the memory of ``array`` (no copy)."""
    if not isinstance(array, np.ndarray):
        raise AliasflowError(f"{name}: expected a NumPy array, got {type(array).__name__}")
    core = _core_from_numpy()
    if core is not None:
        return core(array, name=name)
    lo, hi = byte_bounds(array)
    isz = array.itemsize
    start = array.__array_interface__["data"][0]
    aligned = all(s % isz == 0 for s in array.strides)
    for r_lo, (r_hi, dtype, ref) in list(_REGIONS.items()):
        region = ref()
        if region is None:
            del _REGIONS[r_lo]
            continue
        fits = r_lo <= lo and hi <= r_hi
        touches = lo < r_hi and r_lo < hi          # share at least one byte
        if fits and dtype == array.dtype and (start - r_lo) % isz == 0 and aligned:
            return TensorView(name, region, (start - r_lo) // isz, array.shape,
                              tuple(s // isz for s in array.strides))
        if touches:
            raise AliasflowError(
                f"{name}: memory {lo:#x}..{hi:#x} ({array.dtype}) partly overlaps or "
                f"reinterprets region {region.name!r} ({r_lo:#x}..{r_hi:#x}, {dtype}); this "
                f"needs the core's address-based storages")
    # A new region: the whole memory of the array's root, read as array.dtype.
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.c_contiguous:
        if not array.flags.c_contiguous:
            raise AliasflowError(f"{name}: cannot import non-contiguous memory {lo:#x}..{hi:#x} "
                                 f"without the core's address-based storages")
        root = array
    r_lo = byte_bounds(root)[0]
    raw = root.reshape(-1).view(np.uint8)
    shift = (start - r_lo) % isz
    count = (raw.size - shift) // isz
    flat = raw[shift:shift + count * isz].view(array.dtype)
    region = Tensor.from_numpy(f"{name}.mem", flat)
    r_lo += shift
    if not (r_lo <= lo and hi <= r_lo + count * isz and (start - r_lo) % isz == 0 and aligned):
        raise AliasflowError(f"{name}: memory {lo:#x}..{hi:#x} is not aligned to its "
                             f"{array.dtype} elements")
    _REGIONS[r_lo] = (r_lo + count * isz, array.dtype, weakref.ref(region))
    return TensorView(name, region, (start - r_lo) // isz, array.shape,
                      tuple(s // isz for s in array.strides))
