"""Fuzz the compiled dependency walk (``aliasflow.analysis._walker``).

Random programs over shared, partly overlapping, reinterpreted and huge virtual memory (views
with negative and zero strides, offsets near 2^62, storages above 2^64) are analysed by the
compiled walk and by the Python reference: the edges must be the same, in the same order, in
all three modes, with random ancestor windows and covers limits. Garbage goes to the entry
point, ``walk_table`` (integer arrays only): garbage arguments, and well-formed tables with
hostile integers (out-of-range entries, modes, groups, dims, strides and extents past 2^62).
Only a result or a TypeError/ValueError may come back, never a crash.

    python fuzz/fuzz_walker.py --seconds 300

Under AddressSanitizer and UBSan, see README.md (same preload as fuzz_native.py).
"""
from __future__ import annotations

import argparse
import random
import sys
import time

import numpy as np

import aliasflow as af
from aliasflow import solver
from aliasflow.analysis import compiled, dependencies as deps, live
from aliasflow.analysis.lower import lower

MODES = [(True, ("WAR", "WAW")), (True, ("RAW", "WAR", "WAW")), (False, ())]


def random_view(rng: random.Random, t: af.Tensor, name: str) -> af.TensorView:
    size = t.get_storage_size()
    for _ in range(20):
        ndim = rng.randint(0, 4)
        shape = tuple(rng.choice([0, 1, 1, 2, 3, 4, 5]) for _ in range(ndim))
        stride = tuple(rng.choice([0, 1, -1, 2, -3, 4, 7, rng.randint(-40, 40)])
                       for _ in range(ndim))
        low = sum(s * (n - 1) for n, s in zip(shape, stride) if s < 0 and n)
        high = sum(s * (n - 1) for n, s in zip(shape, stride) if s > 0 and n)
        span = high - low
        if span >= size:
            continue
        offset = -low + rng.randint(0, size - 1 - span)
        if rng.random() < 0.1 and size > 2 ** 40:  # far out in a huge virtual tensor
            offset = -low + size - 1 - span
        dtype = None
        if t.dtype.itemsize >= 2 and rng.random() < 0.15:
            dtype = rng.choice(["uint8", "int16"])
            if np.dtype(dtype).itemsize > t.dtype.itemsize:
                dtype = None
        try:
            return af.TensorView(name, t, offset, shape, stride, dtype=dtype)
        except af.AliasflowError:
            continue
    return af.TensorView(name, t, 0, (1,))


def random_program(rng: random.Random) -> list:
    base = af.Storage.allocate(rng.choice([64, 96, 256]))
    n = base.nbytes
    # one dtype lets the walker lower the program itself (mixed: the table path)
    s_type, d_type = rng.choice([("int16", "float64"), ("float32", "float32")])
    tensors = [af.Tensor.on(base.slice(0, n), "float32", name="F"),
               af.Tensor.on(base.slice(rng.choice([0, 8, 16]), n // 2), s_type, name="S"),
               af.Tensor.on(base.slice(rng.choice([0, 4, 32]), 32), d_type, name="D"),
               af.Tensor("X", (rng.randint(1, 30),), "float32")]
    if rng.random() < 0.3:
        tensors.append(af.Tensor.virtual("V", (2 ** rng.randint(20, 58),), "float64"))
    if rng.random() < 0.2:
        far = af.Storage.reserve(2 ** 30)
        tensors.append(af.Tensor.on(far, "float32", name="R"))
    pool = []
    ops = []
    for j in range(rng.randint(1, 60)):
        op = af.TransformOperation(f"op{j}")
        for views in (op.input_views, op.output_views):
            for _ in range(rng.randint(0, 3)):
                if pool and rng.random() < 0.4:
                    views.append(rng.choice(pool))
                else:
                    v = random_view(rng, rng.choice(tensors), f"v{len(pool)}")
                    pool.append(v)
                    views.append(v)
        ops.append(op)
    return ops


def keys(found):
    return [(d.src, d.dst, d.kind, d.implicit, id(d.src_access), id(d.dst_access))
            for d in found]


def check_program(rng: random.Random) -> None:
    ops = random_program(rng)
    retire, prune = rng.choice(MODES)
    saved = deps.WINDOW, deps._MASK, deps.COVERS_LIMIT, live.COVERS_LIMIT
    if rng.random() < 0.3:
        w = rng.randint(1, 80)
        deps.WINDOW, deps._MASK = w, (1 << w) - 1
    if rng.random() < 0.3:  # writes past the limit: cover tests without enumerating cells
        deps.COVERS_LIMIT = live.COVERS_LIMIT = rng.randint(0, 12)
    try:
        got = keys(deps.ordering_edges(ops, retire=retire, prune=prune))
        want = keys(deps.reference_edges(ops, retire=retire, prune=prune))
    finally:
        deps.WINDOW, deps._MASK, deps.COVERS_LIMIT, live.COVERS_LIMIT = saved
    if got != want:
        raise AssertionError(f"compiled and reference edges differ: {ops}")


GARBAGE = [None, 0, 1, -1, 2 ** 62, 2 ** 63, -2 ** 70, 1.5, "x", b"", b"\x01" * 8, (), [],
           (1, 2), (True, 6, 4096, 4096, 1024), (True, 9, 1, 1, 1), (True, 1, 1, 0, 1), {},
           object(), print, af.TensorView, np.zeros(3, np.int64), np.zeros(2, np.int32),
           np.zeros((2, 2), np.int64)]
HOSTILE = [0, 1, -1, 2, 7, 2 ** 62, 2 ** 62 + 1, -2 ** 62, -2 ** 63, 2 ** 63 - 1]
PARAMS = [(True, 6, 4096, 4096, 1024), (False, 0, 0, 1, 0), (True, 7, 1, 65536, 3)]


def table_columns(ops) -> list:
    t = lower([op.record() for op in ops])
    return [t.n_ops, len(t.units), t.op_starts, t.modes.astype(np.int64), t.entries, t.groups,
            t.offsets, t.dims_start, t.shape, t.stride]


def check_garbage(rng: random.Random) -> None:
    w = compiled.walker
    args = [rng.choice(GARBAGE) for _ in range(rng.randint(0, 15))]
    try:
        w.walk_table(*args)
    except (TypeError, ValueError):
        pass
    # a real program's table with some integers made hostile
    cols = table_columns(random_program(rng))
    if any(c.dtype != np.int64 for c in cols[2:]):
        return  # cells past 64 bits: the reference's
    for _ in range(rng.randint(0, 3)):
        k = rng.randrange(len(cols))
        if k < 2:
            cols[k] = rng.choice(HOSTILE + [cols[k] + 1])
        elif len(cols[k]):
            cols[k] = cols[k].copy()
            cols[k][rng.randrange(len(cols[k]))] = rng.choice(HOSTILE)
        elif rng.random() < 0.5:
            cols[k] = np.array([rng.choice(HOSTILE)], np.int64)
    try:
        w.walk_table(*cols, solver.intersects, solver.covers, None, rng.choice(PARAMS))
    except (TypeError, ValueError):
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    if compiled.walker is None:
        print("compiled walker not built (or AF_PURE=1)", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(2 ** 32)
    rng = random.Random(seed)
    end = time.monotonic() + args.seconds
    programs = garbage = 0
    while time.monotonic() < end:
        check_program(rng)
        check_garbage(rng)
        programs += 1
        garbage += 1
    print(f"seed {seed}: {programs} programs compared, {garbage} garbage rounds, no disagreement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
