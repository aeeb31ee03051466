"""The front ends' one adapter to aliasflow memory: arrays over the same bytes, however they
were made (slices, transposes, raw addresses), become views that alias exactly as NumPy says."""
import ctypes

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.frontends._memory import view_of


@st.composite
def sliced(draw, base):
    """A basic-indexing view of ``base`` (a 2-D array)."""
    index = []
    for n in base.shape:
        if draw(st.booleans()):
            index.append(draw(st.integers(0, n - 1)))
        else:
            index.append(slice(draw(st.none() | st.integers(-n, n)),
                               draw(st.none() | st.integers(-n, n)),
                               draw(st.sampled_from([None, 1, 2, 3, -1, -2]))))
    view = base[tuple(index) + (Ellipsis,)]
    return view.T if draw(st.booleans()) else view


@settings(max_examples=150, deadline=None)
@given(data=st.data(), rows=st.integers(1, 5), cols=st.integers(1, 6),
       dtype=st.sampled_from([np.float32, np.int16, np.float64]))
def test_views_alias_exactly_as_numpy_says(data, rows, cols, dtype):
    base = np.zeros((rows, cols), dtype)
    # the same memory a second time, reached from its raw address (as a C pointer would be)
    ctype = np.ctypeslib.as_ctypes_type(np.dtype(dtype))
    raw = np.ctypeslib.as_array((ctype * base.size).from_address(base.ctypes.data))
    twin = raw.reshape(rows, cols)
    a, b = data.draw(sliced(base)), data.draw(sliced(twin))
    va, vb = view_of(a, "a"), view_of(b, "b")
    np.testing.assert_array_equal(va.numpy(), a)
    assert va.numpy().__array_interface__["data"][0] == a.__array_interface__["data"][0]
    if a.size and b.size:
        assert af.check_memory_overlap(va, vb) == np.shares_memory(a, b, max_work=-1)
        ov = af.overlap(va, vb)
        assert ov.count == len(np.intersect1d(_addresses(a), _addresses(b)))


def _addresses(arr):
    start = arr.__array_interface__["data"][0]
    if arr.ndim == 0:
        return np.array([start])
    idx = np.indices(arr.shape).reshape(arr.ndim, -1).T
    return np.unique(start + idx @ np.array(arr.strides, dtype=np.int64))


def test_separate_arrays_do_not_alias_and_reinterpretation_is_refused():
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    assert not af.check_memory_overlap(view_of(x, "x"), view_of(y, "y"))
    vx = view_of(x, "x")       # a live float32 view: the int16 reading would be a second
    with pytest.raises(af.AliasflowError, match="reinterprets"):   # storage for the bytes
        view_of(x.view(np.int16), "x16")
    del vx                     # once no view is alive, the memory may be read another way
    assert view_of(x.view(np.int16), "x16").shape == (8,)


def test_empty_views_and_views_at_the_end():
    x = np.arange(6, dtype=np.float32)
    v = view_of(x[6:], "end")
    assert v.shape == (0,) and v.tensor is view_of(x, "x").tensor
    ctypes.memset(x.ctypes.data, 0, 4)
    assert view_of(x[:1], "first").numpy()[0] == 0
