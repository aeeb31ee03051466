"""Public exact-overlap functions on layouts.

Every function accepts a :class:`~aliasflow.solver.layout.Layout` or a plain
``(offset, shape, stride)`` triple of Python ints.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .cells import (DEFAULT_LIMIT, TooLargeError, enumerate_nf, member_mask,
                    membership_cost, product_cells)
from .layout import Layout, as_triple, norm, unnormalize
from .native import load
from .radix import ap_intersect, ap_subset, product_form
from .search import Exhausted, UndecidedError, active_budget, solve

__all__ = ["intersects", "witness", "count_shared", "shared_cells", "footprint",
           "internal_witness", "has_internal_overlap", "covers"]

COVERS_ENUMERATION_LIMIT = 4096
# When the cheap search gives up, layouts of at most this many indices are enumerated (exact,
# milliseconds) before isl is asked; hostile strides on small views never reach isl.
SMALL_ENUMERATION = 1 << 20
_UNKNOWN = object()


def _cells_of(nf):
    """Cells of a normal form over its whole index box (shape ``sizes``), or None if big."""
    off, strides, sizes, _, high = nf
    size = 1
    for n in sizes:
        size *= n
    # every cell lies in [off, high]: both must fit int64 for the NumPy enumeration
    if size > SMALL_ENUMERATION or high >= 2**62 or off <= -2**62 or len(sizes) > 32:
        return None
    cells = np.array(off, dtype=np.int64)
    for st, n in zip(strides, sizes):
        cells = np.add.outer(cells, np.arange(n, dtype=np.int64) * st)
    return cells


def _pair_enumerated(na, nb, want):
    """Exact answer of :func:`_pair` by enumerating both (small) layouts, else _UNKNOWN."""
    ca, cb = _cells_of(na), _cells_of(nb)
    if ca is None or cb is None:
        return _UNKNOWN
    shared, ia, ib = np.intersect1d(ca.reshape(-1), cb.reshape(-1), assume_unique=False,
                                    return_indices=True)
    if not shared.size:
        return None
    if not want:
        return True
    wa = [int(i) for i in np.unravel_index(int(ia[0]), ca.shape)]
    wb = [int(i) for i in np.unravel_index(int(ib[0]), cb.shape)]
    return wa, wb


def _record_undecided(question, *layouts):
    budget = active_budget()
    if budget is not None:
        budget.undecided.append((question, layouts))


def _load_native():
    """The compiled backend (``_native``), or None with ``AF_PURE=1`` or when it is not built.

    The compiled functions take layouts as exact tuples ``(offset, shape, stride)`` of ints
    and answer True/False, or None for "not decided here" (values beyond 2**62): the pure
    Python code below then decides, as it always did.  NotImplemented means the compiled
    exact search (the same algorithm, with a larger work budget) ran out: the problem then
    goes straight to isl, where the pure path would also end up.
    """
    return load(__package__ + "._native")


#: The compiled backend in use, or None (pure Python).  Tests swap it to compare both.
_native = _load_native()


def _exact(layout):
    """``layout`` as the compiled code takes it: a tuple ``(offset, shape, stride)``."""
    if type(layout) is tuple:
        return layout
    if isinstance(layout, Layout):
        return (layout.offset, layout.shape, layout.stride)
    return None


def _nf(layout):
    if type(layout) is tuple:
        off, shape, stride = layout
        if type(shape) is not tuple:
            shape = tuple(shape)
        if type(stride) is not tuple:
            stride = tuple(stride)
        return norm(off, shape, stride)
    if isinstance(layout, Layout):
        return norm(layout.offset, layout.shape, layout.stride)
    return norm(*as_triple(layout))


def _pair(na, nb, want, budget=None):
    """Solve the overlap of two normal forms (``budget``: of the search before isl).

    Returns ``None`` (disjoint), ``True`` (overlap, ``want`` false) or normalised
    indices ``(wa, wb)``.
    """
    if na is None or nb is None:
        return None
    oa, sa, za, _, ha = na
    ob, sb, zb, _, hb = nb
    if ha < ob or hb < oa:
        return None
    if oa == ob:
        return ([0] * len(sa), [0] * len(sb)) if want else True
    if ha == hb:
        return ([n - 1 for n in za], [n - 1 for n in zb]) if want else True
    # sa.x + sb.(nb-1-y) = hb - oa, all coefficients positive; merge equal strides
    d = hb - oa
    merged = {}
    for k, s in enumerate(sa):
        merged[s] = [za[k] - 1, 0, k, -1]
    for k, s in enumerate(sb):
        e = merged.get(s)
        if e is None:
            merged[s] = [0, zb[k] - 1, -1, k]
        else:
            e[1] = zb[k] - 1
            e[3] = k
    coefs = list(merged)
    terms = [(c, merged[c][0] + merged[c][1]) for c in coefs]
    try:
        if budget == 0:
            raise Exhausted  # the compiled search already ran out: no second search here
        z = solve(terms, d, use_isl=False)
    except Exhausted:
        small = _pair_enumerated(na, nb, want)
        if small is not _UNKNOWN:
            return small
        z = solve(terms, d, budget=0)  # isl; UndecidedError past an active work budget
    if z is None:
        return None
    if not want:
        return True
    wa = [0] * len(sa)
    wb = [0] * len(sb)
    for c, zi in zip(coefs, z):
        ua, ub, ka, kb = merged[c]
        x = zi if zi < ua else ua
        if ka >= 0:
            wa[ka] = x
        if kb >= 0:
            wb[kb] = zb[kb] - 1 - (zi - x)
    return wa, wb


def intersects(a, b) -> bool:
    """Exactly: do the footprints of layouts ``a`` and ``b`` share a cell?

    Examples
    --------
    >>> intersects((0, (2, 2), (4, 1)), (5, (2, 2), (4, 1)))
    True
    >>> intersects((0, (2, 2), (4, 1)), (8, (2, 2), (4, 1)))
    False
    """
    budget = None
    nat = _native  # asked inline, not through a helper: this is the hot path (~0.3 us)
    if nat is not None:
        try:
            r = nat.intersects(_exact(a), _exact(b))
        except TypeError:  # not exact tuples of ints: the general path converts them
            r = None
        if r is NotImplemented:  # the compiled search ran out: isl next
            budget = 0
        elif r is not None:
            return r
    try:
        return _pair(_nf(a), _nf(b), False, budget=budget) is not None
    except UndecidedError:  # sound: an undecided pair counts as overlapping
        _record_undecided("intersects", a, b)
        return True


def witness(a, b):
    """Indices ``(x, y)`` (in ``a``'s and ``b``'s original index spaces) of one shared cell, or None.

    Examples
    --------
    >>> witness((0, (3,), (2,)), (4, (2,), (-1,)))
    ((2,), (0,))
    """
    na, nb = _nf(a), _nf(b)
    res = _pair(na, nb, True)
    if res is None:
        return None
    return unnormalize(na[3], res[0]), unnormalize(nb[3], res[1])


def _pair_or_unknown(na, nb):
    """:func:`_pair` without a witness; True when undecided (the caller then counts)."""
    try:
        return _pair(na, nb, False)
    except UndecidedError:
        return True


def _shared_general(na, nb, limit):
    """Enumerate one side (clipped to the other's extent) and test membership in the other."""
    plans = []
    for x, y in ((na, nb), (nb, na)):
        size = 1
        for n in x[2]:
            size *= n
        plans.append((size + membership_cost(y), x, y))
    plans.sort(key=lambda p: p[0])
    err = None
    for _, x, y in plans:
        try:
            cells = enumerate_nf(x[:3], limit, "the smaller footprint", window=(y[0], y[4]))
            return cells[member_mask(y[:3], cells, limit)]
        except TooLargeError as e:
            err = e
    raise TooLargeError(f"layouts are not slices of one parent and enumerating them "
                        f"is too large: {err}")


def count_shared(a, b, limit=None) -> int:
    """Exact number of distinct cells in both footprints.

    Slices of one parent are counted level by level in a common mixed-radix
    system; otherwise the smaller footprint is enumerated (vectorised) and
    tested arithmetically, raising :class:`TooLargeError` past ``limit``.

    Examples
    --------
    >>> count_shared((0, (3, 3), (4, 1)), (5, (2, 2), (4, 1)))
    4
    """
    na, nb = _nf(a), _nf(b)
    if _pair_or_unknown(na, nb) is None:
        return 0
    pf = product_form(na[:3], nb[:3])
    if pf is not None:
        count = 1
        for p, q in zip(pf[1][0], pf[1][1]):
            count *= ap_intersect(p, q)[2]
        return count
    limit = DEFAULT_LIMIT if limit is None else limit
    return int(_shared_general(na, nb, limit).size)


def shared_cells(a, b, limit=None) -> np.ndarray:
    """Sorted unique cells in both footprints (int64), or :class:`TooLargeError` past ``limit``.

    Examples
    --------
    >>> shared_cells((0, (3, 3), (4, 1)), (5, (2, 2), (4, 1))).tolist()
    [5, 6, 9, 10]
    """
    limit = DEFAULT_LIMIT if limit is None else limit
    na, nb = _nf(a), _nf(b)
    if _pair_or_unknown(na, nb) is None:
        return np.empty(0, dtype=np.int64)
    pf = product_form(na[:3], nb[:3])
    if pf is not None:
        aps = [ap_intersect(p, q) for p, q in zip(pf[1][0], pf[1][1])]
        return product_cells(pf[0], aps, limit)
    out = _shared_general(na, nb, max(limit, DEFAULT_LIMIT))
    if out.size > limit:
        raise TooLargeError(f"shared cells: {out.size} cells, over the limit of {limit}")
    return out


def footprint(a, limit=None) -> np.ndarray:
    """Sorted unique cells of a layout (int64), or :class:`TooLargeError` past ``limit`` indices.

    Examples
    --------
    >>> footprint((0, (2, 2), (4, 1))).tolist()
    [0, 1, 4, 5]
    """
    return enumerate_nf(_nf(a), limit)


@lru_cache(maxsize=16384)
def _internal(off, shape, stride, budget=None):
    if 0 in shape:
        return None
    dims = []
    for j, (n, s) in enumerate(zip(shape, stride)):
        if n == 0:
            return None
        if n == 1:
            continue
        if s == 0:
            x = [0] * len(shape)
            y = list(x)
            y[j] = 1
            return tuple(x), tuple(y)
        dims.append((abs(s), j, n, s < 0))
    dims.sort()
    span = 0
    for k, (s, j, n, _) in enumerate(dims):
        if s <= span:
            break
        span += s * (n - 1)
    else:
        return None  # superincreasing: injective
    terms = [(s, 2 * (n - 1)) for s, _, n, _ in dims]
    ex = [n - 1 for _, _, n, _ in dims]
    d = sum(s * (n - 1) for s, _, n, _ in dims)
    try:
        if budget == 0:
            raise Exhausted  # the compiled search already ran out
        z = solve(terms, d, exclude=ex, use_isl=False)
    except Exhausted:
        small = _internal_enumerated(off, shape, stride)
        if small is not _UNKNOWN:
            return small
        z = solve(terms, d, exclude=ex, budget=0)  # isl; UndecidedError past a work budget
    if z is None:
        return None
    x = [0] * len(shape)
    y = [0] * len(shape)
    for zi, u, (s, j, n, flipped) in zip(z, ex, dims):
        w = zi - u
        xp, yp = (w, 0) if w > 0 else (0, -w)
        x[j] = n - 1 - xp if flipped else xp
        y[j] = n - 1 - yp if flipped else yp
    return tuple(x), tuple(y)


def _internal_enumerated(off, shape, stride):
    size = 1
    for n in shape:
        size *= n
    if size > SMALL_ENUMERATION or len(shape) > 32:
        return _UNKNOWN
    low = off + sum(s * (n - 1) for n, s in zip(shape, stride) if s < 0)
    high = off + sum(s * (n - 1) for n, s in zip(shape, stride) if s > 0)
    if max(abs(low), abs(high)) >= 2**62:
        return _UNKNOWN
    cells = np.array(off, dtype=np.int64)
    for s, n in zip(stride, shape):
        cells = np.add.outer(cells, np.arange(n, dtype=np.int64) * s)
    flat = cells.reshape(-1)
    order = np.argsort(flat, kind="stable")
    same = np.flatnonzero(flat[order][1:] == flat[order][:-1])
    if not same.size:
        return None
    i, j = int(order[same[0]]), int(order[same[0] + 1])
    return (tuple(int(x) for x in np.unravel_index(i, cells.shape)),
            tuple(int(x) for x in np.unravel_index(j, cells.shape)))


def internal_witness(a):
    """Two different indices of ``a`` that map to the same cell, or None.

    Examples
    --------
    >>> internal_witness((0, (3, 2), (1, 2)))
    ((2, 0), (0, 1))
    """
    return _internal(*as_triple(a))


def has_internal_overlap(a) -> bool:
    """Exactly: do two different indices of ``a`` map to the same cell?

    Examples
    --------
    >>> has_internal_overlap((0, (4, 4), (1, 1)))
    True
    >>> has_internal_overlap((0, (4, 4), (4, 1)))
    False
    """
    budget = None
    nat = _native
    if nat is not None:
        try:
            r = nat.has_internal_overlap(_exact(a))
        except TypeError:
            r = None
        if r is NotImplemented:
            budget = 0
        elif r is not None:
            return r
    try:
        return _internal(*as_triple(a), budget) is not None
    except UndecidedError:  # sound: refusing a write through it is the safe side
        _record_undecided("has_internal_overlap", a)
        return True


def _covers_by_rules(na, nb):
    """:func:`covers` of normal forms by its rules before enumerating: True, False, or None
    when none applies (the compiled ``covers`` follows them, and adds one of its own)."""
    if nb is None:
        return True
    if na is None:
        return False
    if nb[0] < na[0] or nb[4] > na[4]:
        return False
    if na[1:3] == nb[1:3] and na[0] == nb[0]:
        return True
    if na[1] == (1,) or not na[1]:
        return True
    pf = product_form(na[:3], nb[:3])
    if pf is not None:
        return all(ap_subset(q, p) for p, q in zip(pf[1][0], pf[1][1]))
    return None


def covers(a, b, limit=None) -> bool:
    """Conservatively: is ``footprint(b)`` a subset of ``footprint(a)``?

    Never answers True wrongly; answers False when unsure. Exact for identical normalised
    layouts, a contiguous ``a`` containing ``b``'s extent, sub-boxes ``b`` of ``a`` sliced
    from one parent (a product form), and any ``b`` of at most ``limit`` indices (default
    :data:`~aliasflow.solver.cells.DEFAULT_LIMIT`), which is checked cell by cell; False for
    larger ``b`` outside those forms. (The analysis passes a small limit: a False there only
    keeps a record alive longer.)

    Examples
    --------
    >>> covers((0, (4, 4), (4, 1)), (5, (2, 2), (4, 1)))
    True
    >>> covers((5, (2, 2), (4, 1)), (0, (4, 4), (4, 1)))
    False
    """
    r = None  # the compiled rules up to enumerating: True, False or NotImplemented
    if _native is not None:
        try:
            r = _native.covers(_exact(a), _exact(b))
        except TypeError:  # not exact tuples of ints: the general path converts them
            pass
        if r is True or r is False:
            return r
    na, nb = _nf(a), _nf(b)
    if r is None:  # no compiled answer: the rules here
        r = _covers_by_rules(na, nb)
        if r is not None:
            return r
    size = 1
    for n in nb[2]:
        size *= n
    limit = DEFAULT_LIMIT if limit is None else limit
    if size <= limit and membership_cost(na) <= 1_000_000:
        try:
            cells = enumerate_nf(nb[:3], limit)
            return bool(member_mask(na[:3], cells).all())
        except (OverflowError, TooLargeError):
            pass
    return False

