"""Op records of a trace: ``af.OpRecord`` s over views at real addresses, each carrying the
tracer's facts about it as ``info`` (:class:`~aliasflow.interop.findings.OpInfo`).

Memory model: every storage generation is one analysis-only byte tensor over its real address
range (``af.Tensor.on(af.Storage(address, nbytes), "uint8")``), and each tensor argument is a
view of its elements on it (offset and strides in bytes, the element dtype). Storages alias
by address, so two torch storages over one buffer, a reinterpreting ``.view(dtype)``, a new
storage at a freed storage's address, and a NumPy array over the same memory all meet,
exactly; the analyses count in the largest unit every view of a memory agrees on (elements
when one dtype is used, bytes when a reinterpreting view is).

:func:`build_ops` is the one place that knows how a record is made.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...core.record import _EMPTY, Access, OpRecord
from ...core.storage import Storage
from ...core.view import Tensor, TensorView
from ..findings.model import Frame, OpInfo, Slot
from ..findings.source import line_text, relative
from . import datadep
from .memory import Ref, no_gc, numpy_dtype, same_layout

_ITEMSIZE: dict = {}


def itemsize(dtype) -> int:
    got = _ITEMSIZE.get(dtype)
    if got is None:
        got = _ITEMSIZE[dtype] = dtype.itemsize
    return got


@dataclass
class Built:
    """``ops``: the records; ``infos``: one OpInfo per call; ``refs``: per call, the
    :class:`~.memory.Ref` of each slot; ``index``: record name -> call index."""
    ops: list
    infos: list
    refs: list
    index: dict


def _label(spec, pos: int, k: int) -> str:
    if pos < 0:
        return "result" if k < 0 else f"result[{k}]"
    name = spec.args[pos].name
    return name if k < 0 else f"{name}[{k}]"


class _Views:
    """Element views at real addresses: one byte tensor per storage generation (a virtual
    one for a tensor without memory), each tensor's elements a view of it."""

    def __init__(self):
        self.tensors: dict = {}
        self.cache: dict = {}
        self.virtual = 0

    def tensor(self, gen):
        t = self.tensors.get(gen.id)
        if t is None:
            storage = Storage(gen.address, gen.nbytes, name=gen.name)
            t = self.tensors[gen.id] = Tensor.on(storage, "uint8", name=gen.name)
        return t

    def ref(self, gen, ptr, shape, stride, dtype, bits=0, born=-1, parent=None) -> Ref:
        k = itemsize(dtype)
        shape = tuple(shape)
        bstride = tuple(s * k for s in stride)
        if gen is None or 0 in shape:
            reach = sum((n - 1) * s for n, s in zip(shape, bstride) if n) + k
            self.virtual += 1
            base = Tensor.virtual(f"no memory {self.virtual}", (max(reach, 1),), "uint8")
            view = TensorView._make(f"no memory {self.virtual}", base, 0, shape, bstride,
                                    numpy_dtype(dtype))
            return Ref(gen, view, dtype, bool(bits & 2), bool(bits & 1), parent, born)
        offset = ptr - gen.address
        npd = numpy_dtype(dtype)
        key = (gen.id, offset, shape, bstride, npd)
        view = self.cache.get(key)
        ref = Ref(gen, view, dtype, bool(bits & 2), bool(bits & 1), parent, born)
        if view is None:
            view = self.cache[key] = TensorView._make(ref.describe, self.tensor(gen), offset,
                                                      shape, bstride, npd)
            ref.view = view
        return ref

    def piece(self, ref: Ref, address: int, n: int):
        """The view of ``n`` consecutive elements of ``ref``'s dtype from ``address``."""
        return self.ref(ref.gen, address, (n,), (1,), ref.dtype, parent=ref).view


def _frames(trace):
    """``(user frame, context, raw where)`` per call: a call the autograd engine makes for a
    ``backward()`` line is placed at the forward call that made its autograd node, with the
    ``backward()`` line as context (a user-written ``backward`` method keeps its own line)."""
    cwd_frames: dict = {}

    def frame(where):
        if where is None:
            return None
        got = cwd_frames.get(where)
        if got is None:
            code, line = where
            got = cwd_frames[where] = Frame(relative(code.co_filename), line, code.co_name)
        return got
    creator: dict = {}
    last = trace.seq_at_start
    for call in trace.calls:
        if call.node is None:
            if last is not None and call.seq > last and call.seq not in creator:
                creator[call.seq] = call.index
            last = call.seq
    out = []
    engine: dict = {}   # where -> does the line start the backward pass (not user backward code)
    for call in trace.calls:
        own = frame(call.where)
        if call.node is not None and call.where is not None:
            starts = engine.get(call.where)
            if starts is None:
                code, line = call.where
                text = line_text(code.co_filename, line)
                starts = engine[call.where] = (not text or ".backward(" in text
                                               or "autograd.grad(" in text
                                               or "autograd.backward(" in text)
            fwd = creator.get(call.node + 1)
            if starts and fwd is not None and fwd < call.index:
                out.append((frame(trace.calls[fwd].where), own, trace.calls[fwd].where))
                continue
        out.append((own, None, call.where))
    return out


def build_ops(trace) -> Built:
    with no_gc():
        return _build(trace)


def _build(trace) -> Built:
    views = _Views()
    ops, infos, refs_all, index = [], [], [], {}
    frames = _frames(trace)
    texts: dict = {}
    for call, (where, context, raw_where) in zip(trace.calls, frames):
        spec = call.spec
        label = spec.name if spec is not None else str(call.func)
        name = f"{label}#{call.index}"
        index[name] = call.index
        slots, refs = [], []
        extra = call.extra or {}
        exact = extra.get("exact")
        for k, acc in enumerate(call.accesses):
            mode, pos, j, gen, ptr, shape, stride, dtype, born, bits = acc
            ref = views.ref(gen, ptr, shape, stride, dtype, bits, born)
            refs.append(ref)
            if exact is not None and exact[0] == k:
                mode = "RW" if exact[1] else "W"
            slots.append(Slot(_label(spec, pos, j), mode,
                              ref.view if gen is not None and ref.numel else None,
                              str(dtype).replace("torch.", ""),
                              gen.id if gen is not None else None,
                              gen.group if gen is not None else None, None,
                              born if born >= -1 else None,
                              gen is not None and gen.creator == call.index))
        accesses = []
        exact_map = {}
        if not call.error and not call.untracked:
            for k, s in enumerate(slots):
                if s.mode is None or s.view is None:
                    continue
                if exact is not None and exact[0] == k:
                    addresses = exact[2]
                    exact_map[k] = addresses
                    runs = datadep.runs(addresses, s.itemsize)
                    if len(runs) <= datadep.RUN_LIMIT and \
                            (s.start - refs[k].gen.address) % s.itemsize == 0:
                        for address, n in runs:
                            accesses.append(Access(k, s.mode, views.piece(refs[k], address, n)))
                        continue
                accesses.append(Access(k, s.mode, s.view))
        elif exact is not None:
            exact_map[exact[0]] = exact[2]
        text = texts.get(raw_where)
        if text is None and raw_where is not None:
            text = texts[raw_where] = line_text(raw_where[0].co_filename, raw_where[1])
        info = OpInfo(
            name, label, call.index, where, context, text or "", call.error, call.untracked,
            tuple(slots), _exempt(spec, call.accesses),
            extra.get("outcomes"), extra.get("duplicates"), exact_map,
            _uniform(spec, slots), call.stream or "default")
        infos.append(info)
        ops.append(OpRecord._trusted(name, label, tuple(accesses), _EMPTY, info=info))
        refs_all.append(refs)
    return Built(ops, infos, refs_all, index)


def _exempt(spec, accesses) -> frozenset:
    """(written, read) slot pairs of an elementwise op whose read argument is the written
    view itself (same memory, same elements in the same order, same dtype)."""
    if spec is None or not (spec.elementwise or spec.foreach) or len(accesses) < 2:
        return frozenset()
    out = set()
    for w, a in enumerate(accesses):
        if a[0] not in ("W", "RW") or a[3] is None:
            continue
        for r, b in enumerate(accesses):
            if r == w or b[0] != "R" or b[3] is not a[3]:
                continue
            if spec.foreach and a[2] != b[2]:
                continue
            if same_layout(a, b):
                out.add((w, r))
    return frozenset(out)


UNIFORM = frozenset({"fill_", "zero_", "fill"})


def _uniform(spec, slots) -> bool:
    """Does the op write one value to every element of its output (``fill_``, ``zero_``), or
    no value at all (``empty_strided`` leaves its memory as it was)?"""
    if spec is None:
        return False
    if spec.uninitialized:
        return True
    return spec.base in UNIFORM and \
        all(s.mode != "R" or all(n == 1 for n in s.shape) for s in slots)


build = build_ops
