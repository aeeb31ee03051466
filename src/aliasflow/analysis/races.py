"""Races: conflicting op pairs that an intended ordering (streams, happens-before) leaves
unordered, so their outcome depends on timing."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from graphlib import CycleError, TopologicalSorter

from ..core.errors import AliasflowError
from ..core.program import as_records
from .. import solver
from .dependencies import Dependency
from .extents import ExtentIndex
from .lower import READ, lower

PROGRESS_STEP = 100


def happens_before(names: list[str], streams: Mapping | None = None,
                   edges: Iterable | None = None) -> list[int]:
    """Reachability bitsets: bit ``i`` of ``result[j]`` is set when op ``i`` happens before ``j``.

    Ops on one stream run in program order; ``edges`` are extra ``(before, after)`` pairs
    (events, barriers, joins). Ops absent from ``streams`` are on streams of their own.
    """
    position = {n: k for k, n in enumerate(names)}

    def index(name, where):
        name = getattr(name, "name", name)
        if name not in position:
            raise AliasflowError(f"{where}: no op named {name!r}")
        return position[name]

    streams = streams or {}
    for name in streams:
        index(name, "streams")
    preds: list[set[int]] = [set() for _ in names]
    last_on_stream: dict = {}
    for k, name in enumerate(names):
        if name in streams:
            s = streams[name]
            if s in last_on_stream:
                preds[k].add(last_on_stream[s])
            last_on_stream[s] = k
    for pair in edges or ():
        try:
            a, b = pair
        except (TypeError, ValueError):
            raise AliasflowError(f"happens-before edge must be a pair of op names, "
                                 f"got {pair!r}") from None
        preds[index(b, f"edge {pair!r}")].add(index(a, f"edge {pair!r}"))
    try:
        order = list(TopologicalSorter({k: preds[k] for k in range(len(names))}).static_order())
    except CycleError as exc:
        cycle = " -> ".join(names[k] for k in exc.args[1])
        raise AliasflowError(f"the ordering has a cycle: {cycle}") from None
    reach = [0] * len(names)
    for k in order:
        bits = 0
        for p in preds[k]:
            bits |= reach[p] | (1 << p)
        reach[k] = bits
    return reach


def find_races(ops, order=None, *, streams: Mapping | None = None,
               edges: Iterable | None = None, progress=None) -> list[Dependency]:
    """Every conflicting access pair that the intended ordering leaves unordered.

    Parameters
    ----------
    ops : iterable of Operation
        The program; kinds (RAW/WAR/WAW) are named for this order.
    order : mapping or iterable of pairs, optional
        Shorthand: a mapping is ``streams``, anything else is ``edges``.
    streams : mapping of op name to stream id
        Ops on one stream run in program order.
    edges : iterable of (op name, op name)
        Extra happens-before edges, e.g. event record/wait pairs.
    progress : callable, optional
        Called with a number of ops checked so far, every hundred ops or so.

    Accesses are found through an index of extents, and a pair the ordering already orders
    is skipped before any exact overlap test, so the cost follows the number of unordered
    pairs whose extents meet (all of them when no ordering is given: quadratic at worst).
    The records come in program order of ``dst``, then of ``src``.

    Examples
    --------
    >>> import aliasflow as af
    >>> A = af.Tensor("A", (4, 4))
    >>> w = af.FillOperation("w").set_outputs(A[0])
    >>> r = af.TransformOperation("r").set_inputs(A[:, 0])
    >>> [(d.src, d.dst, d.kind) for d in af.find_races([w, r], {"w": 0, "r": 1})]
    [('w', 'r', 'RAW')]
    >>> af.find_races([w, r], {"w": 0, "r": 1}, edges=[("w", "r")])
    []
    """
    ops = as_records(ops)
    if order is not None:
        if isinstance(order, Mapping):
            streams = {**order, **(streams or {})}
        else:
            try:
                edges = list(order) + list(edges or ())
            except TypeError:
                raise AliasflowError(f"order must be a mapping of op names to streams or "
                                     f"pairs of op names, got {order!r}") from None
    names = [op.name for op in ops]
    reach = happens_before(names, streams, edges)
    table = lower(ops)  # accesses grouped by memory address ranges, in cells of each group
    rows, starts = table.rows(), table.op_starts.tolist()
    memories: dict = {}  # group -> (reads index, writes index, records)
    races: list[Dependency] = []
    intersects = solver.intersects
    next_id = 0
    for j in range(len(ops)):
        before_j = reach[j]
        found: list[tuple] = []
        pending = []
        for r in range(starts[j], starts[j + 1]):
            _, mode, group, low, high, dense, layout, view = rows[r]
            st = memories.get(group)
            if st is None:
                st = memories[group] = (ExtentIndex(), ExtentIndex(), {})
            reads, writes, records = st
            targets = ((writes, "RAW"),) if mode == READ else ((reads, "WAR"), (writes, "WAW"))
            for index, kind in targets:
                for rid in index.query(low, high):
                    i, old_view, old_layout, old_dense = records[rid]
                    if (before_j >> i) & 1 or (reach[i] >> j) & 1:  # ordered: no race
                        continue
                    if (dense and old_dense) or intersects(old_layout, layout):
                        found.append((i, kind, old_view, view))
            pending.append((reads if mode == READ else writes, records,
                            (j, view, layout, dense), low, high))
        for index, records, rec, low, high in pending:  # an op never races with itself
            records[next_id] = rec
            index.add(next_id, low, high)
            next_id += 1
        found.sort(key=lambda f: f[0])
        for i, kind, vi, vj in found:
            races.append(Dependency(names[i], names[j], kind, vi is not vj and vi != vj,
                                    vi, vj))
        if progress is not None and j % PROGRESS_STEP == PROGRESS_STEP - 1:
            progress(PROGRESS_STEP)
    if progress is not None and len(ops) % PROGRESS_STEP:
        progress(len(ops) % PROGRESS_STEP)
    return races
