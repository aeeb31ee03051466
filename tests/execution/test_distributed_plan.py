"""The functionalized plan, without any engine: block sets against brute force, and the plan run
in process (block windows poisoned) against program order, byte for byte."""
import copy
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import aliasflow as af
from aliasflow.execution.distributed import blocks as blocks_mod
from aliasflow.execution.distributed import LocalBackend, parse_bytes, plan, run, run_plan
from aliasflow.execution.distributed.blocks import Footprint

from strategies import brute_footprint, programs


# ---- oracles: every byte enumerated ----------------------------------------------------------
def byte_cells(view, base=None) -> set[int]:
    """Every byte the view touches, counted from address ``base`` (default: its storage's)."""
    start = view.storage.address - (view.storage.address if base is None else base)
    unit, isz = view.tensor.dtype.itemsize, view.dtype.itemsize
    return {start + p * unit + j for p in brute_footprint(view.offset, view.shape, view.stride)
            for j in range(isz)}


def brute_blocks(cells, B):
    return {c // B for c in cells}


def brute_covered(cells, B, nbytes):
    return {b for b in brute_blocks(cells, B)
            if all(c in cells for c in range(b * B, min((b + 1) * B, nbytes)))}


@st.composite
def layouts(draw, max_dims=4, max_size=5, max_stride=40):
    ndim = draw(st.integers(0, max_dims))
    shape = tuple(draw(st.integers(0, max_size)) for _ in range(ndim))
    stride = tuple(draw(st.integers(-max_stride, max_stride)) for _ in range(ndim))
    low = sum(s * (n - 1) for s, n in zip(stride, shape) if s < 0 and n)
    offset = draw(st.integers(-low, -low + 50))
    return offset, shape, stride


def check_footprint(layout, B):
    cells = brute_footprint(*layout)
    f = Footprint(*layout)
    nbytes = max(cells, default=0) + 1 + (B // 2)
    assert set(f.blocks(B, nbytes)) == brute_blocks(cells, B)
    assert len(f.blocks(B, nbytes)) == len(set(f.blocks(B, nbytes)))
    assert {b for b in f.blocks(B, nbytes) if f.covers(b, B, nbytes)} == \
        brute_covered(cells, B, nbytes)
    if not f.fallback:
        top = max(cells, default=0) + 3
        ordered = sorted(cells)
        for q in range(-2, top):
            assert f.count_le(q) == sum(1 for c in cells if c <= q)
            nxt = next((c for c in ordered if c >= q), None)
            assert f.next_ge(q) == nxt


@settings(max_examples=300, deadline=None)
@given(layouts(), st.integers(1, 70))
def test_blocks_and_counts_against_brute_force(layout, B):
    check_footprint(layout, B)


@settings(max_examples=150, deadline=None)
@given(layouts(max_dims=3, max_size=6, max_stride=12), st.integers(1, 40),
       st.sampled_from(["bitmap", "solver"]))
def test_other_paths_against_brute_force(monkeypatch_layout, B, path):
    """The bitmap and the per-block solver fallback, forced on small layouts."""
    saved = blocks_mod.ENUMERATE_LIMIT, blocks_mod.BITMAP_LIMIT
    try:
        blocks_mod.ENUMERATE_LIMIT = 0
        if path == "solver":
            blocks_mod.BITMAP_LIMIT = 0
        check_footprint(monkeypatch_layout, B)
    finally:
        blocks_mod.ENUMERATE_LIMIT, blocks_mod.BITMAP_LIMIT = saved


def test_far_apart_blocks_are_found_without_enumerating():
    # 24,000 runs of 8 bytes, 1 MiB apart, on 1 KiB blocks: one query per touched block
    f = Footprint(0, (24_000, 8), (1 << 20, 1))
    got = f.blocks(1024, 24_000 << 20)
    assert got == [k * 1024 for k in range(24_000)]
    assert not any(f.covers(b, 1024, 24_000 << 20) for b in got[:10])
    assert Footprint(0, (10**9,), (1,)).covers(5, 4096, 10**9)


def test_parse_bytes():
    assert parse_bytes("16MiB") == 16 << 20
    assert parse_bytes("64KiB") == 65536
    assert parse_bytes(" 2 GB ") == 2 * 10**9
    assert parse_bytes("1b") == 1
    for bad in ["", "MiB", "-1", "0", 0, -5, "1.3B", "12 parsecs", 1.5, True, None, "1e3"]:
        with pytest.raises(af.AliasflowError, match="block_bytes"):
            parse_bytes(bad)


# ---- plans against brute force ---------------------------------------------------------------
def storages_of(ops):
    seen = {}
    for op in ops:
        for v in op.input_views + op.output_views:
            seen.setdefault(id(v.storage), v.tensor)
    return seen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_ops=8, executable=False, max_tensors=2), st.integers(1, 200))
def test_plan_block_sets_against_brute_force(ops, B):
    p = plan(ops, block_bytes=B)
    index = {id(st): s for s, sts in enumerate(p.memory) for st in sts}
    version = {}
    for op, t in zip(ops, p.tasks):
        reads, written, whole = set(), set(), set()
        for v in op.input_views:
            s = index[id(v.storage)]
            reads |= {(s, b) for b in brute_blocks(byte_cells(v, p.storages[s].base), B)}
        for v in op.output_views:
            s = index[id(v.storage)]
            nbytes = p.storages[s].nbytes
            cells = byte_cells(v, p.storages[s].base)
            written |= {(s, b) for b in brute_blocks(cells, B)}
            whole |= {(s, b) for b in brute_covered(cells, B, nbytes)}
        rmw = written - whole
        assert {(s, b) for s, b, _ in t.reads} == reads | rmw
        assert {(s, b) for s, b, _ in t.writes} == written
        assert {(s, b) for s, b, _ in t.rmw} == rmw
        for s, b, v in t.reads:
            assert v == version.get((s, b), 0)
        for s, b, v in t.writes:
            assert v == version.get((s, b), 0) + 1
            version[s, b] = v
    assert set(p.final) == {(s, b, v) for (s, b), v in version.items()}


# ---- plan runs against program order ---------------------------------------------------------
def snapshot(ops):
    state = {t.name: t.data.tobytes() for t in storages_of(ops).values()}
    results = {op.name: None if op.result is None else
               (np.asarray(op.result).dtype.str, np.shape(op.result),
                np.asarray(op.result).tobytes()) for op in ops}
    return state, results


def outcome(fn, ops):
    """The failed op and its message (None), then the storages and results."""
    try:
        fn(ops)
        err = None
    except af.ExecutionError as exc:
        err = exc.op_name
        snap = snapshot(ops)
        return err, snap, str(exc)
    return err, snapshot(ops)


def with_dtypes(ops, dtype):
    """The same program over storages of another dtype (same shapes, values cast)."""
    new = {key: af.Tensor(t.name, t.shape, dtype, data=t.data.astype(dtype))
           for key, t in storages_of(ops).items()}

    def recast(v):
        return af.TensorView(v.name, new[id(v.storage)], v.offset, v.shape, v.stride)
    for op in ops:
        op.input_views = [recast(v) for v in op.input_views]
        op.output_views = [recast(v) for v in op.output_views]
    return ops


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_ops=10, executable=True, max_tensors=3),
       st.one_of(st.integers(1, 16), st.integers(17, 400)),
       st.sampled_from(["float64", "float32", "int16"]), st.sampled_from([0x00, 0xFF, 0xA5]))
def test_plan_equals_program_order_byte_for_byte(ops, B, dtype, poison):
    ops = with_dtypes(ops, dtype)
    twin = copy.deepcopy(ops)
    want = outcome(af.run, twin)
    got = outcome(lambda o: run(o, LocalBackend(poison=poison), block_bytes=B), ops)
    assert got == want


def test_poison_catches_a_skipped_read_modify_write(monkeypatch):
    """Claiming every write covers its blocks whole must break the result."""
    def make():
        A = af.Tensor("A", (8,), "float32", data=np.arange(8))
        return [af.FillOperation("f", 7.0).set_outputs(A[1:3])]
    monkeypatch.setattr(Footprint, "covers", lambda self, b, B, n: True)
    ops, twin = make(), make()
    af.run(twin)
    run(ops, LocalBackend(poison=0xFF), block_bytes=8)
    assert snapshot(ops) != snapshot(twin)


def test_reduction_keeps_strides_and_order():
    """A reduction over a transposed, stepped view in float32 sums in program order's order."""
    rng = np.random.default_rng(0)
    data = (rng.standard_normal(4096) * 1e4).astype(np.float32)
    A = af.Tensor("A", (64, 64), "float32", data=data.reshape(64, 64))
    ops = [af.ReduceOperation("r", axis=0).set_inputs(A[::-3, 1::2].T),
           af.ReduceOperation("w", axis=1).set_inputs(A.T).set_outputs(A[5, :])]
    twin = copy.deepcopy(ops)
    af.run(twin)
    run(ops, LocalBackend(poison=0xFF), block_bytes=100)
    assert snapshot(ops) == snapshot(twin)


def test_failure_names_the_op_and_leaves_the_state_before_it():
    A = af.Tensor("A", (4, 4), "float64")
    ops = [af.FillOperation("one", 1.0).set_outputs(A[:2]),
           af.TransformOperation("bad", lambda x: 1 / 0).set_inputs(A[0]).set_outputs(A[3]),
           af.FillOperation("three", 3.0).set_outputs(A.view())]
    with pytest.raises(af.ExecutionError, match="'bad'.*ZeroDivisionError") as info:
        run(ops, LocalBackend(), block_bytes=24)
    assert info.value.op_name == "bad"
    assert A.data.tolist() == [[1.0] * 4] * 2 + [[0.0] * 4] * 2


def test_empty_views_run_as_in_program_order():
    def make():
        A = af.Tensor("A", (8,), "float32", data=np.arange(8))
        return [af.ReduceOperation("r", axis=0).set_inputs(A[5:5].reshape(0, 3)),
                af.TransformOperation("c").set_inputs(A[:0]).set_outputs(A[3:3]),
                af.FillOperation("f", 2.0).set_outputs(A[::-3][:0], A[1:2]),
                af.TransformOperation("bad", lambda x: 1 // 0).set_inputs(A[:0])
                .set_outputs(A[2:2])]
    ops, twin = make(), make()
    assert outcome(af.run, twin) == outcome(lambda o: run(o, block_bytes=4), ops)
    assert outcome(af.run, twin)[0] == "bad"


def test_figures_and_errors():
    A = af.Tensor("A", (1024,), "float32")
    ops = [af.FillOperation("f", 1.0).set_outputs(A[::2]),
           af.ReduceOperation("r").set_inputs(A[:256])]
    p = plan(ops, "1KiB")
    f = p.figures
    assert (f.tasks, f.blocks, f.blocks_touched, f.rmw_writes) == (2, 4, 4, 4)
    assert f.bytes_read == 4096 + 1024 and f.bytes_written == 4096
    assert f.read_amplification == pytest.approx((4096 + 1024) / 1024)
    assert f.critical_path == 2
    assert p.truncated(1).figures == plan(ops[:1], "1KiB").figures
    assert p.truncated(1).final == plan(ops[:1], "1KiB").final
    with pytest.raises(af.AliasflowError, match="block_bytes"):
        plan(ops, "lots")
    with pytest.raises(af.AliasflowError, match="backend"):
        run(ops, backend="dask")
    rec = af.OpRecord("inc", "add_", (af.Access(0, "RW", A[1:3]),))
    rp = plan([rec], 8)    # bytes 4..11 of A: half of block 0, half of block 1
    assert rp.tasks[0].reads == ((0, 0, 0), (0, 1, 0))
    assert rp.tasks[0].rmw == rp.tasks[0].writes == ((0, 0, 1), (0, 1, 1))
    with pytest.raises(af.AliasflowError, match="'inc': kind 'add_' is not a registered primitive"):
        run_plan(rp, LocalBackend())
    R = af.Tensor("R", (4,))
    ro = af.from_numpy(np.frombuffer(bytes(16), np.float32), "ro")
    with pytest.raises(af.ExecutionError, match="read-only"):
        run([af.TransformOperation("w").set_inputs(R.view()).set_outputs(ro)], block_bytes=8)
    V = af.Tensor.virtual("V", (10**6,))
    vp = plan([af.FillOperation("f", 1.0).set_outputs(V[::3])], 4096)
    assert vp.figures.blocks == 977
    with pytest.raises(af.AliasflowError, match="virtual"):
        run_plan(vp, LocalBackend())


# ---- the command line ------------------------------------------------------------------------
def cli_program(tmp_path):
    from aliasflow.io import save_program
    A = af.Tensor("A", (8, 8), "float64", data=np.arange(64).reshape(8, 8))
    ops = [af.FillOperation("f", 1.0).set_outputs(A[1:3, ::2]),
           af.TransformOperation("t", "negative").set_inputs(A.T[:, 2]).set_outputs(A[7]),
           af.ReduceOperation("r").set_inputs(A[::-1, 3:])]
    path = tmp_path / "p.json"
    save_program(af.Program(ops), path)
    return path, ops


def test_cli_plan_and_local_run(tmp_path):
    import json
    from typer.testing import CliRunner
    from aliasflow.cli import app
    path, ops = cli_program(tmp_path)
    runner = CliRunner()
    res = runner.invoke(app, ["plan", str(path), "--block-bytes", "64", "--json"])
    assert res.exit_code == 0, res.output
    figures = json.loads(res.output)
    p = plan(ops, 64)
    assert figures["tasks"] == 3 and figures["block_bytes"] == 64
    assert figures["bytes_read"] == p.figures.bytes_read
    res = runner.invoke(app, ["plan", str(path), "--block-bytes", "1KiB"])
    assert res.exit_code == 0 and "read amplification" in res.output
    for bad in (["plan", str(path), "--block-bytes", "0"],
                ["run", str(path), "--backend", "mpi"],
                ["run", str(path), "--block-bytes", "huge"]):
        res = runner.invoke(app, bad)
        assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
        assert "error:" in res.output and "Traceback" not in res.output
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert runner.invoke(app, ["run", str(path), "--save", str(a)]).exit_code == 0
    res = runner.invoke(app, ["run", str(path), "--backend", "local", "--block-bytes", "24",
                              "--save", str(b)])
    assert res.exit_code == 0 and "on local in blocks" in res.output
    x, y = np.load(a), np.load(b)
    assert x.files == y.files and all(x[k].tobytes() == y[k].tobytes() for k in x.files)


def test_af_run_hands_off_and_aliasflow_imports_no_engine():
    import subprocess
    import sys
    code = ("import sys, aliasflow as af; af.distributed.plan; "
            "print(any(m.split('.')[0] in ('dask', 'distributed', 'ray') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "False", out.stderr
    A = af.Tensor("A", (6,), "float32", data=np.arange(6))
    op = af.ReduceOperation("r").set_inputs(A[::-2])
    af.run([op], block_bytes=5)
    assert op.result.tolist() == 9.0


# ---- memory shared by several storages, views of other dtypes ---------------------------------
@st.composite
def aliasing_recipes(draw):
    """A program as plain data: ops over views of four tensors, three of them over one buffer
    (two separate NumPy imports that overlap, and a uint8 tensor over the first's bytes)."""
    from strategies import strided
    sizes = {"f32": 16, "i16": 40, "u8": 64, "f64": 12}
    names = list(sizes)
    recipe = []
    for j in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["fill", "copy", "reduce", "read"]))
        ndim = draw(st.integers(1, 2))
        shape = tuple(draw(st.integers(1, 3)) for _ in range(ndim))

        def view(shape):
            t = draw(st.sampled_from(names))
            return (t,) + draw(strided(sizes[t], shape=shape))
        if kind == "fill":
            recipe.append(("fill", j, [], [view(shape) for _ in range(draw(st.integers(1, 2)))]))
        elif kind == "reduce":
            out = shape[:-1]
            recipe.append(("reduce", j, [view(shape)], [view(out)] if out else []))
        else:
            recipe.append((kind, j, [view(shape)], [view(shape)] if kind == "copy" else []))
    return draw(st.binary(min_size=96, max_size=96)), recipe


def build(raw, recipe):
    buf = np.frombuffer(raw, np.uint8).copy()
    f32 = af.from_numpy(buf[:64].view(np.float32), "f32").tensor
    i16 = af.from_numpy(buf[16:96].view(np.int16), "i16").tensor
    tensors = {"f32": f32, "i16": i16, "u8": af.Tensor.on(f32.storage, "uint8", name="u8"),
               "f64": af.Tensor("f64", (12,), "float64", data=np.arange(12.0))}

    def view(spec, k):
        t, off, shape, stride = spec
        return af.TensorView(f"v{k}", tensors[t], off, shape, stride)
    ops, k = [], 0
    for kind, j, ins, outs in recipe:
        op = {"fill": lambda: af.FillOperation(f"op{j}", float(j % 5)),
              "copy": lambda: af.TransformOperation(f"op{j}", "copy"),
              "read": lambda: af.TransformOperation(f"op{j}", "copy"),
              "reduce": lambda: af.ReduceOperation(f"op{j}")}[kind]()
        for spec in ins:
            op.set_inputs(view(spec, k))
            k += 1
        for spec in outs:
            op.set_outputs(view(spec, k))
            k += 1
        ops.append(op)
    return buf, ops


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(aliasing_recipes(), st.integers(1, 120), st.sampled_from([0x00, 0xFF, 0x7C]))
def test_aliasing_storages_and_dtypes_equal_program_order(recipe, B, poison):
    buf_a, ops_a = build(*recipe)
    buf_b, ops_b = build(*recipe)
    want = outcome(af.run, ops_a)
    got = outcome(lambda o: run(o, LocalBackend(poison=poison), block_bytes=B), ops_b)
    assert got[0] == want[0] and got[1][1] == want[1][1] and got[2:] == want[2:]
    assert buf_b.tobytes() == buf_a.tobytes()
    f64 = [op.input_views[0].tensor if op.input_views else None for op in ops_a]
    assert [t.data.tobytes() if t is not None and t.name == "f64" else None for t in f64] == [
        op.input_views[0].tensor.data.tobytes() if op.input_views and
        op.input_views[0].tensor.name == "f64" else None for op in ops_b]
    p = plan(ops_b, B)
    assert len(p.storages) <= 2   # the three imports of one buffer are one memory
