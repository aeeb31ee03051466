"""aliasflow.te without TVM: the seed's examples, exact footprints against brute-force
enumeration of the loop nest, te.build against an element-by-element Python interpreter,
lowered programs run by aliasflow against te.build, and refusals."""
import itertools

import numpy as np
import pytest
from repo import EXAMPLES
from hypothesis import assume, given, settings, strategies as st

import aliasflow as af
from aliasflow import te
from aliasflow.frontends.te import evaluate as te_evaluate
from te_graphs import random_graph


# ---- seed 003 -------------------------------------------------------------------------------
def test_seed_003_tensors_ops_and_input_tensors():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    E = te.placeholder((n,), name="E")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    D = te.compute(A.shape, lambda i: C[i] + B[i], name="D")
    assert isinstance(D.op, te.ComputeOp) and isinstance(D.op.body[0], te.Add)
    assert isinstance(D.op.body[0].a, te.ProducerLoad) and D.op.body[0].a.producer == C
    assert [t.name for t in D.op.input_tensors] == ["C", "B"]
    C3 = te.compute(A.shape, lambda i: A[i] + B[i] + E[i], name="C")
    assert C3.op.input_tensors == [A, B, E]
    kinds = []
    te.post_order_visit(C3.op.body[0], lambda node: kinds.append(type(node).__name__))
    # A[i], B[i], (A[i]+B[i]), E[i], ((A[i]+B[i])+E[i]); the var i is visited once
    assert kinds == ["Var", "ProducerLoad", "ProducerLoad", "Add", "ProducerLoad", "Add"]
    n0, n1 = te.var("n0"), te.var("n1")
    A0 = te.placeholder((n0, n1), name="A")
    A1 = te.placeholder((n0, n1), name="B")
    B0, B1 = te.compute((n0, n1), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="S")
    assert B0.op == B1.op and B0.op is B1.op
    assert (B0.value_index, B1.value_index, B0.op.num_outputs) == (0, 1, 2)
    assert B0.op.output(0) == B0 and B0.op.output(1) == B1 and B0 != B1
    assert B0.op.input_tensors == [A0, A1]
    assert (B0.name, B1.name, B0.dtype, B0.ndim) == ("S.v0", "S.v1", "float32", 2)
    assert [iv.var.name for iv in B0.op.axis] == ["i", "j"] and B0.op.reduce_axis == ()
    assert A0.op.input_tensors == [] and A0.op.num_outputs == 1
    with pytest.raises(af.AliasflowError, match="no output 2"):
        B0.op.output(2)


def test_input_tensors_first_occurrence_and_no_descent_into_producers():
    A = te.placeholder((4,), name="A")
    B = te.placeholder((4,), name="B")
    C = te.compute((4,), lambda i: A[i] * 2, name="C")
    # B first (post-order reaches the innermost-left load first), A again skipped, C's own
    # input A is not reached through C
    D = te.compute((4,), lambda i: (B[i] + A[B[i].astype("int32") % 4]) * A[i] + C[i], name="D")
    assert [t.name for t in D.op.input_tensors] == ["B", "A", "C"]


# ---- expressions ------------------------------------------------------------------------
def test_expression_types_and_folds_follow_tvm():
    i = te.var("i")
    A = te.placeholder((4,), name="A")
    assert (i + 0) is i and (1 * i) is i and (i // 1) is i
    assert isinstance(i * 0, te.IntImm) and (i % 1).value == 0
    e = A[i] + i
    assert isinstance(e.b, te.Cast) and e.dtype == "float32"
    assert (i + 1.5).dtype == "float32" and isinstance((i + 1.5).a, te.Cast)
    assert (-i).b.value == -1 and isinstance(-i, te.Mul)
    assert (te.const(7) // 2).value == 3 and (te.const(-7) // 2).value == -4
    assert (te.const(-7) % 2).value == 1
    assert te.max(A[i], A[i]) is not None and isinstance(te.max(A[i], 2.0), te.Max)
    L = te.placeholder((4,), dtype="int64", name="L")
    assert (i + L[i]).dtype == "int64" and isinstance((i + L[i]).a, te.Cast)
    with pytest.raises(af.AliasflowError, match="integer division"):
        i / 2
    with pytest.raises(af.AliasflowError, match="integer operands"):
        A[i] // A[i]
    with pytest.raises(af.AliasflowError, match="division by zero"):
        i // 0


def test_compute_refusals():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(af.AliasflowError, match="reduction must be the whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) + 1)
    with pytest.raises(af.AliasflowError, match="reduction must be the whole body"):
        te.compute((4,), lambda i: (te.sum(A[i, k], axis=k), A[i, 0]))
    with pytest.raises(af.AliasflowError, match="one positional argument per dim"):
        te.compute((4, 4), lambda i: A[i, 0])
    with pytest.raises(af.AliasflowError, match="has 2 dims, indexed with 1"):
        te.compute((4,), lambda i: A[i])
    with pytest.raises(af.AliasflowError, match="has 2 dims, indexed with 1"):
        te.compute((4,), lambda i: A[i] + 1.0)
    chained = te.compute((4, 4), lambda i, j: A[i][j], name="chained")
    assert str(chained.op.body[0]) == "A[i, j]"
    with pytest.raises(af.AliasflowError, match="not an integer"):
        te.compute((4,), lambda i: A[i, A[i, 0]])
    with pytest.raises(af.AliasflowError, match="unknown dtype"):
        te.placeholder((2,), dtype="float99")
    with pytest.raises(af.AliasflowError, match="axis"):
        te.sum(A[0, 0], axis=[te.var("x")])
    names = [iv.var.name for iv in te.compute((2, 3), lambda *ix: A[ix]).op.axis]
    assert names == ["i0", "i1"]


# ---- exact footprints against the enumerated loop nest -----------------------------------
def index_trees(nvars):
    leaf = st.one_of(st.tuples(st.just("var"), st.integers(0, nvars - 1)),
                     st.tuples(st.just("const"), st.integers(-3, 5)))
    return st.recursive(leaf, lambda t: st.one_of(
        st.tuples(st.just("add"), t, t), st.tuples(st.just("sub"), t, t),
        st.tuples(st.just("mulc"), st.integers(-2, 3), t), st.tuples(st.just("neg"), t)),
        max_leaves=5)


def build_tree(tree, vs):
    op = tree[0]
    if op == "var":
        return vs[tree[1]]
    if op == "const":
        return tree[1]
    if op == "add":
        return build_tree(tree[1], vs) + build_tree(tree[2], vs)
    if op == "sub":
        return build_tree(tree[1], vs) - build_tree(tree[2], vs)
    if op == "mulc":
        return tree[1] * build_tree(tree[2], vs)
    return -build_tree(tree[1], vs)


@st.composite
def affine_loads(draw):
    axis = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    red = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3)), max_size=2))
    ndim = draw(st.integers(1, 3))
    trees = [draw(index_trees(len(axis) + len(red))) for _ in range(ndim)]
    if draw(st.integers(0, 9)) == 0:  # a random shape: often out of bounds
        return tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim))), \
            axis, red, trees
    # mostly in bounds: shift each index to start at a small margin and size the dim to fit
    ranges = [range(e) for e in axis] + [range(lo, lo + ext) for lo, ext in red]
    shape, shifted = [], []
    for t in trees:
        vals = [build_tree(t, list(p)) for p in itertools.product(*ranges)]
        lo_margin, hi_margin = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        shifted.append(("add", t, ("const", lo_margin - min(vals))))
        shape.append(max(vals) - min(vals) + 1 + lo_margin + hi_margin)
    return tuple(shape), axis, red, shifted


def _index_expr(tree, vs):
    e = build_tree(tree, vs)
    return e if not isinstance(e, int) else te.const(e)


@settings(max_examples=200, deadline=None)
@given(affine_loads())
def test_affine_load_footprint_is_exact(case):
    shape, axis, red, trees = case
    assume(int(np.prod(shape)) <= 100_000)
    A = te.placeholder(shape, name="A")
    raxes = [te.reduce_axis((lo, lo + ext), name=f"r{k}") for k, (lo, ext) in enumerate(red)]

    def f(*ix):
        vs = list(ix) + [r.var for r in raxes]
        load = A[tuple(_index_expr(t, vs) for t in trees)]
        return te.sum(load, axis=raxes) if raxes else load
    C = te.compute(axis, f, name="C")
    # brute force: every loop point in loop order (axes, then reduce axes, row-major)
    ranges = [range(e) for e in axis] + [range(lo, lo + ext) for lo, ext in red]
    points = [tuple(build_tree(t, list(p)) for t in trees) for p in itertools.product(*ranges)]
    inside = all(0 <= x < s for p in points for x, s in zip(p, shape))
    if not inside:
        with pytest.raises(af.AliasflowError, match="outside"):
            te.lower([C])
        return
    prog = te.lower([C])
    (view,) = prog[0].input_views
    flat = [int(np.ravel_multi_index(p, shape)) for p in points]
    assert view.shape == tuple(len(r) for r in ranges)
    assert sorted(set(view.footprint().tolist())) == sorted(set(flat))
    # element order: read through the view over a storage holding its own element numbers
    numbered = af.Tensor("N", shape, dtype="int64",
                         data=np.arange(int(np.prod(shape))).reshape(shape))
    order = af.TensorView("v", numbered, view.offset, view.shape, view.stride).numpy()
    assert order.ravel().tolist() == flat
    assert prog[0].output_views[0] is prog.views[C]


@settings(max_examples=100, deadline=None)
@given(affine_loads(), st.data())
def test_affine_load_over_a_strided_caller_array(case, data):
    """The producer lives in the caller's array (axes permuted, one flipped, every other
    element of a buffer): the load's view reads exactly the enumerated elements, in order."""
    shape, axis, red, trees = case
    size = int(np.prod(shape))
    assume(size <= 100_000)
    perm = data.draw(st.permutations(range(len(shape))))
    flip = data.draw(st.booleans())
    buf = np.arange(2 * size, dtype="int64")
    arr = buf[::2].reshape([shape[p] for p in perm]).transpose(np.argsort(perm))
    if flip:
        arr = arr[::-1]
    assert arr.shape == shape and np.shares_memory(arr, buf)
    A = te.placeholder(shape, dtype="int64", name="A")
    raxes = [te.reduce_axis((lo, lo + ext), name=f"r{k}") for k, (lo, ext) in enumerate(red)]

    def f(*ix):
        vs = list(ix) + [r.var for r in raxes]
        load = A[tuple(_index_expr(t, vs) for t in trees)]
        return te.sum(load, axis=raxes) if raxes else load
    C = te.compute(axis, f, name="C")
    ranges = [range(e) for e in axis] + [range(lo, lo + ext) for lo, ext in red]
    points = [tuple(build_tree(t, list(p)) for t in trees) for p in itertools.product(*ranges)]
    if not all(0 <= x < s for p in points for x, s in zip(p, shape)):
        with pytest.raises(af.AliasflowError, match="outside"):
            te.lower([C], arrays={A: arr})
        return
    prog = te.lower([C], arrays={A: arr})
    (view,) = prog[0].input_views
    # buf holds each element's own position, so the values read are the addresses read
    assert view.numpy().ravel().tolist() == [int(arr[p]) for p in points]


def test_footprint_examples_and_zero_strides():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((3, 4), lambda i, j: te.sum(A[i + 1, 2 * j] + A[j, i] + A[2, k], axis=k),
                   name="C")
    views = {v.name: (v.offset, v.shape, v.stride) for v in te.lower([C])[0].input_views}
    assert views == {"A[(i + 1), (2 * j)]": (8, (3, 4, 4), (8, 2, 0)),
                     "A[j, i]": (0, (3, 4, 4), (1, 8, 0)),
                     "A[2, k]": (16, (3, 4, 4), (0, 0, 1))}


def test_non_affine_loads_are_reported_not_guessed():
    A = te.placeholder((16,), name="A")
    Bi = te.placeholder((4,), dtype="int32", name="B")
    cases = {"multiplies two loop-dependent": lambda i, j: A[i * j],
             "FloorDiv": lambda i, j: A[i // 2],
             "data-dependent": lambda i, j: A[Bi[i]]}
    for why, fn in cases.items():
        C = te.compute((4, 4), fn, name="C")
        with pytest.raises(te.NonAffineIndexError, match=why):
            te.lower([C])
        prog = te.lower([C], non_affine="whole")
        assert len(prog.non_affine) == 1 and why in prog.non_affine[0]
        assert any(v.shape == (16,) for v in prog[0].input_views)
    with pytest.raises(af.AliasflowError, match="non_affine"):
        te.lower([C], non_affine="guess")


def test_lowered_program_shows_the_data_flow():
    A = te.placeholder((4, 4), name="A")
    B0, B1 = te.compute((4, 4), lambda i, j: (A[i, j] + 1, A[j, i] * 2), name="S")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((4,), lambda i: te.sum(B0[i, k] * B1[k, i], axis=k), name="C")
    D = te.compute((4,), lambda i: C[3 - i], name="D")
    prog = te.lower([D])
    assert [op.name for op in prog] == ["S", "C", "D"]
    deps = {(d.src, d.dst, d.kind) for d in af.analyze(prog).dependencies}
    assert deps == {("S", "C", "RAW"), ("C", "D", "RAW")}
    assert [v.tensor.name for v in prog[0].output_views] == ["S.v0", "S.v1"]
    assert af.analyze(prog).levels() == [["S"], ["C"], ["D"]]


def test_symbolic_sizes_in_lower_need_binds():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n - 1,), lambda i: A[i + 1] - A[i], name="C")
    with pytest.raises(af.AliasflowError, match="not bound"):
        te.lower([C])
    prog = te.lower([C], binds={"n": 5})
    assert [(v.offset, v.shape, v.stride) for v in prog[0].input_views] == \
        [(1, (4,), (1,)), (0, (4,), (1,))]
    assert te.lower([C], binds={n: 5})[0].output_views[0].shape == (4,)


# ---- values: an element-by-element interpreter as the oracle ------------------------------
def interpret(expr, env, arrays):
    """Python scalars, one point at a time (independent of the NumPy evaluator)."""
    def go(e):
        name = type(e).__name__
        if name == "Var":
            return np.array(env[e.name], e.dtype)[()]
        if name in ("IntImm", "FloatImm"):
            return np.array(e.value, e.dtype)[()]
        if name == "Cast":
            with np.errstate(all="ignore"):
                return np.array(go(e.value)).astype(e.dtype)[()]
        if name == "ProducerLoad":
            idx = tuple(int(go(x)) for x in e.indices)
            arr = arrays[e.producer]
            assert all(0 <= x < s for x, s in zip(idx, arr.shape))
            return arr[idx]
        if name == "Call" and e.op_name == "prim.if_then_else":   # only the taken side
            c, t, f = e.args
            return np.array(go(t) if go(c) else go(f), e.dtype)[()]
        if name == "Call":
            x = [go(a) for a in e.args]
            with np.errstate(all="ignore"):
                fn = {"tirx.exp": np.exp, "tirx.log": np.log, "tirx.sqrt": np.sqrt,
                      "tirx.tanh": np.tanh, "tirx.fabs": np.abs, "tirx.pow": np.power,
                      "tirx.sigmoid": lambda v: 1 / (1 + np.exp(-v))}[e.op_name]
                return np.array(fn(*x)).astype(e.dtype)[()]
        if name == "Select":                                      # both sides
            c, t, f = go(e.condition), go(e.true_value), go(e.false_value)
            return t if c else f
        a, b = go(e.a), go(e.b)
        with np.errstate(all="ignore"):
            return {"Add": lambda: a + b, "Sub": lambda: a - b, "Mul": lambda: a * b,
                    "Div": lambda: a / b, "FloorDiv": lambda: a // b, "FloorMod": lambda: a % b,
                    "Min": lambda: a if a < b else b, "Max": lambda: a if a > b else b,
                    "GT": lambda: a > b, "LT": lambda: a < b, "GE": lambda: a >= b,
                    "LE": lambda: a <= b, "EQ": lambda: a == b, "NE": lambda: a != b,
                    "And": lambda: bool(a and b), "Or": lambda: bool(a or b)}[name]()
    return go(expr)


def interpret_graph(computes, arrays):
    for t in computes:
        if t in arrays:
            continue
        op = t.op
        for k, out in enumerate(op._outputs):
            body = op.body[k]
            res = np.zeros(tuple(int(d) for d in out.shape), out.dtype)
            for p in itertools.product(*(range(int(d)) for d in out.shape)):
                env = {iv.var.name: x for iv, x in zip(op.axis, p)}
                if isinstance(body, te.Reduce):
                    acc = body.combiner.identity().value  # TVM's init: the identity
                    ranges = [range(int(r.dom.min), int(r.dom.min) + int(r.dom.extent))
                              for r in body.axis]
                    for q in itertools.product(*ranges):
                        env.update({r.var.name: x for r, x in zip(body.axis, q)})
                        if not interpret(body.condition, env, arrays):
                            continue
                        v = interpret(body.source[0], env, arrays)
                        fn = {"sum": lambda x, y: x + y,         # max/min: TVM's selects
                              "max": lambda x, y: x if x > y else y,
                              "min": lambda x, y: x if x < y else y}
                        with np.errstate(all="ignore"):
                            acc = fn[body.combiner.name](np.array(acc, out.dtype)[()], v)
                    res[p] = acc
                else:
                    res[p] = interpret(body, env, arrays)
            arrays[out] = res


def _inputs(rng, placeholders):
    out = []
    for t in placeholders:
        shape = tuple(int(d) for d in t.shape)
        if t.dtype == "int32":
            out.append(rng.integers(-5, 6, size=shape).astype("int32"))
        else:
            out.append(rng.uniform(0.5, 1.5, size=shape).astype("float32"))
    return out


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_build_matches_an_element_by_element_interpreter(seed):
    ph, comp = random_graph(te, seed)
    rng = np.random.default_rng(seed)
    inputs = _inputs(rng, ph)
    outs = [np.full(tuple(int(d) for d in t.shape), -7, t.dtype) for t in comp]
    f = te.build(comp, ph + comp)
    f(*inputs, *outs)
    arrays = dict(zip(ph, inputs))
    interpret_graph(comp, arrays)
    for t, got in zip(comp, outs):
        np.testing.assert_allclose(got, arrays[t], rtol=2e-5, atol=1e-5, equal_nan=True,
                                   err_msg=t.name)
    # the same with the first loop cut into chunks of one or two rows
    saved, te_evaluate.CHUNK_POINTS = te_evaluate.CHUNK_POINTS, 7
    try:
        chunked = [np.full_like(o, -7) for o in outs]
        f(*inputs, *chunked)
    finally:
        te_evaluate.CHUNK_POINTS = saved
    for t, a, b in zip(comp, outs, chunked):
        np.testing.assert_array_equal(a, b, err_msg=t.name)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_lowered_program_run_by_aliasflow_matches_build(seed, affine_only):
    # guarded loads (if_then_else, where=) are not strided views: lowered whole, like the
    # non-affine ones
    ph, comp = random_graph(te, seed, affine_only=affine_only, use_where=not affine_only,
                            use_calls=not affine_only)
    rng = np.random.default_rng(seed)
    inputs = _inputs(rng, ph)
    outs = [np.zeros(tuple(int(d) for d in t.shape), t.dtype) for t in comp]
    te.build(comp, ph + comp)(*inputs, *outs)
    prog = te.lower(comp, non_affine="error" if affine_only else "whole")
    for t, x in zip(ph, inputs):
        if t in prog.views:
            prog.views[t].numpy()[...] = x
    af.run(list(prog), workers=2)
    for t, want in zip(comp, outs):
        np.testing.assert_array_equal(prog.views[t].numpy(), want, err_msg=t.name)


# ---- te.build: DLPack, in place, symbolic sizes, refusals --------------------------------
def test_seed_004_matmul_on_torch_tensors():
    torch = pytest.importorskip("torch")
    x, y = torch.rand(56, 56), torch.rand(56, 56)
    z = x.mm(y)
    n = te.convert(56)
    X = te.placeholder((n, n), name="X")
    Y = te.placeholder((n, n), name="Y")
    k = te.reduce_axis((0, n), name="k")
    Z = te.compute((n, n), lambda i, j: te.sum(X[i, k] * Y[k, j], axis=k))
    s = te.create_schedule(Z.op)
    fmm = te.build(s, [X, Y, Z], target_host="llvm", name="fmm")
    z2 = torch.empty(56, 56)
    fmm(x, y, z2)
    np.testing.assert_allclose(z.numpy(), z2.numpy(), rtol=1e-5)
    with pytest.raises(af.AliasflowError, match="DLPack"):
        fmm(x.requires_grad_(), y, z2)


def test_build_writes_in_place_and_binds_sizes():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    T = te.compute((m, n), lambda i, j: A[j, i] * 2.0, name="T")   # a temporary
    R = te.compute((m,), lambda i: te.max(T[i, 0], T[i, n - 1]), name="R")
    f = te.build([R], [A, R])
    a = np.arange(12, dtype="float32").reshape(3, 4)
    base = np.zeros(8, "float32")
    r = base[::2]                                  # a strided output, written through
    f(a, r)
    assert r.tolist() == (np.maximum(a[0], a[2]) * 2).tolist()
    assert base[1::2].tolist() == [0, 0, 0, 0]
    with pytest.raises(af.AliasflowError, match=r"shape \(5,\) does not match \(4,\)"):
        f(a, np.zeros(5, "float32"))
    with pytest.raises(af.AliasflowError, match="float32"):
        f(a.astype("float64"), r)
    with pytest.raises(af.AliasflowError, match="takes 2 arrays"):
        f(a)
    with pytest.raises(af.AliasflowError, match="shares memory"):
        f(a, a[0])
    with pytest.raises(af.AliasflowError, match="read-only"):
        f(a, np.broadcast_to(np.zeros(1, "float32"), (4,)))
    with pytest.raises(af.AliasflowError, match="DLPack"):
        f([[1.0]], r)


def test_build_refusals():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    with pytest.raises(af.AliasflowError, match="placeholder 'B' is needed"):
        te.build([C], [A, C])
    with pytest.raises(af.AliasflowError, match="args"):
        te.build([C])
    f = te.build([C], [A, B, C])
    with pytest.raises(af.AliasflowError, match=r"shape \(4,\) does not match \(3,\)"):
        f(np.zeros(3, "float32"), np.zeros(4, "float32"), np.zeros(3, "float32"))
    S = te.compute((n,), lambda i: A[i + 1], name="S")
    with pytest.raises(af.AliasflowError, match=r"index 0 ranges over \[1, 3\], outside"):
        te.build([S], [A, S])(np.zeros(3, "float32"), np.zeros(3, "float32"))
    x = te.var("x")
    X = te.compute((n,), lambda i: A[i] * x.astype("float32"), name="X")
    with pytest.raises(af.AliasflowError, match="var 'x'"):
        te.build([X], [A, X])


def test_example_runs():
    pytest.importorskip("torch")
    import runpy
    from pathlib import Path
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(EXAMPLES / "te_matmul.py"))
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("fmm(x, y, z2) equals x.mm(y)")
    assert lines[1] == "C.op.input_tensors: ['A', 'B', 'E']"
    assert lines[-4:] == ["  C -> D RAW on elements [1, 2, 3, 4, 5, 6, 7]",
                          "  C -> D RAW on elements [0, 1, 2, 3, 4, 5, 6]",
                          "aliasing arrays: [('C', 'B', 'WAR')]",
                          "C = [50.0, 40.0, 30.0, 20.0] buf = [0.0, 1.0, 2.0, 3.0, 1.0, 2.0, "
                          "3.0, 4.0]"]


def test_guarded_loads_padding_and_where():
    A = te.placeholder((5,), name="A")
    P = te.compute((7,), lambda i: te.if_then_else(te.all(i >= 1, i < 6), A[i - 1], 0.0),
                   name="P")
    k = te.reduce_axis((0, 6), name="k")
    S = te.compute((1,), lambda i: te.sum(A[k - 1], axis=k, where=k >= 1), name="S")
    a = np.arange(1, 6, dtype="float32")
    p, s = np.zeros(7, "float32"), np.zeros(1, "float32")
    te.build([P, S], [A, P, S])(a, p, s)
    assert p.tolist() == [0, 1, 2, 3, 4, 5, 0] and s.tolist() == [15]
    # the loads are read only where their guards hold: no strided view is exact
    for t in (P, S):
        with pytest.raises(te.NonAffineIndexError, match="condition holds"):
            te.lower([t])
    prog = te.lower([P, S], non_affine="whole")
    prog.views[A].numpy()[...] = a
    af.run(list(prog))
    assert prog.views[P].numpy().tolist() == p.tolist()
    assert prog.views[S].numpy().tolist() == s.tolist()
    # a Select evaluates both sides, so its loads must be in bounds everywhere
    Q = te.compute((7,), lambda i: te.select(i >= 1, A[i - 1], 0.0), name="Q")
    with pytest.raises(af.AliasflowError, match=r"ranges over \[-1, 5\]"):
        te.build([Q], [A, Q])(a, np.zeros(7, "float32"))


def test_equality_builds_nodes_but_identity_still_works():
    i, j = te.var("i"), te.var("j")
    assert isinstance(i == j, te.EQ) and isinstance(i != 3, te.NE)
    assert bool(i == i) and not bool(i == j) and i in [j, i] and j not in [i]
    assert {i: 1}[i] == 1 and (i == None) is False  # noqa: E711
    assert te.const(3) == 3 and isinstance(te.const(3) == i, te.EQ)
    assert isinstance(te.all(i > 0, j > 0), te.And) and te.any(i > 0, i > 0).dtype == "bool"
    with pytest.raises(af.AliasflowError, match="truth value"):
        bool(i < j)


def test_tvm_027_spellings():
    A = te.placeholder((3, 4), name="A")
    B = te.compute((3, 4), lambda *ix: A[ix] * 2, name="B", tag="elemwise",
                   varargs_names=["r", "c"])
    assert [iv.var.name for iv in B.op.axis] == ["r", "c"] and B.op.tag == "elemwise"
    f = te.compile(te.create_prim_func([A, B]), target="llvm")
    a, b = np.ones((3, 4), "float32"), np.zeros((3, 4), "float32")
    f(a, b)
    assert (b == 2).all()
    with pytest.raises(af.AliasflowError, match="varargs_names"):
        te.compute((3, 4), lambda *ix: A[ix], varargs_names=["r"])


def test_build_on_strided_torch_tensors_in_place():
    torch = pytest.importorskip("torch")
    A = te.placeholder((3, 4), name="A")
    B = te.compute((3, 4), lambda i, j: A[i, j] + 1, name="B")
    f = te.build([B], [A, B])
    a = torch.arange(12.0).reshape(4, 3).t()          # strided input
    storage = torch.zeros(4, 3)
    f(a, storage.t())                                 # strided output, written through
    assert torch.equal(storage.t(), a + 1)
    with pytest.raises(af.AliasflowError, match="shares memory"):
        f(a, a)


def test_lower_over_caller_memory_finds_the_hidden_dependency():
    """Two te ops with no data edge between them, but the caller's arrays alias: B's output
    memory is where A's input lives, so B must wait for C's read (a WAR no te edge shows)."""
    A = te.placeholder((4,), name="A")
    C = te.compute((4,), lambda i: A[3 - i] * 10, name="C")
    B = te.compute((4,), lambda i: te.const(1.0, "float32") + i, name="B")
    buf = np.arange(8, dtype="float32")
    out = np.zeros(4, "float32")
    prog = te.lower([C, B], arrays={A: buf[2:6], B: buf[4:8], C: out})
    assert [op.name for op in prog] == ["C", "B"]
    (read,) = prog[0].input_views
    assert af.check_memory_overlap(read, prog.views[B])
    deps = [(d.src, d.dst, d.kind) for d in af.analyze(prog).dependencies]
    assert deps == [("C", "B", "WAR")]
    af.run(list(prog), workers=2)                   # C reads the old buf[2:6] first
    assert out.tolist() == [50, 40, 30, 20] and buf[4:].tolist() == [1, 2, 3, 4]
    with pytest.raises(af.AliasflowError, match=r"is \(3,\) float32, the tensor is \(4,\)"):
        te.lower([C], arrays={A: buf[:3]})
    n = te.var("n")
    X = te.placeholder((n,), name="X")
    Y = te.compute((n,), lambda i: X[i] + 1, name="Y")
    assert te.lower([Y], arrays={X: buf})[0].output_views[0].shape == (8,)
    frozen = np.zeros(8, "float32")
    frozen.flags.writeable = False
    with pytest.raises(af.AliasflowError, match="read-only"):
        af.run(te.lower([Y], arrays={X: buf, Y: frozen})[:1])
    one = np.lib.stride_tricks.as_strided(np.zeros(1, "float32"), (8,), (0,))  # writable
    with pytest.raises(af.AliasflowError, match="maps several indices to one element"):
        af.run(te.lower([Y], arrays={X: buf, Y: one})[:1])


def test_virtual_lowering_of_a_huge_graph():
    n = te.var("n")
    X = te.placeholder((n, n), name="X")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * X[k, j], axis=k), name="Y")
    Z = te.compute((n,), lambda i: Y[i, n - 1 - i], name="Z")     # the anti-diagonal
    prog = te.lower([Z], binds={n: 10**6}, virtual=True)
    (diag,) = prog[1].input_views
    assert (diag.offset, diag.shape, diag.stride) == (10**6 - 1, (10**6,), (10**6 - 1,))
    assert [(d.src, d.dst, d.kind) for d in af.analyze(prog).dependencies] == [("Y", "Z", "RAW")]
