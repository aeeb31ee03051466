"""Strided layouts: validation, byte-to-cell conversion and normalisation.

A layout ``(offset, shape, stride)`` denotes the set of cells
``offset + sum(stride[j] * x[j])`` for ``0 <= x[j] < shape[j]``.
Everything here is exact Python integer arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from operator import index as _index

__all__ = ["Layout", "normalize", "to_cells", "as_triple"]


def _as_int(value, what):
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, got bool {value!r}")
    try:
        return _index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {value!r}") from None


@dataclass(frozen=True)
class Layout:
    """A strided layout: the cells ``offset + sum(stride[j] * x[j])``, ``0 <= x[j] < shape[j]``.

    Parameters
    ----------
    offset : int
        Cell of index ``(0, ..., 0)``.
    shape : tuple of int
        Sizes (``>= 0``).
    stride : tuple of int
        Strides in cells; may be negative or zero.

    Examples
    --------
    >>> Layout(0, (2, 2), (4, 1)).extent()
    (0, 5)
    """

    offset: int
    shape: tuple
    stride: tuple

    def __post_init__(self):
        off = _as_int(self.offset, "offset")
        shape = tuple(_as_int(n, "shape entry") for n in self.shape)
        stride = tuple(_as_int(s, "stride entry") for s in self.stride)
        if len(shape) != len(stride):
            raise ValueError(
                f"shape {shape} and stride {stride} have different lengths "
                f"({len(shape)} != {len(stride)})"
            )
        for n in shape:
            if n < 0:
                raise ValueError(f"shape {shape} has a negative size {n}")
        object.__setattr__(self, "offset", off)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of indices (not of distinct cells)."""
        p = 1
        for n in self.shape:
            p *= n
        return p

    def extent(self):
        """``(lowest cell, highest cell)``, or ``None`` when the layout is empty."""
        return _extent(self.offset, self.shape, self.stride)

    def cell(self, index) -> int:
        """Cell of a (bounds-checked) index."""
        index = tuple(index)
        if len(index) != len(self.shape):
            raise ValueError(f"index {index} has wrong length for shape {self.shape}")
        for i, n in zip(index, self.shape):
            if not 0 <= i < n:
                raise IndexError(f"index {index} out of bounds for shape {self.shape}")
        return self.offset + sum(s * i for s, i in zip(self.stride, index))


def as_triple(layout):
    """``(offset, shape, stride)`` tuples from a :class:`Layout` or a 3-sequence."""
    if isinstance(layout, Layout):
        return layout.offset, layout.shape, layout.stride
    off, shape, stride = layout
    return off, tuple(shape), tuple(stride)


def _extent(offset, shape, stride):
    lo = hi = offset
    for n, s in zip(shape, stride):
        if n == 0:
            return None
        if s > 0:
            hi += s * (n - 1)
        else:
            lo += s * (n - 1)
    return lo, hi


def to_cells(offset_bytes, shape, stride_bytes, itemsize, unit) -> Layout:
    """Turn a byte layout into a cell layout in units of ``unit`` bytes.

    An element of ``itemsize`` bytes at byte address ``a`` covers bytes
    ``a .. a + itemsize - 1``; the result has a trailing dimension of size
    ``itemsize // unit`` and stride 1.

    Examples
    --------
    >>> to_cells(8, (3,), (8,), 8, 4)
    Layout(offset=2, shape=(3, 2), stride=(2, 1))
    """
    unit = _as_int(unit, "unit")
    itemsize = _as_int(itemsize, "itemsize")
    if unit <= 0:
        raise ValueError(f"unit must be positive, got {unit}")
    if itemsize <= 0:
        raise ValueError(f"itemsize must be positive, got {itemsize}")
    offset_bytes = _as_int(offset_bytes, "offset")
    if offset_bytes % unit:
        raise ValueError(f"unit {unit} does not divide offset {offset_bytes}")
    if itemsize % unit:
        raise ValueError(f"unit {unit} does not divide itemsize {itemsize}")
    strides = []
    for s in stride_bytes:
        s = _as_int(s, "stride entry")
        if s % unit:
            raise ValueError(f"unit {unit} does not divide stride {s}")
        strides.append(s // unit)
    return Layout(offset_bytes // unit, tuple(shape) + (itemsize // unit,), tuple(strides) + (1,))


# ---------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------
#
# The internal normal form of a non-empty layout is a triple
# ``(offset, strides, sizes)`` with strides positive and strictly ascending, sizes >= 2,
# together with a *recipe* that maps a normalised index back to an original one.
# A recipe is ``(ndim, groups)``; ``groups[k]`` lists ``(orig_dim, mult, size, flipped)``
# for the original dims merged into normalised dim k, ascending by ``mult``
# (their stride is ``mult * strides[k]``).


@lru_cache(maxsize=65536)
def norm(offset, shape, stride):
    """Normal form of a layout given as tuples: ``(offset, strides, sizes, recipe, last)``.

    ``offset`` is then the lowest cell and ``last`` the highest.

    Returns ``None`` for an empty layout.  Merges adjacent (ascending) dims
    whenever the larger stride is ``m * s`` with ``m`` at most the current
    size of the merged group: the union is then the full progression, so the
    set of cells is preserved (multiplicities may not be).
    """
    dims = []
    for j, (n, s) in enumerate(zip(shape, stride)):
        if n == 0:
            return None
        if n == 1 or s == 0:
            continue
        if s < 0:
            offset += s * (n - 1)
            dims.append((-s, j, n, True))
        else:
            dims.append((s, j, n, False))
    dims.sort()
    strides = []
    sizes = []
    groups = []
    for s, j, n, flipped in dims:
        if strides:
            base = strides[-1]
            total = sizes[-1]
            if s % base == 0 and s // base <= total:
                m = s // base
                sizes[-1] = total + m * (n - 1)
                groups[-1].append((j, m, n, flipped))
                continue
        strides.append(s)
        sizes.append(n)
        groups.append([(j, 1, n, flipped)])
    recipe = (len(shape), tuple(tuple(g) for g in groups))
    hi = offset
    for s, n in zip(strides, sizes):
        hi += s * (n - 1)
    return offset, tuple(strides), tuple(sizes), recipe, hi


def unnormalize(recipe, w):
    """Map a normalised index ``w`` back to an index in the original layout."""
    ndim, groups = recipe
    x = [0] * ndim
    for z, group in zip(w, groups):
        for j, m, n, flipped in reversed(group):
            y = z // m
            if y > n - 1:
                y = n - 1
            z -= m * y
            x[j] = n - 1 - y if flipped else y
    return tuple(x)


def normalize(layout) -> Layout:
    """Canonical layout with the same set of cells.

    Drops size-1 and zero-stride dims, flips negative strides (adjusting the
    offset), sorts by stride and merges mergeable dims.  The index order is
    not preserved, only the set of cells.  An empty layout normalises to
    ``Layout(0, (0,), (1,))``.

    Examples
    --------
    >>> normalize(Layout(11, (3, 4), (-4, -1)))
    Layout(offset=0, shape=(12,), stride=(1,))
    """
    off, shape, stride = as_triple(layout)
    nf = norm(off, shape, stride)
    if nf is None:
        return Layout(0, (0,), (1,))
    off, strides, sizes = nf[0], nf[1], nf[2]
    return Layout(off, tuple(reversed(sizes)), tuple(reversed(strides)))
