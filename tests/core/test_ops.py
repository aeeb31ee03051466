"""Op semantics, checked against NumPy: read-before-write, refusals, registry, results."""
import numpy as np
import pytest

import aliasflow as af
from aliasflow.core.functions import BINARY, REDUCE, UNARY
from aliasflow.seeds import complex_example


def tensor(name="A", shape=(4, 4), dtype="float64"):
    return af.Tensor(name, shape, dtype, data=np.arange(np.prod(shape)).reshape(shape) + 1.0)


@pytest.mark.parametrize("fn", sorted(UNARY))
def test_unary_registry_matches_numpy(fn):
    a = tensor()
    expect = {"copy": lambda x: x, "relu": lambda x: np.maximum(x, 0)}.get(
        fn, getattr(np, fn, None))(a.data[1:3].copy())
    op = af.TransformOperation("t", fn).set_inputs(a[1:3]).set_outputs(a[:2])
    op.execute()
    np.testing.assert_array_equal(a.data[:2], expect)


@pytest.mark.parametrize("fn", sorted(BINARY))
def test_binary_registry_matches_numpy(fn):
    a, b = tensor(), tensor("B", (4,))
    expect = getattr(np, fn)(a.data, b.data)
    af.BinaryOperation("b", fn).set_inputs(a.view(), b.view()).set_outputs(a.view()).execute()
    np.testing.assert_array_equal(a.data, expect)


@pytest.mark.parametrize("fn", sorted(REDUCE))
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_reduce_registry_matches_numpy(fn, axis):
    a = tensor()
    op = af.ReduceOperation("r", axis=axis, fn=fn).set_inputs(a.T)
    op.execute()
    np.testing.assert_array_equal(op.result, getattr(np, fn)(a.data.T, axis=axis))


def test_inputs_are_read_before_outputs_are_written():
    a = tensor()
    before = a.data.copy()
    af.TransformOperation("t").set_inputs(a.T).set_outputs(a.view()).execute()
    np.testing.assert_array_equal(a.data, before.T)
    b = tensor("B", (8,))
    before = b.data.copy()
    af.BinaryOperation("s").set_inputs(b[:-1], b[1:]).set_outputs(b[1:]).execute()
    np.testing.assert_array_equal(b.data[1:], before[:-1] + before[1:])


def test_fill_and_pure_reader():
    a = tensor()
    af.FillOperation("f", 2.5).set_outputs(a[::2, ::2], a[0].broadcast_to((3, 4))).execute()
    assert a.data[0].tolist() == [2.5] * 4 and a.data[2, 0] == 2.5 and a.data[1, 1] == 6.0
    reader = af.TransformOperation("r", "negative").set_inputs(a[3])
    reader.execute()
    assert reader.result.tolist() == [-13.0, -14.0, -15.0, -16.0]


def test_ambiguous_writes_are_refused_before_anything_changes():
    a = tensor()
    before = a.data.copy()
    op = af.TransformOperation("t").set_inputs(a[0:1].broadcast_to((2, 4)))
    op.set_outputs(a[3], a[0].broadcast_to((2, 4)))
    with pytest.raises(af.AliasflowError, match=r"'t'.*output view .* ambiguous"):
        op.execute()
    np.testing.assert_array_equal(a.data, before)


@pytest.mark.parametrize("make, match", [
    (lambda a: af.TransformOperation("t").set_inputs(a[0]).set_outputs(a[:2, :2]),
     r"'t'.*shape \(4,\).*output 'A\[:2, :2\]' of shape \(2, 2\)"),
    (lambda a: af.BinaryOperation("b").set_inputs(a[:3], a[:2]).set_outputs(a[:2]),
     r"'b'.*do not broadcast.*\(3, 4\).*\(2, 4\)"),
    (lambda a: af.ReduceOperation("r", axis=2).set_inputs(a.view()), r"'r'.*axis 2"),
    (lambda a: af.TransformOperation("t").set_inputs(a[0], a[1]), r"'t'.*needs 1 input"),
    (lambda a: af.TransformOperation("t", "exp").set_inputs(a[0]).set_outputs(
        af.Tensor("I", (4,), "int32").view()), r"'t'.*dtype float64.*int32"),
    (lambda a: af.FillOperation("f", 0.5).set_outputs(af.Tensor("I", (4,), "int32").view()),
     r"'f'.*0.5 does not fit"),
])
def test_bad_ops_are_refused(make, match):
    a = tensor()
    before = a.data.copy()
    with pytest.raises(af.AliasflowError, match=match):
        make(a).execute()
    np.testing.assert_array_equal(a.data, before)


def test_op_construction_errors():
    with pytest.raises(af.AliasflowError, match="unknown unary function 'nope'"):
        af.TransformOperation("t", "nope")
    with pytest.raises(af.AliasflowError, match="inputs must be TensorViews"):
        af.TransformOperation("t").set_inputs(np.zeros(3))
    with pytest.raises(af.AliasflowError, match="fill_value must be a number"):
        af.FillOperation("f", "1")
    with pytest.raises(af.AliasflowError, match="op name"):
        af.FillOperation("")
    assert af.TransformOperation("t", np.tanh).fn_name == "tanh"


def test_complex_example_is_refused_at_add_before_anything_runs():
    # Issue 10: every op is checked before any runs, so the refusal modifies nothing.
    p = complex_example()
    with pytest.raises(af.ExecutionError, match=r"add_op_ab.*\(3, 3\).*\(2, 2\)") as info:
        af.run(p.ops)
    assert isinstance(info.value, af.AliasflowError) and info.value.op_name == "add_op_ab"
    assert not p.tensors["Tensor_A"].data.any() and not p.tensors["Tensor_B"].data.any()
    assert all(op.result is None for op in p.ops)


def test_kernels_returning_views_see_inputs_before_writes():
    a = tensor()
    before = a.data.copy()
    af.TransformOperation("t", lambda x: x).set_inputs(a.T).set_outputs(a.view()).execute()
    np.testing.assert_array_equal(a.data, before.T)
    keep = af.TransformOperation("k", lambda x: x).set_inputs(a[0])
    keep.execute()
    a.data[0] = -1
    np.testing.assert_array_equal(keep.result, before.T[0])


def test_binary_callables_need_not_broadcast():
    a, b = tensor("A", (2, 3)), tensor("B", (3, 4))
    c = af.Tensor("C", (2, 4), "float64")
    af.BinaryOperation("mm", np.matmul).set_inputs(a.view(), b.view()).set_outputs(
        c.view()).execute()
    np.testing.assert_array_equal(c.data, a.data @ b.data)


def test_a_result_that_is_an_outputs_own_memory_is_copied_before_any_write():
    # the kernel returns the very array that owns A's memory (no base, owns its data): the
    # first output's write must not change what the second output receives
    a = af.Tensor("A", (4,), "float64", data=np.array([1.0, 2.0, 3.0, 4.0]))
    b = af.Tensor("B", (4,), "float64")
    owner = a[:].numpy().base
    assert owner.base is None and owner.flags.owndata
    af.TransformOperation("t", lambda x: owner).set_inputs(b[:]).set_outputs(
        a[::-1], b[:]).execute()
    assert a.data.tolist() == [4.0, 3.0, 2.0, 1.0]
    assert b.data.tolist() == [1.0, 2.0, 3.0, 4.0]  # the value before a was written
    # the same kernel reading nothing it returns, kept as a result: later writes to A's
    # memory must not change op.result
    keep = af.TransformOperation("k", lambda x: owner).set_inputs(a[:2])
    keep.execute()
    a.data[:] = 0
    assert keep.result.tolist() == [4.0, 3.0, 2.0, 1.0]


@pytest.mark.parametrize("returns", ["fresh", "owner", "view of owner", "other owner",
                                     "bytes-backed"])
def test_may_share_agrees_with_numpy_bounds(returns):
    from aliasflow.core.interpret import _may_share
    a = af.Tensor("A", (6,), "float64", data=np.arange(6.0))
    outs = [a[1:3].numpy(), a[::2].numpy()]
    owner = outs[0].base
    other = np.zeros(6)
    raw = np.frombuffer(bytearray(48), np.float64)
    value = {"fresh": np.ones(2), "owner": owner, "view of owner": owner[4:],
             "other owner": other, "bytes-backed": raw}[returns]
    for arrays in (outs, [raw], [other[1:]], [owner]):
        assert _may_share(value, arrays) == any(np.may_share_memory(value, x) for x in arrays)
