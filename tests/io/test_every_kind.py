"""Every op kind aliasflow registers, built by its front end's public API, goes through
``af.analyze``, ``af.run`` and a program file (issue 22).

Each case builds a small program with a front end (the seed's builders, ``aliasflow.tf``,
``aliasflow.te``, ``aliasflow.mge``), records what the front end's own execution gives (checked
against an independent oracle: real TensorFlow, or NumPy on copies), saves the program, then:
``af.run`` of the records gives the oracle's values; the loaded records equal the saved ones
field by field (parameters included); the loaded program analyses to the same dependencies
and runs to the same values. :func:`test_every_registered_kind_has_a_case` fails when a kind
registered by aliasflow's own modules appears in no case, so a new kind needs a case here.

PyTorch tracer records (kinds are aten overload names, such as ``aten.add_.Tensor``) are not
registered kinds: they are analysed, but ``af.run`` and program files refuse them with an
error naming the kind (see :func:`test_traced_records_are_analysed_and_refused_by_run_and_save`);
running an aten op needs torch itself, which replays a trace (``Trace.replay``).
"""
from __future__ import annotations

import numpy as np
import pytest

import aliasflow as af
from aliasflow.io import dumps_program, loads_program


def _fields(rec):
    return (rec.name, rec.prim, dict(rec.params), rec.n_values, rec.after,
            [(a.slot, a.mode, a.view.name, a.view.tensor.name, a.view.offset, a.view.shape,
              a.view.stride, a.view.dtype) for a in rec.accesses])


def _deps(records):
    return sorted((d.src, d.dst, d.kind, d.tensor, tuple(d.elements))
                  for d in af.analyze(records).dependencies)


def _contents(program, names):
    return {n: program.tensors[n].numpy().copy() for n in names}


def _assert_values(got: dict, want: dict, what: str):
    assert set(got) == set(want)
    for name in want:
        g, w = np.asarray(got[name]), np.asarray(want[name])
        assert g.size == w.size, (what, name, g, w)
        g = g.reshape(w.shape)  # a forwarded fetch (tf) is its source's memory reshaped
        assert g.dtype == w.dtype and g.dtype == w.dtype, (what, name, g, w)
        np.testing.assert_array_equal(g, w, err_msg=f"{what}: {name}")


def check_program(ops, expected: dict):
    """Save ``ops`` (before running them), run them, load the file and run the loaded copy;
    ``expected``: tensor name -> the oracle's final contents."""
    records = af.Program(ops).records
    text = dumps_program(records)
    af.run(records)
    _assert_values(_contents(af.Program(records), expected), expected, "af.run")
    loaded = loads_program(text)
    assert [_fields(r) for r in loaded.records] == [_fields(r) for r in records]
    assert _deps(loaded.records) == _deps(records)
    af.run(loaded.records, workers=2)
    _assert_values(_contents(loaded, expected), expected, "af.run of the loaded program")
    return {r.prim for r in records}


# ---- the cases: each returns the kinds its program used -------------------------------------
def case_seed():
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    A = af.Tensor("A", (4, 4), data=a.copy())
    B = af.Tensor("B", (4,))

    def window(name, offset, shape, stride):
        return af.TensorView(name, A, offset, shape, stride)
    ops = [af.FillOperation("fill", 2.5).set_outputs(window("A1", 0, (2, 2), (4, 1))),
           af.TransformOperation("neg", "negative").set_inputs(window("A2", 5, (2, 2), (4, 1)))
           .set_outputs(window("A3", 10, (2, 2), (4, 1))),
           af.BinaryOperation("add", "add").set_inputs(window("row0", 0, (4,), (1,)),
                                                       window("col0", 0, (4,), (4,)))
           .set_outputs(window("row3", 12, (4,), (1,))),
           af.ReduceOperation("sum", 0, "sum").set_inputs(A.view()).set_outputs(B.view())]
    ref = a.copy()  # the same program in NumPy, on a copy
    ref[0:2, 0:2] = 2.5
    ref[2:4, 2:4] = -ref[1:3, 1:3].copy()
    ref[3, :] = ref[0, :] + ref[:, 0]
    return check_program(ops, {"A": ref, "B": ref.sum(axis=0)})


def _tf_graph(tf):
    """One graph with every op type ``Session.run`` runs, built through ``tf`` (aliasflow.tf
    or real ``tensorflow.compat.v1``); returns ``(graph, init, fetches, placeholder)``."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0, 2.0, 3.0, 4.0], name="v")
        w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
        p = tf.placeholder(tf.float32, [None], name="p")
        init = tf.global_variables_initializer()
        up = v.assign_add([0.5, 0.5, 0.5, 0.5])
        with tf.control_dependencies([up]):
            down = v.assign_sub([1.0, 0.0, 1.0, 0.0])
        with tf.control_dependencies([down]):
            part = v[1:3].assign([7.0, 8.0])
        with tf.control_dependencies([part]):
            whole = tf.identity(v[:])
            head = v[0:2] * 2.0
        set_w = w.assign(tf.matmul(w, w))
        q = tf.truediv(p, 2.0) - tf.negative(p)
        z = tf.zeros_like(p) + tf.ones_like(p)
        c = tf.cast(tf.reduce_sum(tf.constant(3)), tf.float32)
        s = tf.reduce_sum(tf.constant([[1.0, 2.0, 3.0]]), axis=0)
        t = tf.reduce_sum(tf.constant([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        b = tf.matmul(tf.ones([2, 2, 2]), tf.ones([2, 2, 2]))
        done = tf.group(whole, set_w)
    return g, init, [whole, head, set_w, q, z, c, s, t, b, done], p


def case_tf():
    real = pytest.importorskip("tensorflow").compat.v1
    from aliasflow import tf
    feed = np.array([1.0, -2.0, 4.5], np.float32)
    g, init, fetches, p = _tf_graph(real)
    with real.Session(graph=g) as sess:
        sess.run(init)
        want = sess.run(fetches, {p: feed})
    g, init, fetches, p = _tf_graph(tf)
    sess = tf.Session(graph=g)
    sess.run(init)
    ops = sess.program(fetches, {p: feed})
    writer = {r.name: r for r in ops}

    def home(t):
        """The tensor of the program holding fetch ``t``: what its op writes, or (an op that
        forwards memory) the home of its input; a variable's own."""
        rec = writer[t.op.name]
        if t.op.type == "VariableV2":  # a variable's memory is named after its op
            return t.op.name
        return rec.output_views[0].tensor.name if rec.output_views else home(t.op.inputs[0])
    expected = {home(f): np.asarray(x) for f, x in zip(fetches[:-1], want[:-1])}
    assert len(expected) == len(fetches) - 1
    kinds = check_program(ops, expected)
    got = tf.Session(graph=g)  # the front end's own run agrees with TensorFlow too
    got.run(init)
    for x, y in zip(got.run(fetches, {p: feed}), want):
        np.testing.assert_array_equal(np.asarray(x, dtype=object if x is None else None),
                                      np.asarray(y, dtype=object if y is None else None))
    return kinds


def case_te():
    from aliasflow import te
    a = np.linspace(-1.0, 2.0, 12, dtype=np.float32).reshape(3, 4)
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n - 1, 4), lambda i, j: te.if_then_else(
        j > 0, A[i + 1, j] * 2.0, te.exp(A[i, j])), name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((n - 1,), lambda i: te.max(B[i, k], axis=k), name="C")
    k2 = te.reduce_axis((0, 4), name="k2")
    D = te.compute((n - 1,), lambda i: te.sum(B[i, k2] * B[i, k2], axis=k2), name="D")
    E = te.compute((n - 1,), lambda i: D[i] + C[i], name="E")
    prog = te.lower([E], arrays={A: a.copy()}, non_affine="whole")
    b = np.where(np.arange(4) > 0, a[1:] * np.float32(2.0), np.exp(a[:2]))  # NumPy oracle
    c = b.max(axis=1)
    d = (b * b).sum(axis=1, dtype=np.float32)
    names = {t.name: v.tensor.name for t, v in prog.views.items()}
    return check_program(list(prog), {names["B"]: b, names["C"]: c, names["D"]: d,
                                      names["E"]: d + c})


def case_mge():
    from aliasflow import mge
    mge.reset()
    with mge.config(semantics="alias"):
        x = mge.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        y = x[:, 1:]
        y *= 3                               # mge.scalar, in place on a window of x
        z = 10 - x                           # mge.scalar, reversed
        x[0] = mge.tensor([7, 8, 9])         # mge.cast (int32 values into float32)
        x[1, 0] = 0.5                        # mge.const (a scalar assignment)
        ops = mge.recorded_ops()
    ref_x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)  # NumPy, same statements
    ref_x[:, 1:] *= 3
    ref_z = np.float32(10) - ref_x
    ref_x[0] = np.array([7, 8, 9])
    ref_x[1, 0] = 0.5
    expected = {x._impl.view.tensor.name: ref_x, z._impl.view.tensor.name: ref_z}
    kinds = check_program(ops, expected)
    mge.reset()
    return kinds


CASES = {"seed": case_seed, "tf": case_tf, "te": case_te, "mge": case_mge}


@pytest.fixture(scope="module")
def covered():
    return {name: case() for name, case in CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_analyzes_runs_and_round_trips(covered, name):
    assert covered[name]


def aliasflow_kinds() -> set[str]:
    """The kinds registered by aliasflow's own modules (kernels defined in the package), with
    every front end imported."""
    import aliasflow.frontends.mge  # noqa: F401 - each front end registers its kinds
    import aliasflow.frontends.te  # noqa: F401
    import aliasflow.frontends.tf  # noqa: F401
    return {name for name, prim in af.PRIMITIVES.items()
            if prim.kernel is None or getattr(prim.kernel, "__module__", "").startswith(
                "aliasflow.")}


def test_every_registered_kind_has_a_case(covered):
    used = set().union(*covered.values())
    missing = aliasflow_kinds() - used
    assert not missing, f"kinds no case of test_every_kind builds: {sorted(missing)}"


def test_traced_records_are_analysed_and_refused_by_run_and_save():
    torch = pytest.importorskip("torch")
    from aliasflow.io import ProgramFileError
    x = torch.arange(6.0)
    with af.trace() as t:
        y = x[3:6]
        y.add_(x[0:3])
    records = [r for r in t.ops if r.prim.startswith("aten.")]
    assert any(r.prim == "aten.add_.Tensor" for r in records)
    assert af.PRIMITIVES.get("aten.add_.Tensor") is None
    assert af.analyze(records).dependencies is not None  # analysed like any records
    add = [r for r in records if r.prim == "aten.add_.Tensor"]
    refused = r"op 'aten\.add_\.Tensor#\d+': kind 'aten\.add_\.Tensor' is not a registered"
    with pytest.raises(af.AliasflowError, match=refused):
        af.run(add)
    with pytest.raises(ProgramFileError, match=refused):
        dumps_program(add)


@pytest.mark.parametrize("kind, bad, message", [
    ("tf", {"dtype": "float32", "shape": [2], "data": [1.0, "x"]},
     "op 'Const': value: data\\[1\\] must be a number"),
    ("tf", {"dtype": "string", "shape": [2], "data": [1.0, 2.0]},
     "op 'Const': dtype must name a TensorFlow numeric or bool dtype, got 'string'"),
    ("tf", {"dtype": "float32", "shape": [3], "data": [1.0, 2.0]},
     "op 'Const': value: shape \\[3\\] holds 3 element\\(s\\), data has 2"),
    ("te", ["mul", "float32", 5, 0], "op 'B': nodes\\[3\\] operand: expected an int in"),
    ("te", ["eval", "int32", "1"], "op 'B': nodes\\[3\\]: unknown node kind.*got 'eval'"),
    ("te", ["call", "float32", "os.system", [0]], "unknown call.*got 'os.system'"),
    ("te", ["mul", "float64", 1, 2], "the node's dtype is float32, not float64"),
    ("mge.const", {"dtype": "int32", "value": ["nan"]}, "value \\['nan'\\] is no array of int32"),
    ("mge.const", {"dtype": "complex64"}, "dtype must name a bool, integer or float dtype, got"),
    ("mge.const", {"value": [[1.0], 2.0]}, "value .* is no array of float32"),
    ("mge.cast", {"dtype": "object"}, "dtype must name a bool, integer or float dtype, got "
                                      "'object'"),
    ("mge.scalar", {"op": "power"}, "op must be one of \\['add', 'divide', 'multiply', "
                                    "'subtract'\\], got 'power'"),
    ("mge.scalar", {"scalar": "3"}, "scalar must be a number, got '3'"),
])
def test_a_malformed_front_end_parameter_in_a_file_is_refused_naming_it(kind, bad, message):
    import json
    from aliasflow import te, tf
    from aliasflow.io import ProgramFileError
    if kind.startswith("mge."):
        from aliasflow import mge
        mge.reset()
        with mge.config(semantics="alias"):
            x = mge.tensor([1.0, 2.0])
            x[0:1] = mge.tensor([7])   # mge.cast
            x[1] = 0.5                 # mge.const
            z = 10 - x                 # mge.scalar
            ops = mge.recorded_ops()
        mge.reset()
        doc = json.loads(dumps_program(ops))
        op = next(o for o in doc["ops"] if o["kind"] == kind)
        op.update(bad)
        del z
    elif kind == "tf":
        g = tf.Graph()
        with g.as_default():
            x = tf.constant([1.0, 2.0]) * 3.0
        doc = json.loads(dumps_program(tf.Session(graph=g).program(x)))
        doc["ops"][0]["value"] = bad
    else:
        A = te.placeholder((3,), name="A")
        B = te.compute((3,), lambda i: A[i] * 2.0, name="B")
        doc = json.loads(dumps_program(list(te.lower([B]))))
        doc["ops"][0]["nodes"][3] = bad
    with pytest.raises(ProgramFileError, match=message):
        loads_program(json.dumps(doc))
