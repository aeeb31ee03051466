"""Op records of a trace, as aliasflow ops over aliasflow storages.

Memory model (one adapter, :func:`_views_for`): every address range the trace saw is part of
one *region*, the union of the storage generations whose ranges meet; each region is one
analysis-only aliasflow tensor of bytes (``af.Tensor.virtual(..., "uint8")``), and each
access is a byte view on it (offset and strides in bytes, the element's bytes as the last
dim). So two torch storages over one buffer, a reinterpreting ``.view(dtype)``, and a new
storage at a freed storage's address all alias by address, exactly; footprints, overlap
counts and ``value_flow`` elements of these views are in bytes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...core.record import Access as OpAccess, OpRecord, frozen_params
from ...core.view import Tensor
from ...core.view import TensorView
from .memory import Ref, no_gc


@dataclass(frozen=True)
class Access:
    """One access of an op: the argument (``label``), ``mode`` "R" or "W", the tensor as the
    op saw it (``ref``), whether it is a may-write (``may``: a data-dependent write recorded
    as its whole view), and the aliasflow byte view (``view``; None for an empty tensor)."""
    label: str
    mode: str
    ref: Ref
    may: bool
    view: TensorView | None
    exact: object = None   # for a may-write: the start addresses it is known to write


class TraceOp:
    """One aten call. ``name`` is unique (``"aten.add_.Tensor#12"``: the aten overload, ``#``,
    and ``index``), since aliasflow knows ops by name; ``aten`` is the overload alone.

    ``index``: position among all aten calls of the trace, from 0. ``where``: the user's
    ``(file, line, function)`` that issued it (the first frame outside torch and aliasflow);
    ``line``: ``"file:line"``. ``failed``: PyTorch refused the call (``error`` says why);
    a failed op keeps its accesses in ``accesses`` but has no ``input_views`` or
    ``output_views``, since it touched no memory.
    """

    kind = "aten"

    def __init__(self, raw, trace):
        spec = raw.spec
        self.name = f"{spec.name}#{raw.index}"
        self.input_views: list = []
        self.output_views: list = []
        self._record = None
        self.aten = spec.name
        self.index = raw.index
        self.where = raw.where
        self.source = trace.source_line(raw.where)
        self.stream = raw.stream or "default"
        self.error = raw.error
        self.untracked = raw.untracked   # why its tensors could not be recorded, if so
        self.exact_writes = raw.exact
        self.repeats = raw.repeats
        self.raw = raw
        self.accesses: list[Access] = []

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def line(self) -> str:
        return f"{self.where[0]}:{self.where[1]}" if self.where else "?"

    @property
    def reads(self) -> list[Access]:
        return [a for a in self.accesses if a.mode == "R"]

    @property
    def writes(self) -> list[Access]:
        return [a for a in self.accesses if a.mode == "W"]

    def record(self) -> OpRecord:
        """The call as an op record (kind: the aten overload; not runnable by ``af.run``:
        ``trace.replay()`` runs a trace). A failed call touched no memory: no accesses."""
        if self._record is None:
            accesses = [OpAccess(k, "R", v) for k, v in enumerate(self.input_views)]
            n = len(accesses)
            accesses += [OpAccess(n + k, "W", v) for k, v in enumerate(self.output_views)]
            self._record = OpRecord._trusted(self.name, self.aten, tuple(accesses),
                                             frozen_params({}), 0, (), self)
        return self._record

    def __repr__(self) -> str:
        state = ", failed" if self.failed else ""
        return f"TraceOp({self.name!r}, {self.line}{state})"


def _regions(gens):
    """Merge the address ranges of all generations into regions: one byte tensor each."""
    spans = sorted(((g.address, g.end, g) for g in gens if g.nbytes > 0),
                   key=lambda s: (s[0], s[1], s[2].id))
    regions, current = [], None
    for start, end, g in spans:
        if current is None or start >= current[1]:
            current = [start, end, [g]]
            regions.append(current)
        else:
            current[1] = max(current[1], end)
            current[2].append(g)
    for k, (start, end, members) in enumerate(regions):
        tensor = Tensor.virtual(f"mem{k}@0x{start:x}", (end - start,), "uint8")
        for g in members:
            g.region, g.region_start = tensor, start


def _views_for(gens):
    """The adapter: a function turning a :class:`Ref` into its aliasflow byte view."""
    _regions(gens)
    cache: dict = {}

    def view(ref: Ref) -> TensorView | None:
        start, shape, stride = ref.byte_layout()
        if shape == (0,) or ref.gen.region is None:
            return None
        key = (ref.gen.id, ref.dtype, start, shape, stride)
        v = cache.get(key)
        if v is None:
            v = cache[key] = TensorView._named_later(ref.describe, ref.gen.region,
                                                     start - ref.gen.region_start, shape,
                                                     stride)
        return v
    return view


def build_ops(trace) -> list[TraceOp]:
    with no_gc():
        return _build_ops(trace)


def _build_ops(trace) -> list[TraceOp]:
    view = _views_for(trace.storages)
    ops = []
    for raw in trace.raw:
        op = TraceOp(raw, trace)
        for label, mode, ref, may in raw.accesses:
            op.accesses.append(Access(label, mode, ref, may, view(ref),
                                      raw.exact.get(label) if may else None))
        if not op.failed:
            op.input_views = [a.view for a in op.accesses if a.mode == "R" and a.view]
            op.output_views = [a.view for a in op.accesses if a.mode == "W" and a.view]
        ops.append(op)
    return ops
