"""Tracing PyTorch: the silent-wrong patterns, checked against brute-force footprints.

The oracle works from torch's own (storage data_ptr, storage_offset, size, stride,
element_size) with Python sets; it never calls aliasflow's solver or the tracer's helpers.
"""
import itertools
from collections import Counter

import numpy as np
import pytest
from repo import ROOT

torch = pytest.importorskip("torch")
from hypothesis import given, settings, strategies as st  # noqa: E402

import aliasflow as af  # noqa: E402


# ---- the oracle ------------------------------------------------------------------------
def order(t):
    """Storage element indices of ``t`` in index order (with repeats)."""
    return [t.storage_offset() + sum(i * s for i, s in zip(idx, t.stride()))
            for idx in itertools.product(*(range(n) for n in t.shape))]


def E(t):
    return set(order(t))


def byte_set(t):
    base = t.untyped_storage().data_ptr()
    k = t.element_size()
    return {base + e * k + b for e in order(t) for b in range(k)}


def same(t, u):
    return t.dtype == u.dtype and [e for e in order(t)] == [e for e in order(u)] and \
        t.untyped_storage().data_ptr() == u.untyped_storage().data_ptr()


def repeated(t):
    return sum(1 for c in Counter(order(t)).values() if c > 1)


def summary(tr):
    return [(f.kind, [op.aten for op in f.ops], f.count) for f in tr.findings()]


# ---- the patterns from the issue -------------------------------------------------------
def test_subtract_first_column():
    a = torch.arange(12.).reshape(3, 4)
    with af.trace() as tr:
        a -= a[:, :1]
    assert summary(tr) == [("in-op-overlap", ["aten.sub_.Tensor"], len(E(a) & E(a[:, :1])))]
    f = tr.findings()[0]
    assert f.elements() == sorted(E(a) & E(a[:, :1]))
    assert f.lines == [f"{__file__}:{test_subtract_first_column.__code__.co_firstlineno + 3}"]
    assert f.ops[0].index == 1 and f.ops[0].name == "aten.sub_.Tensor#1"


def test_divide_shifted_2d():
    a = torch.arange(1., 21.).reshape(4, 5)
    w, r = a[:, 1:], a[:, :-1]
    with af.trace() as tr:
        a[:, 1:] /= a[:, :-1]
    # div_ writes a[:, 1:] reading a[:, :-1]; the setitem's copy_ is the very same view
    assert summary(tr) == [("in-op-overlap", ["aten.div_.Tensor"], len(E(w) & E(r)))]


def test_add_transpose_on_sub_block():
    big = torch.arange(25.).reshape(5, 5)
    c = big[1:4, 1:4]
    with af.trace() as tr:
        c += c.t()
    assert summary(tr) == [("in-op-overlap", ["aten.add_.Tensor"], len(E(c) & E(c.t())))]
    assert len(E(c) & E(c.t())) == 9


def test_shift_3d_buffer():
    buf = torch.arange(60.).reshape(3, 4, 5)
    with af.trace() as tr:
        buf[:, 1:] = buf[:, :-1]
    n = len(E(buf[:, 1:]) & E(buf[:, :-1]))
    assert n == 3 * 2 * 5
    assert summary(tr) == [("in-op-overlap", ["aten.copy_.default"], n)]


def test_add_out_overlapping_is_refused_and_kept():
    x = torch.arange(6.)
    with af.trace() as tr:
        with pytest.raises(RuntimeError):
            torch.add(x[1:], x[:-1], out=x[:-1])
        y = x * 2  # the program goes on
    assert summary(tr) == [("in-op-overlap", ["aten.add.out"], len(E(x[:-1]) & E(x[1:])))]
    op = tr.findings()[0].ops[0]
    assert op.failed and "single memory location" in op.error
    assert op.input_views == [] and op.output_views == []  # it touched no memory
    assert torch.equal(y, x * 2)


def test_unfold_windows_write():
    u = torch.zeros(10)
    w = u.unfold(0, 4, 2)
    with af.trace() as tr:
        w.mul_(2)
    assert summary(tr) == [("self-overlap-write", ["aten.mul_.Tensor"], repeated(w))]
    assert tr.findings()[0].elements() == sorted(e for e, c in Counter(order(w)).items() if c > 1)


def test_expand_write_refused():
    x = torch.zeros(4)
    with af.trace() as tr:
        with pytest.raises(RuntimeError):
            x.expand(3, 4).add_(1)
    assert summary(tr) == [("self-overlap-write", ["aten.add_.Tensor"], 4)]


def test_implicit_raw_war_waw():
    c = torch.zeros(4, 4)
    with af.trace() as tr:
        c[:2].add_(1)                # writes rows 0-1
        s = c.t()[:, :3].sum()       # reads c.t(): rows 0-2 of c, a different view
        c[1:3].fill_(2)              # overwrites rows 1-2: WAR after the read, WAW after add_
    del s
    rows01, read, rows12 = c[:2], c.t()[:, :3], c[1:3]
    assert summary(tr) == [
        ("RAW", ["aten.add_.Tensor", "aten.sum.default"], len(E(rows01) & E(read))),
        ("WAW", ["aten.add_.Tensor", "aten.fill_.Scalar"], len(E(rows01) & E(rows12))),
        ("WAR", ["aten.sum.default", "aten.fill_.Scalar"], len(E(read) & E(rows12))),
    ]


def test_overwritten_elements_do_not_flow():
    c = torch.zeros(8)
    with af.trace() as tr:
        c[:4].add_(1)       # writes 0..3
        c[2:4].zero_()      # overwrites 2..3 (WAW, 2 elements)
        s = c[1:6].sum()    # sees add_'s 1 (element 1 only) and zero_'s 2..3
    del s
    assert summary(tr) == [
        ("RAW", ["aten.add_.Tensor", "aten.sum.default"], 1),
        ("RAW", ["aten.zero_.default", "aten.sum.default"], 2),
        ("WAW", ["aten.add_.Tensor", "aten.zero_.default"], 2),
    ]


def test_producer_flow_is_not_a_finding():
    with af.trace() as tr:
        a = torch.ones(4, 4)     # made here
        s = a.t().sum()          # read through another view: a producer flow
        b = a * 2
        r = b[1:].sum()
    del s, r
    assert tr.findings() == []


def test_masked_fill_exact_elements():
    m = torch.zeros(4, 4)
    mask = torch.tensor([[1, 0, 0, 1], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 1]]).bool()
    col0 = m.t()[0]
    with af.trace() as tr:
        m.masked_fill_(mask, 1.0)
        s = m.t()[0].sum()
    del s
    written = {i for i, v in enumerate(mask.reshape(-1).tolist()) if v}
    assert summary(tr) == [("RAW", ["aten.masked_fill_.Scalar", "aten.sum.default"],
                            len(written & E(col0)))]


def test_index_put_repeats():
    m = torch.zeros(6)
    idx = torch.tensor([1, 4, 1, 1, 2, 4])
    with af.trace() as tr:
        m[idx] = torch.arange(6.)
        m.index_put_((idx,), torch.ones(6), accumulate=True)  # accumulating: no finding
    assert summary(tr) == [("self-overlap-write", ["aten.index_put_.default"], 2)]
    assert tr.findings()[0].elements() == [1, 4]


# ---- properties against the oracle -----------------------------------------------------
def _view(base, params):
    off, (n0, n1), (s0, s1) = params
    return base.as_strided((n0, n1), (s0, s1), off)


views = st.tuples(st.integers(0, 6), st.tuples(st.integers(1, 3), st.integers(1, 3)),
                  st.tuples(st.integers(0, 4), st.integers(0, 4)))


@settings(max_examples=80, deadline=None)
@given(views, views)
def test_in_op_findings_match_oracle(pa, pb):
    base = torch.arange(32.)
    va, vb = _view(base, pa), _view(base, pb)
    with af.trace() as tr:
        try:
            va.add_(vb)
        except RuntimeError:
            pass
    expected = []
    shared = E(va) & E(vb)
    if shared and not same(va, vb):
        expected.append(("in-op-overlap", ["aten.add_.Tensor"], len(shared)))
    if repeated(va):
        expected.append(("self-overlap-write", ["aten.add_.Tensor"], repeated(va)))
    assert summary(tr) == expected


slices = st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(1, 2),
                   st.integers(0, 3), st.integers(1, 4), st.integers(1, 2), st.booleans())


def _slice(base, p):
    r0, rn, rs, c0, cn, cs, tr = p
    v = base[r0:r0 + rn * rs:rs, c0:c0 + cn * cs:cs]
    return v.t() if tr else v


@settings(max_examples=80, deadline=None)
@given(slices, slices, slices)
def test_dependency_findings_match_oracle(pa, pb, pc):
    base = torch.zeros(6, 6)
    va, vb, vc = _slice(base, pa), _slice(base, pb), _slice(base, pc)
    src = torch.ones(va.shape)
    with af.trace() as tr:
        va.copy_(src)        # writes va
        s = vb.sum()         # reads vb
        vc.zero_()           # writes vc
    del s
    expected = []
    for kind, x, y, ops in (("RAW", va, vb, ["aten.copy_.default", "aten.sum.default"]),
                            ("WAW", va, vc, ["aten.copy_.default", "aten.zero_.default"]),
                            ("WAR", vb, vc, ["aten.sum.default", "aten.zero_.default"])):
        n = len(E(x) & E(y))
        if n and not same(x, y):
            expected.append((kind, ops, n))
    assert summary(tr) == expected


# ---- schema table ----------------------------------------------------------------------
def _modes(func):
    from aliasflow.interop.torch_trace.schema import op_spec
    return {a.name: a.mode for a in op_spec(func).tensor_args}


def test_schema_modes_and_exceptions():
    aten = torch.ops.aten
    assert _modes(aten.add_.Tensor) == {"self": "RW", "other": "R"}
    assert _modes(aten.add.out) == {"self": "R", "other": "R", "out": "W"}
    assert _modes(aten.copy_.default) == {"self": "W", "src": "R"}     # schema says a!
    assert _modes(aten.fill_.Scalar) == {"self": "W"}
    assert _modes(aten.t_.default) == {"self": None}                   # metadata only
    assert _modes(aten.resize_.default) == {"self": None}
    assert _modes(aten.as_strided_.default) == {"self": None}
    assert _modes(aten.slice.Tensor) == {"self": None}                 # a view
    assert _modes(aten.empty_like.default) == {"self": None}           # reads no data
    assert _modes(aten._unsafe_view.default) == {"self": None}         # unannotated view
    assert _modes(aten._foreach_add_.List) == {"self": "RW", "other": "R"}
    from aliasflow.interop.torch_trace.schema import op_spec
    assert op_spec(aten.bernoulli_.float).random and not op_spec(aten.add_.Tensor).random


def test_metadata_mutations_record_no_data_access():
    x = torch.arange(6.).reshape(2, 3)
    with af.trace() as tr:
        x.t_()
        x.resize_(3, 2)
        x.add_(1)
    kinds = {op.aten: [(a.label, a.mode) for a in op.accesses] for op in tr.ops}
    assert kinds["aten.t_.default"] == [] and kinds["aten.resize_.default"] == []
    assert kinds["aten.add_.Tensor"] == [("self", "R"), ("self", "W")]
    assert tr.findings() == []


def test_foreach_lists():
    ps = [torch.zeros(3), torch.zeros(2)]
    gs = [torch.ones(3), torch.ones(2)]
    with af.trace() as tr:
        torch._foreach_add_(ps, gs)
    (op,) = tr.ops
    assert [(a.label, a.mode) for a in op.accesses] == [
        ("self[0]", "R"), ("self[1]", "R"), ("other[0]", "R"), ("other[1]", "R"),
        ("self[0]", "W"), ("self[1]", "W")]
    assert tr.replay().identical


def test_analysis_functions_take_a_trace():
    c = torch.zeros(4, 4)
    with af.trace() as tr:
        c[:2].add_(1)
        s = c.t().sum()
    del s
    g = af.analyze(tr.ops)
    assert [(d.src, d.dst, d.kind, d.implicit) for d in g.dependencies] == [
        ("aten.add_.Tensor#1", "aten.sum.default#3", "RAW", True)]
    flows = af.value_flow(tr.ops, tr.ops[3])
    writers = {f.writer: f.count for f in flows}
    assert writers["aten.add_.Tensor#1"] == 8 * 4   # bytes: the trace's views are byte views


def test_lazy_export():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import sys, aliasflow; "
                          "print('torch' in sys.modules); aliasflow.trace; "
                          "print('torch' in sys.modules)"],
                         capture_output=True, text=True, check=True,
                         env={**__import__("os").environ,
                              "PYTHONPATH": str(__import__("pathlib").Path(af.__file__)
                                                .parents[1])})
    assert out.stdout.split() == ["False", "True"]


def test_readme_torch_example():
    import contextlib
    import io
    import re
    from pathlib import Path
    readme = ROOT / "README.md"
    code = next(block for block in re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
                if "af.trace()" in block)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "in-op-overlap ['aten.sub_.Tensor'] 3 ['README.md:4']"
    assert lines[1].endswith("identical")


def test_index_copy_and_scatter_exact_elements():
    m = torch.zeros(5, 3)
    with af.trace() as tr:
        m.index_copy_(0, torch.tensor([4, 1]), torch.ones(2, 3))   # rows 4 and 1
        s = m.t()[0].sum()                                          # column 0: m[i, 0]
        v = torch.zeros(8)
        v.scatter_(0, torch.tensor([6, 2, 6]), torch.tensor([1., 2., 3.]))  # 6 twice
        r = v[::2].sum()                                            # sees elements 2 and 6
    del s, r
    got = [(f.kind, [op.aten for op in f.ops], f.count) for f in tr.findings()]
    assert got == [
        ("self-overlap-write", ["aten.scatter_.src"], 1),
        ("RAW", ["aten.index_copy_.default", "aten.sum.default"], 2),   # m[4,0], m[1,0]
        ("RAW", ["aten.scatter_.src", "aten.sum.default"], 2),
    ]
    assert tr.findings()[0].elements() == [6]
    assert tr.replay().identical
