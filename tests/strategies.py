"""Hypothesis strategies and brute-force oracles shared by the tests.

The oracles here are deliberately naive (Python sets over every index) and share no code
with aliasflow's overlap engine or analysis.
"""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st

import aliasflow as af


def brute_footprint(offset, shape, stride) -> set[int]:
    return {offset + sum(s * i for s, i in zip(stride, idx))
            for idx in itertools.product(*(range(n) for n in shape))}


def view_footprint(view) -> set[int]:
    return brute_footprint(view.offset, view.shape, view.stride)


@st.composite
def strided(draw, storage: int, max_dims: int = 3, max_size: int = 4, max_stride: int = 6,
            shape=None):
    """``(offset, shape, stride)`` of a valid view on a storage of ``storage`` elements."""
    if shape is None:
        ndim = draw(st.integers(0, max_dims))
        shape = tuple(draw(st.integers(0, max_size)) for _ in range(ndim))
    stride = tuple(draw(st.integers(-max_stride, max_stride)) for _ in shape)
    if 0 in shape:
        return draw(st.integers(0, storage)), shape, stride
    low = sum(s * (n - 1) for s, n in zip(stride, shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(stride, shape) if s > 0)
    if high - low >= storage:  # does not fit: shrink to a contiguous row-major window
        stride = af.row_major_strides(shape)
        low, high = 0, sum(s * (n - 1) for s, n in zip(stride, shape))
        if high >= storage:
            shape = tuple(1 for _ in shape)
            high = 0
    offset = draw(st.integers(-low, storage - 1 - high))
    return offset, shape, stride


@st.composite
def programs(draw, max_ops: int = 8, executable: bool = False, max_tensors: int = 2):
    """A random program over small tensors; ``executable`` makes shapes and writes legal."""
    n_tensors = draw(st.integers(1, max_tensors))
    tensors = []
    for k in range(n_tensors):
        size = draw(st.integers(12 if executable else 1, 24))
        data = np.arange(size, dtype=np.float64) * (k + 1) + 1
        tensors.append(af.Tensor(f"T{k}", (size,), "float64", data=data))
    counter = itertools.count()

    def view(shape=None, writable=False):
        for _ in range(20):
            t = draw(st.sampled_from(tensors))
            off, shp, strd = draw(strided(t.get_storage_size(), shape=shape))
            v = af.TensorView(f"v{next(counter)}", t, off, shp, strd)
            if not writable or len(view_footprint(v)) == v.size:
                return v
        return af.TensorView(f"v{next(counter)}", t, 0, shape)  # contiguous: always fits

    ops = []
    for j in range(draw(st.integers(1, max_ops))):
        kind = draw(st.sampled_from(["fill", "transform", "binary", "reduce", "reader"]))
        name = f"op{j}"
        if not executable:
            op = {"fill": lambda: af.FillOperation(name, float(j)),
                  "transform": lambda: af.TransformOperation(name),
                  "binary": lambda: af.BinaryOperation(name),
                  "reduce": lambda: af.ReduceOperation(name),
                  "reader": lambda: af.TransformOperation(name)}[kind]()
            op.set_inputs(*[view() for _ in range(draw(st.integers(0, 2)))])
            op.set_outputs(*[view() for _ in range(draw(st.integers(0, 2)))])
            ops.append(op)
            continue
        ndim = draw(st.integers(1, 2))
        shape = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
        n_out = draw(st.integers(0 if kind == "reader" else 1, 2))
        if kind == "fill":
            op = af.FillOperation(name, float(j + 1)).set_outputs(
                *[view(shape) for _ in range(n_out)])
        elif kind == "binary":
            fn = draw(st.sampled_from(["add", "subtract", "multiply", "maximum"]))
            op = af.BinaryOperation(name, fn).set_inputs(view(shape), view(shape))
            op.set_outputs(*[view(shape, writable=True) for _ in range(n_out)])
        elif kind == "reduce":
            axis = draw(st.integers(-ndim, ndim - 1))
            out_shape = shape[:axis % ndim] + shape[axis % ndim + 1:]
            op = af.ReduceOperation(name, axis, draw(st.sampled_from(["sum", "max"])))
            op.set_inputs(view(shape))
            op.set_outputs(*[view(out_shape, writable=True) for _ in range(n_out)])
        else:
            fn = draw(st.sampled_from(["copy", "negative", "square", "abs"]))
            op = af.TransformOperation(name, fn).set_inputs(view(shape))
            op.set_outputs(*[view(shape, writable=True) for _ in range(n_out)])
        ops.append(op)
    return ops


def brute_conflicts(ops) -> set[tuple]:
    """Every ``(src, dst, kind, src_view, dst_view)`` conflict, by footprint sets."""
    out = set()
    acc = [[("R", v) for v in op.input_views] + [("W", v) for v in op.output_views]
           for op in ops]
    kinds = {("W", "R"): "RAW", ("R", "W"): "WAR", ("W", "W"): "WAW"}
    for j in range(len(ops)):
        for i in range(j):
            for mi, vi in acc[i]:
                for mj, vj in acc[j]:
                    if (mi, mj) in kinds and vi.tensor is vj.tensor \
                            and view_footprint(vi) & view_footprint(vj):
                        out.add((ops[i].name, ops[j].name, kinds[mi, mj], vi.name, vj.name))
    return out


def reachable(names, edges) -> dict[str, set[str]]:
    """Transitive closure: for each op, the ops it can reach."""
    succ = {n: set() for n in names}
    for a, b in edges:
        succ[a].add(b)
    reach = {}
    for n in reversed(names):  # edges go forward in program order
        r = set()
        for m in succ[n]:
            r |= {m} | reach[m]
        reach[n] = r
    return reach
