"""Race findings of a trace: conflicting accesses that the streams leave unordered.

A :class:`Race` is two ops on different streams (or the host) that touch the same bytes, one
of them writing, with nothing ordering one after the other (see
:mod:`aliasflow.analysis.streams` for what orders ops). Found element-exact through any
views, and across memory reuse: a storage freed and its memory handed to a new one still
races with work pending on the old one, unless the caching allocator orders them (the two
were allocated on different streams, or ``record_stream`` named the other stream).

Lifetimes: a storage the trace saw made is allocated, on the stream of the op that made it,
just before that op; one that existed before (or was made where the trace could not see) on
its device's default stream before its first use. A lifetime ends when PyTorch's GPU trace
reports its memory freed (CUDA) or, at the latest, when another storage is made on its
memory.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...analysis.stream_races import find_stream_races
from ...analysis.streams import StreamClocks
from ...core.gcpause import paused_gc
from ..findings.classify import _grid, _restrict, _shared_bytes
from .streams import CUDA_DEFAULT, DEFAULT

_PAGE = 20   # live generations are indexed by the 1 MiB pages they touch

_HINT = ("order the two ops: make the second op's stream wait for the first's "
         "(stream.wait_stream(other), or event = other.record_event(); "
         "stream.wait_event(event)), or synchronize before issuing the second")


@dataclass(eq=False)
class Race:
    """One race: ``ops`` (two, in issue order: their
    :class:`~aliasflow.interop.findings.OpInfo`), on ``streams``, through ``views`` (the
    tensors as the ops passed them, :class:`~.memory.Ref`), with ``conflict`` the first
    conflict between the two accesses (``RAW``: the first op writes what the second reads;
    ``WAR``; ``WAW``; all of them in ``kinds``); ``reuse``: the two views are two lifetimes
    of one address. ``lines`` and ``stacks`` are per op (the user's frames that issued it);
    ``names``: the tensors as the user knows them; ``count``: the elements involved,
    ``elements()``: which (see :meth:`elements`)."""
    ops: list
    streams: list
    kinds: tuple
    views: list
    reuse: bool
    stacks: list
    names: list = field(default_factory=list)
    _slots: tuple = field(repr=False, default=())
    _exact: tuple = field(repr=False, default=(None, None))
    _addresses: np.ndarray | None = field(default=None, repr=False)
    occurrences = 1

    severity = "race"
    kind = "race"
    hint = _HINT

    @property
    def conflict(self) -> str:
        return self.kinds[0]

    @property
    def lines(self) -> list[str]:
        return [op.line for op in self.ops]

    @property
    def storage(self):
        """The storage generation of the first op's view."""
        return self.views[0].gen

    def _shared_addresses(self) -> np.ndarray:
        """Start addresses of the first view's elements holding bytes both views touch."""
        if self._addresses is None:
            a, b = self._slots
            shared = _restrict(_restrict(_shared_bytes(a, b), a, self._exact[0]), b,
                               self._exact[1])
            self._addresses = _grid(a, shared)
        return self._addresses

    @property
    def count(self) -> int:
        return int(self._shared_addresses().size)

    def elements(self) -> list[int]:
        """The elements involved, as indices of elements of the first view's dtype from the
        start of its storage, sorted."""
        ref = self.views[0]
        return ((self._shared_addresses() - ref.gen.address) // ref.itemsize).tolist()

    def describe(self) -> str:
        a, b = self.ops
        extra = " (memory reuse)" if self.reuse else ""
        return (f"race{extra}: {'/'.join(self.kinds)} {a.name} on {self.streams[0]} and "
                f"{b.name} on {self.streams[1]}: {self.count} element(s)")

    def to_json(self, elements: bool = False) -> dict:
        rec = {"severity": self.severity, "kind": self.kind, "conflict": self.conflict,
               "kinds": list(self.kinds), "ops": [op.name for op in self.ops],
               "labels": [op.label for op in self.ops],
               "indices": [op.index for op in self.ops],
               "streams": list(self.streams), "count": self.count, "lines": self.lines,
               "sources": [op.source for op in self.ops], "names": self.names,
               "views": [r.describe() for r in self.views], "storage": self.storage.name,
               "reuse": self.reuse, "hint": self.hint,
               "stacks": [[f"{f}:{n} in {fn}" for f, n, fn in s] for s in self.stacks]}
        if elements:
            rec["elements"] = self.elements()
        return rec

    def __repr__(self) -> str:
        return f"Race({self.describe()})"


def _stream(call) -> str:
    return call.stream or DEFAULT


def clocks_of(trace):
    """The trace's happens-before (:class:`~aliasflow.analysis.streams.StreamClocks`, one
    issued op per aten call) from its synchronisation log and storage lifetimes."""
    log = trace._streams
    clocks = StreamClocks()
    raws = trace.calls
    born: dict[int, list] = {}        # op index -> generations whose lifetime starts there
    for g in trace.storages:
        born.setdefault(g.creator if g.creator is not None else g.first_op, []).append(g)
    at: dict[int, list] = {}          # address -> generations allocated so far, oldest first
    alive: dict[int, dict] = {}       # page -> generations allocated and not freed there
    entries = log.entries
    e = 0

    def free(g):
        clocks.free(g.id)
        for page in _pages(g):
            alive.get(page, {}).pop(g.id, None)

    def apply(entry):
        action, args = entry[1], entry[2:]
        if action == "free_ptr":
            for g in at.get(args[0], ()):
                free(g)
        elif action == "record_stream":
            live = at.get(args[0])
            if live:
                clocks.record_stream(live[-1].id, args[1])
        elif action == "alloc_ptr":
            pass   # lifetimes start at the op that made the storage (below)
        else:
            getattr(clocks, _ACTIONS[action])(*args)

    for index, raw in enumerate(raws):
        while e < len(entries) and entries[e][0] <= index:
            apply(entries[e])
            e += 1
        for g in born.get(index, ()):
            # memory handed out again: the lifetimes it held are over
            near = {old.id: old for page in _pages(g) for old in alive.get(page, {}).values()}
            for old in near.values():
                if old.address < g.end and g.address < old.end and g.reuses(old):
                    free(old)
            if g.creator is not None:
                where = _stream(raw)
            else:
                where = CUDA_DEFAULT if _stream(raw).startswith("cuda:") else DEFAULT
            clocks.alloc(g.id, where)
            at.setdefault(g.address, []).append(g)
            for page in _pages(g):
                alive.setdefault(page, {})[g.id] = g
        clocks.issue(_stream(raw))
    for entry in entries[e:]:
        apply(entry)
    return clocks


def _pages(g):
    return range(g.address >> _PAGE, ((g.address + max(g.nbytes, 1) - 1) >> _PAGE) + 1)


_ACTIONS = {"record": "record", "wait": "wait", "wait_stream": "wait_stream",
            "sync_stream": "synchronize_stream", "sync_event": "synchronize_event",
            "sync": "synchronize", "create_event": "create_event",
            "delete_event": "delete_event", "create_stream": "create_stream"}


def races(trace) -> list[Race]:
    """The trace's races, ordered by the later op, then the earlier one (computed once per
    trace length and synchronisation log length)."""
    key = (len(trace.calls), len(trace._streams.entries))
    cached = getattr(trace, "_races", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    with paused_gc(promote=True):
        out = _races(trace)
    trace._races = (key, out)
    return out


def _races(trace) -> list[Race]:
    log = trace._streams
    if len({_stream(c) for c in trace.calls}) < 2 and not log.entries:
        return []   # one stream and no synchronisation: everything is in order
    from .report import _state
    built, namer = _state(trace)
    ops, infos, refs = built.ops, built.infos, built.refs
    clocks = clocks_of(trace)
    lifetime: dict[int, int] = {}    # view -> its generation (a view is of one generation)
    for k, op in enumerate(ops):
        for a in op.accesses:
            lifetime.setdefault(id(a.view), refs[k][a.slot].gen.id)
    out = []
    for r in find_stream_races(ops, clocks, lifetime=lambda v: lifetime[id(v)]):
        ka, kb = r.first, r.second
        sa = next(x.slot for x in ops[ka].accesses if x.view is r.first_view)
        sb = next(x.slot for x in ops[kb].accesses if x.view is r.second_view)
        a, b = infos[ka], infos[kb]
        ra, rb = refs[ka][sa], refs[kb][sb]
        older, newer = (ra.gen, rb.gen) if ra.gen.id < rb.gen.id else (rb.gen, ra.gen)
        slots = (a.slots[sa], b.slots[sb])
        race = Race([a, b], [a.stream, b.stream], r.kinds, [ra, rb],
                    older is not newer and newer.reuses(older),
                    [log.stacks.get(a.index, ()), log.stacks.get(b.index, ())],
                    _slots=slots, _exact=(a.exact.get(sa), b.exact.get(sb)))
        race.names = [namer.slot_name(a, slots[0]), namer.slot_name(b, slots[1])]
        out.append(race)
    return out
