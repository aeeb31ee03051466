"""What each graph op does to memory when it runs: which outputs *are* an input's memory
(TensorFlow forwards buffers), which variable a tensor lives in, and which inputs an op reads.
Shared by :mod:`.session` (running) and :mod:`.races` (analysis)."""
from __future__ import annotations

import numpy as np

from .graph import Graph, Operation, Tensor
from .shapes import _expand_index

_UPDATES = ("Assign", "AssignAdd", "AssignSub", "StridedSliceAssign")
_ALIASES = ("Identity", "VariableV2") + _UPDATES  # outputs that are their input's memory


def _identity_slice(op: Operation, shape) -> bool:
    """A ``StridedSlice`` taking every element in order (``v[:]``, ``v[None]``, ``u[0]`` of a
    size-1 dim): TensorFlow then forwards the input buffer instead of copying (measured on
    TensorFlow 2.21: ``v[0:8]`` of 8 elements aliases the variable, ``v[0:4]`` copies)."""
    if op.type != "StridedSlice" or shape is None or None in shape:
        return False
    k = 0
    for item in _expand_index(op.name, op._attrs["_index"], len(shape)):
        if item is None:
            continue
        d = shape[k]
        k += 1
        if isinstance(item, slice):
            if item.indices(d) != (0, d, 1) and d:
                return False
        elif d != 1:
            return False
    return True


def _trivial_sum(op: Operation, shape) -> bool:
    """A ``Sum`` over no axes or only size-1 axes: TensorFlow reshapes the input buffer instead
    of reducing (measured: ``reduce_sum(v, axis=[])`` aliases ``v``)."""
    if op.type != "Sum" or shape is None:
        return False
    rank = len(shape)
    axes = {int(a) % rank for a in np.ravel(op._attrs["_axis"])} if rank else set()
    return all(shape[a] == 1 for a in axes)


def _forwards(op: Operation) -> bool:
    """Whether ``op``'s output is its first input's memory (statically known shapes)."""
    if op.type in _ALIASES:
        return True
    dims = op.inputs[0].shape.dims if op.inputs else None
    return _identity_slice(op, dims) or _trivial_sum(op, dims)


def _variable_of(t: Tensor, fed: dict):
    """The ``VariableV2`` op whose memory tensor ``t`` is, or None (fresh or fed memory)."""
    while t not in fed:
        op = t.op
        if op.type == "VariableV2":
            return op
        if not _forwards(op):
            return None
        t = op.inputs[0]
    return None


def _needed_ops(graph: Graph, targets: list, fed: dict) -> list[Operation]:
    """The ops a run of ``targets`` executes, in creation (topological) order."""
    seen: dict[int, Operation] = {}
    todo = [t.op if isinstance(t, Tensor) else t for t in targets if t not in fed]
    while todo:
        op = todo.pop()
        if op._id in seen:
            continue
        seen[op._id] = op
        todo.extend(i.op for i in op.inputs if i not in fed)
        # an op whose outputs are all fed is replaced by the feeds (TensorFlow does the same):
        # control edges from it are satisfied without running it; fetched as a target it runs
        todo.extend(c for c in op.control_inputs
                    if not (c.outputs and all(t in fed for t in c.outputs)))
    return [seen[k] for k in sorted(seen)]



def _read_tensors(op: Operation) -> list[Tensor]:
    """Inputs whose memory ``op`` reads when it runs (not those it only forwards or writes)."""
    if op.type in ("Identity", "VariableV2", "NoOp", "Const", "Placeholder", "ZerosLike",
                   "Shape"):
        return []
    if op.type == "Fill":
        return op.inputs[1:]
    if op.type == "StridedSlice":
        return [] if _forwards(op) else op.inputs[:1]
    if op.type == "Sum":
        return [] if _forwards(op) else op.inputs[:1]
    if op.type in ("Assign", "StridedSliceAssign"):
        return op.inputs[-1:]
    return list(op.inputs)


