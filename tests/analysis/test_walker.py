"""The compiled dependency walk against the Python reference: the same edges, in the same
order, on random programs over shared, partly overlapping and reinterpreted memory; and its
boundary refusing bad arguments without crashing."""
import contextlib
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.analysis import compiled, dependencies as deps, live

from strategies import reachable, strided

pytestmark = pytest.mark.skipif(compiled.walker is None, reason="compiled walker not loaded")


@st.composite
def shared_programs(draw, max_ops=25, reinterpret=False):
    """Ops over tensors of several dtypes laid on one buffer (and one separate tensor), with
    views reused across ops (explicit edges), read and written by one op, and, with
    ``reinterpret``, views whose dtype is not their tensor's."""
    base = af.Storage.allocate(96)
    # one dtype throughout lets the compiled walk lower the program itself; mixed dtypes
    # take the table path (both derive column boxes from the views' strides, index.hpp)
    s_type, d_type = draw(st.sampled_from([("int16", "float64"), ("float32", "float32")]))
    tensors = [af.Tensor.on(base.slice(0, 96), "float32", name="F"),
               af.Tensor.on(base.slice(draw(st.sampled_from([0, 8, 16, 40])), 48), s_type,
                            name="S"),
               af.Tensor.on(base.slice(draw(st.sampled_from([4, 32, 64])), 32), d_type,
                            name="D"),
               af.Tensor("X", (12,), "float32")]
    counter = itertools.count()
    pool = []

    def view():
        if pool and draw(st.booleans()):
            return draw(st.sampled_from(pool))
        t = draw(st.sampled_from(tensors))
        off, shape, stride = draw(strided(t.get_storage_size(), max_dims=3, max_size=4,
                                          max_stride=7))
        dtype = None
        if reinterpret and t.dtype.itemsize > 1 and draw(st.integers(0, 4)) == 0:
            dtype = "uint8" if t.dtype.itemsize == 2 else draw(st.sampled_from(["int16", "uint8"]))
        v = af.TensorView(f"v{next(counter)}", t, off, shape, stride, dtype=dtype)
        pool.append(v)
        return v

    ops = []
    for j in range(draw(st.integers(1, max_ops))):
        op = af.TransformOperation(f"op{j}")
        ins = [view() for _ in range(draw(st.integers(0, 3)))]
        outs = [view() for _ in range(draw(st.integers(0, 2)))]
        if ins and draw(st.integers(0, 3)) == 0:
            outs.append(ins[0])  # read-modify-write
        op.input_views.extend(ins)  # views as drawn: no shape checks, repeats allowed
        op.output_views.extend(outs)
        ops.append(op)
    return ops


def keys(found):
    return [(d.src, d.dst, d.kind, d.implicit, id(d.src_access), id(d.dst_access))
            for d in found]


MODES = [(True, ("WAR", "WAW")), (True, ("RAW", "WAR", "WAW")), (False, ())]


@contextlib.contextmanager
def covers_limit(limit):
    """Both walks judge writes of more than ``limit`` cells by cover tests, not cells."""
    saved = live.COVERS_LIMIT, deps.COVERS_LIMIT
    live.COVERS_LIMIT = deps.COVERS_LIMIT = limit
    try:
        yield
    finally:
        live.COVERS_LIMIT, deps.COVERS_LIMIT = saved


def both(ops, retire, prune):
    got = deps.ordering_edges(ops, retire=retire, prune=prune)
    want = deps.reference_edges(ops, retire=retire, prune=prune)
    return keys(got), keys(want)


@settings(max_examples=400, deadline=None)
@given(shared_programs(), st.sampled_from(MODES))
def test_same_edges_as_the_reference(ops, mode):
    got, want = both(ops, *mode)
    assert got == want


@settings(max_examples=300, deadline=None)
@given(shared_programs(reinterpret=True), st.sampled_from(MODES))
def test_same_edges_with_reinterpreting_views(ops, mode):
    got, want = both(ops, *mode)
    assert got == want


@settings(max_examples=300, deadline=None)
@given(shared_programs(max_ops=30), st.integers(0, 12), st.sampled_from(MODES))
def test_same_edges_with_any_covers_limit(ops, limit, mode):
    """Writes past the limit (cells neither enumerated nor subtracted): the compiled walk's
    own cover tests and its calls to ``solver.covers`` against the reference's."""
    with covers_limit(limit):
        got, want = both(ops, *mode)
    assert got == want


@settings(max_examples=150, deadline=None)
@given(shared_programs(max_ops=40), st.integers(1, 70))
def test_same_edges_with_any_ancestor_window(ops, window):
    saved = deps.WINDOW, deps._MASK
    deps.WINDOW, deps._MASK = window, (1 << window) - 1
    try:
        got, want = both(ops, True, ("RAW", "WAR", "WAW"))
    finally:
        deps.WINDOW, deps._MASK = saved
    assert got == want


@settings(max_examples=300, deadline=None)
@given(shared_programs(max_ops=12, reinterpret=True))
def test_compiled_edges_are_sound_and_closed(ops):
    """Against brute-force byte footprints, not the reference."""
    graph = af.analyze(ops)
    names = [op.name for op in ops]
    truth = byte_conflicts(ops)
    assert {(d.src, d.dst, d.kind) for d in graph.dependencies} <= {t[:3] for t in truth}
    reach = reachable(names, graph.edges)
    assert all(dst in reach[src] for src, dst, _ in truth)
    full = af.analyze(ops, complete=True)
    assert {(d.src, d.dst, d.kind) for d in full.dependencies} == truth


def byte_footprint(v):
    out = set()
    item = v.dtype.itemsize
    for idx in np.ndindex(*v.shape):
        e = v.offset + sum(i * s for i, s in zip(idx, v.stride))
        start = v.tensor.storage.address + e * v.tensor.dtype.itemsize
        out.update(range(start, start + item))
    return out


def byte_conflicts(ops):
    acc = [[("R", v) for v in op.input_views] + [("W", v) for v in op.output_views]
           for op in ops]
    kinds = {("W", "R"): "RAW", ("R", "W"): "WAR", ("W", "W"): "WAW"}
    out = set()
    for j in range(len(ops)):
        for i in range(j):
            for mi, vi in acc[i]:
                for mj, vj in acc[j]:
                    if (mi, mj) in kinds and byte_footprint(vi) & byte_footprint(vj):
                        out.add((ops[i].name, ops[j].name, kinds[mi, mj]))
    return out


def test_the_graph_builds_records_only_when_asked():
    A = af.Tensor("A", (8, 8))
    ops = [af.FillOperation("w", 1.0).set_outputs(A[:4]),
           af.TransformOperation("r").set_inputs(A.T[1]),
           af.FillOperation("w2", 2.0).set_outputs(A[2])]
    g = af.analyze(ops)
    # w -> w2 (WAW) is implied by w -> r -> w2 and left out
    assert g._deps is None and len(g) == 2 and g.kinds() == {"RAW": 1, "WAR": 1, "WAW": 0}
    assert g.predecessors("w2") == ["r"] and g._deps is None
    assert [(d.src, d.dst, d.kind, d.implicit) for d in g.dependencies] == [
        ("w", "r", "RAW", True), ("r", "w2", "WAR", True)]


def test_edges_survive_later_changes_to_the_ops():
    """Records made after an op changed still name the views that were analysed."""
    A = af.Tensor("A", (4, 4))
    w = af.FillOperation("w", 1.0).set_outputs(A[0])
    r = af.TransformOperation("r").set_inputs(A[:, 0])
    g = af.analyze([w, r])
    r.input_views[:] = [A[3]]
    (d,) = g.dependencies
    assert d.dst_view == A[:, 0].name and d.dst_access == A[:, 0]


def test_progress_and_errors_from_callbacks_propagate():
    A = af.Tensor("A", (64,))
    ops = [af.FillOperation(f"w{k}", 1.0).set_outputs(A[k:k + 3]) for k in range(3000)]
    seen = []
    af.analyze(ops, progress=seen.append)
    assert sum(seen) == 3000

    def boom(n):
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        af.analyze(ops, progress=boom)


GARBAGE = [None, 1, 2.5, "x", b"\x00" * 7, (), [], {}, -1, 2 ** 70, object(),
           np.zeros(3, np.int32), np.zeros((2, 2), np.int64)]
PARAMS = (True, 6, 4096, 4096, 1024)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(GARBAGE), min_size=0, max_size=15))
def test_boundary_refuses_garbage(args):
    try:
        compiled.walker.walk_table(*args)
    except (TypeError, ValueError):
        pass


def table_args(n_ops, op_starts, modes, entries, groups, offsets, dims_start, shape, stride):
    return (n_ops, 1 + max(groups, default=0),
            *(np.array(c, np.int64) for c in (op_starts, modes, entries, groups, offsets,
                                                dims_start, shape, stride)),
            af.solver.intersects, af.solver.covers, None, PARAMS)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_walk_table_refuses_bad_columns(data):
    """Any integers at all: refused with ValueError, or walked; never a crash. (The fuzzer
    ``fuzz/fuzz_walker.py`` runs this under the sanitizers for long.)"""
    ints = st.integers(-2 ** 63, 2 ** 63 - 1)
    small = st.integers(-3, 8)
    n_rows, n_views, dims = (data.draw(st.integers(0, 4)) for _ in range(3))
    cols = [data.draw(st.lists(st.one_of(small, ints), min_size=k, max_size=k))
            for k in (n_rows + 1, n_rows, n_rows, n_views, n_views, n_views + 1, dims, dims)]
    try:
        compiled.walker.walk_table(data.draw(st.integers(0, 5)), data.draw(st.integers(0, 3)),
                                   *(np.array(c, np.int64) for c in cols),
                                   af.solver.intersects, af.solver.covers, None, PARAMS)
    except ValueError:
        pass


def test_walk_table_names_what_is_wrong():
    ok = dict(n_ops=2, op_starts=[0, 1, 2], modes=[1, 0], entries=[0, 0], groups=[0],
              offsets=[3], dims_start=[0, 1], shape=[2], stride=[1])
    assert memoryview(compiled.walker.walk_table(*table_args(**ok))).nbytes == 8  # w -> r RAW
    for change, message in [({"modes": [1, 2]}, "bad mode at 1"),
                            ({"entries": [0, 5]}, "bad entry at 1"),
                            ({"op_starts": [0, 2, 1]}, "bad op_starts"),
                            ({"shape": [0]}, "bad shape"),
                            ({"stride": [2 ** 62 + 1]}, "bad stride"),
                            ({"offsets": [2 ** 62]}, "bad extent"),
                            ({"dims_start": [0, 2]}, "bad entry columns"),
                            # an entry whose dims run past the shape column: found by the
                            # sanitizer fuzzer (it read past the end before this check)
                            ({"groups": [0, 0], "offsets": [3, 0], "dims_start": [0, 50, 2],
                              "shape": [2, 1], "stride": [1, 1]}, "bad dims_start at 1")]:
        with pytest.raises(ValueError, match=message):
            compiled.walker.walk_table(*table_args(**{**ok, **change}))
    with pytest.raises(TypeError, match="modes must be a 1-d int64 array"):
        args = list(table_args(**ok))
        args[3] = np.array([1, 0], np.int32)
        compiled.walker.walk_table(*args)


def test_reinterpreting_views_give_the_reference_edges():
    """A byte view of a float tensor: the group's cells are bytes, in both walks."""
    A = af.Tensor("A", (4, 4))
    B = af.Tensor.on(A.storage, "uint8")
    ops = [af.FillOperation("w", 1.0).set_outputs(A[1]),
           af.TransformOperation("r").set_inputs(B[20:21])]
    got = deps.ordering_edges(ops)
    assert [(d.src, d.dst, d.kind) for d in got] == [("w", "r", "RAW")]
    assert keys(got) == keys(deps.reference_edges(ops))


from repo import ROOT


@pytest.mark.parametrize("name", ["seed_complex", "seed_simple", "shared_buffer",
                                  "sliding_window", "transpose_inplace"])
def test_example_programs_give_the_reference_edges(name):
    from aliasflow.io import load_program
    ops = load_program(ROOT / "examples" / f"{name}.json").ops
    for mode in MODES:
        got, want = both(ops, *mode)
        assert got == want


def test_benchmark_traces_give_the_reference_edges():
    """The benchmark's transformer and non-dense traces (real-program shapes: arenas, KV
    ring buffers, head blocks, windows, transposed tiles; writes past the cell limit), in
    all three modes."""
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from trace import make_nondense_trace, make_trace
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    for ops in (make_trace(1500, seed=5), make_nondense_trace(800, seed=6),
                make_nondense_trace(800, seed=7, arena=True),
                make_nondense_trace(800, seed=8, tokens=512, heads=12, head_dim=64)):
        for retire, prune in MODES:
            part = ops if retire else ops[:400]
            got, want = both(part, retire, prune)
            assert got == want and len(got) > 100


def test_convolution_patches_give_the_reference_edges():
    """im2col windows (``as_strided`` patches whose kernel and output dims share strides:
    stride-1, stride-2 and dilated convolutions) read, while fills and rows cut them: the
    compiled walk makes a window's cells from merged dims, the reference by enumeration."""
    import random
    rng = random.Random(11)
    img = af.Tensor("img", (2, 20, 20))
    ops = []
    for k in range(250):
        c = rng.random()
        if c < 0.6:
            step, dil = rng.choice([(1, 1), (2, 1), (1, 2), (3, 1), (2, 3)])
            kh, oh = rng.randrange(1, 4), rng.randrange(1, 5)
            r = rng.randrange(0, 20 - dil * (kh - 1) - step * (oh - 1))
            col = rng.randrange(0, 20 - dil * (kh - 1) - step * (oh - 1))
            win = img.as_strided((2, kh, kh, oh, oh), (400, 20 * dil, dil, 20 * step, step),
                                 r * 20 + col)
            op = af.ReduceOperation(f"conv{k}", axis=0).set_inputs(win)
        elif c < 0.8:
            r, col = rng.randrange(20), rng.randrange(20)
            op = af.FillOperation(f"pad{k}", 0.0).set_outputs(img[:, r:r + 3, col])
        else:
            r = rng.randrange(20)
            op = af.FillOperation(f"row{k}", 1.0).set_outputs(img[rng.randrange(2), r])
        ops.append(op)
    for limit in (deps.COVERS_LIMIT, 40):
        with covers_limit(limit):
            for retire, prune in MODES:
                got, want = both(ops, retire, prune)
                assert got == want and len(got) > 250


def stamped_windows(seed, n=300, size=200):
    """Windows (``as_strided`` rows as far apart as they are wide, one dense run of cells,
    or closer) read, stamped at strides 2-4 (fills never covering a window), a few dense
    writes cutting windows into pieces, and reads of plain runs."""
    import random
    rng = random.Random(seed)
    sig = af.Tensor("sig", (size,))
    ops = []
    for k in range(n):
        c = rng.random()
        width, count = rng.choice([2, 3, 4, 6]), rng.randrange(2, 8)
        step = width - rng.choice([0, 0, 1])  # abutting rows: dense; closer: not
        span = step * (count - 1) + width
        start = rng.randrange(0, size - span + 1)
        if c < 0.45:
            op = af.ReduceOperation(f"win{k}", axis=-1).set_inputs(
                sig.as_strided((count, width), (step, 1), start))
        elif c < 0.85:
            stride = rng.choice([2, 3, 4])
            op = af.FillOperation(f"stamp{k}", 0.5).set_outputs(
                sig[start:start + stride * count:stride])
        elif c < 0.93:
            op = af.FillOperation(f"cut{k}", 1.0).set_outputs(sig[start:start + width])
        else:
            op = af.ReduceOperation(f"run{k}", axis=-1).set_inputs(sig[start:start + span])
        ops.append(op)
    return ops


@pytest.mark.parametrize("seed", range(4))
def test_dense_runs_cut_by_strided_writes_give_the_reference_edges(seed):
    """A dense record (a window read as one run of cells) that strided writes cut keeps the
    cells they leave, in both walks; pieces of dense cuts stay dense. At a cell limit
    below some windows' spans those stay dense too."""
    ops = stamped_windows(seed)
    for limit in (deps.COVERS_LIMIT, 12):
        with covers_limit(limit):
            for retire, prune in MODES:
                got, want = both(ops, retire, prune)
                assert got == want and len(got) > 200


def test_dense_runs_cut_by_strided_writes_are_sound_and_retire():
    """Against brute-force byte footprints; and a window whose every cell strided writes
    have overwritten no longer gains edges: kept live, it would gain one from each later
    stamp over its cells wherever no ancestor set implies it (here: no pruning; in a long
    trace: reads older than the ancestor window), the growth this retirement removes."""
    ops = stamped_windows(9, n=60, size=60)
    graph = af.analyze(ops)
    truth = byte_conflicts(ops)
    assert {(d.src, d.dst, d.kind) for d in graph.dependencies} <= {t[:3] for t in truth}
    reach = reachable([op.name for op in ops], graph.edges)
    assert all(dst in reach[src] for src, dst, _ in truth)

    sig = af.Tensor("sig", (40,))
    win = af.ReduceOperation("win", axis=-1).set_inputs(sig.as_strided((5, 2), (2, 1), 0))
    evens = af.FillOperation("evens", 0.0).set_outputs(sig[0:10:2])  # cells 0 2 4 6 8
    odds = af.FillOperation("odds", 0.0).set_outputs(sig[1:11:2])  # 1 3 5 7 9: all gone
    later = [af.FillOperation(f"again{k}", 1.0).set_outputs(sig[k:k + 10:2 + k])
             for k in range(4)]
    for backend in (deps.ordering_edges, deps.reference_edges):
        edges = {(d.src, d.dst) for d in backend([win, evens, odds, *later], prune=())}
        assert ("win", "evens") in edges and ("win", "odds") in edges
        assert not {("win", op.name) for op in later} & edges


def test_writes_past_the_cell_limit_give_the_reference_edges():
    """Blocked attention at a size where head blocks (128 x 64 cells) are past the cell
    limit: whole-block writes over row chunks of the block (covered: a product form),
    of the next head (a corner cell outside) and over row bands (no rule but enumeration:
    Python decides)."""
    import random
    rng = random.Random(3)
    T, H, D = 128, 4, 64
    qkv, out = af.Tensor("qkv", (T, 3 * H * D)), af.Tensor("out", (T, H * D))
    ops = []
    for k in range(300):
        h, p = rng.randrange(H), rng.randrange(3)
        block = qkv[:, (p * H + h) * D:(p * H + h + 1) * D]
        c = rng.random()
        if c < 0.4:
            a = rng.randrange(0, T, 32)
            op = af.TransformOperation(f"r{k}").set_inputs(block[a:a + 32]) \
                .set_outputs(out[a:a + 32, h * D:(h + 1) * D])
        elif c < 0.7:
            op = af.TransformOperation(f"w{k}").set_inputs(out[:, h * D:(h + 1) * D]) \
                .set_outputs(block)
        elif c < 0.85:
            a = rng.randrange(0, T, 16)
            op = af.ReduceOperation(f"s{k}", axis=-1).set_inputs(qkv[a:a + 16])
        else:
            op = af.FillOperation(f"f{k}", 0.0).set_outputs(qkv[rng.randrange(T), ::3])
        ops.append(op)
    for retire, prune in MODES:
        got, want = both(ops, retire, prune)
        assert got == want and len(got) > 300


def test_a_traced_pytorch_training_step_gives_the_reference_edges():
    """A real program: two steps of a transformer layer's training, traced from PyTorch
    (storages reused by its allocator, views of every shape, whose strides give the
    compiled walk its column boxes)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-3)
    x = torch.randn(4, 8, 16)
    with af.trace(values=False) as t:
        for _ in range(2):
            layer(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
    ops = t.ops
    assert len(ops) > 300
    for retire, prune in MODES:
        got, want = both(ops, retire, prune)
        assert got == want and len(got) > 100


def test_edges_are_the_walks_own_read_only_memory():
    """walk_table hands its edge array over without a copy (an EdgeBuffer): read-only for
    numpy, not constructible from Python, and the edges read through it are the walk's."""
    from aliasflow.analysis.lower import lower
    A = af.Tensor("A", (4, 4))
    ops = [af.FillOperation("w", 1.0).set_outputs(A[:2]),
           af.TransformOperation("r").set_inputs(A.T[0]),
           af.FillOperation("w2", 2.0).set_outputs(A[0])]
    table = lower([op.record() for op in ops])
    edges = compiled.compiled_edges(table, None, True, ("WAR", "WAW"), 4096, 4096, 1024)
    buffer = edges.data.base.base
    assert type(buffer).__name__ == "EdgeBuffer"
    with pytest.raises(TypeError):
        type(buffer)()
    with pytest.raises(ValueError):
        edges.data[0, 0] = 5
    assert memoryview(buffer).readonly and memoryview(buffer).nbytes == 8 * len(edges)
    # w -> r RAW, r -> w2 WAR; the WAW w -> w2 is implied by them and left out
    assert [a.tolist() for a in edges.ops()] == [[0, 1], [1, 2]]
    assert edges.kinds().tolist() == [0, 1]
    # rows: w writes A[:2] (row 0), r reads A.T[0] (row 1), w2 writes A[0] (row 2)
    assert edges.data.tolist() == [[0, 1 * 4 + 0], [1, 2 * 4 + 1]]
    src_rows, dst_rows = edges.rows()
    assert [edges.view_of(src_rows[0]), edges.view_of(dst_rows[0])] == [A[:2], A.T[0]]
    empty = compiled.compiled_edges(lower([]), None, True, (), 4096, 4096, 1024)
    assert len(empty) == 0 and memoryview(empty.data.base.base).nbytes == 0


def test_view_fields_are_read_the_way_the_view_type_says():
    """The lowering reads a view's fields by attribute: a view type that overrides one (here
    ``offset``, as a property) is lowered by what the property says, in both walks."""
    from aliasflow.core.view import _ViewFields
    reads = []

    class Counted(af.TensorView):
        __slots__ = ()

    def offset(self):
        reads.append(1)
        return _ViewFields.offset.__get__(self)

    A = af.Tensor("A", (6, 6))

    def program(view):
        return [af.FillOperation("w", 1.0).set_outputs(view("a", A, 7, (2, 2), (6, 1))),
                af.TransformOperation("r").set_inputs(view("b", A, 1, (3, 2), (6, 12))),
                af.TransformOperation("r2").set_inputs(view("c", A, 8, (4,), (6,)))]

    ops = program(Counted)
    Counted.offset = property(offset)  # after the views are made (they copy their fields)
    def named(found):
        return [(d.src, d.dst, d.kind, d.src_view, d.dst_view) for d in found]
    try:
        got = named(deps.ordering_edges(ops))
        pure = named(deps.reference_edges(ops))
    finally:
        del Counted.offset
    want = named(deps.ordering_edges(program(af.TensorView)))
    assert reads and got == pure == want == [("w", "r", "RAW", "a", "b"),
                                             ("w", "r2", "RAW", "a", "c")]
