"""Dependencies between ops: ordering edges (near-linear) and every conflict.

For ops ``i < j`` and two of their accesses to one storage whose footprints meet:
write then read is RAW, read then write is WAR, write then write is WAW.

:func:`analyze` keeps, per storage, the live accesses: writes not yet overwritten by later
writes, and reads since. A new read meets the live writes; a new write meets the live reads
and writes, then retires every record it covers (and cuts dense records down to the part it
did not overwrite). Records are found through an
:class:`~aliasflow.analysis.extents.ExtentIndex` and tested exactly, so no footprint is ever
enumerated. Every edge is a real conflict, and every conflicting pair is ordered by the
edges' transitive closure: a retired record's conflicts pass through the write that covered it.
Edges that other kept edges already imply are not produced at all (see :func:`_prune`), so
no transitive reduction is needed afterwards.
"""
from __future__ import annotations

from operator import attrgetter
from typing import NamedTuple


from ..core.gcpause import paused_gc
from ..core.program import as_records
from ..core.view import TensorView
from .. import solver
from .compiled import compiled_edges
from .extents import ExtentIndex
from .lower import READ, lower
from .overlap import overlap
from .live import COVERS_LIMIT, meets_left as _meets_left, remainder as _remainder
from .schedule import DependencyGraph


class Dependency(NamedTuple):
    """One conflict: op ``src`` (earlier) and op ``dst`` touch a shared element.

    ``implicit`` is False when both accesses use the same view (same window on the same
    tensor), True when different views overlap. ``src_access`` and ``dst_access`` are the two
    views; ``src_view``/``dst_view`` their names. ``elements`` lists the shared storage
    elements and ``count`` gives their number (both computed on request).
    """

    src: str
    dst: str
    kind: str
    implicit: bool
    src_access: TensorView
    dst_access: TensorView

    @property
    def src_view(self) -> str:
        return self.src_access.name

    @property
    def dst_view(self) -> str:
        return self.dst_access.name

    @property
    def tensor(self) -> str:
        return self.src_access.tensor.name

    @property
    def views(self) -> tuple[TensorView, TensorView]:
        return self.src_access, self.dst_access

    def __repr__(self) -> str:
        return (f"Dependency({self.src!r} -> {self.dst!r}, {self.kind}, {self.how}, "
                f"tensor {self.tensor!r})")

    @property
    def overlap(self):
        """The :class:`~aliasflow.Overlap` of the two views (elements, count, witness)."""
        return overlap(*self.views)

    @property
    def elements(self) -> list[int]:
        return self.overlap.elements().tolist()

    @property
    def count(self) -> int:
        return self.overlap.count

    @property
    def how(self) -> str:
        if self.implicit:
            return f"implicit, {self.src_view}/{self.dst_view}"
        return f"explicit, {self.src_view}"


class _Memory:
    """Live access records of one memory group: ``records`` maps a record id to
    ``(op position, view, low, high, dense, layout, left)`` (cells of the group; ``left``:
    None, or the cells of a non-dense record not yet overwritten, see
    :func:`.records.remainder`); two extent
    indexes hold the reads since the last covering write and the writes not yet covered."""

    __slots__ = ("reads", "writes", "records", "last_read")

    def __init__(self):
        self.reads = ExtentIndex()
        self.writes = ExtentIndex()
        self.records: dict[int, tuple] = {}
        self.last_read: dict[tuple[int, int], int] = {}  # dense extent -> newest read record


PROGRESS_STEP = 1024
WINDOW = 4096  # how far back the ancestor bitsets look, in ops
_MASK = (1 << WINDOW) - 1


def _prune(found: list[tuple], j: int, ancestors: list[int], prunable) -> list[tuple]:
    """Drop the conflicts of op ``j`` that other kept edges already order.

    ``ancestors[k % WINDOW]`` is a bitset of op ``k``'s ancestors among the ``WINDOW`` ops
    before it (bit ``b``: op ``k - 1 - b``). Candidates are visited nearest first; one whose
    source is already an ancestor through a kept edge is implied, so it is dropped if its
    kind is prunable. Every ancestor bit is a real path, so dropping is always safe; sources
    further back than the window are simply kept.
    """
    found.sort(key=_first, reverse=True)
    reach = 0  # ancestors of j through kept edges, in j's frame
    kept, sources = [], set()
    for rec in found:
        i = rec[0]
        d = j - 1 - i
        if i not in sources:
            if rec[1] in prunable and d < WINDOW and (reach >> d) & 1:
                continue
            sources.add(i)
            if d < WINDOW:
                reach |= (ancestors[i % WINDOW] << (d + 1)) | (1 << d)
        kept.append(rec)
    ancestors[j % WINDOW] = reach & _MASK
    kept.sort(key=_first)  # back to program order; stable, so accesses keep their order
    return kept


def ordering_edges(ops, progress=None, retire: bool = True,
                   prune=("WAR", "WAW")) -> list[Dependency]:
    """Edges whose transitive closure orders every conflicting pair; each a real conflict.

    With ``retire=False`` no record is ever dropped, so every conflicting access pair is
    found (that is :func:`all_conflicts`). The compiled walk (:mod:`.compiled`) runs when it
    is built, else :func:`reference_edges`; both give the same edges in the same order.
    """
    records = as_records(ops)
    table = lower(records)
    got = _compiled(table, progress, retire, prune)
    if got is None:
        return _reference(records, table, progress, retire, prune)
    return got.dependencies([rec.name for rec in records], Dependency)


def _compiled(table, progress, retire, prune):
    return compiled_edges(table, progress, retire, prune, COVERS_LIMIT, WINDOW, PROGRESS_STEP)


def reference_edges(ops, progress=None, retire: bool = True,
                    prune=("WAR", "WAW")) -> list[Dependency]:
    """The readable reference of the walk (``AF_PURE=1`` or no compiled build): see
    :func:`_reference`."""
    records = as_records(ops)
    return _reference(records, lower(records), progress, retire, prune)


def _reference(ops, table, progress, retire: bool, prune) -> list[Dependency]:
    """The walk over ``table``, the lowering of the records ``ops``, in Python.

    Records are ``(op position, view, low, high, dense, layout, left, piece)`` in cells of
    their memory group (see :mod:`.lower` and :mod:`.live`); two dense records whose
    extents meet overlap, anything else gets the exact test. Candidates are visited in
    record order (the compiled walk does the same, so both keep the same edges where
    pruning depends on the order). (This loop is the analysis hot path of the pure build:
    it is written flat on purpose.)
    """
    rows = table.rows()
    memories: dict[int, _Memory] = {}
    deps: list[Dependency] = []
    names = [op.name for op in ops]
    next_id = 0
    ancestors = [0] * WINDOW
    prunable = frozenset(prune or ())
    replace_reads = retire and "WAR" in prunable
    intersects = solver.intersects
    starts = table.op_starts.tolist()

    for j in range(len(ops)):
        found: list[tuple] = []
        pending = []
        # Ancestors of j through the conflicts found so far (bit d: op j - 1 - d). A
        # candidate of a prunable kind whose op is one already needs no exact test: its
        # edge would be implied, so it is never produced (see _prune).
        reach = 0
        direct = set()  # ops with a conflict found: their other conflicts are kept (_prune)
        for r in range(starts[j], starts[j + 1]):
            _, mode, group, low, high, dense, layout, view = rows[r]
            st = memories.get(group)
            if st is None:
                st = memories[group] = _Memory()
            records = st.records
            new = (j, view, low, high, dense, layout, None, False)
            if mode == READ:
                skip_raw = "RAW" in prunable
                for rid in sorted(st.writes.query(low, high)):
                    old = records[rid]
                    d = j - 1 - old[0]
                    if skip_raw and d < WINDOW and (reach >> d) & 1 and old[0] not in direct:
                        continue
                    if (dense and old[4]) or (intersects(old[5], layout) if old[6] is None
                                              else _meets_left(old, new)):
                        found.append((old[0], "RAW", old[1], view))
                        direct.add(old[0])
                        if d < WINDOW:
                            reach |= (ancestors[old[0] % WINDOW] << (d + 1)) | (1 << d)
                pending.append((st, True, new))
                continue
            for index, kind in ((st.reads, "WAR"), (st.writes, "WAW")):
                changed = []
                skip = kind in prunable
                for rid in sorted(index.query(low, high)):
                    old = records[rid]
                    d = j - 1 - old[0]
                    if skip and d < WINDOW and (reach >> d) & 1 and old[0] not in direct:
                        # implied: no edge, but a write still retires what it covers (a
                        # dense write by its extent, any write a record of its own layout)
                        if retire and (dense or old[5] == layout):
                            rest = _remainder(new, old) if dense else ()
                            if rest is not None:
                                changed.append((rid, rest))
                        continue
                    if (dense and old[4]) or (intersects(old[5], layout) if old[6] is None
                                              else _meets_left(old, new)):
                        found.append((old[0], kind, old[1], view))
                        direct.add(old[0])
                        if d < WINDOW:
                            reach |= (ancestors[old[0] % WINDOW] << (d + 1)) | (1 << d)
                        if retire:
                            rest = _remainder(new, old)
                            if rest is not None:
                                changed.append((rid, rest))
                for rid, rest in changed:
                    old = records[rid]
                    if old[4] and st.last_read.get((old[2], old[3])) == rid:
                        del st.last_read[old[2], old[3]]  # its extent is about to change
                    if not rest:
                        del records[rid]
                        index.remove(rid, old[2], old[3])
                        continue
                    records[rid] = rest[0]
                    index.cut(rid, old[2], old[3], rest[0][2], rest[0][3])
                    for piece in rest[1:]:
                        records[next_id] = piece
                        index.add(next_id, piece[2], piece[3])
                        next_id += 1
            pending.append((st, False, new))
        if prunable:
            found = _prune(found, j, ancestors, prunable) if found else found
            if not found:
                ancestors[j % WINDOW] = 0
        elif len(found) > 1:
            found.sort(key=_first)
        # Records of op j go in after all of its accesses: an op never depends on itself.
        # A dense read of exactly the extent an ancestor's live read covers takes over that
        # record: any later writer ordered after op j is ordered after the ancestor too.
        reach = ancestors[j % WINDOW] if replace_reads else 0
        for st, is_read, new in pending:
            records = st.records
            if is_read and new[4]:
                key = new[2], new[3]
                rid = st.last_read.get(key)
                if reach and rid is not None:
                    old = records.get(rid)
                    if old is not None and old[2] == new[2] and old[3] == new[3] and old[4]:
                        d = j - 1 - old[0]
                        if 0 <= d < WINDOW and (reach >> d) & 1:
                            records[rid] = new
                            continue
                st.last_read[key] = next_id
            records[next_id] = new
            (st.reads if is_read else st.writes).add(next_id, new[2], new[3])
            next_id += 1
        if found:
            name = names[j]
            if len(found) > 1:  # pieces of one cut record meet the same access once each
                found = list({(f[0], f[1], id(f[2]), id(f[3])): f for f in found}.values())
            for i, kind, vi, vj in found:
                deps.append(Dependency(names[i], name, kind, vi is not vj and vi != vj, vi, vj))
        if progress is not None and j % PROGRESS_STEP == PROGRESS_STEP - 1:
            progress(PROGRESS_STEP)
    if progress is not None:
        progress(len(ops) % PROGRESS_STEP)
    return deps


_after = attrgetter("after")


def _first(item: tuple):
    return item[0]


def all_conflicts(ops, progress=None) -> list[Dependency]:
    """Every conflicting access pair. Their number can grow quadratically with the program,
    so this is meant for small programs (a few thousand ops)."""
    return ordering_edges(ops, progress, retire=False, prune=())


def analyze(ops, complete: bool = False, minimal: bool = False, progress=None
            ) -> DependencyGraph:
    """Dependency graph of ``ops`` (in program order).

    Parameters
    ----------
    ops : iterable of OpRecord or Operation (builders give their records)
    complete : bool, default False
        False: ordering edges, near-linear in the number of ops; every edge is a real
        conflict and every conflicting pair is ordered by the edges' transitive closure.
        True: every conflicting access pair (no record is ever retired); their number can
        grow quadratically, so this is meant for small programs (a few thousand ops).
    minimal : bool, default False
        False: a RAW edge from every write that may still be live at a cell an op reads
        to that op, the data flow a reader sees (a write's cells overwritten by later
        writes are tracked for dense records and for non-dense ones of at most
        ``COVERS_LIMIT`` cells; past that a record stays live until one write covers it, so
        a few edges may come from values already overwritten); WAR and WAW edges that
        other edges already imply are left out. True: implied RAW edges are left out too,
        for a scheduler that only needs the order.
    progress : callable, optional
        Called with a number of ops analysed so far, every thousand ops or so.

    Examples
    --------
    >>> import aliasflow as af
    >>> A = af.Tensor("A", (4, 4))
    >>> w = af.FillOperation("w").set_outputs(A[:2])
    >>> r = af.TransformOperation("r").set_inputs(A.T[0])
    >>> [(d.src, d.dst, d.kind, d.implicit) for d in af.analyze([w, r]).dependencies]
    [('w', 'r', 'RAW', True)]
    """
    if complete:
        retire, prune = False, ()
    else:
        retire, prune = True, ("RAW", "WAR", "WAW") if minimal else ("WAR", "WAW")
    with paused_gc():  # analysis makes millions of small objects and frees none
        records = as_records(ops)
        table = lower(records)
        got = _compiled(table, progress, retire, prune)
        if got is not None:  # edges as arrays; Dependency records made when asked for
            graph = DependencyGraph.from_edges(records, got, Dependency)
        else:
            graph = DependencyGraph(records, _reference(records, table, progress, retire,
                                                        prune))
    if any(map(_after, records)):
        graph.after  # names that are not earlier ops are refused now, not at first use
    return graph


def analyze_dependencies(ops) -> dict[str, list[str]]:
    """The seed's answer: for each op, the earlier ops whose outputs overlap its inputs.

    Read-after-write conflicts only, every pair (not just ordering edges), in program order.
    """
    ops = as_records(ops)
    result: dict[str, list[str]] = {op.name: [] for op in ops}
    for d in all_conflicts(ops):  # in program order of dst, then of src
        if d.kind == "RAW" and d.src not in result[d.dst][-1:]:
            result[d.dst].append(d.src)
    return result
