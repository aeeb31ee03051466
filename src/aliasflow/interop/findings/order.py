"""Order facts: implicit flows between two different ops through different views.

``RAW``/``WAW``/``WAR`` between ops ``i < j`` counted over the elements where the later op is
the very next access of the earlier one's kind: for RAW the reader sees what the writer wrote
(no write in between), for WAW the second write overwrites the first, for WAR the write
clobbers what was read (no write in between). A program runs its ops in order, so these are
not bugs by themselves; they matter to whoever reorders or parallelises the code.

Not facts: two views of the same elements (same bytes in the same order, or the same bytes in
another order, as ``W`` and ``W.t()``); flows out of the op that allocated the memory;
conflicts between two lifetimes of one address (memory reuse: listed apart, ``reuse=True``).
"""
from __future__ import annotations

from bisect import bisect_left

import numpy as np

from ...analysis.overlap import check_memory_overlap, overlap
from ...core.record import _EMPTY, OpRecord
from .classify import _grid, shared_bytes
from .model import Finding


def same_data(a, b) -> bool:
    """Do two slots hold the same bytes as the same dtype (in any order)?"""
    if a.dtype != b.dtype or a.view is None or b.view is None:
        return False
    va, vb = a.view, b.view
    if va.tensor.storage.address != vb.tensor.storage.address and a.storage != b.storage:
        return False
    ea, eb = va.extent, vb.extent
    if ea is None or eb is None:
        return False
    if (va.tensor.storage.address + ea[0], va.tensor.storage.address + ea[1]) != \
            (vb.tensor.storage.address + eb[0], vb.tensor.storage.address + eb[1]):
        return False
    if va.is_dense and vb.is_dense:
        return True
    if va.size > 1 << 16:
        return False
    return np.array_equal(np.unique(va.footprint()), np.unique(vb.footprint()))


def _layout(s):
    return (s.dtype, s.start, tuple(s.shape), tuple(s.strides))


def _candidates(ops, infos, want_reuse):
    """Records to analyse, and which slot each of their views belongs to: unless reuse is
    wanted, only memory touched through two or more different views can hold an implicit
    flow."""
    keys: dict = {}
    for info in infos:
        for s in info.slots:
            if s.view is not None and s.mode is not None:
                keys.setdefault(s.memory, set()).add(_layout(s))
    several = {m for m, k in keys.items() if len(k) > 1 or want_reuse}
    out, slot_of = [], {}
    for op, info in zip(ops, infos):
        kept = []
        for acc in op.accesses:
            s = info.slots[acc.slot]
            if s.memory not in several:
                continue
            slot_of[id(acc.view)] = (s, acc.view)
            kept.append(acc)
        if kept:
            out.append(op if len(kept) == len(op.accesses) else
                       OpRecord._trusted(op.name, op.prim, tuple(kept), _EMPTY))
    return out, slot_of


class _Writes:
    """Per memory id, the writes (as views) in program order, to find what lies between two
    ops."""

    def __init__(self, ops, infos):
        self.by_memory: dict = {}
        for op, info in zip(ops, infos):
            for acc in op.accesses:
                if acc.mode in ("W", "RW") and info.exact.get(acc.slot) is None:
                    keys, views = self.by_memory.setdefault(info.slots[acc.slot].memory,
                                                            ([], []))
                    keys.append(info.index)
                    views.append(acc.view)

    def between(self, memory, i: int, j: int):
        keys, views = self.by_memory.get(memory, ((), ()))
        return views[bisect_left(keys, i):bisect_left(keys, j)]


def _bytes(view) -> np.ndarray:
    return view.footprint().astype(np.int64) + view.tensor.storage.address


def _shared(va, vb) -> np.ndarray:
    return shared_bytes(va, vb)


def flows(ops, infos, reuse_of, want_reuse: bool = False):
    """``(order findings, reuse findings)`` of records ``ops`` with their ``infos``.
    ``reuse_of(a, b)``: do slots ``a`` and ``b`` touch two lifetimes of one address?"""
    from ...analysis.dependencies import ordering_edges
    live = [(op, info) for op, info in zip(ops, infos)
            if not info.failed and not info.untracked and op.accesses]
    by_name = {info.name: info for _, info in live}
    cands, slot_of = _candidates([op for op, _ in live], [info for _, info in live],
                                 want_reuse)
    writes = _Writes([op for op, _ in live], [info for _, info in live])
    groups: dict = {}
    for d in ordering_edges(cands, prune=()):
        src, dst = by_name[d.src], by_name[d.dst]
        (a, va), (b, vb) = slot_of[id(d.src_access)], slot_of[id(d.dst_access)]
        is_reuse = reuse_of(a, b)
        if is_reuse and not want_reuse:
            continue
        if not is_reuse:
            if same_data(a, b):
                continue
            if d.kind != "WAR" and a.fresh:
                continue  # a producer flow out of the op that made the memory
        if not overlap(va, vb):
            continue
        cuts = [] if is_reuse else [
            w for w in writes.between(a.memory, src.index, dst.index)
            if (w is not va or d.kind == "WAR") and check_memory_overlap(w, va)
            and check_memory_overlap(w, vb)]
        key = (d.kind, src.index, dst.index, is_reuse)
        g = groups.setdefault(key, [src, dst, [], []])
        g[2].append((va, vb, cuts))
        for s in (a, b):
            if s not in g[3]:
                g[3].append(s)
    found, reuse = [], []
    for (kind, _, _, is_reuse), (src, dst, pairs, slots) in groups.items():
        grid = slots[0]
        hits = []
        for va, vb, cuts in pairs:
            shared = _shared(va, vb)
            for w in cuts:
                if not shared.size:
                    break
                shared = np.setdiff1d(shared, _bytes(w), assume_unique=True)
            hits.append(shared)
        addresses = _grid(grid, np.unique(np.concatenate(hits)))
        if not addresses.size:
            continue
        f = Finding("order", kind, [src, dst], int(addresses.size), slots, reuse=is_reuse,
                    _addresses=addresses)
        (reuse if is_reuse else found).append(f)
    return found, reuse
