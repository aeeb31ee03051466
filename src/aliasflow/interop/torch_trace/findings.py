"""Findings of a trace: the places where a PyTorch program's result depends on aliasing.

Kinds, most serious first:

- ``in-op-overlap``: an op writes bytes that another of its own tensor arguments also
  touches through a different view (not the very same elements in the same order). PyTorch
  checks this only for some layouts; elsewhere the result silently depends on its kernel's
  loop order. ``count``: distinct elements written that the other view touches.
- ``self-overlap-write``: an op writes through a view that maps two indices to one element
  (``expand``, ``unfold``, ``as_strided``), or a data-dependent write (``index_put_``,
  ``scatter_``, ``index_copy_``) whose indices repeat. ``count``: elements written more than
  once.
- ``RAW`` / ``WAW`` / ``WAR``: two different ops touch the same bytes through different views
  (the implicit data flow), for elements where the later op is the very next access of the
  earlier one's kind: for RAW the reader sees what the writer wrote (no write in between),
  for WAW the second write overwrites the first, for WAR the write clobbers what was read
  (no write in between). ``count``: such elements. Flows out of the op that created a
  storage (an allocation, a factory, an ``out=`` write that allocated) are not findings;
  neither are conflicts between two different lifetimes of one address (memory reuse):
  those are listed apart, by :meth:`Trace.reuse`, with ``reuse=True``.

Elements are counted in the dtype of the finding's (first) written view; ``elements()``
gives them as element indices into that view's storage.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np

from ...analysis.overlap import check_memory_overlap, has_internal_overlap, overlap
from ...core.record import Access, OpRecord
from .memory import byte_footprint, element_starts, may_overlap_internally, no_gc

RANK = {"in-op-overlap": 0, "self-overlap-write": 1, "RAW": 2, "WAW": 3, "WAR": 4}


@dataclass(eq=False)
class Finding:
    """One finding: ``kind``, ``ops`` (op records, program order), ``count`` (distinct
    elements), ``lines`` (the ops' user source lines), ``views`` (the tensors involved, as
    :class:`~.memory.Ref`), ``reuse`` (the two ops touch two lifetimes of one address)."""
    kind: str
    ops: list
    count: int
    views: list
    reuse: bool = False
    _addresses: np.ndarray = field(default=None, repr=False)

    @property
    def lines(self) -> list[str]:
        out = []
        for op in self.ops:
            if op.line not in out:
                out.append(op.line)
        return out

    @property
    def storage(self):
        """The storage generation of the (first written) view."""
        return self.views[0].gen

    def elements(self) -> list[int]:
        """The elements involved, as indices of elements of the finding's first view's dtype
        from the start of its storage, sorted."""
        ref = self.views[0]
        if callable(self._addresses):
            self._addresses = self._addresses()
        return ((self._addresses - ref.gen.address) // ref.itemsize).tolist()

    def view_elements(self, k: int, limit: int = 1 << 20) -> list[int]:
        """Elements (as in :meth:`elements`) that view ``k`` touches, at most ``limit``
        element indices enumerated; [] for a view of another storage or dtype size."""
        ref, v = self.views[0], self.views[k]
        if v.gen is not ref.gen or v.itemsize != ref.itemsize:
            return []
        starts = np.unique(element_starts(v)[:limit])
        return ((starts - ref.gen.address) // ref.itemsize).tolist()

    def describe(self) -> str:
        names = ", ".join(op.name for op in self.ops)
        extra = " (memory reuse)" if self.reuse else ""
        return f"{self.kind}{extra}: {names}: {self.count} element(s)"

    def to_json(self, elements: bool = False) -> dict:
        rec = {"kind": self.kind, "ops": [op.name for op in self.ops],
               "aten": [op.aten for op in self.ops], "indices": [op.index for op in self.ops],
               "count": self.count, "lines": self.lines,
               "sources": [op.source for op in self.ops],
               "views": [r.describe() for r in self.views], "storage": self.storage.name,
               "reuse": self.reuse, "failed": [op.index for op in self.ops if op.failed]}
        if elements:
            rec["elements"] = self.elements()
        return rec

    def __repr__(self) -> str:
        return f"Finding({self.describe()})"

    def _repr_html_(self) -> str:
        from ...reporting.html import finding_html
        return finding_html(self)


def _grid(ref, byte_addresses: np.ndarray) -> np.ndarray:
    """Start addresses of the ``ref``-dtype elements (on ``ref``'s grid) holding the bytes."""
    k = ref.itemsize
    slots = np.unique((byte_addresses - ref.start) // k)
    return ref.start + slots * k


def _bytes_of(access) -> np.ndarray:
    """Bytes an access certainly touches (a may-write: the elements it is known to write)."""
    ref = access.ref
    if access.may:
        return np.unique(np.add.outer(access.exact, np.arange(ref.itemsize)).reshape(-1))
    return byte_footprint(ref)


def _shared(a, b) -> np.ndarray:
    """Absolute byte addresses both accesses touch (exact, via the solver)."""
    ov = overlap(a.view, b.view)
    if not ov:
        return np.zeros(0, np.int64)
    got = ov.elements().astype(np.int64) + a.ref.gen.region_start
    for acc in (a, b):
        if acc.may:
            got = np.intersect1d(got, _bytes_of(acc), assume_unique=True)
    return got


def _in_op(op) -> list[Finding]:
    found = []
    writes = [a for a in op.accesses if a.mode == "W" and a.view is not None]
    others = [a for a in op.accesses if a.view is not None]
    for w in writes:
        hits, views = [], []
        for r in others:
            if r is w or r.ref.through.same_elements(w.ref.through) or \
                    (r.mode == "W" and r.label == w.label):
                continue
            if r.view.tensor is not w.view.tensor or not check_memory_overlap(w.view, r.view):
                continue
            hits.append(_shared(w, r))
            if r.ref.through not in views:
                views.append(r.ref.through)
        if hits:
            addresses = _grid(w.ref, np.concatenate(hits))
            if addresses.size:
                found.append(Finding("in-op-overlap", [op], int(addresses.size),
                                     [w.ref.through] + views, _addresses=addresses))
    return found


def _self_overlap(op) -> list[Finding]:
    found = []
    seen = set()
    for w in op.accesses:
        if w.mode != "W" or w.view is None or w.ref.through is not w.ref or id(w.ref) in seen:
            continue
        seen.add(id(w.ref))
        ref = w.ref
        if not may_overlap_internally(ref.sizes, ref.strides) or not has_internal_overlap(w.view):
            continue
        addresses, times = np.unique(element_starts(ref), return_counts=True)
        many = addresses[times > 1]
        if many.size:
            found.append(Finding("self-overlap-write", [op], int(many.size), [ref],
                                 _addresses=many))
    for label, repeats in op.repeats.items():
        ref = next(a.ref.through for a in op.accesses if a.label == label and a.mode == "W")
        many = np.array(sorted(repeats), dtype=np.int64)
        found.append(Finding("self-overlap-write", [op], int(many.size), [ref],
                             _addresses=many))
    return found


class _Writes:
    """Per region, the certain writes in program order, to find what lies between two ops."""

    def __init__(self, ops):
        self.by_region: dict[int, tuple[list, list]] = {}
        for op in ops:
            for a in op.accesses:
                if a.mode == "W" and a.view is not None and not a.may and not op.failed:
                    keys, accesses = self.by_region.setdefault(id(a.view.tensor), ([], []))
                    keys.append(op.index)
                    accesses.append(a)

    def between(self, region, i: int, j: int):
        """Writes by ops ``i <= k < j`` (an op writes after it reads, so op ``i``'s own
        writes come between its read and a later op's access; for a write at ``i`` they
        are that write and cut nothing more)."""
        keys, accesses = self.by_region.get(id(region), ((), ()))
        return accesses[bisect_left(keys, i):bisect_left(keys, j)]


def _access_map(op):
    out: dict[int, list] = {}
    for a in op.accesses:
        if a.view is not None:
            out.setdefault(id(a.view), []).append(a)
    return out


def _edges(ops):
    try:
        from ...analysis.dependencies import ordering_edges
        return ordering_edges(ops, prune=())
    except ImportError:  # pragma: no cover - older/newer core
        from ...analysis.dependencies import all_conflicts
        return all_conflicts(ops)


def _whole_elements(a, b, grid) -> bool:
    """Do the two accesses' shared bytes come in whole elements of ``grid``'s dtype? Then
    shared elements = shared bytes / itemsize, with nothing enumerated."""
    k = grid.itemsize
    return (not a.may and not b.may and a.ref.itemsize == k == b.ref.itemsize
            and (a.ref.start - grid.start) % k == 0 and (b.ref.start - grid.start) % k == 0)


def _cut(a, b, cuts) -> np.ndarray:
    """Shared bytes of ``a`` and ``b`` minus the bytes of the writes ``cuts``."""
    shared = _shared(a, b)
    for w in cuts:
        if shared.size == 0:
            break
        shared = np.setdiff1d(shared, _fp(w), assume_unique=True)
    return shared


def _alias_groups(ops) -> dict[int, int]:
    """Generation id -> id of its group: generations that share memory while both live."""
    parent: dict[int, int] = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for op in ops:
        for a in op.accesses:
            g = a.ref.gen
            for other in g.aliases:
                parent[root(g.id)] = root(other)
    return {g: root(g) for g in list(parent)}


def _candidates(live, want_reuse):
    """The ops to analyse for implicit conflicts. Unless reuse is wanted, memory that is only
    ever accessed through one view (same dtype, same bytes in the same order) cannot hold an
    implicit conflict, so its accesses are left out: the analysis then sees only memory
    touched through two or more different views."""
    if want_reuse:
        return live
    group = _alias_groups(live)
    keys: dict[int, set] = {}
    for op in live:
        for a in op.accesses:
            if a.view is not None:
                r = a.ref.through
                g = group.get(r.gen.id, r.gen.id)
                keys.setdefault(g, set()).add((r.dtype, r.byte_layout()))
    several = {g for g, k in keys.items() if len(k) > 1}
    out = []
    for op in live:
        ins = [a.view for a in op.accesses if a.mode == "R" and a.view is not None
               and group.get(a.ref.gen.id, a.ref.gen.id) in several]
        outs = [a.view for a in op.accesses if a.mode == "W" and a.view is not None
                and group.get(a.ref.gen.id, a.ref.gen.id) in several]
        if ins or outs:
            out.append(OpRecord(op.name, op.aten, [Access(k, "R", v) for k, v in enumerate(ins)]
                                + [Access(len(ins) + k, "W", v) for k, v in enumerate(outs)]))
    return out


def _dependency_findings(ops, want_reuse: bool):
    live = [op for op in ops if not op.failed and op.accesses]
    by_name = {op.name: op for op in live}
    maps = {}
    writes = _Writes(live)
    groups: dict = {}
    for d in _edges(_candidates(live, want_reuse)):
        src, dst = by_name[d.src], by_name[d.dst]
        ma = maps.get(src.index) or maps.setdefault(src.index, _access_map(src))
        mb = maps.get(dst.index) or maps.setdefault(dst.index, _access_map(dst))
        mode_a = "R" if d.kind == "WAR" else "W"
        mode_b = "R" if d.kind == "RAW" else "W"
        for a in ma.get(id(d.src_access), ()):
            if a.mode != mode_a:
                continue
            for b in mb.get(id(d.dst_access), ()):
                if b.mode != mode_b:
                    continue
                reuse = _reuse(a.ref.gen, b.ref.gen)
                if reuse and not want_reuse:
                    continue
                if not reuse:
                    if a.ref.through.same_elements(b.ref.through):
                        continue
                    if d.kind != "WAR" and a.ref.gen.creator == src.index:
                        continue  # a producer flow out of the op that made the storage
                ov = overlap(a.view, b.view)
                if not ov:
                    continue
                # writes in between that could overwrite shared bytes (checked exactly later);
                # across reuse, every shared element counts
                lo = max(a.view.extent[0], b.view.extent[0])
                hi = min(a.view.extent[1], b.view.extent[1])
                cuts = [] if reuse else [
                    w for w in writes.between(a.view.tensor, src.index, dst.index)
                    if w is not a and w.view.extent[0] <= hi and w.view.extent[1] >= lo
                    and check_memory_overlap(w.view, a.view)
                    and check_memory_overlap(w.view, b.view)]
                key = (d.kind, src.index, dst.index, reuse)
                g = groups.setdefault(key, [src, dst, [], [], b.ref.through])
                g[2].append((a, b, ov, cuts))
                for r in (a.ref.through, b.ref.through):
                    if r not in g[3]:
                        g[3].append(r)
    findings, reuse = [], []
    for (kind, _, _, is_reuse), (src, dst, pairs, views, grid) in groups.items():
        if len(pairs) == 1 and not pairs[0][3] and _whole_elements(*pairs[0][:2], grid):
            a, b, ov, _ = pairs[0]
            count = ov.count // grid.itemsize
            addresses = (lambda a=a, b=b, grid=grid: _grid(grid, _shared(a, b)))
        else:
            hits = [_cut(a, b, cuts) for a, b, _, cuts in pairs]
            addresses = _grid(grid, np.unique(np.concatenate(hits)))
            count = int(addresses.size)
        if count == 0:
            continue
        f = Finding(kind, [src, dst], count, views, reuse=is_reuse, _addresses=addresses)
        (reuse if is_reuse else findings).append(f)
    return findings, reuse


def _reuse(a, b) -> bool:
    """Do two generations hold one address at different times (not at once)?"""
    if a is b:
        return False
    older, newer = (a, b) if a.id < b.id else (b, a)
    return newer.reuses(older)


def _fp(access) -> np.ndarray:
    return access.view.footprint().astype(np.int64) + access.ref.gen.region_start


def reuse(trace) -> list[Finding]:
    """Conflicts between two lifetimes of one address (a storage freed, its memory given to
    a new one), in program order; ``count``: elements both accesses touch."""
    cached = getattr(trace, "_reuse", None)
    if cached is not None and cached[0] == len(trace.raw):
        return cached[1]
    with no_gc():
        out = _dependency_findings(trace.ops, True)[1]
    out.sort(key=lambda f: (f.ops[0].index, f.ops[-1].index, RANK[f.kind]))
    trace._reuse = (len(trace.raw), out)
    return out


def find(trace):
    """Findings of a trace, most serious first, computed once per trace length."""
    cached = getattr(trace, "_found", None)
    if cached is not None and cached[0] == len(trace.raw):
        return cached[1]
    ops = trace.ops
    findings = []
    with no_gc():
        for op in ops:
            if not op.accesses:
                continue
            findings.extend(_in_op(op))
            findings.extend(_self_overlap(op))
        findings.extend(_dependency_findings(ops, False)[0])
    findings.sort(key=lambda f: (RANK[f.kind], f.ops[0].index, f.ops[-1].index))
    trace._found = (len(trace.raw), findings)
    return findings

