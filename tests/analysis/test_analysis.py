"""Dependencies, value flow and races, against the seed's answers and brute-force oracles."""
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.analysis.flow import value_flow
from aliasflow.analysis.races import find_races
from aliasflow.seeds import complex_example, simple_example

from strategies import brute_conflicts, programs, reachable, view_footprint
from walker_backends import walker_backend  # noqa: F401  (every test on both walks)

SEED_CONFLICTS = {
    ("fill_op_a", "transform_op_a", "RAW", True, "viewA1", "viewA2", (5, 6, 9, 10)),
    ("fill_op_a", "transform_op_a", "WAW", True, "viewA1", "viewA3", (10,)),
    ("fill_op_a", "transform2_op_a", "RAW", True, "viewA1", "viewA3", (10,)),
    ("transform_op_a", "transform2_op_a", "RAW", False, "viewA3", "viewA3", (10, 11, 14, 15)),
    ("fill_op_a", "add_op_ab", "RAW", False, "viewA1", "viewA1", (0, 1, 2, 4, 5, 6, 8, 9, 10)),
    ("transform_op_a", "add_op_ab", "RAW", True, "viewA3", "viewA1", (10,)),
}


def records(graph):
    return {(d.src, d.dst, d.kind, d.implicit, d.src_view, d.dst_view, tuple(d.elements))
            for d in graph.dependencies}


def test_seed_complex_answers():
    ops = complex_example().ops
    assert af.analyze_dependencies(ops) == {
        "fill_op_a": [], "transform_op_a": ["fill_op_a"],
        "transform2_op_a": ["fill_op_a", "transform_op_a"],
        "add_op_ab": ["fill_op_a", "transform_op_a"]}
    assert records(af.analyze(ops, complete=True)) == SEED_CONFLICTS
    graph = af.analyze(ops)
    assert records(graph) <= SEED_CONFLICTS
    assert graph.levels() == [["fill_op_a"], ["transform_op_a"],
                              ["transform2_op_a", "add_op_ab"]]
    # the seed's prose is wrong: transform_op_a and add_op_ab may not run in parallel
    assert "transform_op_a" in graph.predecessors("add_op_ab")
    assert graph.critical_path() == (3.0, ["fill_op_a", "transform_op_a", "transform2_op_a"])
    assert graph.topological_order() == ["fill_op_a", "transform_op_a", "transform2_op_a",
                                         "add_op_ab"]


def test_seed_simple_answers():
    ops = simple_example().ops
    assert af.analyze_dependencies(ops) == {"read_op": [], "write_op": []}
    graph = af.analyze(ops)
    assert graph.dependencies == [] and graph.levels() == [["read_op", "write_op"]]
    assert not af.check_memory_overlap(*[v for op in ops
                                         for v in op.input_views + op.output_views])


def test_seed_value_flow():
    flows = value_flow(complex_example().ops)
    assert [(f.view, f.writer, f.elements.tolist()) for f in flows["transform2_op_a"]] == \
        [("viewA3", "transform_op_a", [10, 11, 14, 15])]
    assert [(f.view, f.writer, f.count) for f in flows["add_op_ab"]] == \
        [("viewA1", "fill_op_a", 8), ("viewA1", "transform_op_a", 1), ("viewB1", None, 4)]


def test_a_record_cut_in_two_yields_one_dependency():
    t = af.Tensor("T", (10,))
    ops = [af.FillOperation("w0").set_outputs(t.view()),
           af.FillOperation("w1").set_outputs(t[4:6]),
           af.TransformOperation("r").set_inputs(t.view())]
    deps = [(d.src, d.dst, d.kind) for d in af.analyze(ops).dependencies]
    assert deps == [("w0", "w1", "WAW"), ("w0", "r", "RAW"), ("w1", "r", "RAW")]
    flows = af.value_flow(ops, "r")
    assert [(f.writer, f.count) for f in flows] == [("w0", 8), ("w1", 2)]


def test_dot_styles_edges_by_kind():
    # "\\n" is DOT's line break inside a label (names themselves are escaped)
    dot = af.analyze(complex_example().ops).to_dot()
    assert ('fill_op_a -> transform_op_a [label="RAW implicit\\nviewA1 -> viewA2" '
            'color=red style=solid]') in dot
    assert ('fill_op_a -> transform_op_a [label="WAW implicit\\nviewA1 -> viewA3" '
            'color=red style=dashed]') in dot
    assert ('transform_op_a -> transform2_op_a [label="RAW\\nviewA3 -> viewA3" '
            'color=black style=solid]') in dot


def test_critical_path_with_costs():
    g = af.analyze(complex_example().ops)
    length, path = g.critical_path({"add_op_ab": 10})
    assert path == ["fill_op_a", "transform_op_a", "add_op_ab"] and length == 12


@settings(max_examples=1500, deadline=None)
@given(programs(max_ops=9, max_tensors=2), st.booleans())
def test_ordering_edges_are_sound_and_closed(ops, minimal):
    truth = brute_conflicts(ops)
    graph = af.analyze(ops, minimal=minimal)
    names = [op.name for op in ops]
    keys = [(d.src, d.dst, d.kind, id(d.src_access), id(d.dst_access))
            for d in graph.dependencies]
    assert len(keys) == len(set(keys))  # no record twice
    for d in graph.dependencies:  # every edge is a real conflict of the stated kind
        assert (d.src, d.dst, d.kind, d.src_view, d.dst_view) in truth
        va, vb = d.views
        assert d.implicit == (not va.same_window(vb))
    reach = reachable(names, graph.edges)
    for src, dst, *_ in truth:  # every conflicting pair is ordered by the closure
        assert dst in reach[src], (src, dst)


@settings(max_examples=200, deadline=None)
@given(programs(max_ops=40, max_tensors=1), st.booleans())
def test_long_programs_on_one_storage_stay_sound_and_closed(ops, minimal):
    """Long programs on one storage: records are retired, cut and pruned many times over."""
    truth = brute_conflicts(ops)
    graph = af.analyze(ops, minimal=minimal)
    assert {(d.src, d.dst, d.kind, d.src_view, d.dst_view) for d in graph.dependencies} <= truth
    reach = reachable([op.name for op in ops], graph.edges)
    assert all(dst in reach[src] for src, dst, *_ in truth)


@settings(max_examples=200, deadline=None)
@given(programs(max_ops=30, max_tensors=1), st.integers(1, 4))
def test_a_short_ancestor_window_only_keeps_more_edges(ops, window):
    import aliasflow.analysis.dependencies as deps
    saved = deps.WINDOW, deps._MASK
    deps.WINDOW, deps._MASK = window, (1 << window) - 1
    try:
        graph = af.analyze(ops, minimal=True)
    finally:
        deps.WINDOW, deps._MASK = saved
    truth = brute_conflicts(ops)
    assert {(d.src, d.dst, d.kind, d.src_view, d.dst_view) for d in graph.dependencies} <= truth
    reach = reachable([op.name for op in ops], graph.edges)
    assert all(dst in reach[src] for src, dst, *_ in truth)


@settings(max_examples=600, deadline=None)
@given(programs(max_ops=7, max_tensors=2))
def test_complete_equals_brute_force(ops):
    graph = af.analyze(ops, complete=True)
    got = {(d.src, d.dst, d.kind, d.src_view, d.dst_view) for d in graph.dependencies}
    assert got == brute_conflicts(ops)
    for d in graph.dependencies:
        a, b = d.views
        assert set(d.elements) == view_footprint(a) & view_footprint(b)
    seed = {n: [] for n in (op.name for op in ops)}
    for src, dst, kind, *_ in sorted(brute_conflicts(ops)):
        if kind == "RAW" and src not in seed[dst]:
            seed[dst].append(src)
    order = {op.name: k for k, op in enumerate(ops)}
    assert af.analyze_dependencies(ops) == {k: sorted(v, key=order.get) for k, v in seed.items()}


@settings(max_examples=600, deadline=None)
@given(programs(max_ops=8, max_tensors=2))
def test_value_flow_matches_element_simulation(ops):
    last = {}  # (tensor id, element) -> op name; an element-by-element simulation
    expected = {}
    for op in ops:
        got = []
        for v in op.input_views:
            per_writer = {}
            for e in view_footprint(v):
                per_writer.setdefault(last.get((id(v.tensor), e)), set()).add(e)
            got += [(v.name, w, sorted(es)) for w, es in per_writer.items()]
        expected[op.name] = sorted(got, key=str)
        for v in op.output_views:
            for e in view_footprint(v):
                last[id(v.tensor), e] = op.name
    flows = value_flow(ops)
    for op in ops:
        assert sorted(((f.view, f.writer, f.elements.tolist()) for f in flows[op.name]),
                      key=str) == expected[op.name]


@settings(max_examples=600, deadline=None)
@given(programs(max_ops=8, max_tensors=2), st.data())
def test_races_match_brute_force(ops, data):
    names = [op.name for op in ops]
    streams = {n: data.draw(st.integers(0, 2)) for n in names}
    edges = [tuple(sorted(data.draw(st.lists(st.sampled_from(names), min_size=2, max_size=2,
                                             unique=True)), key=names.index))
             for _ in range(data.draw(st.integers(0, 3)))] if len(names) > 1 else []
    hb = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
          if streams[a] == streams[b]] + edges
    reach = reachable(names, hb)
    expect = {c for c in brute_conflicts(ops) if c[1] not in reach[c[0]]}
    got = {(d.src, d.dst, d.kind, d.src_view, d.dst_view)
           for d in find_races(ops, streams, edges=edges)}
    assert got == expect


def test_race_inputs_are_checked():
    ops = complex_example().ops
    with pytest.raises(af.AliasflowError, match="no op named 'nope'"):
        find_races(ops, edges=[("nope", "add_op_ab")])
    with pytest.raises(af.AliasflowError, match="cycle"):
        find_races(ops, edges=[("fill_op_a", "add_op_ab"), ("add_op_ab", "fill_op_a")])


def test_analysis_never_enumerates_huge_views():
    big = af.Tensor.virtual("Big", (1 << 40,), "int8")
    w = af.FillOperation("w").set_outputs(big.as_strided((1 << 20, 1 << 19), (1 << 20, 1)))
    r = af.TransformOperation("r").set_inputs(big.as_strided((1 << 19, 2), (1 << 20, 1 << 19)))
    r2 = af.TransformOperation("r2").set_inputs(big.as_strided((1 << 19,), (1,), 1 << 19))
    w2 = af.FillOperation("w2").set_outputs(big.reshape(1 << 20, 1 << 20).T[0])
    g = af.analyze([w, r, r2, w2], complete=True)
    assert [(d.src, d.dst, d.kind) for d in g.dependencies] == [
        ("w", "r", "RAW"), ("w", "w2", "WAW"), ("r", "w2", "WAR")]
    # w -> w2 is implied by w -> r -> w2, so the ordering edges leave it out
    assert [(d.src, d.dst, d.kind) for d in af.analyze([w, r, r2, w2]).dependencies] == [
        ("w", "r", "RAW"), ("r", "w2", "WAR")]
    assert g.dependencies[0].count == 1 << 19
    assert g.dependencies[1].count == 1 << 20
    with pytest.raises(af.ExecutionError, match="virtual"):
        af.run([w])


def test_bad_programs_are_refused():
    a = af.FillOperation("x")
    with pytest.raises(af.AliasflowError, match="op name 'x' is used twice"):
        af.analyze([a, af.FillOperation("x")])
    with pytest.raises(af.AliasflowError, match=r"ops\[1\] is not an Operation"):
        af.analyze([a, "op"])


def test_value_flow_refuses_storages_too_big_for_a_shadow():
    big = af.Tensor.virtual("Big", (1 << 40,))
    ops = [af.FillOperation("w").set_outputs(big[:10]),
           af.TransformOperation("r").set_inputs(big[-3:])]  # a shadow spans what is touched
    with pytest.raises(af.AliasflowError, match=r"'Big' needs a shadow of 1099511627776"):
        value_flow(ops)
