"""Running one task on bytes, and the whole plan in this process.

A task gets the versions of the blocks it reads (uint8 arrays) and returns the op's result and
the new versions of the blocks it writes. Inside, the blocks are laid out at their places in a
local window of each storage, the op's views are rebuilt over the window with their original
strides (so a kernel sees exactly the memory layout it would see in program order: a reduction
sums in the same order, nothing is compacted), the op runs through its own ``execute``, and the
written blocks are cut out of the window.

Bytes of the window no read block supplies are never read by the op (every byte a view touches
is in a touched block); ``poison`` fills the written-but-not-read blocks before the op runs, so
a test catches a block wrongly thought covered whole.
"""
from __future__ import annotations

import copy

import numpy as np

from ...core.tensor import Tensor
from ...core.view import TensorView
from .plan import Plan, Task


class OpFailed(Exception):
    """Raised inside a task when its op fails; picklable, carries the op's place and name."""

    def __init__(self, index: int, op_name: str, message: str):
        super().__init__(index, op_name, message)
        self.index, self.op_name, self.message = index, op_name, message

    def __str__(self) -> str:
        return f"op {self.op_name!r} failed: {self.message}"


def op_shell(op):
    """The op without its views (which hold the storages): what a task ships to a worker."""
    shell = copy.copy(op)
    shell.input_views, shell.output_views, shell.result = [], [], None
    return shell


def payload(plan: Plan, task: Task, poison=None) -> tuple:
    """Everything a worker needs to run ``task``: small, no storage data."""
    used = {sp.storage for sp in task.inputs + task.outputs}
    used.update(s for s, _, _ in task.reads + task.writes)
    meta = {s: (plan.storages[s].name, plan.storages[s].nbytes, plan.storages[s].itemsize)
            for s in used}
    return (op_shell(plan.ops[task.index]), task, plan.block_bytes, meta, poison)


def run_task(load, *blocks):
    """Run one task: ``load`` from :func:`payload`, ``blocks`` in the order of ``task.reads``.

    Returns ``(op result, new block, ...)`` in the order of ``task.writes``.
    """
    shell, task, B, meta, poison = load
    windows = {}
    spans = {}
    for s, b, _ in task.reads + task.writes:
        lo = b * B
        hi = min(lo + B, meta[s][1])
        old = spans.get(s)
        spans[s] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
    for s, (lo, hi) in spans.items():
        isz = meta[s][2]                    # align the window to the storage's elements
        lo, hi = lo // isz * isz, -(-hi // isz) * isz
        windows[s] = (lo, np.empty(hi - lo, dtype=np.uint8))
    if poison is not None:
        for s, b, _ in task.writes:
            base, buf = windows[s]
            buf[b * B - base:min((b + 1) * B, meta[s][1]) - base] = poison
    for (s, b, _), data in zip(task.reads, blocks):
        base, buf = windows[s]
        buf[b * B - base:b * B - base + len(data)] = data
    tensors = {}

    def local(sp):
        base, buf = windows[sp.storage]
        t = tensors.get(sp.storage)
        dtype = np.dtype(sp.dtype)
        if t is None:
            name, _, isz = meta[sp.storage]
            t = tensors[sp.storage] = Tensor.from_numpy(name, buf.view(dtype))
        isz = dtype.itemsize
        return TensorView(sp.name, t, (sp.offset - base) // isz, sp.shape,
                          tuple(st // isz for st in sp.stride))

    op = copy.copy(shell)
    op.input_views = [local(sp) for sp in task.inputs]
    op.output_views = [local(sp) for sp in task.outputs]
    try:
        op.execute()
    except Exception as exc:
        raise OpFailed(task.index, task.op_name, f"{type(exc).__name__}: {exc}") from None
    out = [op.result]
    for s, b, _ in task.writes:
        base, buf = windows[s]
        lo = b * B - base
        out.append(buf[lo:min((b + 1) * B, meta[s][1]) - base].copy())
    return tuple(out)


def load_block(storage_bytes: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return np.array(storage_bytes[lo:hi], dtype=np.uint8, copy=True)


def storage_bytes(tensor) -> np.ndarray:
    """The storage's bytes as a flat writable uint8 array over the same memory."""
    return tensor.data.reshape(-1).view(np.uint8)


def write_back(plan: Plan, values: dict) -> None:
    """Copy block versions ``{(s, b, v): bytes}`` into the storages."""
    for (s, b, _), data in values.items():
        lo, hi = plan.block_range(s, b)
        storage_bytes(plan.tensors[s])[lo:hi] = data


def set_results(plan: Plan, results: dict) -> None:
    """Give each op its result as :meth:`Operation.execute` would (None for ops with outputs)."""
    for t in plan.tasks:
        plan.ops[t.index].result = results.get(t.index)
