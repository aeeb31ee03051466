"""Tensors and views: the seed's numbers, NumPy as the oracle for every view op, refusals."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.seeds import complex_example, simple_example

from strategies import brute_footprint, strided


def test_seed_footprints():
    p = simple_example()
    assert af.compute_view_footprint(p.views["viewA1"]) == [0, 1, 4, 5]
    assert af.compute_view_footprint(p.views["viewA2"]) == [8, 9, 12, 13]
    p = complex_example()
    expect = {"viewA1": [0, 1, 2, 4, 5, 6, 8, 9, 10], "viewA2": [5, 6, 9, 10],
              "viewA3": [10, 11, 14, 15], "viewB1": [0, 1, 3, 4], "viewC1": [0, 1, 2, 3]}
    for name, fp in expect.items():
        assert af.compute_view_footprint(p.views[name]) == fp


def test_tensor_basics():
    t = af.Tensor("A", (3, 4, 5))
    assert t.size == 60 and t.get_storage_size() == 60 and t.data.shape == (3, 4, 5)
    assert t.data.dtype == np.float32
    v = af.TensorView("v", t)
    assert v.shape == (3, 4, 5) and v.stride == (20, 5, 1)
    assert af.TensorView("w", t, 0, (4, 5)).stride == (5, 1)
    assert v.get_physical_index((1, 2, 3)) == 20 + 10 + 3


def test_physical_index_is_bounds_checked():
    v = af.TensorView("v", af.Tensor("A", (4, 4)), 0, (2, 2), (4, 1))
    for bad in [(2, 0), (0, -1), (0,), (0, 0, 0)]:
        with pytest.raises(IndexError, match="'v'"):
            v.get_physical_index(bad)


def test_views_are_immutable_values():
    t = af.Tensor("A", (4, 4))
    v = af.TensorView("v", t, 5, (2, 2), (4, 1))
    with pytest.raises(AttributeError):
        v.offset = 0
    assert v == af.TensorView("v", t, 5, (2, 2), (4, 1))
    assert v == af.TensorView("other name", t, 5, (2, 2), (4, 1))  # the name is a label
    assert v != af.TensorView("v", t, 5, (2, 2), (4, 1), dtype="int32")
    assert hash(v) == hash(af.TensorView("v", t, 5, [2, 2], [4, 1]))
    assert v.same_window(t[1:3, 1:3]) and not v.same_window(t[1:3, 0:2])
    assert t[1:3, ::2].name == "A[1:3, ::2]"
    assert t.T.name == "A.T"


@pytest.mark.parametrize("kwargs, match", [
    (dict(offset=0, shape=(3, 3), stride=(4, 2)), r"'bad'.*highest element 12"),
    (dict(offset=2, shape=(3,), stride=(-2,)), r"'bad'.*lowest element -2"),
    (dict(offset=-1, shape=(1,), stride=(1,)), r"'bad'.*negative offset -1"),
    (dict(offset=0, shape=(2, 2), stride=(1,)), r"'bad'.*2 dims but stride"),
    (dict(offset=0, shape=(2, -1), stride=(1, 1)), r"'bad'.*negative size -1"),
    (dict(offset=0, shape=(2,), stride=(1.5,)), r"'bad'.*stride must be"),
    (dict(offset=1.0, shape=(2,), stride=(1,)), r"'bad'.*offset must be an int"),
    (dict(offset=13, shape=(0,), stride=(1,)), r"'bad'.*past the end"),
    (dict(offset=0, shape="ab", stride=(1, 1)), r"'bad'.*shape must be"),
])
def test_bad_views_are_refused(kwargs, match):
    t = af.Tensor("A", (3, 4))
    with pytest.raises(af.AliasflowError, match=match):
        af.TensorView("bad", t, **kwargs)


def test_bad_tensors_are_refused():
    with pytest.raises(af.AliasflowError, match="negative size"):
        af.Tensor("A", (2, -3))
    with pytest.raises(af.AliasflowError, match="unknown dtype 'nope'"):
        af.Tensor("A", (2,), "nope")
    with pytest.raises(af.AliasflowError, match="data has shape"):
        af.Tensor("A", (2,), data=[1, 2, 3])
    with pytest.raises(af.AliasflowError, match="tensor must be an aliasflow Tensor"):
        af.TensorView("v", np.zeros(3))


def test_numpy_shares_memory_both_ways():
    t = af.Tensor("A", (4, 4))
    v = t[1:3, ::-1]
    a = v.numpy()
    a[0, 0] = 7
    assert t.data[1, 3] == 7
    t.data[2, 0] = 9
    assert a[1, 3] == 9
    b = t[0].broadcast_to((3, 4)).numpy()
    assert not b.flags.writeable
    assert t.as_strided((3, 2), (1, 1)).numpy().flags.writeable is False
    assert t.as_strided((3, 2), (2, 1)).numpy().flags.writeable is True


index_item = st.one_of(
    st.integers(-6, 6),
    st.builds(slice, st.none() | st.integers(-7, 7), st.none() | st.integers(-7, 7),
              st.none() | st.integers(-3, 3).filter(bool)),
    st.just(None), st.just(Ellipsis))


def apply_same(view, arr, draw_ops):
    """Apply the same random movement ops to a view and to an ndarray; compare each step."""
    for op, arg in draw_ops:
        try:
            expect = op_numpy(arr, op, arg)
        except (IndexError, ValueError, TypeError):
            with pytest.raises((af.AliasflowError, IndexError)):
                op_view(view, op, arg)
            return
        view, arr = op_view(view, op, arg), expect
        assert view.shape == arr.shape
        assert np.array_equal(view.numpy(), arr)
        if arr.size:  # strides of size-1 axes carry no meaning; NumPy may pick any
            assert [s for s, n in zip(view.stride, view.shape) if n > 1] == \
                [s // arr.itemsize for s, n in zip(arr.strides, arr.shape) if n > 1]


def op_numpy(a, op, arg):
    if op == "index":
        return a[arg]
    if op == "transpose":
        return a.transpose(*arg) if arg is not None else a.T
    if op == "reshape":
        return np.reshape(a, arg, copy=False)
    if op == "broadcast_to":
        return np.broadcast_to(a, arg)
    if op == "flip":
        return np.flip(a, arg)
    if op == "squeeze":
        return a.squeeze()
    if op == "expand_dims":
        return np.expand_dims(a, arg)


def op_view(v, op, arg):
    if op == "index":
        return v[arg]
    if op == "transpose":
        return v.transpose(*arg) if arg is not None else v.T
    if op == "reshape":
        return v.reshape(arg)
    if op == "broadcast_to":
        return v.broadcast_to(arg)
    if op == "flip":
        return v.flip(arg)
    if op == "squeeze":
        return v.squeeze()
    if op == "expand_dims":
        return v.expand_dims(arg)


@st.composite
def movement(draw, ndim):
    op = draw(st.sampled_from(["index", "transpose", "reshape", "broadcast_to", "flip",
                               "squeeze", "expand_dims"]))
    if op == "index":
        return op, tuple(draw(st.lists(index_item, max_size=4)))
    if op == "transpose":
        return op, draw(st.none() | st.permutations(range(ndim)).map(tuple))
    if op == "reshape":
        return op, tuple(draw(st.lists(st.integers(1, 6), max_size=4))) + (-1,)
    if op == "broadcast_to":
        return op, tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim + 1)))
    if op in ("flip", "expand_dims"):
        return op, draw(st.integers(-ndim - 1, ndim))
    return op, None


@settings(max_examples=1000, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_view_ops_match_numpy(shape, data):
    shape = tuple(shape)
    t = af.Tensor("A", shape, "int64", data=np.arange(np.prod(shape)).reshape(shape))
    view, arr = t.view(), np.arange(np.prod(shape)).reshape(shape)
    steps = []
    for _ in range(data.draw(st.integers(1, 4))):
        steps.append(data.draw(movement(max(arr.ndim, 0))))
    apply_same(view, arr, steps)


@settings(max_examples=1000, deadline=None)
@given(data=st.data())
def test_as_strided_and_footprint_match_numpy(data):
    size = data.draw(st.integers(1, 40))
    off, shape, stride = data.draw(strided(size))
    t = af.Tensor("A", (size,), "int32", data=np.arange(size))
    v = t.as_strided(shape, stride, off)
    if all(s >= 0 for s in stride):
        expect = np.lib.stride_tricks.as_strided(t.data[off:], shape=shape,
                                                 strides=[s * 4 for s in stride])
        assert np.array_equal(v.numpy(), expect)
    assert v.footprint().tolist() == sorted(brute_footprint(off, shape, stride))
    assert v.has_internal_overlap() == (len(brute_footprint(off, shape, stride)) < v.size)


def test_reshape_refuses_copies():
    t = af.Tensor("A", (4, 6))
    with pytest.raises(af.AliasflowError, match="needs a copy"):
        t.T.reshape(24)
    with pytest.raises(af.AliasflowError, match="cannot reshape size 24"):
        t.reshape(5, 5)
    assert t[:, ::2].reshape(2, 2, 3).numpy().shape == (2, 2, 3)


def test_index_errors_name_view_and_value():
    t = af.Tensor("A", (4, 4))
    with pytest.raises(af.AliasflowError, match=r"'A'.*index 4 out of range"):
        t[4]
    with pytest.raises(af.AliasflowError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(af.AliasflowError, match="unsupported index"):
        t[[0, 1]]
    with pytest.raises(af.AliasflowError, match="step cannot be zero"):
        t[::0]
    with pytest.raises(af.AliasflowError, match="cannot broadcast"):
        t.broadcast_to((3, 4))


def test_tensor_data_is_cast_exactly_or_refused():
    t = af.Tensor("U", (2,), "uint64", data=[0, 2**64 - 1])
    assert int(t.data[1]) == 2**64 - 1
    with pytest.raises(af.AliasflowError, match="'U'.*int8"):
        af.Tensor("U", (2,), "int8", data=[0, 1000])


def test_from_numpy_shares_the_array_and_refuses_copies():
    arr = np.arange(12.0).reshape(3, 4)
    t = af.Tensor.from_numpy("N", arr)
    assert t.data is arr and t.shape == (3, 4) and t.dtype == np.float64
    t[1].numpy()[...] = -1
    assert arr[1].tolist() == [-1.0] * 4
    with pytest.raises(af.AliasflowError, match="'N'.*C-contiguous"):
        af.Tensor.from_numpy("N", arr.T)
