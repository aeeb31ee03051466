"""Which blocks a strided byte layout touches, and which it covers whole, without enumerating.

A layout ``(offset, shape, stride)`` in bytes is the set of cells ``offset + sum(stride*x)``.
Its normal form (positive strides, no size-1 or zero-stride dims, contiguous dims merged,
sorted by stride) splits into an *inner group* — the smallest dims, up to the last one whose
stride does not exceed the span below it — and *outer* dims that nest: each outer stride is
larger than everything below it spans, so the copies of what lies below are disjoint and
ordered. The inner group is an arithmetic progression (one dim) or a small sorted set of cells
(found by the solver's enumeration, or a reachability bitmap over its span); every question is
then answered level by level in ``O(ndim)``:

- ``count_le(q)``: how many cells are ``<= q`` (so a block is covered whole iff the count over
  its byte range equals its length, and touched iff the count is positive);
- ``next_ge(q)``: the smallest cell ``>= q`` (so the touched blocks are found by jumping from
  one touched block to the next, one query each, however far apart they are).

Layouts whose inner group is too large for both (adversarial ``as_strided`` windows whose
strides share no structure over a huge span) fall back to the exact solver, one candidate
block at a time (``intersects`` / ``covers`` against the block's dense layout).

>>> f = Footprint(0, (3, 4), (100, 1))          # three runs of 4 bytes, 100 apart
>>> f.blocks(16, 300)
[0, 6, 12]
>>> f.count_le(103), f.next_ge(5)
(8, 100)
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np

from ... import solver
from ...core.errors import AliasflowError

ENUMERATE_LIMIT = 1 << 20    # inner-group indices enumerated by the solver
BITMAP_LIMIT = 1 << 24       # inner-group span handled by a reachability bitmap
CANDIDATE_LIMIT = 1 << 20    # candidate blocks the solver fallback may test one by one


def normal_dims(offset: int, shape, stride):
    """``(offset, [(stride, size), ...])``: the same cells, positive strides, ascending,
    merged where two dims form one progression; ``None`` for an empty layout."""
    if 0 in shape:
        return None
    dims = []
    for n, s in zip(shape, stride):
        if n == 1 or s == 0:
            continue
        if s < 0:
            offset += s * (n - 1)
            s = -s
        dims.append((s, n))
    dims.sort()
    merged: list[tuple[int, int]] = []
    for s, n in dims:
        if merged:
            ps, pn = merged[-1]
            if s == ps:                      # x*s + y*s: one progression of pn + n - 1
                merged[-1] = (ps, pn + n - 1)
                continue
            if s == ps * pn:                 # contiguous continuation
                merged[-1] = (ps, pn * n)
                continue
        merged.append((s, n))
    # Merging can enable another merge further down the list (a*b == c); repeat to a fixpoint.
    changed = True
    while changed:
        changed = False
        for k in range(len(merged) - 1):
            (s0, n0), (s1, n1) = merged[k], merged[k + 1]
            if s1 == s0 * n0 or s1 == s0:
                merged[k:k + 2] = [(s0, n0 * n1 if s1 == s0 * n0 else n0 + n1 - 1)]
                changed = True
                break
    return offset, merged


class Footprint:
    """The cells of one layout, with counting and next-cell queries (see the module doc)."""

    def __init__(self, offset: int, shape, stride):
        self.layout = (int(offset), tuple(int(n) for n in shape), tuple(int(s) for s in stride))
        nf = normal_dims(*self.layout)
        self.empty = nf is None
        self.fallback, self.count, self.span, self.outer = False, 0, 0, []
        if self.empty:
            return
        self.offset, dims = nf
        # inner group: dims[0..K], K the last dim whose stride is within the span below it
        span, k_inner = 0, 0
        spans = []
        for k, (s, n) in enumerate(dims):
            spans.append(span)
            if k and s <= span:
                k_inner = k
            span += s * (n - 1)
        self.span = span                       # highest cell - lowest cell
        inner = dims[:k_inner + 1]
        self.inner_span = sum(s * (n - 1) for s, n in inner)
        self.step = self.cells = None          # inner as a progression, or as sorted cells
        if len(inner) <= 1:
            self.step, self.inner_count = (inner[0] if inner else (1, 1))
        else:
            cells = self._inner_cells(inner)
            if cells is not None and len(cells) == self.inner_span + 1:
                self.step, self.inner_count = 1, len(cells)
            elif cells is not None:
                self.cells, self.inner_count = cells.tolist(), len(cells)
        self.fallback = self.step is None and self.cells is None
        # outer levels, innermost first: (stride, size, cells in one copy of what is below)
        self.outer = []
        below = self.inner_count if not self.fallback else 0
        for s, n in dims[k_inner + 1:]:
            self.outer.append((s, n, below))
            below *= n
        self.count = below                     # distinct cells (when not fallback)

    @staticmethod
    def _inner_cells(inner):
        size = 1
        for _, n in inner:
            size *= n
        strides = tuple(s for s, _ in inner)
        shape = tuple(n for _, n in inner)
        if size <= ENUMERATE_LIMIT:
            return solver.footprint((0, shape, strides))
        span = sum(s * (n - 1) for s, n in inner)
        if span < BITMAP_LIMIT:
            reach = np.zeros(span + 1, dtype=bool)
            reach[0] = True
            top = 0
            for s, n in inner:                 # add x*s, 0 <= x < n, by binary splitting of n
                left, chunk = n - 1, 1
                while left:
                    take = min(chunk, left)
                    shift = s * take
                    reach[shift:top + shift + 1] |= reach[:top + 1]
                    top += shift
                    left -= take
                    chunk *= 2
            return np.flatnonzero(reach)
        return None

    # ---- queries relative to self.offset ------------------------------------------------------
    def _inner_count_le(self, q: int) -> int:
        if q < 0:
            return 0
        if self.step is not None:
            return min(self.inner_count, q // self.step + 1)
        return bisect_right(self.cells, q)

    def _inner_next(self, q: int):
        if q <= 0:
            return 0
        if self.step is not None:
            i = -(-q // self.step)
            return i * self.step if i < self.inner_count else None
        i = bisect_left(self.cells, q)
        return self.cells[i] if i < len(self.cells) else None

    def count_le(self, q: int) -> int:
        """Number of distinct cells ``<= q`` (absolute)."""
        if self.empty:
            return 0
        q -= self.offset
        total = 0
        for s, n, below in reversed(self.outer):   # copies below j are disjoint and ordered
            if q < 0:
                return total
            i = q // s
            if i >= n:
                return total + n * below
            total += i * below
            q -= i * s
        return total + self._inner_count_le(q)

    def next_ge(self, q: int):
        """Smallest cell ``>= q`` (absolute), or None."""
        if self.empty:
            return None
        r = self._next(len(self.outer) - 1, q - self.offset)
        return None if r is None else r + self.offset

    def _next(self, j: int, q: int):
        if q <= 0:
            return 0
        if j < 0:
            return self._inner_next(q)
        s, n, _ = self.outer[j]
        i = q // s
        if i >= n:
            return None
        r = self._next(j - 1, q - i * s)
        if r is not None:
            return i * s + r
        return (i + 1) * s if i + 1 < n else None

    # ---- blocks -------------------------------------------------------------------------------
    def blocks(self, block: int, nbytes: int) -> list[int]:
        """Sorted indices of the ``block``-byte blocks of a ``nbytes`` storage that hold a cell."""
        if self.empty:
            return []
        lo, hi = self.offset, self.offset + self.span
        if self.fallback:
            return [b for b in self._candidates(lo, hi, block)
                    if solver.intersects(self.layout, self._block_layout(b, block, nbytes))]
        if not self.outer and self.step == 1:    # dense: an interval
            return list(range(lo // block, hi // block + 1))
        out, p = [], lo
        while p <= hi:
            c = self.next_ge(p)
            if c is None:
                break
            b = c // block
            out.append(b)
            p = (b + 1) * block
        return out

    def covers(self, b: int, block: int, nbytes: int) -> bool:
        """Does the layout hold every byte of block ``b``?"""
        if self.empty:
            return False
        lo, hi = b * block, min((b + 1) * block, nbytes) - 1
        if lo < self.offset or hi > self.offset + self.span:
            return False
        if self.fallback:
            return solver.covers(self.layout, self._block_layout(b, block, nbytes))
        return self.count_le(hi) - self.count_le(lo - 1) == hi - lo + 1

    @staticmethod
    def _block_layout(b, block, nbytes):
        lo = b * block
        return (lo, (min(lo + block, nbytes) - lo,), (1,))

    def _candidates(self, lo, hi, block):
        first, last = lo // block, hi // block
        if last - first + 1 > CANDIDATE_LIMIT:
            raise AliasflowError(
                f"layout {self.layout}: its cells have no nested structure and it spans "
                f"{last - first + 1} blocks of {block} bytes; more than the "
                f"{CANDIDATE_LIMIT} the exact solver is asked about one by one. "
                f"Use larger blocks")
        return range(first, last + 1)
