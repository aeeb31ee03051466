"""Live accesses of the dependency walk and what a write leaves of them.

The walk keeps a record of each live access (not to be confused with op records): a record
is ``(op position, view, low, high, dense, layout, left, piece)`` in cells of its memory
group (see :mod:`.lower`): ``left`` is None, or the cells of a non-dense record not yet
overwritten; ``piece`` says a dense record is a piece a dense write cut from a record.
:func:`remainder` is what a write leaves live of a record; :func:`meets_left` tests an
access against the cells left. The compiled walk (``_native_src/walk.hpp``) does the same,
step for step.
"""
from __future__ import annotations

import numpy as np

from .. import solver

COVERS_LIMIT = 4096  # cells a record's cover tests and cell sets may enumerate (past it: kept)


def remainder(new: tuple, old: tuple):
    """What is left live of record ``old`` after the write ``new``: None (all of it),
    ``()`` (nothing: retire it) or the pieces of it that ``new`` did not overwrite.

    Conflicts with an overwritten part pass through ``new``, which conflicts with ``old``
    already; so shrinking records is as safe as retiring them, and keeps windows that are
    overwritten slot by slot (ring buffers) from piling up. A dense record is cut into dense
    pieces. A non-dense record of at most ``COVERS_LIMIT`` cells keeps the set of its cells
    not yet overwritten (``left``) and its extent shrinks to them; it is retired when
    writes, together, have overwritten every one (strided writes over tiles, head blocks
    and windows). Its exact tests still use its whole layout: a conflict found on an
    overwritten cell is still a real conflict. A dense record (not a piece) of at most
    ``COVERS_LIMIT`` cells that a non-dense write cuts becomes such a record: a run of cells
    read (abutting windows, a block of rows), then stamped at a stride, would otherwise stay
    live, and gain an edge to later stamps, until one write covered the whole run.
    """
    if new[4]:
        low, high = new[2], new[3]
        if low <= old[2] and old[3] <= high:  # a dense write covers everything in its extent
            return ()
        if not old[4]:
            return _subtract(old, low, high, None)
        rest = []
        if old[2] < low:
            rest.append((old[0], old[1], old[2], low - 1, True, _dense(old[2], low - 1), None,
                         True))
        if high < old[3]:
            rest.append((old[0], old[1], high + 1, old[3], True, _dense(high + 1, old[3]),
                         None, True))
        return rest
    if solver.covers(new[5], old[5], COVERS_LIMIT):
        return ()
    if _size(new[5]) > COVERS_LIMIT:
        return None
    if old[7]:  # a dense piece stays (the compiled walk reads its layout off its extent)
        return None
    # a dense record's cells are its extent: what is left of them makes it non-dense
    return _subtract(old[:4] + (False,) + old[5:], 0, -1, _cells(new[5]))


def meets_left(old: tuple, new: tuple) -> bool:
    """Does access ``new`` touch a cell of ``old[6]``, the cells of record ``old`` not yet
    overwritten? Exact; a large non-dense ``new`` is tested against the record's whole
    layout instead (a conflict there is real too: the record's op did touch those cells)."""
    left = old[6]
    if new[4]:
        k = int(np.searchsorted(left, new[2]))
        return k < len(left) and int(left[k]) <= new[3]
    if _size(new[5]) > COVERS_LIMIT:
        return solver.intersects(old[5], new[5])
    return bool(np.intersect1d(left, _cells(new[5]), assume_unique=True).size)


def _size(layout) -> int:
    n = 1
    for k in layout[1]:
        n *= k
    return n


def _cells(layout) -> np.ndarray:
    """The distinct cells of a layout, ascending."""
    offset, shape, stride = layout
    cells = np.array([offset], np.int64)
    for n, s in zip(shape, stride):
        cells = (cells[:, None] + np.arange(n, dtype=np.int64) * s).ravel()
    return np.unique(cells)


def _subtract(old: tuple, low: int, high: int, cells):
    """``old`` (non-dense) less the cells in ``[low, high]`` and ``cells``: None when none
    of its cells go (or it is too large to track), ``()`` when all go, else the record with
    its remaining cells and their extent."""
    left = old[6]
    if left is None:
        if _size(old[5]) > COVERS_LIMIT:
            return None
        left = _cells(old[5])
    rest = left[(left < low) | (left > high)]
    if cells is not None:
        rest = np.setdiff1d(rest, cells, assume_unique=True)
    if len(rest) == len(left):
        return None
    if not len(rest):
        return ()
    return [(old[0], old[1], int(rest[0]), int(rest[-1]), False, old[5], rest, False)]


def _dense(low: int, high: int) -> tuple:
    """The cell layout of every cell in ``[low, high]``."""
    return low, (high - low + 1,), (1,)
