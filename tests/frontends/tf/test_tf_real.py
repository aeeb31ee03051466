"""aliasflow.tf against real TensorFlow (``tf.compat.v1`` with ``disable_v2_behavior()``):
the same programs built in both give the same graphs (op names, types, inputs, control inputs,
tensor names, shapes, dtypes, reprs) and the same ``Session.run`` values and types; TensorProto
bytes go both ways. Skipped where TensorFlow is not installed."""
import os

import numpy as np
import pytest

real = pytest.importorskip("tensorflow.compat.v1")
tensor_pb2 = pytest.importorskip("tensorflow.core.framework.tensor_pb2")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from aliasflow import AliasflowError, tf as af_tf  # noqa: E402
from tf_programs import build, describe, fetches, programs  # noqa: E402

real.disable_v2_behavior()
real.logging.set_verbosity(real.logging.ERROR)


@pytest.fixture(autouse=True, scope="module")
def _v1_shapes():
    """Both sides as after disable_v2_behavior() (unknown dims print as ``?``)."""
    af_tf.disable_v2_behavior()
    yield
    af_tf.enable_v2_tensorshape()


def test_shapes_print_as_tensorflow_prints_them_in_both_modes():
    # issue 28: TensorFlow 2.21 prints shape=(None, 2) unless disable_v2_behavior() (or
    # disable_v2_tensorshape()) was called; aliasflow.tf printed (?, 2) either way
    def build(tf):
        g = tf.Graph()
        with g.as_default():
            p = tf.placeholder(tf.float32, (None, 2))
            q = tf.placeholder(tf.int8, None)
            c = tf.constant([1, 2])
        return [str(p), repr(p), str(p.shape), repr(p.shape), str(q.shape), repr(q.shape),
                str(c), repr(c.shape), str(tf.TensorShape([None])), str(tf.TensorShape([]))]
    try:
        for mode in ("enable_v2_tensorshape", "disable_v2_tensorshape"):
            getattr(real, mode)()
            getattr(af_tf, mode)()
            assert build(af_tf) == build(real)
        assert "shape=(None, 2)" not in build(af_tf)[0]
    finally:
        real.disable_v2_tensorshape()
        af_tf.disable_v2_tensorshape()


def _same_value(ours, theirs, inexact_ok: bool):
    assert type(ours) is type(theirs), (ours, theirs)
    if ours is None:
        return
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
    if a.dtype.kind in "fc" and inexact_ok:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, b)


def test_seed_example_matches_tensorflow():
    def build_seed(tf):
        g = tf.Graph()
        with g.as_default():
            a = tf.constant(3.0)
            b = tf.constant(4.0)
            total = a + b
        with tf.Session(graph=g) as sess:
            value = sess.run(total)
        return [str(a), str(b), str(total)], value, describe(g)

    ours, theirs = build_seed(af_tf), build_seed(real)
    assert ours[0] == theirs[0] == ['Tensor("Const:0", shape=(), dtype=float32)',
                                    'Tensor("Const_1:0", shape=(), dtype=float32)',
                                    'Tensor("add:0", shape=(), dtype=float32)']
    assert ours[2] == theirs[2]
    _same_value(ours[1], theirs[1], False)
    assert ours[1] == 7.0


MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _same_attrs(g1, g2):
    """Const values (TensorFlow's as TensorProto), slice masks, Sum's keep_dims, dtypes."""
    for o1, o2 in zip(g1.get_operations(), g2.get_operations()):
        if o1.type == "Const":
            ours, theirs = o1.get_attr("value"), real.make_ndarray(o2.get_attr("value"))
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
            np.testing.assert_array_equal(ours, theirs)
        if o1.type in ("StridedSlice", "StridedSliceAssign"):
            assert [o1.get_attr(m) for m in MASKS] == [o2.get_attr(m) for m in MASKS]
        if o1.type == "Sum":
            assert o1.get_attr("keep_dims") == o2.get_attr("keep_dims")
        if o1.type in ("VariableV2", "Placeholder"):
            assert o1.get_attr("dtype").name == o2.get_attr("dtype").name


@settings(max_examples=int(os.environ.get("AF_TF_EXAMPLES", 150)), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_programs_match_tensorflow(program):
    steps, picks = program
    g1, h1, feeds1, init1 = build(af_tf, steps)
    g2, h2, feeds2, init2 = build(real, steps)
    assert describe(g1) == describe(g2)
    _same_attrs(g1, g2)
    for a, b in zip(h1, h2):
        if hasattr(a, "initializer"):
            assert repr(a) == repr(b)
    f1, f2 = fetches(h1, picks), fetches(h2, picks)
    if not f1:
        return
    inexact = any(s[0] in ("binop", "scalar") and s[1] == "/" for s in steps)
    racy = af_tf.races(g1, f1, feeds1)
    with af_tf.Session(graph=g1, workers=2) as s1, real.Session(graph=g2) as s2:
        s1.run(init1)
        s2.run(init2)
        for _ in range(2):  # a second run sees the variables the first one updated
            try:
                theirs = s2.run(f2, feed_dict=feeds2)
            except (real.errors.OpError, ValueError, TypeError):
                with pytest.raises(AliasflowError):  # e.g. fetching a placeholder op
                    s1.run(f1, feed_dict=feeds1)
                return
            ours = s1.run(f1, feed_dict=feeds1)
            if racy:  # TensorFlow's answer depends on timing; ours is one of the orders
                return
            for a, b in zip(ours, theirs):
                _same_value(a, b, inexact)


def _control_program(tf, level: int):
    """``bump`` (+10 everywhere), ``head`` (writes v[0:2]) and ``total`` (reads v[1:3]);
    level 0: no control dependencies, 1: only bump before total, 2: bump, head, total."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0, 2.0, 3.0, 4.0], name="v")
        bump = v.assign_add([10.0, 10.0, 10.0, 10.0])
        with tf.control_dependencies([bump] if level == 2 else []):
            head = v[0:2].assign([-1.0, -2.0])
        with tf.control_dependencies({0: [], 1: [bump], 2: [head]}[level]):
            total = tf.reduce_sum(v[1:3]) + 0.0
        with tf.control_dependencies([head, total] if level else []):
            final = tf.identity(v)
        init = tf.global_variables_initializer()
    return g, [total, final, head, bump], init


def test_races_are_the_missing_control_dependencies():
    found = []
    for level in range(3):
        g1, f1, init1 = _control_program(af_tf, level)
        g2, f2, init2 = _control_program(real, level)
        assert describe(g1) == describe(g2)
        found.append({(r.src, r.dst, r.kind) for r in af_tf.races(g1, f1)})
    assert found[0] == {("AssignAdd", "strided_slice/_assign", "WAW"),
                        ("AssignAdd", "strided_slice/_assign", "WAR"),  # AssignAdd reads v too
                        ("AssignAdd", "strided_slice_1", "RAW"),
                        ("strided_slice/_assign", "strided_slice_1", "RAW")}
    # ordering bump before the read leaves head unordered against both
    assert found[1] == {("AssignAdd", "strided_slice/_assign", "WAW"),
                        ("AssignAdd", "strided_slice/_assign", "WAR"),
                        ("strided_slice/_assign", "strided_slice_1", "RAW")}
    assert found[2] == set()
    g1, f1, init1 = _control_program(af_tf, 2)
    g2, f2, init2 = _control_program(real, 2)
    with af_tf.Session(graph=g1, workers=2) as s1, real.Session(graph=g2) as s2:
        for _ in range(3):
            s1.run(init1)
            s2.run(init2)
            for a, b in zip(s1.run(f1), s2.run(f2)):
                _same_value(a, b, False)


def test_ordered_updates_equal_tensorflow():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
            p = tf.placeholder(tf.float32, shape=[None, 3], name="p")
            a = v.assign(p)
            with tf.control_dependencies([a]):
                b = v[1, ::2].assign([7.0, 8.0])
            with tf.control_dependencies([b]):
                c = v.assign_sub(tf.constant(np.ones((2, 3), np.float32)))
            with tf.control_dependencies([c]):
                s = tf.reduce_sum(v, axis=1, keepdims=True) * 2.0
            init = tf.global_variables_initializer()
        return g, [a, b, c, s, v], {p: np.full((2, 3), 5, np.float32)}, init

    g1, f1, feed1, init1 = prog(af_tf)
    g2, f2, feed2, init2 = prog(real)
    assert af_tf.races(g1, f1, feed1) == []
    with af_tf.Session(graph=g1) as s1, real.Session(graph=g2) as s2:
        s1.run(init1)
        s2.run(init2)
        for a, b in zip(s1.run(f1, feed1), s2.run(f2, feed2)):
            _same_value(a, b, False)


# ---- TensorProto both ways --------------------------------------------------------------------
DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool", "complex64", "complex128"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(
    lambda d: hnp.arrays(np.dtype(d), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                       max_side=4))))
def test_tensor_proto_bytes_equal_tensorflow_both_ways(arr):
    ours = af_tf.make_tensor_proto(arr).SerializeToString()
    theirs = real.make_tensor_proto(arr).SerializeToString()
    assert ours == theirs
    back_theirs = real.make_ndarray(tensor_pb2.TensorProto.FromString(ours))
    back_ours = af_tf.make_ndarray(theirs)
    for back in (back_theirs, back_ours):
        assert back.dtype == arr.dtype and back.shape == arr.shape
        assert back.tobytes() == arr.tobytes()  # bit-exact, NaN payloads and -0.0 included


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=5), st.binary(max_size=5)), min_size=0, max_size=6))
def test_string_tensor_proto_both_ways(values):
    ours = af_tf.make_tensor_proto(values, dtype="string").SerializeToString()
    theirs = real.make_tensor_proto(values, dtype=real.string).SerializeToString()
    assert ours == theirs
    expected = [v.encode() if isinstance(v, str) else v for v in values]
    assert list(real.make_ndarray(tensor_pb2.TensorProto.FromString(ours))) == expected
    assert list(af_tf.make_ndarray(theirs)) == expected


def test_bfloat16_proto_both_ways():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for arr in (np.array([1.5, -2.25, 3.0, np.nan], dtype=ml_dtypes.bfloat16),
                np.array(0.5, dtype=ml_dtypes.bfloat16)):
        ours = af_tf.make_tensor_proto(arr).SerializeToString()
        assert ours == real.make_tensor_proto(arr).SerializeToString()
        assert af_tf.make_ndarray(ours).tobytes() == arr.tobytes()
        assert real.make_ndarray(tensor_pb2.TensorProto.FromString(ours)).tobytes() == \
            arr.tobytes()


@pytest.mark.parametrize("values, kw", [
    (1.0, dict(shape=[2, 3])), ([1, 2], dict(shape=[5])), ([1, 2], dict(dtype="float32")),
    (3, {}), (2 ** 40, {}), ([1.5, 2.5], dict(dtype="float64")), (True, dict(shape=[2])),
    (1 + 2j, {}), ([[1, 2], [3, 4]], dict(dtype="int8")),
])
def test_python_values_and_shapes_like_tensorflow(values, kw):
    real_kw = {k: (real.as_dtype(v) if k == "dtype" else v) for k, v in kw.items()}
    ours = af_tf.make_tensor_proto(values, **kw).SerializeToString()
    theirs = real.make_tensor_proto(values, **real_kw).SerializeToString()
    assert ours == theirs
    a = af_tf.make_ndarray(theirs)
    b = real.make_ndarray(tensor_pb2.TensorProto.FromString(ours))
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_unpacked_repeated_fields_from_protobuf_are_read():
    # protobuf parsers must accept unpacked repeated numbers; build such bytes with TF's own
    # message (setting fields one by one is still packed, so write two messages and join them)
    p = tensor_pb2.TensorProto(dtype=3)
    p.tensor_shape.dim.add(size=3)
    p.int_val.extend([-1, 2, 2 ** 31 - 1])
    data = p.SerializeToString()
    assert list(af_tf.make_ndarray(data)) == [-1, 2, 2 ** 31 - 1]
    unpacked = bytes([0x08, 0x03, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02, 0x38, 0x05, 0x38, 0x7f])
    assert list(af_tf.make_ndarray(unpacked)) == [5, 127]
    assert list(real.make_ndarray(tensor_pb2.TensorProto.FromString(unpacked))) == [5, 127]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["const", "add", "identity", "scope"]),
                          st.one_of(st.none(), st.sampled_from(
                              ["add", "add_1", "add_2", "Add", "ADD_1", "Const", "const_1",
                               "a", "a_1", "a_1_1", "x.y", "s", "s/t", "Identity"]))),
                max_size=25))
def test_unique_names_like_tensorflow(calls):
    def names(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.constant(1.0)
            for kind, name in calls:
                if kind == "const":
                    tf.constant(2.0, name=name)
                elif kind == "add":
                    if name is None:
                        x + x
                    else:
                        tf.add(x, 1.0, name=name)
                elif kind == "identity":
                    tf.identity(x, name=name)
                else:
                    with tf.name_scope(name or "scope"):
                        tf.constant(3.0, name=name)
                        x + 1.0
        return [op.name for op in g.get_operations()]

    assert names(af_tf) == names(real)


FORWARDING = {  # what a fetch shows when a later (ordered) assign zeroes the variable
    "sum over a size-1 axis": lambda tf, v, w: tf.reduce_sum(v, axis=0),
    "sum over no axes": lambda tf, v, w: tf.reduce_sum(w, axis=[]),
    "sum keepdims size-1": lambda tf, v, w: tf.reduce_sum(v, axis=0, keepdims=True),
    "sum over a real axis": lambda tf, v, w: tf.reduce_sum(v, axis=1),
    "identity": lambda tf, v, w: tf.identity(w),
    "read_value": lambda tf, v, w: w.read_value(),
    "negative": lambda tf, v, w: -w,
    "times one": lambda tf, v, w: w * 1.0,
    "full slice": lambda tf, v, w: w[:],
    "full slice with new axis": lambda tf, v, w: w[:, None],
    "size-1 dim index": lambda tf, v, w: v[0],
    "partial slice from 0": lambda tf, v, w: w[0:2],
    "partial slice": lambda tf, v, w: w[1:3],
    "matmul": lambda tf, v, w: tf.matmul(v, tf.constant([[1.0], [1.0]])),
    "slice of identity": lambda tf, v, w: tf.identity(w)[:],
}


@pytest.mark.parametrize("case", sorted(FORWARDING))
def test_forwarded_buffers_like_tensorflow(case):
    """TensorFlow forwards buffers through Identity, full slices and trivial sums: a fetched
    result shows an assign ordered after it; real computations are copies."""
    def run(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(np.array([[1.0, 2.0]], np.float32), name="v")
            w = tf.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="w")
            x = FORWARDING[case](tf, v, w)
            with tf.control_dependencies([x]):
                zero_v = v.assign(np.zeros((1, 2), np.float32))
                zero_w = w.assign(np.zeros(3, np.float32))
            init = tf.global_variables_initializer()
        with tf.Session(graph=g) as sess:
            sess.run(init)
            return sess.run([x, zero_v, zero_w]), g, [x, zero_v, zero_w]

    (ours, g, f), (theirs, _, _) = run(af_tf), run(real)
    assert af_tf.races(g, f) == []
    for a, b in zip(ours, theirs):
        _same_value(a, b, False)


def test_zeros_ones_and_module_assigns_like_tensorflow():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable([1.0, 2.0], name="v")
            p = tf.placeholder(tf.float32, shape=[None, 2])
            q = tf.placeholder(tf.int32)
            made = [tf.zeros([2, 3]), tf.ones([2], dtype=tf.int32), tf.zeros_like(v),
                    tf.ones_like(tf.constant([1, 2])), tf.zeros([40, 40]), tf.ones((), name="o"),
                    tf.zeros_like(p), tf.ones_like(p), tf.ones_like(q), tf.zeros_like(q),
                    tf.ones([30, 40], dtype=tf.int64)]
            a = tf.assign(v, [3.0, 4.0])
            with tf.control_dependencies([a]):
                b = tf.assign_add(v, tf.ones_like(v))
            with tf.control_dependencies([b]):
                c = tf.assign_sub(v, [0.5, 0.5], name="s")
            init = tf.global_variables_initializer()
        feeds = {p: np.ones((3, 2), np.float32), q: np.ones((2, 1, 2), np.int32)}
        with tf.Session(graph=g) as sess:
            sess.run(init)
            values = sess.run(made + [a, b, c], feeds)
        return describe(g), values

    (d1, v1), (d2, v2) = prog(af_tf), prog(real)
    assert d1 == d2
    for a, b in zip(v1, v2):
        _same_value(a, b, False)


def test_groups_scopes_names_and_feeding_a_variable_like_tensorflow():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable([1.0, 2.0], name="v")
            p = tf.placeholder(tf.float32, shape=[2], name="p")
            with tf.name_scope("layer"):
                y = v * p + 1.0
                with tf.name_scope("inner"):
                    z = tf.reduce_sum(y, name="total")
            # without this edge real TensorFlow may run the assign before `y` reads v (a
            # race in TF itself: a full-suite run here once saw 12.0 for 7.0)
            with tf.control_dependencies([z]):
                up = v.assign_add(p)
            grouped = tf.group(up, z)
            noop = tf.no_op()
            with tf.control_dependencies([grouped]):
                after = tf.identity(v, name="after")
            init = tf.global_variables_initializer()
        with tf.Session(graph=g) as sess:
            sess.run(init)
            values = [sess.run(["layer/inner/total:0", after, noop], {"p:0": [1.0, 2.0]}),
                      sess.run(y, {v: [10.0, 20.0], p: [1.0, 1.0]}),   # a variable fed
                      sess.run({"g": grouped, "v": v}, {p: [0.0, 1.0]})]
        return describe(g), values

    (d1, v1), (d2, v2) = prog(af_tf), prog(real)
    assert d1 == d2
    assert repr(v1) == repr(v2)
