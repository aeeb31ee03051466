"""The trace's notes as aliasflow op records (``af.OpRecord``), exact views by address.

Memory model (the one of :func:`aliasflow.from_numpy` and of the PyTorch tracer): each
allocation the trace met (a base-most ndarray, one lifetime) is an analysis-only
:class:`~aliasflow.Storage` at its real address range, seen as bytes; each access is a byte
view on it: the element grid in byte strides, the element's bytes a last dimension. So
reinterpreted dtypes, unaligned and byte-swapped views, and two arrays over one buffer alias
exactly, and a NumPy trace and a PyTorch trace of one program speak of the same addresses.

A scattered write (fancy or mask indices, ``put``, ``fill_diagonal``) is recorded as ``"RW"``
of the whole array it may write (the elements it leaves alone keep their values: read and
written back), its exact element addresses in the record's ``info``.

Each record's ``info`` is the shared findings package's
:class:`~aliasflow.interop.findings.OpInfo` (the one per-op info type of both tracers): the
op's name, what it is (``label``: the NumPy operation), its index, the user's line
(``where``, ``source``), NumPy's ``error`` if it refused the call, why it was not recorded
(``untracked``) and, per slot of a scattered write, the ``exact`` start addresses written.
Its ``slots`` stay empty: a NumPy record's views are its accesses.

Everything that turns a note into a record goes through :func:`make_record`, the one place
that knows the record type's constructor.
"""
from __future__ import annotations

import numpy as np

from ...core.gcpause import paused_gc
from ...core.record import Access, OpRecord
from ...core.storage import Storage
from ...core.view import Tensor, TensorView
from ..findings.model import Frame, OpInfo
from ..findings.source import relative
from .memory import layout_extent
from .runtime import SITES


def make_record(name, prim, accesses, info) -> OpRecord:
    """The one constructor call: ``OpRecord`` with ``info`` where the record type has it
    (the trace keeps the info by name otherwise)."""
    try:
        return OpRecord(name, prim, tuple(accesses), {}, 0, info=info)
    except TypeError:
        return OpRecord(name, prim, tuple(accesses), {}, 0)


class Memory:
    """Analysis-only storages, one per allocation the trace met, spanning every byte the
    trace saw of it (an ``as_strided`` view may reach past its base's own extent)."""

    def __init__(self, recorder, notes=None):
        spans = list(recorder.spans)
        for note in (recorder.ops if notes is None else notes):
            for access in note[2]:
                lay = access[2]
                lo, hi = layout_extent(lay)
                g = lay[4]
                if hi > lo:
                    a, b = spans[g]
                    spans[g] = (min(a, lo), max(b, hi))
        self.tensors = {}
        for g, (lo, hi) in enumerate(spans):
            if hi > lo:
                storage = Storage(lo, hi - lo, name=f"np{g}@0x{lo:x}")
                self.tensors[g] = (Tensor.on(storage, "uint8", (hi - lo,), storage.name), lo)
        self._cache = {}

    def view(self, lay, name_of) -> TensorView | None:
        """The byte view of layout ``lay`` (None for an empty one)."""
        address, shape, strides, dtype, g = lay
        if 0 in shape:
            return None
        key = (address, shape, strides, dtype.itemsize, g)
        v = self._cache.get(key)
        if v is None:
            tensor, lo = self.tensors[g]
            v = self._cache[key] = TensorView._named_later(
                name_of, tensor, address - lo, tuple(shape) + (dtype.itemsize,),
                tuple(strides) + (1,))
        return v


    def element_view(self, lay, name: str) -> TensorView | None:
        """The view of layout ``lay`` in its own dtype (offset and strides in bytes, as
        the PyTorch tracer's slots are), for a finding's footprint grid; None when it is
        empty or its elements do not lie on its storage's grid of that dtype (an
        unaligned or reinterpreted layout)."""
        address, shape, strides, dtype, g = lay
        k = dtype.itemsize
        if 0 in shape or k == 0 or g not in self.tensors:
            return None
        tensor, lo = self.tensors[g]
        if (address - lo) % k or any(s % k for s in strides):
            return None
        return TensorView._make(name, tensor, address - lo, tuple(shape), tuple(strides),
                                dtype)


def op_name(index, note) -> str:
    return f"{note[1]}#{index}"


def build(recorder, names, indices=None) -> list:
    """Every note as a record, in program order (or those at ``indices``). ``names(index,
    label) -> text`` names an access as the user wrote it."""
    with paused_gc(promote=True):   # many small objects, none of them garbage
        return _build(recorder, names, indices)


def _build(recorder, names, indices):
    if indices is None:
        pairs = list(enumerate(recorder.ops))
        memory = Memory(recorder)
    else:
        pairs = [(i, recorder.note(i)) for i in indices]
        memory = Memory(recorder, [n for _, n in pairs])
    out = []
    frames: dict = {}
    for index, note in pairs:
        site = SITES[note[0]]
        accesses, exact = [], []
        for slot, (label, mode, lay, at, _created) in enumerate(note[2]):
            view = memory.view(lay, _namer(names, index, label, lay))
            if view is None:
                continue
            if at is not None:
                mode = "RW"
                exact.append((slot, at))
            accesses.append(Access(slot, mode, view))
        error = recorder.errors.get(index)
        if error is not None:
            accesses = []   # NumPy refused it: it touched nothing
        where = frames.get(note[0])
        if where is None:
            where = frames[note[0]] = Frame(relative(site.path), site.line)
        name = op_name(index, note)
        info = OpInfo(name, note[1], index, where, source=site.text, error=error,
                      untracked=recorder.untracked_ops.get(index), exact=dict(exact))
        out.append(make_record(name, "numpy." + note[1], accesses, info))
    return out


def _namer(names, index, label, lay):
    def name():
        text = names(index, label)
        dt = np.dtype(lay[3]).str
        return f"{text} [{dt} {tuple(lay[1])} strides {tuple(lay[2])} at 0x{lay[0]:x}]"
    return name
