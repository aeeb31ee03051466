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

import numpy as np

from ...core.gcpause import paused_gc
from ...core.record import _EMPTY, Access, OpRecord
from ...core.storage import Storage
from ...core.view import Tensor, TensorView
from ..findings.model import NO_EXACT, Frame, OpInfo, Slot
from ..findings.source import line_text, relative
from . import datadep
from .memory import Ref, numpy_dtype, same_layout

_ITEMSIZE: dict = {}
_U8 = np.dtype("uint8")
_DTYPE_NAMES: dict = {}
_LABELS: dict = {}


def itemsize(dtype) -> int:
    got = _ITEMSIZE.get(dtype)
    if got is None:
        got = _ITEMSIZE[dtype] = dtype.itemsize
    return got


class Built:
    """``infos``: one OpInfo per call; ``ops``: the records (made when first asked for:
    findings read only the infos); ``refs``: per call, the :class:`~.memory.Ref` of each
    slot (made when first asked for); ``index``: record name -> call index."""

    def __init__(self, infos, refs, index, calls, views):
        self.infos = infos
        self.refs = refs
        self.index = index
        self._calls = calls
        self._views = views
        self._ops = None

    @property
    def ops(self) -> list:
        if self._ops is None:
            with paused_gc(promote=True):
                self._ops = _records(self.infos, self._calls, self._views)
        return self._ops


def _records(infos, calls, views) -> list:
    """One op record per call: its slots' views as accesses (a data-dependent write as one
    piece per run of the elements it wrote); a call PyTorch refused, or the tracer could not
    record, touched no memory."""
    view_of = views.view
    ops = []
    for info, call in zip(infos, calls):
        accesses = []
        if info.error is None and info.untracked is None:
            exact = info.exact
            for k, s in enumerate(info.slots):
                if s.mode is None or s.view is None:
                    continue
                written = exact.get(k) if exact else None
                if written is not None:
                    runs = datadep.runs(written, s.itemsize)
                    gen, dtype = call[7][k][3], call[7][k][7]
                    if len(runs) <= datadep.RUN_LIMIT and \
                            (s.start - gen.address) % s.itemsize == 0:
                        for address, n in runs:
                            accesses.append(Access(k, s.mode,
                                                   view_of(gen, address, (n,), (1,), dtype)))
                        continue
                accesses.append(Access(k, s.mode, s.view))
        ops.append(OpRecord._trusted(info.name, info.label, tuple(accesses), _EMPTY,
                                     info=info))
    return ops


class _Refs:
    """``refs[i]``: the Refs of call ``i``'s slots, made on first use (replay, races and
    names need them; findings do not)."""

    def __init__(self, calls, views):
        self.calls = calls
        self.views = views
        self.made: dict = {}

    def __getitem__(self, i: int) -> list:
        got = self.made.get(i)
        if got is None:
            ref = self.views.ref
            got = self.made[i] = [ref(gen, ptr, shape, stride, dtype, bits, born)
                                  for mode, pos, j, gen, ptr, shape, stride, dtype, born, bits
                                  in self.calls[i][7]]
        return got

    def __len__(self) -> int:
        return len(self.calls)

    def __iter__(self):
        return (self[i] for i in range(len(self.calls)))


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
            # Tensor.on without its stand-in array (made only if the bytes were ever read:
            # a description of memory someone else owns never is)
            t = self.tensors[gen.id] = Tensor._over(gen.name, storage, _U8, (gen.nbytes,))
        return t

    def view(self, gen, ptr, shape, stride, dtype):
        """The view of a tensor of ``gen`` (not None, not empty), one object per layout."""
        key = (gen.id, ptr, shape, stride, dtype)
        view = self.cache.get(key)
        if view is None:
            k = itemsize(dtype)
            shape = tuple(shape)
            bstride = tuple(s * k for s in stride)
            ref = Ref(gen, None, dtype)
            view = self.cache[key] = TensorView._make(ref.describe, self.tensor(gen),
                                                      ptr - gen.address, shape, bstride,
                                                      numpy_dtype(dtype))
            ref.view = view
        return view

    def ref(self, gen, ptr, shape, stride, dtype, bits=0, born=-1, parent=None) -> Ref:
        if gen is None or 0 in shape:
            k = itemsize(dtype)
            shape = tuple(shape)
            bstride = tuple(s * k for s in stride)
            reach = sum((n - 1) * s for n, s in zip(shape, bstride) if n) + k
            self.virtual += 1
            base = Tensor.virtual(f"no memory {self.virtual}", (max(reach, 1),), "uint8")
            view = TensorView._make(f"no memory {self.virtual}", base, 0, shape, bstride,
                                    numpy_dtype(dtype))
        else:
            view = self.view(gen, ptr, shape, stride, dtype)
        return Ref(gen, view, dtype, bool(bits & 2), bool(bits & 1), parent, born)


def _frames(trace):
    """``(user frame, context, raw where, forward)`` per call: a call the autograd engine
    makes for a ``backward()`` line is placed at the forward call that made its autograd node,
    with the ``backward()`` line as context (a user-written ``backward`` method keeps its own
    line); ``forward`` is that forward call's index for any call the engine makes (None for
    the others, or when unknown)."""
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
        if call[6] is None:   # a forward call (not run by a backward node)
            seq = call[5]
            if last is not None and seq > last and seq not in creator:
                creator[seq] = call[0]
            last = seq
    out = []
    engine: dict = {}   # where -> does the line start the backward pass (not user backward code)
    for call in trace.calls:
        where, node = call[3], call[6]
        own = frame(where)
        if node is not None and where is not None:
            starts = engine.get(where)
            if starts is None:
                code, line = where
                text = line_text(code.co_filename, line)
                starts = engine[where] = (not text or ".backward(" in text
                                          or "autograd.grad(" in text
                                          or "autograd.backward(" in text)
        fwd = creator.get(node + 1) if node is not None else None
        if fwd is not None and fwd >= call[0]:
            fwd = None
        if node is not None and where is not None and starts and fwd is not None:
            out.append((frame(trace.calls[fwd][3]), own, trace.calls[fwd][3], fwd))
            continue
        out.append((own, None, where, fwd))
    return out


def build_ops(trace) -> Built:
    with paused_gc(promote=True):
        return _build(trace)


def _build(trace) -> Built:
    views = _Views()
    view_of = views.view
    infos, index = [], {}
    frames = _frames(trace)
    texts: dict = {}
    labels, dtype_names = _LABELS, _DTYPE_NAMES
    for call, (where, context, raw_where, forward) in zip(trace.calls, frames):
        # the fields of a Call by position (see tracer.Call): this loop runs once per call
        i, spec, func, accs, error, untracked = call[0], call[1], call[2], call[7], call[10], \
            call[11]
        extra = call[13] or {}
        label = spec.name if spec is not None else str(func)
        name = f"{label}#{i}"
        index[name] = i
        slots = []
        exact = extra.get("exact")
        for k, acc in enumerate(accs):
            mode, pos, j, gen, ptr, shape, stride, dtype, born, bits = acc
            if exact is not None and exact[0] == k:
                mode = "RW" if exact[1] else "W"
            key = (id(spec), pos, j)
            arg = labels.get(key)
            if arg is None:
                arg = labels[key] = _label(spec, pos, j)
            dt = dtype_names.get(dtype)
            if dt is None:
                dt = dtype_names[dtype] = str(dtype).replace("torch.", "")
            if gen is None:
                slots.append(Slot(arg, mode, None, dt, None, None, None,
                                  born if born >= -1 else None, False))
            else:
                slots.append(Slot(arg, mode, view_of(gen, ptr, shape, stride, dtype)
                                  if 0 not in shape else None, dt, gen.id, gen.group, None,
                                  born if born >= -1 else None, gen.creator == i))
        exact_map = NO_EXACT if exact is None else {exact[0]: exact[2]}
        text = texts.get(raw_where)
        if text is None and raw_where is not None:
            text = texts[raw_where] = line_text(raw_where[0].co_filename, raw_where[1])
        slots = tuple(slots)
        info = OpInfo(
            name, label, i, where, context, text or "", error, untracked, slots,
            _exempt(spec, accs), extra.get("outcomes"), extra.get("duplicates"), exact_map,
            _uniform(spec, slots), call[4] or "default", forward,
            spec is not None and spec.collective, call[6] is not None)
        infos.append(info)
    return Built(infos, _Refs(trace.calls, views), index, trace.calls, views)


def _exempt(spec, accesses) -> frozenset:
    """(written, read) slot pairs of an op elementwise in that pair (every pair of a pointwise
    op; ``self`` of ``addmm``'s ``out=``) whose read argument is the written view itself
    (same memory, same elements in the same order, same dtype)."""
    if spec is None or len(accesses) < 2 or \
            not (spec.elementwise or spec.foreach or spec.elementwise_args):
        return frozenset()
    every = spec.elementwise or spec.foreach
    out = set()
    for w, a in enumerate(accesses):
        if a[0] not in ("W", "RW") or a[3] is None:
            continue
        for r, b in enumerate(accesses):
            if r == w or b[0] != "R" or b[3] is not a[3]:
                continue
            if not every and spec.args[b[1]].name not in spec.elementwise_args:
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
