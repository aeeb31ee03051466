"""Tracing PyTorch: the silent-wrong patterns, checked against brute-force footprints and
against copy semantics computed here with torch on clones.

The footprint oracle works from torch's own (storage data_ptr, storage_offset, size, stride,
element_size) with Python sets; the value oracle runs the op on ``clone()`` s. Neither calls
aliasflow's solver or the tracer's helpers.
"""
import itertools
from collections import Counter

import pytest
from repo import ROOT

torch = pytest.importorskip("torch")
from hypothesis import given, settings, strategies as st  # noqa: E402

import aliasflow as af  # noqa: E402


# ---- the oracles -----------------------------------------------------------------------
def order(t):
    """Storage element indices of ``t`` in index order (with repeats)."""
    return [t.storage_offset() + sum(i * s for i, s in zip(idx, t.stride()))
            for idx in itertools.product(*(range(n) for n in t.shape))]


def E(t):
    return set(order(t))


def same(t, u):
    return t.dtype == u.dtype and order(t) == order(u) and \
        t.untyped_storage().data_ptr() == u.untyped_storage().data_ptr()


def repeated(t):
    return sum(1 for c in Counter(order(t)).values() if c > 1)


def differing(got, expected):
    """Elements of two same-shape tensors that differ (NaN equal to NaN)."""
    return int((~((got == expected) | (got.isnan() & expected.isnan()))).sum())


def summary(tr, all=False):
    return [(f.severity, f.kind, [op.label for op in f.ops], f.count)
            for f in tr.findings(all=all)]


def line_of(fn, k):
    return f"{__file__.rsplit('/', 1)[-1]}:{fn.__code__.co_firstlineno + k}"


# ---- the patterns from the issues ------------------------------------------------------
def test_subtract_first_column_is_wrong_with_the_differing_elements():
    a = torch.arange(12.).reshape(3, 4)
    expected = a.clone() - a[:, :1].clone()
    with af.trace() as tr:
        a -= a[:, :1]
    (f,) = tr.findings()
    assert (f.severity, f.kind, f.count) == ("wrong", "in-op-overlap", len(E(a) & E(a[:, :1])))
    assert f.differs == differing(a, expected) == 6
    index, got, want = f.example
    assert (got, want) == (a[index].item(), expected[index].item()) and got != want
    assert f.elements() == sorted(E(a) & E(a[:, :1]))
    assert f.lines[0].endswith(line_of(test_subtract_first_column_is_wrong_with_the_differing_elements, 4))
    assert f.names == ["a", "a[:, :1]"] and f.hint and f.occurrences == 1
    assert f.ops[0].index == 1 and f.ops[0].name == "aten.sub_.Tensor#1"


def test_divide_shifted_2d():
    a = torch.arange(1., 21.).reshape(4, 5)
    w, r = a[:, 1:], a[:, :-1]
    expected = w.clone() / r.clone()
    with af.trace() as tr:
        a[:, 1:] /= a[:, :-1]
    # div_ writes a[:, 1:] reading a[:, :-1]; the setitem's copy_ is the very same view
    assert summary(tr) == [("wrong", "in-op-overlap", ["aten.div_.Tensor"], len(E(w) & E(r)))]
    assert tr.findings()[0].differs == differing(w, expected) > 0


def test_add_transpose_on_sub_block():
    big = torch.arange(25.).reshape(5, 5)
    c = big[1:4, 1:4]
    expected = c.clone() + c.t().clone()
    with af.trace() as tr:
        c += c.t()
    assert summary(tr) == [("wrong", "in-op-overlap", ["aten.add_.Tensor"], 9)]
    assert tr.findings()[0].differs == differing(c, expected) > 0


def test_shift_3d_buffer_agrees_with_copy_semantics_so_it_is_a_hazard():
    buf = torch.arange(60.).reshape(3, 4, 5)
    expected = buf[:, :-1].clone()
    with af.trace() as tr:
        buf[:, 1:] = buf[:, :-1]
    n = len(E(buf[:, 1:]) & E(buf[:, :-1]))
    got = summary(tr)
    if differing(buf[:, 1:], expected):
        assert got == [("wrong", "in-op-overlap", ["aten.copy_.default"], n)]
    else:
        assert got == [("hazard", "in-op-overlap", ["aten.copy_.default"], n)]


def test_add_out_overlapping_is_refused_and_kept():
    x = torch.arange(6.)
    with af.trace() as tr:
        with pytest.raises(RuntimeError):
            torch.add(x[1:], x[:-1], out=x[:-1])
        y = x * 2  # the program goes on
    assert summary(tr) == [("hazard", "in-op-overlap", ["aten.add.out"],
                            len(E(x[:-1]) & E(x[1:])))]
    (f,) = tr.findings()
    op = f.ops[0]
    assert op.failed and "single memory location" in op.error and "refused" in f.note
    assert tr.ops[op.index].accesses == ()   # it touched no memory
    assert torch.equal(y, x * 2)


def test_unfold_windows_write_is_wrong_when_it_differs():
    u = torch.arange(10.)
    w = u.unfold(0, 4, 2)
    expected = w.clone() + 1   # copy semantics: every index gets its old value plus one
    with af.trace() as tr:
        w.add_(1)
    (f,) = tr.findings()
    assert (f.severity, f.kind, f.count) == ("wrong", "self-overlap-write", repeated(w))
    assert f.differs == differing(w, expected) > 0
    assert f.elements() == sorted(e for e, c in Counter(order(w)).items() if c > 1)


def test_unfold_windows_write_agreeing_this_time_is_a_hazard():
    u = torch.zeros(10)
    with af.trace() as tr:
        u.unfold(0, 4, 2).mul_(2)   # 0 * 2 twice is still 0: luck, not correctness
    assert severities_of(tr) == [("hazard", "self-overlap-write")]


def test_fill_through_an_expanded_view_is_not_a_finding():
    x = torch.zeros(4)
    with af.trace() as tr:
        x.unsqueeze(0).expand(3, 4).zero_()   # every write of an element is the same value
    assert tr.findings() == []


def severities_of(tr, all=False):
    return [(f.severity, f.kind) for f in tr.findings(all=all)]


def test_expand_write_refused():
    x = torch.zeros(4)
    with af.trace() as tr:
        with pytest.raises(RuntimeError):
            x.expand(3, 4).add_(1)
    assert summary(tr) == [("hazard", "self-overlap-write", ["aten.add_.Tensor"], 4)]


def test_order_facts_only_on_request():
    c = torch.zeros(4, 4)
    with af.trace() as tr:
        c[:2].add_(1)                # writes rows 0-1
        s = c.t()[:, :3].sum()       # reads c.t(): rows 0-2 of c, a different view
        c[1:3].fill_(2)              # overwrites rows 1-2: WAR after the read, WAW after add_
    del s
    rows01, read, rows12 = c[:2], c.t()[:, :3], c[1:3]
    assert tr.findings() == []
    assert summary(tr, all=True) == [
        ("order", "RAW", ["aten.add_.Tensor", "aten.sum.default"], len(E(rows01) & E(read))),
        ("order", "WAW", ["aten.add_.Tensor", "aten.fill_.Scalar"], len(E(rows01) & E(rows12))),
        ("order", "WAR", ["aten.sum.default", "aten.fill_.Scalar"], len(E(read) & E(rows12))),
    ]


def test_overwritten_elements_do_not_flow():
    c = torch.zeros(8)
    with af.trace() as tr:
        c[:4].add_(1)       # writes 0..3
        c[2:4].zero_()      # overwrites 2..3 (WAW, 2 elements)
        s = c[1:6].sum()    # sees add_'s 1 (element 1 only) and zero_'s 2..3
    del s
    assert summary(tr, all=True) == [   # program order of the pairs
        ("order", "WAW", ["aten.add_.Tensor", "aten.zero_.default"], 2),
        ("order", "RAW", ["aten.add_.Tensor", "aten.sum.default"], 1),
        ("order", "RAW", ["aten.zero_.default", "aten.sum.default"], 2),
    ]


def test_permuted_reads_of_the_same_bytes_are_not_order_facts():
    w = torch.zeros(3, 4)
    with af.trace() as tr:
        w.add_(1)
        s = w.t().sum()          # the same bytes through a permutation: not different data
    del s
    assert tr.findings(all=True) == []


def test_producer_flow_is_not_a_finding():
    with af.trace() as tr:
        a = torch.ones(4, 4)     # made here
        s = a.t().sum()          # read through another view: a producer flow
        b = a * 2
        r = b[1:].sum()
    del s, r
    assert tr.findings(all=True) == []


def test_stale_view():
    x = torch.arange(8.)
    with af.trace() as tr:
        old = x[:4]              # a view made before the write ...
        x[2:6] = 0               # ... which writes two of its elements and two outside it
        s = old.sum()            # reads them: the program may have expected a copy
        x[6:] = 1                # writes through a part of x: reading x after is what views are for
        t = x.sum()
    del s, t
    (f,) = tr.findings()
    assert (f.severity, f.kind) == ("stale-view", "RAW")
    assert [op.label.split(".")[1] for op in f.ops] == ["fill_", "sum"]
    assert f.count == len(E(x[:4]) & E(x[2:6])) == 2
    assert f.names[0] == "old" and f.lines[0].endswith(line_of(test_stale_view, 5))


def test_a_view_made_after_the_write_is_not_stale():
    w = torch.ones(4, 3)
    with af.trace() as tr:
        for _ in range(3):
            s = w.t().sum()      # a fresh view each step
            w.add_(1)            # an update through w itself
    del s
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
    assert summary(tr, all=True) == [("order", "RAW", ["aten.masked_fill_.Scalar",
                                                       "aten.sum.default"],
                                      len(written & E(col0)))]


def test_index_put_repeats_with_differing_values():
    m = torch.zeros(6)
    idx = torch.tensor([1, 4, 1, 1, 2, 4])
    with af.trace() as tr:
        m[idx] = torch.arange(6.)
        m.index_put_((idx,), torch.ones(6), accumulate=True)  # accumulating: no finding
        m[torch.tensor([3, 3])] = 5.0                         # the same value twice: none
    (f,) = tr.findings()
    assert (f.severity, f.kind, f.differs) == ("wrong", "duplicate-index", 2)
    assert f.elements() == [1, 4]
    index, got, values = f.example
    assert index == (1,) and sorted(values) == [0.0, 2.0, 3.0] and got in values
    assert "accumulate=True" in f.hint


@pytest.mark.parametrize("write", [
    lambda x, i, v: x.scatter(0, i, v),
    lambda x, i, v: x.index_put((i,), v),
    lambda x, i, v: x.index_copy(0, i, v),
    lambda x, i, v: x.put(i, v),
    lambda x, i, v: x.scatter_(0, i, v),
    lambda x, i, v: x.index_copy_(0, i, v),
    lambda x, i, v: x.put_(i, v),
], ids=["scatter", "index_put", "index_copy", "put", "scatter_", "index_copy_", "put_"])
def test_repeated_indices_out_of_place_and_in_place(write):
    x = torch.zeros(5)
    i = torch.tensor([3, 1, 3])
    v = torch.tensor([1., 2., 4.])
    with af.trace() as tr:
        y = write(x, i, v)
    (f,) = tr.findings()
    assert (f.severity, f.kind, f.differs) == ("wrong", "duplicate-index", 1)
    assert f.example[0] == (3,) and sorted(f.example[2]) == [1.0, 4.0]
    assert f.example[1] == y[3].item()


# ---- properties against the oracles ----------------------------------------------------
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
    try:
        expected = va.clone() + vb.clone()     # copy semantics, where va has no repeats
    except RuntimeError:
        expected = None                        # shapes do not broadcast: add_ raises too
    with af.trace() as tr:
        try:
            va.add_(vb)
            refused = False
        except RuntimeError:
            refused = True
    got = [(f.severity, f.kind, f.count) for f in tr.findings()]
    want = []
    shared = E(va) & E(vb)
    if shared and not same(va, vb):
        if refused or not repeated(va) and not differing(va, expected.expand(va.shape)):
            want.append(("hazard", "in-op-overlap", len(shared)))
        elif not repeated(va):
            want.append(("wrong", "in-op-overlap", len(shared)))
    if repeated(va):
        assert ("self-overlap-write", repeated(va)) in [(k, c) for _, k, c in got]
        got = [g for g in got if g[1] != "self-overlap-write" and g[1] != "in-op-overlap"]
        want = []
    assert got == want


slices = st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(1, 2),
                   st.integers(0, 3), st.integers(1, 4), st.integers(1, 2), st.booleans())


def _slice(base, p):
    r0, rn, rs, c0, cn, cs, tr = p
    v = base[r0:r0 + rn * rs:rs, c0:c0 + cn * cs:cs]
    return v.t() if tr else v


@settings(max_examples=80, deadline=None)
@given(slices, slices, slices)
def test_order_facts_match_oracle(pa, pb, pc):
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
        # (program order of the pairs: copy_ 1, sum 3, zero_ 5)
        n = len(E(x) & E(y))
        if n and E(x) != E(y):
            expected.append(("order", kind, ops, n))
    # the views were made before the trace: vb is stale when copy_ changed some of its
    # elements through va, which also reaches outside it (then that pair is not repeated as
    # an order fact)
    shared = E(va) & E(vb)
    stale = shared and not E(va) <= E(vb)
    if stale:
        expected = [e for e in expected if e[1] != "RAW"]
    assert [f for f in summary(tr, all=True) if f[0] == "order"] == expected
    assert summary(tr) == ([("stale-view", "RAW", ["aten.copy_.default", "aten.sum.default"],
                             len(shared))] if stale else [])


# ---- schema table ----------------------------------------------------------------------
def _modes(func):
    from aliasflow.interop.torch_trace.schema import spec_of
    return {a.name: a.mode for a in spec_of(func).args if a.holds != "other"}


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
    assert _modes(aten.split.Tensor) == {"self": None}                 # Tensor(a)[] return
    assert _modes(aten.empty_like.default) == {"self": None}           # reads no data
    assert _modes(aten._unsafe_view.default) == {"self": None}         # unannotated view
    assert _modes(aten._foreach_add_.List) == {"self": "RW", "other": "R"}
    assert _modes(aten.native_batch_norm.default) == {
        "input": "R", "weight": "R", "bias": "R", "running_mean": "RW", "running_var": "RW"}
    assert _modes(aten.index_put_.default) == {"self": "RW", "indices": "R", "values": "R"}
    from aliasflow.interop.torch_trace.schema import spec_of
    assert spec_of(aten.bernoulli_.float).random and not spec_of(aten.add_.Tensor).random
    assert spec_of(aten.split.Tensor).view_only


def test_metadata_mutations_record_no_data_access():
    x = torch.arange(6.).reshape(2, 3)
    with af.trace() as tr:
        x.t_()
        x.resize_(3, 2)
        x.add_(1)
    kinds = {tr.info(k).label: [(s.label, s.mode) for s in tr.info(k).slots]
             for k in range(len(tr))}
    assert kinds["aten.t_.default"] == [("self", None)]
    assert kinds["aten.resize_.default"] == [("self", None)]
    assert kinds["aten.add_.Tensor"] == [("self", "RW")]
    assert tr.findings(all=True) == []


def test_foreach_lists():
    ps = [torch.zeros(3), torch.zeros(2)]
    gs = [torch.ones(3), torch.ones(2)]
    with af.trace() as tr:
        torch._foreach_add_(ps, gs)
        torch._foreach_mul_(ps, ps)      # elementwise per position: exempt
    assert [(s.label, s.mode) for s in tr.info(0).slots] == [
        ("self[0]", "RW"), ("self[1]", "RW"), ("other[0]", "R"), ("other[1]", "R")]
    assert tr.findings() == []
    assert tr.replay().identical


def test_split_chunk_unbind_and_iteration_do_not_break():
    with af.trace() as tr:
        a = torch.arange(6.).split(2)
        b = torch.arange(6.).chunk(3)
        c = torch.ones(3, 2).unbind(0)
        d = [row.sum() for row in torch.ones(3, 2)]
    assert [x.tolist() for x in a] == [[0., 1.], [2., 3.], [4., 5.]]
    assert len(b) == 3 and len(c) == 3 and len(d) == 3
    assert not any(c.untracked for c in tr.calls)


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
    readme = ROOT / "README.md"
    code = next(block for block in re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
                if "af.trace()" in block)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "wrong in-op-overlap ['aten.sub_.Tensor'] 6 ['README.md:4']"
    assert lines[1] == "a[1, 1]: got 5.0, expected 1.0"
    assert lines[2].endswith("identical")


def test_index_copy_and_scatter_exact_elements():
    m = torch.zeros(5, 3)
    with af.trace() as tr:
        m.index_copy_(0, torch.tensor([4, 1]), torch.ones(2, 3))   # rows 4 and 1
        s = m.t()[0].sum()                                          # column 0: m[i, 0]
        v = torch.zeros(8)
        v.scatter_(0, torch.tensor([6, 2, 6]), torch.tensor([1., 2., 3.]))  # 6 twice
        r = v[::2].sum()                                            # sees elements 2 and 6
    del s, r
    got = summary(tr, all=True)
    assert got == [
        ("wrong", "duplicate-index", ["aten.scatter_.src"], 1),
        ("order", "RAW", ["aten.index_copy_.default", "aten.sum.default"], 2),  # m[4,0], m[1,0]
        ("order", "RAW", ["aten.scatter_.src", "aten.sum.default"], 2),
    ]
    assert tr.findings()[0].elements() == [6]
    assert tr.replay().identical
