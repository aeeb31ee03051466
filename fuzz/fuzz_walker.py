"""Fuzz the compiled dependency walk (``aliasflow.analysis._walker``).

Random programs over shared, partly overlapping, reinterpreted and huge virtual memory (views
with negative and zero strides, offsets near 2^62, storages above 2^64) are analysed by the
compiled walk and by the Python reference: the edges must be the same, in the same order, in
all three modes, with random ancestor windows and covers limits. Garbage goes to both entry
points at the boundary: only a result, None or a TypeError/ValueError may come back, never a
crash.
``same_views`` (does a graph's op list still have its views?) is compared with the Python
loops of ``OpViews.mismatch`` after random changes to a program, and fed garbage too.

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
from aliasflow.analysis import compiled, dependencies as deps, records, schedule
from aliasflow.analysis.lower import element_cells

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
    saved = deps.WINDOW, deps._MASK, deps.COVERS_LIMIT, records.COVERS_LIMIT
    if rng.random() < 0.3:
        w = rng.randint(1, 80)
        deps.WINDOW, deps._MASK = w, (1 << w) - 1
    if rng.random() < 0.3:  # writes past the limit: cover tests without enumerating cells
        deps.COVERS_LIMIT = records.COVERS_LIMIT = rng.randint(0, 12)
    try:
        got = keys(deps.ordering_edges(ops, retire=retire, prune=prune))
        want = keys(deps.reference_edges(ops, retire=retire, prune=prune))
    finally:
        deps.WINDOW, deps._MASK, deps.COVERS_LIMIT, records.COVERS_LIMIT = saved
    if got != want:
        raise AssertionError(f"compiled and reference edges differ: {ops}")


GARBAGE = [None, 0, 1, -1, 2 ** 62, 2 ** 63, -2 ** 70, 1.5, "x", b"", b"\x01" * 8, (), [],
           (1, 2), (True, 6, 4096, 4096, 1024), (True, 9, 1, 1, 1), (True, 1, 1, 0, 1), {},
           object(), print, af.TensorView, element_cells]


def check_garbage(rng: random.Random) -> None:
    w = compiled.walker
    args = [rng.choice(GARBAGE) for _ in range(rng.randint(0, 8))]
    fn = rng.choice([w.walk_ops, w.walk_table])
    try:
        fn(*args)
    except (TypeError, ValueError):
        pass
    # well-formed calls with hostile pieces
    ops = random_program(rng)
    junk = rng.choice(GARBAGE)
    place = rng.choice([element_cells, lambda ts: junk, lambda ts: (junk, junk),
                        lambda ts: (tuple(range(len(ts))), (junk,) * len(ts))])
    params = rng.choice([(True, 6, 4096, 4096, 1024), (False, 0, 0, 1, 0),
                         (True, 7, 1, 65536, 3)])
    if rng.random() < 0.3:
        broken = af.TransformOperation("broken")
        broken.input_views = rng.choice([junk, [junk], (ops[0].output_views or [junk])])
        ops.append(broken)
    try:
        w.walk_ops(tuple(ops), af.TensorView, place, solver.intersects, solver.covers, None,
                   params)
    except (TypeError, ValueError, AttributeError):
        pass
    n = rng.randint(0, 6)
    cols = [np.array([rng.choice([0, 1, -1, 2, 2 ** 62, -2 ** 63, 7]) for _ in range(n)],
                     np.int64).tobytes() for _ in range(7)]
    starts = np.array(sorted(rng.randint(0, 4) for _ in range(n + 1)), np.int64)
    dims = int(starts[-1]) if n + 1 else 0
    shape = np.array([rng.choice([0, 1, 3, -1, 2 ** 62]) for _ in range(dims)], np.int64)
    try:
        w.walk_table(rng.randint(0, 6), rng.randint(0, 3), tuple(cols) + (
            starts.tobytes(), shape.tobytes(), shape.tobytes()), solver.intersects,
            solver.covers, None, params)
    except (TypeError, ValueError):
        pass


def check_same_views(rng: random.Random) -> None:
    ops = random_program(rng)
    snap = schedule.OpViews.of(ops)
    starts = np.ascontiguousarray(snap.starts, np.int64)
    now = list(ops)
    if ops:
        k = rng.randrange(len(ops))
        op = ops[k]
        change = rng.randrange(6)
        if change == 0 and op.input_views:
            v = op.input_views[0]
            op.input_views = [af.TensorView(v.name, v.tensor, v.offset, v.shape, v.stride)]
        elif change == 1:
            op.output_views = list(op.output_views) + list(op.input_views[:1])
        elif change == 2:
            op.input_views = tuple(op.input_views)
        elif change == 3:
            now[k] = rng.choice(ops)
        elif change == 4:
            op.output_views = rng.choice([5, None, "ab", [None]])
    w = compiled.walker
    try:
        got = w.same_views(tuple(now), snap.ops, snap.views, starts)
    except (TypeError, AttributeError):
        got = "error"
    saved = schedule._same_views
    schedule._same_views = None
    try:
        want = snap.mismatch(now) is None
    except (TypeError, AttributeError):
        want = "error"
    finally:
        schedule._same_views = saved
    # the compiled check may refuse early (False) where the loops raise on a broken list
    assert got == want or (got is False and want == "error"), (got, want)
    junk = [rng.choice(GARBAGE) for _ in range(rng.randint(0, 5))]
    if len(junk) == 4 and rng.random() < 0.5:
        junk[0], junk[1] = tuple(now), snap.ops
    try:
        w.same_views(*junk)
    except (TypeError, ValueError, BufferError):
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
        check_same_views(rng)
        programs += 1
        garbage += 1
    print(f"seed {seed}: {programs} programs compared, {garbage} garbage rounds, no disagreement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
