"""Vectorised enumeration of footprints and arithmetic membership tests.

All functions take internal normal forms ``(offset, strides, sizes)`` with
positive strictly ascending strides (see :func:`aliasflow.solver.layout.norm`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["TooLargeError", "DEFAULT_LIMIT", "enumerate_nf", "member_mask", "membership_cost",
           "is_superincreasing", "product_cells"]

DEFAULT_LIMIT = 50_000_000
_I64 = 2**63 - 1


class TooLargeError(ValueError):
    """Raised instead of allocating when a set of cells would exceed a size limit."""


def _size(sizes):
    p = 1
    for n in sizes:
        p *= n
    return p


def _check_int64(lo, hi, what):
    if lo < -_I64 or hi > _I64 or hi - lo > _I64:
        raise OverflowError(f"{what}: cells {lo}..{hi} do not fit in int64")


def _high_start(strides, sizes):
    """Smallest k such that every dim j >= k exceeds the span of all dims below it."""
    span = 0
    k = 0
    for j, (s, n) in enumerate(zip(strides, sizes)):
        if s <= span:
            k = j + 1
        span += s * (n - 1)
    return k


def is_superincreasing(nf):
    return _high_start(nf[1], nf[2]) == 0


def _build(offset, strides, sizes, window=None, limit=None, what="footprint"):
    """Broadcast sums, largest stride outermost (sorted when superincreasing).

    With ``window=(lo, hi)`` partial sums that cannot reach the window are dropped
    at every stage; ``limit`` bounds the intermediate sizes.
    """
    arr = np.array([offset], dtype=np.int64)
    k = len(strides)
    spans = [0] * (k + 1)
    for j in range(k):
        spans[j + 1] = spans[j] + strides[j] * (sizes[j] - 1)
    for j in range(k - 1, -1, -1):
        s, n = strides[j], sizes[j]
        if limit is not None and arr.size * n > limit:
            raise TooLargeError(f"{what}: more than {limit} cells to enumerate "
                                f"(at least {arr.size * n})")
        arr = (arr[:, None] + np.arange(n, dtype=np.int64) * np.int64(s)).ravel()
        if window is not None:
            lo, hi = window
            arr = arr[(arr <= hi) & (arr >= lo - spans[j])]
    return arr


def enumerate_nf(nf, limit=None, what="footprint", window=None):
    """Sorted unique cells of a normal form (``None`` = empty), optionally only in ``window``."""
    if nf is None:
        return np.empty(0, dtype=np.int64)
    limit = DEFAULT_LIMIT if limit is None else limit
    off, strides, sizes = nf[0], nf[1], nf[2]
    size = _size(sizes)
    hi = off + sum(s * (n - 1) for s, n in zip(strides, sizes))
    if window is not None:
        lo_w, hi_w = max(window[0], off), min(window[1], hi)
        if lo_w > hi_w:
            return np.empty(0, dtype=np.int64)
        if lo_w == off and hi_w == hi:
            window = None
        else:
            window = (lo_w, hi_w)
    if window is None and size > limit:
        raise TooLargeError(f"{what} has {size} cells (indices), over the limit of {limit}")
    _check_int64(off, hi, what)
    arr = _build(off, strides, sizes, window, limit, what)
    if _high_start(strides, sizes) != 0:
        arr = np.unique(arr)
    return arr


def membership_cost(nf):
    """Cells to enumerate to test membership in ``nf`` (its non-superincreasing low part)."""
    k = _high_start(nf[1], nf[2])
    return _size(nf[2][:k])


def member_mask(nf, cells, limit=None):
    """Boolean mask: which of ``cells`` (int64 array) lie in the footprint of ``nf``."""
    off, strides, sizes = nf[0], nf[1], nf[2]
    k = _high_start(strides, sizes)
    low = enumerate_nf((0, strides[:k], sizes[:k]), limit, "non-separable part of a layout")
    hi = off + sum(s * (n - 1) for s, n in zip(strides, sizes))
    _check_int64(off, hi, "layout")
    mask = (cells >= off) & (cells <= hi)
    r = np.where(mask, cells - np.int64(off), 0)
    for j in range(len(strides) - 1, k - 1, -1):
        s = np.int64(strides[j])
        y = r // s
        mask &= y < sizes[j]
        r = r - np.minimum(y, sizes[j] - 1) * s
    if low.size == 1:
        mask &= r == low[0]
    else:
        pos = np.searchsorted(low, r)
        pos = np.minimum(pos, low.size - 1)
        mask &= low[pos] == r
    return mask


def product_cells(chain, aps, limit=None, what="shared cells"):
    """Sorted cells of a product over levels of digit progressions."""
    limit = DEFAULT_LIMIT if limit is None else limit
    count = 1
    for _, _, n in aps:
        count *= n
    if count == 0:
        return np.empty(0, dtype=np.int64)
    if count > limit:
        raise TooLargeError(f"{what}: {count} cells, over the limit of {limit}")
    lo = sum(t * a for t, (a, _, _) in zip(chain, aps))
    hi = sum(t * (a + m * (n - 1)) for t, (a, m, n) in zip(chain, aps))
    _check_int64(min(lo, hi), max(lo, hi), what)
    off = lo
    strides = [t * m for t, (_, m, n) in zip(chain, aps)]
    sizes = [n for _, _, n in aps]
    return _build(off, strides, sizes)
