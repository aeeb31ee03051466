"""Races between ops on streams: every pair of conflicting accesses (one of them a write,
cells meeting exactly) that the streams' happens-before relation leaves unordered.

The search walks the access table (:func:`~.lower.lower`) once, in issue order. Per memory
group it keeps an index of earlier accesses by extent; a new access is checked against those
its extent meets: a pair the clocks order is skipped before any overlap test, the rest are
tested exactly (:func:`aliasflow.solver.intersects`).

What keeps the index small is *shadowing*, which loses no pair. When a new access ``N`` (op
``k``) covers every cell of an earlier access ``A`` (op ``i``) of the same memory lifetime,
``i`` happens before ``k``, and ``N`` writes or ``A`` reads, then ``A`` leaves the index and
hangs under ``N``. A later op ``j`` that races with ``A`` also races with ``N``: ``j`` is not
after ``i``, so not after ``k`` (else ``i`` would be before ``j``), and ``j`` comes later, so
``k`` is not after ``j`` either; ``j`` touches a cell of ``A``, which ``N`` covers, and one of
them writes (``N``, or ``j`` since ``A`` then reads). So ``A`` is looked at exactly when ``N``
races with ``j``, by walking down from ``N``; and if ``N`` is ordered before ``j`` (or misses
its cells, or the allocator orders the lifetimes) so is everything under it. Repeated work on
the same tensors, on one stream or synchronised across streams, keeps one record per
tensor and stream in the index, whatever the trace's length.

And a record leaves the index for good once every op issued from then on, on the streams
that ever touch its memory group, follows its op (:meth:`~.streams.StreamClocks.horizon`):
memory handed out again and again (a new lifetime each time, which shadowing keeps apart)
costs nothing once the streams that use it have synchronised, whatever other streams do.
"""
from __future__ import annotations

from heapq import heappop, heappush
from typing import NamedTuple

from .. import solver
from ..core.errors import AliasflowError
from ..core.program import as_records
from .extents import ExtentIndex
from .lower import READ, lower

PROGRESS_STEP = 100
KIND_ORDER = ("RAW", "WAW", "WAR")


class StreamRace(NamedTuple):
    """Two ops' accesses that race: ``first`` and ``second`` are op positions (issue order),
    with the views they access and ``kinds``, the conflicts between those two accesses
    (``RAW``: ``first`` writes, ``second`` reads; ``WAR``; ``WAW``)."""
    first: int
    second: int
    first_view: object
    second_view: object
    kinds: tuple


class _Record:
    __slots__ = ("op", "mode", "low", "high", "dense", "layout", "view", "key", "under",
                 "index")

    def __init__(self, op, mode, low, high, dense, layout, view, key):
        self.op, self.mode, self.low, self.high = op, mode, low, high
        self.dense, self.layout, self.view, self.key = dense, layout, view, key
        self.under = None   # records this one shadows
        self.index = None   # the ExtentIndex holding it (None: shadowed or expired)


def find_stream_races(ops, clocks, *, lifetime=None, progress=None) -> list[StreamRace]:
    """Every pair of conflicting accesses of ``ops`` that ``clocks`` leaves unordered.

    Parameters
    ----------
    ops : iterable of op records, in issue order
        Their views' memory decides what conflicts, exactly (cells, through any views).
    clocks : :class:`~.streams.StreamClocks`
        One issued op per op, in the same order.
    lifetime : callable, optional
        ``lifetime(view)``: the id of the memory block (as given to ``clocks.alloc``) the view
        lies in, or None. Accesses to two lifetimes of one address that the caching
        allocator orders (:meth:`~.streams.StreamClocks.reuse_ordered`) do not race.
    progress : callable, optional
        Called with a number of ops checked so far, every hundred ops or so.

    Returns one :class:`StreamRace` per pair of ops and pair of views, ordered by the later
    op, then the earlier one.

    Examples
    --------
    >>> import aliasflow as af
    >>> from aliasflow.analysis.streams import StreamClocks
    >>> x = af.Tensor("x", (8,))
    >>> write = af.FillOperation("write").set_outputs(x[:4])
    >>> read = af.TransformOperation("read").set_inputs(x[2:])
    >>> c = StreamClocks(); _ = c.issue("side"), c.issue("default")
    >>> [(r.first, r.second, r.kinds) for r in find_stream_races([write, read], c)]
    [(0, 1, ('RAW',))]
    """
    ops = as_records(ops)
    if len(clocks) != len(ops):
        raise AliasflowError(f"the clocks hold {len(clocks)} issued ops, the program "
                             f"{len(ops)}: issue each op once, in order")
    table = lower(ops)
    rows, starts = table.rows(), table.op_starts.tolist()
    op_stream, op_seq, op_clock = clocks.op_stream, clocks.op_seq, clocks.op_clock
    reuse_ordered = clocks.reuse_ordered
    intersects = solver.intersects
    last = clocks.last_unordered()
    group_streams: dict = {}
    for row in rows:
        group_streams.setdefault(row[2], set()).add(op_stream[row[0]])
    horizons = {}   # streams touching a group -> per op, the last op there not after it
    expiry: list = []      # (horizon, tie, record): records leave the index past their horizon
    memories: dict = {}    # group -> (reads index, writes index)
    races: list[StreamRace] = []
    for j in range(len(ops)):
        while expiry and expiry[0][0] < j:
            rec = heappop(expiry)[2]
            if rec.index is not None:
                rec.index.remove(rec, rec.low, rec.high)
                rec.index = None
        sj, cj = op_stream[j], op_clock[j]
        ncj = len(cj)
        found: dict = {}
        pending = []
        for r in range(starts[j], starts[j + 1]):
            _, mode, group, low, high, dense, layout, view = rows[r]
            key = lifetime(view) if lifetime is not None else None
            indexes = memories.get(group)
            if indexes is None:
                indexes = memories[group] = (ExtentIndex(), ExtentIndex())
            reads, writes = indexes
            stack = list(writes.query(low, high))
            if mode != READ:
                stack.extend(reads.query(low, high))
            while stack:
                rec = stack.pop()
                if mode == READ and rec.mode == READ:
                    continue   # reads shadow only reads: nothing below conflicts either
                i = rec.op
                si = op_stream[i]
                if si == sj or (si < ncj and cj[si] >= op_seq[i]):
                    continue   # ordered, and so is everything below
                if rec.high < low or high < rec.low:
                    continue
                if not ((dense and rec.dense) or intersects(rec.layout, layout)):
                    continue
                if key != rec.key and key is not None and rec.key is not None and \
                        reuse_ordered(i, rec.key, j, key):
                    continue
                kind = ("WAW" if mode != READ else "RAW") if rec.mode != READ else "WAR"
                entry = found.get((i, id(rec.view), id(view)))
                if entry is None:
                    found[(i, id(rec.view), id(view))] = [i, rec.view, view, {kind}]
                else:
                    entry[3].add(kind)
                if rec.under:
                    stack.extend(rec.under)
            pending.append((group, indexes,
                            _Record(j, mode, low, high, dense, layout, view, key)))
        for group, indexes, new in pending:   # an op never races with itself
            touching = frozenset(group_streams[group])
            h = horizons.get(touching)
            if h is None:
                h = horizons[touching] = [max(k) for k in zip(*(last[t] for t in touching))]
            if h[j] > j:
                _insert(indexes, new, op_stream, op_seq, op_clock)
                heappush(expiry, (h[j], id(new), new))
        for i, vi, vj, kinds in sorted(found.values(), key=lambda e: e[0]):
            races.append(StreamRace(i, j, vi, vj, tuple(k for k in KIND_ORDER if k in kinds)))
        if progress is not None and j % PROGRESS_STEP == PROGRESS_STEP - 1:
            progress(PROGRESS_STEP)
    if progress is not None and len(ops) % PROGRESS_STEP:
        progress(len(ops) % PROGRESS_STEP)
    return races


def _covers(new: _Record, old: _Record) -> bool:
    """Does ``new`` touch every cell ``old`` touches? (Cheap sufficient tests only: the same
    layout, or a dense ``new`` whose extent holds ``old``'s.)"""
    if new.dense:
        return new.low <= old.low and old.high <= new.high
    return new.layout == old.layout


def _insert(indexes, new: _Record, op_stream, op_seq, op_clock) -> None:
    """Add ``new`` to the index, hanging the records it shadows under it."""
    reads, writes = indexes
    k = new.op
    sk, ck = op_stream[k], op_clock[k]
    under = []
    for index in ((reads, writes) if new.mode != READ else (reads,)):
        for rec in index.query(new.low, new.high):
            i = rec.op
            if i == k or rec.key != new.key or not _covers(new, rec):
                continue
            si = op_stream[i]
            if si == sk or (si < len(ck) and ck[si] >= op_seq[i]):
                under.append((index, rec))
    for index, rec in under:
        index.remove(rec, rec.low, rec.high)
        rec.index = None
    if under:
        new.under = [rec for _, rec in under]
    new.index = reads if new.mode == READ else writes
    new.index.add(new, new.low, new.high)
