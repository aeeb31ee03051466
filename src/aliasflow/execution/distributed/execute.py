"""Running one task on bytes; loading blocks from storages and writing them back.

A task gets the versions of the blocks it reads (uint8 arrays) and returns the op's result and
the new versions of the blocks it writes. Inside, the blocks are laid out at their places in a
local window of each memory, the op's views (descriptions of memory, see
:meth:`~aliasflow.TensorView.description`) are turned into views over the window with their
original dtype and byte strides (so a kernel sees exactly the memory layout it would see in
program order: a reduction sums in the same order, nothing is compacted), the record runs the
reference way (:func:`aliasflow.core.interpret.execute`), and the written blocks are cut out
of the window.

Bytes of the window no read block supplies are never read by the op (every byte a view touches
is in a touched block); ``poison`` fills the written-but-not-read blocks before the op runs, so
a test catches a block wrongly thought covered whole.
"""
from __future__ import annotations

import numpy as np

from ...core import interpret
from ...core.errors import ExecutionError
from ...core.record import Access, OpRecord
from ...core.storage import Storage
from ...core.view import Tensor, TensorView
from .plan import Plan, Task


class OpFailed(Exception):
    """Raised inside a task when its op fails; picklable, carries the op's place and name."""

    def __init__(self, index: int, op_name: str, message: str):
        super().__init__(index, op_name, message)
        self.index, self.op_name, self.message = index, op_name, message

    def __str__(self) -> str:
        return f"op {self.op_name!r} failed: {self.message}"


def payload(plan: Plan, task: Task, poison=None) -> tuple:
    """Everything a worker needs to run ``task``: small, no storage data."""
    used = set(task.memories)
    used.update(s for s, _, _ in task.reads + task.writes)
    meta = {s: (plan.storages[s].name, plan.storages[s].nbytes, plan.storages[s].base)
            for s in used}
    return (task, plan.block_bytes, meta, poison)


def run_task(load, *blocks):
    """Run one task: ``load`` from :func:`payload`, ``blocks`` in the order of ``task.reads``.

    Returns ``(op values, new block, ...)`` in the order of ``task.writes``.
    """
    task, B, meta, poison = load
    rec = task.record
    windows = {}
    spans = {}
    for s, b, _ in task.reads + task.writes:
        lo = b * B
        hi = min(lo + B, meta[s][1])
        old = spans.get(s)
        spans[s] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
    # Room for whole elements of the views' tensors around the blocks (a block boundary may
    # cut an element; the view never touches the bytes outside its blocks).
    pad = max((a.view.tensor.dtype.itemsize for a in rec.accesses), default=1)
    for s, (lo, hi) in spans.items():
        lo, hi = max(0, lo - pad), min(meta[s][1], hi + pad)
        windows[s] = (lo, _aligned_like(meta[s][2] + lo, hi - lo))
    if poison is not None:
        for s, b, _ in task.writes:
            base, buf = windows[s]
            buf[b * B - base:min((b + 1) * B, meta[s][1]) - base] = poison
    for (s, b, _), data in zip(task.reads, blocks):
        base, buf = windows[s]
        buf[b * B - base:b * B - base + len(data)] = data
    tensors = {}

    def local(view, s):
        """The view over the window: same dtype, shape and byte strides, and the same address
        alignment (mod 64) as in its storage, so kernels take the same code paths."""
        st = view.storage
        if 0 in view.shape:     # touches no block: a view of nothing, same name, shape, dtype
            nothing = np.empty(0, np.uint8)
            return TensorView(view.name, Tensor.on(Storage(
                nothing.__array_interface__["data"][0], 0, owner=nothing,
                name=st.name, readonly=st.readonly), "uint8"), 0, view.shape,
                view.byte_strides, view.dtype)
        base, buf = windows[s]
        tdtype = view.tensor.dtype
        unit = tdtype.itemsize
        origin = st.address - meta[s][2]  # where the tensor's element 0 is in the memory
        start = origin + max(0, -(-(base - origin) // unit)) * unit  # first element in
        key = (s, st.readonly, st.name, tdtype, start)
        t = tensors.get(key)
        if t is None:
            part = buf[start - base:]
            part = part[:part.nbytes // unit * unit]
            mem = Storage(part.__array_interface__["data"][0], part.nbytes, owner=part,
                          name=st.name, readonly=st.readonly)
            t = tensors[key] = Tensor.on(mem, tdtype, name=st.name)
        return TensorView(view.name, t, (origin + view.byte_offset - start) // unit, view.shape,
                          view.stride, view.dtype)

    try:
        values = interpret.execute(OpRecord(rec.name, rec.prim, [
            Access(a.slot, a.mode, local(a.view, s)) for a, s in zip(rec.accesses,
                                                                        task.memories)],
            rec.params, rec.n_values))
    except ExecutionError as exc:  # the op named itself (a kernel that raised)
        raise OpFailed(task.index, task.op_name, str(exc).split(" failed: ", 1)[-1]) from None
    except Exception as exc:
        raise OpFailed(task.index, task.op_name, f"{type(exc).__name__}: {exc}") from None
    out = [tuple(values)]
    for s, b, _ in task.writes:
        base, buf = windows[s]
        lo = b * B - base
        out.append(buf[lo:min((b + 1) * B, meta[s][1]) - base].copy())
    return tuple(out)


ALIGN = 64


def _aligned_like(address: int, nbytes: int) -> np.ndarray:
    """``nbytes`` fresh bytes starting at an address congruent to ``address`` mod 64."""
    raw = np.empty(nbytes + ALIGN, dtype=np.uint8)
    skip = (address - raw.__array_interface__["data"][0]) % ALIGN
    return raw[skip:skip + nbytes]


def _pieces(plan: Plan, s: int, b: int):
    """``(storage, storage slice, block slice)`` for each storage of memory ``s`` holding
    bytes of block ``b``."""
    lo, hi = plan.block_range(s, b)
    base = plan.storages[s].base
    for st in plan.memory[s]:
        a, z = max(lo, st.address - base), min(hi, st.end - base)
        if a < z:
            yield st, slice(a - (st.address - base), z - (st.address - base)), slice(a - lo,
                                                                                     z - lo)


def load_block(plan: Plan, s: int, b: int) -> np.ndarray:
    """Version 0 of block ``b`` of memory ``s``: a copy of its bytes (the storages of one
    memory cover every byte of it, since their ranges connect)."""
    lo, hi = plan.block_range(s, b)
    out = np.empty(hi - lo, dtype=np.uint8)
    for st, src, dst in _pieces(plan, s, b):
        out[dst] = st.bytes[src]
    return out


def write_back(plan: Plan, values: dict) -> None:
    """Copy block versions ``{(s, b, v): bytes}`` into the storages. Read-only storages are
    skipped: no op can have written a byte only they hold (a write through a read-only view
    fails), and bytes they share with a writable storage are written through that one."""
    for (s, b, _), data in values.items():
        for st, dst, src in _pieces(plan, s, b):
            if not st.readonly:
                st.bytes[dst] = data[src]
