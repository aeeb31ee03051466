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

import bisect
import sys
import weakref

import numpy as np

from ..core.errors import AliasflowError
from ..core.tensor import Tensor
from ..core.view import TensorView

# start address -> (end address, dtype, weak reference to the region's Tensor)
_REGIONS: dict[int, tuple[int, np.dtype, weakref.ref]] = {}
_STARTS: list[int] = []   # the keys of _REGIONS, sorted


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
    """The core's address-based ``af.from_numpy``, once it exists (else None)."""
    return getattr(sys.modules["aliasflow"], "from_numpy", None)


def view_of(array: np.ndarray, name: str, region_name: str | None = None) -> TensorView:
    """An aliasflow view named ``name`` over exactly the memory of ``array`` (no copy).

    ``region_name`` names the storage if this call is the first to see that memory.
    """
    if not isinstance(array, np.ndarray):
        raise AliasflowError(f"{name}: expected a NumPy array, got {type(array).__name__}")
    core = _core_from_numpy()
    if core is not None:
        return core(array, name=name)
    lo, hi = byte_bounds(array)
    isz = array.itemsize
    start = array.__array_interface__["data"][0]
    aligned = all(s % isz == 0 for s in array.strides)
    # Regions never overlap, so only the one starting at or before lo, and those starting
    # inside [lo, hi), can hold or touch the array.
    k = bisect.bisect_right(_STARTS, lo) - 1
    for r_lo in _STARTS[max(k, 0):bisect.bisect_left(_STARTS, max(hi, lo + 1))]:
        r_hi, dtype, ref = _REGIONS[r_lo]
        region = ref()
        if region is None:
            _forget(r_lo)
            continue
        fits = r_lo <= lo and hi <= r_hi
        if fits and dtype == array.dtype and (start - r_lo) % isz == 0 and aligned:
            return TensorView(name, region, (start - r_lo) // isz, array.shape,
                              tuple(s // isz for s in array.strides))
        if lo < r_hi and r_lo < hi:          # shares at least one byte
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
    raw = root.reshape(-1).view(np.uint8)
    r_lo = byte_bounds(root)[0]
    shift = (start - r_lo) % isz
    count = (raw.size - shift) // isz
    r_lo += shift
    r_hi = r_lo + count * isz
    if not (r_lo <= lo and hi <= r_hi and aligned):
        raise AliasflowError(f"{name}: memory {lo:#x}..{hi:#x} is not aligned to its "
                             f"{array.dtype} elements")
    for other in _STARTS[max(bisect.bisect_right(_STARTS, r_lo) - 1, 0):
                         bisect.bisect_left(_STARTS, r_hi)]:
        o_hi, _, o_ref = _REGIONS[other]
        if other < r_hi and r_lo < o_hi:
            if o_ref() is not None:
                raise AliasflowError(f"{name}: memory {r_lo:#x}..{r_hi:#x} overlaps region "
                                     f"{o_ref().name!r}; this needs the core's address-based "
                                     f"storages")
            _forget(other)
    region = Tensor.from_numpy(region_name or f"{name}.mem",
                               raw[shift:shift + count * isz].view(array.dtype))
    _REGIONS[r_lo] = (r_hi, array.dtype, weakref.ref(region))
    bisect.insort(_STARTS, r_lo)
    return TensorView(name, region, (start - r_lo) // isz, array.shape,
                      tuple(s // isz for s in array.strides))


def _forget(start: int) -> None:
    del _REGIONS[start]
    _STARTS.pop(bisect.bisect_left(_STARTS, start))
