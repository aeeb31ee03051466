"""aliasflow.tf graph mode without TensorFlow installed: the seed's example, TensorFlow's naming
and control-dependency rules (expected values read off real TensorFlow 2.21), Session.run
against a NumPy oracle, races, and bad input. tests/test_tf_real.py compares with TensorFlow."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow import tf


def names(g):
    return [op.name for op in g.get_operations()]


def test_seed_example():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(3.0)
        b = tf.constant(4.0)
        total = a + b
    assert [str(t) for t in (a, b, total)] == [
        'Tensor("Const:0", shape=(), dtype=float32)',
        'Tensor("Const_1:0", shape=(), dtype=float32)',
        'Tensor("add:0", shape=(), dtype=float32)']
    assert repr(total) == "<tf.Tensor 'add:0' shape=() dtype=float32>"
    assert total.op.type == "AddV2" and total.op.inputs == [a, b] and total.value_index == 0
    assert total.graph is g and total.op.outputs == [total] and total.dtype == tf.float32
    with tf.Session(graph=g) as sess:
        value = sess.run(total)
    assert value == 7.0 and type(value) is np.float32


def test_unique_names_follow_tensorflow():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0)
        a + a
        tf.add(a, a)                    # "Add" shares the counter of "add" (case-insensitive)
        tf.add(a, a, name="add_5")      # asked for explicitly...
        a + a, a + a, a + a, a + a      # ...so the counter skips it
        tf.constant(1.0, name="foo")
        tf.constant(1.0, name="foo")
        tf.constant(1.0, name="foo_1")  # taken by the second foo: becomes foo_1_1
        a * 2.0, 2.0 - a
    assert names(g) == ["Const", "add", "Add_1", "add_5", "add_2", "add_3", "add_4", "add_6",
                        "foo", "foo_1", "foo_1_1", "mul/y", "mul", "sub/x", "sub"]


def test_control_dependencies_prune_like_tensorflow():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0, name="z")
        b = tf.constant(2.0, name="b")
        c = tf.constant(3.0, name="a")
        with tf.control_dependencies([c, a]):
            with tf.control_dependencies([b, a]):
                x = tf.constant(5.0)
                y = x + 1.0              # x was made inside: already after the controls
                w = a + 1.0
            with tf.control_dependencies(None):
                q = tf.constant(1.0)
    ctl = {op.name: [c.name for c in op.control_inputs] for op in g.get_operations()}
    assert ctl["Const"] == ["a", "z", "b"] and ctl["add/y"] == ["a", "z", "b"]
    assert ctl["add"] == [] and ctl["add_1/y"] == ["a", "z", "b"] and ctl["add_1"] == []
    assert ctl[q.op.name] == [] and y.op.inputs[0] is x and w.op.inputs[0] is a


def test_variables_are_tf1_reference_variables():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0, 2.0, 3.0, 4.0])
        u = tf.Variable(5, name="u")
        s = v[1:3]
        w = v[1:3].assign([9.0, 9.0])
        init = tf.global_variables_initializer()
    assert repr(v) == "<tf.Variable 'Variable:0' shape=(4,) dtype=float32_ref>"
    assert [(op.name, op.type) for op in g.get_operations()][:8] == [
        ("Variable/initial_value", "Const"), ("Variable", "VariableV2"),
        ("Variable/Assign", "Assign"), ("Variable/read", "Identity"),
        ("u/initial_value", "Const"), ("u", "VariableV2"), ("u/Assign", "Assign"),
        ("u/read", "Identity")]
    assert s.op.type == "StridedSlice" and s.op.inputs[0].name == "Variable/read:0"
    assert [t.name for t in s.op.inputs[1:]] == ["strided_slice/stack:0", "strided_slice/stack_1:0",
                                                "strided_slice/stack_2:0"]
    assert w.name == "strided_slice_1/_assign:0" and w.dtype.name == "float32_ref"
    assert [t.name for t in w.op.inputs][-1] == "strided_slice_1/_assign/value:0"
    assert init.type == "NoOp" and [c.name for c in init.control_inputs] == ["Variable/Assign",
                                                                             "u/Assign"]
    with tf.Session(graph=g) as sess:
        with pytest.raises(af.AliasflowError, match="uninitialized value Variable"):
            sess.run(s)
        assert sess.run(init) is None
        np.testing.assert_array_equal(sess.run(w), [1.0, 9.0, 9.0, 4.0])
        assert sess.run(u) == 5 and type(sess.run(u)) is np.int32


def test_run_structures_feeds_and_pruning():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1, 2, 3])
        bump = v.assign_add([1, 1, 1])
        p = tf.placeholder(tf.int32, shape=[None], name="p")
        c = tf.constant([10, 20, 30])
        out = p + c
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        got = sess.run({"a": [out, (c, out.op)], "b": v}, feed_dict={p: [1, 2, 3]})
        assert set(got) == {"a", "b"} and got["a"][1][1] is None
        np.testing.assert_array_equal(got["a"][0], [11, 22, 33])
        np.testing.assert_array_equal(got["b"], [1, 2, 3])  # bump was not fetched: not run
        fed = sess.run(out, feed_dict={p: [0, 0, 0], c: [5, 6, 7]})  # any tensor can be fed
        np.testing.assert_array_equal(fed, [5, 6, 7])
        assert isinstance(sess.run(c, {c: [1, 1, 1]}), np.ndarray)
        sess.run(bump.op)
        np.testing.assert_array_equal(sess.run(v), [2, 3, 4])
        np.testing.assert_array_equal(sess.run("Variable:0"), [2, 3, 4])  # by name too


def test_bad_input_is_refused_clearly():
    g, other = tf.Graph(), tf.Graph()
    with other.as_default():
        foreign = tf.constant(1.0)
    with g.as_default():
        a = tf.constant([1.0, 2.0])
        p = tf.placeholder(tf.float32, shape=[2])
        with pytest.raises(af.AliasflowError, match="unknown dtype"):
            tf.placeholder("float7")
        with pytest.raises(af.AliasflowError, match="dimensions must be equal"):
            a + tf.constant([1.0, 2.0, 3.0])
        with pytest.raises(af.AliasflowError, match="does not match type float32"):
            a + tf.constant([1, 2])
        with pytest.raises(af.AliasflowError, match="different graph"):
            a + foreign
        with pytest.raises(af.AliasflowError, match="not a valid"):
            tf.constant(1.0, name="-bad")
        v = tf.Variable([1.0, 2.0])
        with pytest.raises(af.AliasflowError, match="incompatible"):
            v.assign([1.0, 2.0, 3.0])
        with pytest.raises(af.AliasflowError, match="does not match the slice"):
            v[0:1].assign([1.0, 2.0])
        with pytest.raises(af.AliasflowError, match="out of bounds"):
            a[5]
    with tf.Session(graph=g) as sess:
        with pytest.raises(af.AliasflowError, match="must feed a value for placeholder"):
            sess.run(p + 1.0)
        with pytest.raises(af.AliasflowError, match="only tensors can be fed"):
            sess.run(a, {a.op: [1.0, 2.0]})
        with pytest.raises(af.AliasflowError, match="cannot feed value of shape"):
            sess.run(p, {p: [1.0, 2.0, 3.0]})
        with pytest.raises(af.AliasflowError, match="cannot feed"):
            sess.run(p, {p: ["x", "y"]})
        with pytest.raises(af.AliasflowError, match="not an element of this graph"):
            sess.run(foreign)
        with pytest.raises(af.AliasflowError, match="cannot use"):
            sess.run(42)
    with pytest.raises(af.AliasflowError, match="closed Session"):
        sess.run(a)


def test_identity_and_full_slices_alias_the_variable():
    """TensorFlow forwards buffers through Identity and full slices: a fetched read shows the
    value after later (ordered) updates; a partial slice is a copy taken when it runs."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0, 2.0, 3.0, 4.0])
        whole, part = v[:], v[0:2]
        with tf.control_dependencies([whole, part]):
            zero = v.assign([0.0, 0.0, 0.0, 0.0])
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        w, p, _ = sess.run([whole, part, zero])
    np.testing.assert_array_equal(w, [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(p, [1.0, 2.0])


@st.composite
def update_chains(draw):
    shape = draw(st.sampled_from([(5,), (3, 4)]))
    start = np.array(draw(st.lists(st.integers(-5, 5), min_size=int(np.prod(shape)),
                                   max_size=int(np.prod(shape)))), np.int64).reshape(shape)
    chain = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["assign", "assign_add", "assign_sub", "slice"]))
        if kind == "slice":
            index = tuple(slice(draw(st.integers(-4, 4)), draw(st.integers(-4, 4)),
                                draw(st.sampled_from([1, 2, -1]))) for _ in shape)
            size = np.zeros(shape)[index].shape
            chain.append((kind, index, np.array(draw(st.lists(
                st.integers(-9, 9), min_size=int(np.prod(size)), max_size=int(np.prod(size)))),
                np.int64).reshape(size)))
        else:
            chain.append((kind, None, np.array(draw(st.lists(
                st.integers(-9, 9), min_size=start.size, max_size=start.size)),
                np.int64).reshape(shape)))
    return start, chain


@settings(max_examples=80, deadline=None)
@given(update_chains(), st.integers(1, 3))
def test_chained_updates_equal_numpy_in_order(case, workers):
    start, chain = case
    expected = start.copy()
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(start)
        last, reads = None, []
        for kind, index, value in chain:
            with tf.control_dependencies([last] if last is not None else []):
                if kind == "slice":
                    update = v[index].assign(value)
                    expected[index] = value
                else:
                    update = getattr(v, kind)(value)
                    expected = {"assign": lambda e: value.copy(), "assign_add": lambda e: e + value,
                                "assign_sub": lambda e: e - value}[kind](expected)
            with tf.control_dependencies([update]):
                reads.append((tf.reduce_sum(v) * 1, int(expected.sum())))
            last = tf.group(update, reads[-1][0])  # the next update waits for the read
        init = tf.global_variables_initializer()
    assert tf.races(g) == []
    with tf.Session(graph=g, workers=workers) as sess:
        sess.run(init)
        got = sess.run([last, v] + [r for r, _ in reads])
    np.testing.assert_array_equal(got[1], expected)
    assert [int(x) for x in got[2:]] == [e for _, e in reads]


def test_races_doc_example_and_fix():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0, 2.0, 3.0, 4.0])
        inc = v.assign_add([1.0, 1.0, 1.0, 1.0])
        tail = v[2:4] * 2.0
        head = v[0:2].assign([0.0, 0.0])   # writes v[0:2], never read by tail: no race
    found = tf.races(g)
    assert {(r.src, r.dst, r.kind) for r in found} == {
        ("AssignAdd", "strided_slice", "RAW"), ("AssignAdd", "strided_slice_1/_assign", "WAW"),
        ("AssignAdd", "strided_slice_1/_assign", "WAR")}
    raw = next(r for r in found if r.kind == "RAW")
    assert raw.dst_view == "Variable[2:4]" and raw.elements == [2, 3]
    assert tf.races(g, fetches=[tail, head]) == []  # a run without the AssignAdd


def test_default_graph_session_and_symbolic_tensors():
    tf.reset_default_graph()
    a = tf.constant(2, name="two")
    assert a.graph is tf.get_default_graph() and a.name == "two:0"
    g = tf.Graph()
    with g.as_default():
        assert tf.get_default_graph() is g
        with pytest.raises(af.AliasflowError, match="reset_default_graph"):
            tf.reset_default_graph()
        b = tf.constant([1, 2]) / tf.constant([2, 2])    # ints divide as float64, as in TF
    assert [op.type for op in g.get_operations()] == ["Const", "Const", "Cast", "Cast", "RealDiv"]
    assert b.dtype == tf.float64 and tf.compat.v1.Graph is tf.Graph
    with tf.Session(graph=g):
        np.testing.assert_array_equal(b.eval(), [0.5, 1.0])
        assert b.op.run() is None
    with pytest.raises(af.AliasflowError, match="no default session"):
        b.eval()
    with pytest.raises(af.AliasflowError, match="Python bool"):
        bool(a)
    with pytest.raises(af.AliasflowError, match="cannot be iterated"):
        list(a)
    tf.reset_default_graph()
    assert tf.get_default_graph().get_operations() == []


# ---- random programs (tests/tf_programs.py) without TensorFlow ----------------------------------
from tf_programs import build, programs  # noqa: E402

FORWARD = {"Identity", "VariableV2", "Assign", "AssignAdd", "AssignSub", "StridedSliceAssign"}


def _var_elements(t, op_index=None):
    """Brute force: the variable op and the set of its flat elements tensor ``t`` lives in."""
    while True:
        op = t.op
        if op.type == "VariableV2":
            n = int(np.prod(op.get_attr("shape").as_list()))
            return op, set(range(n))
        if op.type in FORWARD or (op.type in ("StridedSlice", "Sum") and not _copies(op)):
            t = op.inputs[0]
            continue
        return None, set()


def _copies(op):
    shape = op.inputs[0].shape
    if shape.rank is None or None in shape.as_list():
        return True
    probe = np.arange(int(np.prod(shape.as_list()))).reshape(shape.as_list())
    if op.type == "StridedSlice":
        return probe[op.get_attr("_index")].size != probe.size or not np.array_equal(
            probe[op.get_attr("_index")].ravel(), probe.ravel())
    axes = [a % probe.ndim for a in np.ravel(op.get_attr("_axis"))] if probe.ndim else []
    return any(probe.shape[a] != 1 for a in axes)


def _brute_accesses(op):
    """(reads, writes): lists of (variable op, element set)."""
    reads, writes = [], []
    t = op.type
    if t in ("Assign", "AssignAdd", "AssignSub", "StridedSliceAssign"):
        var, elems = _var_elements(op.inputs[0])
        if t == "StridedSliceAssign":
            shape = var.get_attr("shape").as_list()
            elems = set(np.arange(int(np.prod(shape))).reshape(shape)[op.get_attr("_index")]
                        .ravel().tolist())
        writes.append((var, elems))
        inputs = op.inputs if t in ("AssignAdd", "AssignSub") else op.inputs[-1:]
    elif t in ("Identity", "VariableV2", "NoOp", "Const", "Placeholder", "ZerosLike", "Shape"):
        inputs = []
    elif t in ("StridedSlice", "Sum"):
        inputs = op.inputs[:1] if _copies(op) else []
    elif t == "Fill":
        inputs = op.inputs[1:]
    else:
        inputs = op.inputs
    for i in inputs:
        var, elems = _var_elements(i)
        if var is not None:
            if t == "StridedSlice":
                shape = var.get_attr("shape").as_list()
                elems = set(np.arange(int(np.prod(shape))).reshape(shape)[op.get_attr("_index")]
                            .ravel().tolist())
            reads.append((var, elems))
    return reads, writes


@settings(max_examples=150, deadline=None)
@given(programs())
def test_races_equal_brute_force_and_runs_equal_in_parallel(program):
    steps, _ = program
    g, handles, feeds, init = build(tf, steps)
    # everything the program made, so that runs hold many updates and reads (and races)
    f = [h for h in handles if h is not None]
    with g.as_default():  # extra reads, unordered with every update: partial ones test overlap
        f += [v[-1] * 1 if v.shape.rank else v * 1 for v in handles if hasattr(v, "initializer")]
    if not f:
        return
    try:
        ops = tf.Session(graph=g).program(f, feeds)
    except af.AliasflowError:
        return  # e.g. a fetched placeholder op (TensorFlow refuses it as well)
    run = [g.get_operation_by_name(op.name) for op in ops]
    # reachability by depth-first search over data and control edges, inside the run
    inside = {op.name for op in run}
    preds = {op.name: {i.op.name for i in op.inputs if i.op.name in inside and i not in feeds}
             | {c.name for c in op.control_inputs if c.name in inside} for op in run}

    def reaches(a, b):
        todo, seen = [b], set()
        while todo:
            x = todo.pop()
            if x == a:
                return True
            if x not in seen:
                seen.add(x)
                todo.extend(preds[x])
        return False

    acc = {op.name: _brute_accesses(op) for op in run}
    expected = set()
    for i, a in enumerate(run):
        for b in run[i + 1:]:
            ra, wa = acc[a.name]
            rb, wb = acc[b.name]
            for (va, ea), (vb, eb), kind in ([(x, y, "WAW") for x in wa for y in wb]
                                             + [(x, y, "RAW") for x in wa for y in rb]
                                             + [(x, y, "WAR") for x in ra for y in wb]):
                if va is vb and ea & eb and not reaches(a.name, b.name):
                    expected.add((a.name, b.name, kind))
    found = {(r.src, r.dst, r.kind) for r in tf.races(g, f, feeds)}
    assert found == expected
    # the run: one worker (creation order) equals three workers (the analysis' edges)
    results = []
    for workers in (1, 3):
        with tf.Session(graph=g, workers=workers) as sess:
            sess.run(init)
            results.append(sess.run(f, feeds))
    for x, y in zip(*results):
        np.testing.assert_array_equal(np.asarray(x, dtype=object if x is None else None),
                                      np.asarray(y, dtype=object if y is None else None))


def test_uninitialized_read_is_refused_before_anything_runs():
    g = tf.Graph()
    with g.as_default():
        a = tf.Variable([1.0, 2.0], name="a")
        b = tf.Variable([3.0], name="b")
        up = a.assign([5.0, 5.0])
        r = b * 2.0
    with tf.Session(graph=g) as sess:
        sess.run(a.initializer)
        with pytest.raises(af.AliasflowError, match="uninitialized value b"):
            sess.run([up, r])
        np.testing.assert_array_equal(sess.run(a), [1.0, 2.0])  # the assign did not run
        with pytest.raises(af.AliasflowError, match="uninitialized value b"):
            sess.run(b)
        sess.run(tf.variables_initializer([b]))
        assert sess.run(r).tolist() == [6.0]


def test_a_failed_build_leaves_the_graph_unchanged():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant([1.0, 2.0])
        v = tf.Variable([1.0, 2.0])
        head = v[0:1]                           # each call is one transaction: these stay
        p = tf.placeholder(tf.float32)
        before = names(g)
        with pytest.raises(af.AliasflowError):
            a + [1.0, 2.0, 3.0]                 # would make add/y, then fail on shapes
        with pytest.raises(af.AliasflowError):
            tf.reduce_sum(a, axis=3)            # would make Sum/reduction_indices
        with pytest.raises(af.AliasflowError):
            head.assign([1.0, 2.0])             # would make strided_slice/_assign/value
        with pytest.raises(af.AliasflowError):
            tf.Variable(p)                      # unknown shape: no Variable ops left
        assert names(g) == before and len(tf.global_variables()) == 1
        assert (a + a).name == "add:0" and tf.reduce_sum(a).op.name == "Sum"
        assert head.assign([7.0]).name == "strided_slice/_assign:0"
        assert tf.Variable(1.0).name == "Variable_1:0"
