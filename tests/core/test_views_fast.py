"""The cheap paths for making views and importing arrays, against NumPy.

Views are made through fast paths (plain ints taken as they are, derived views trusted to be
in bounds, names written out when first read, imports in one pass) next to the general
paths that convert and check everything. Every test here draws inputs that reach both, and
judges the result by NumPy alone: the view's memory (address of element 0, shape, strides,
values read through it, extent) against the ndarray NumPy makes with the same op, and
refusals against NumPy refusing (or against a brute-force bounds check for ``as_strided``).
"""
import copy

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.core.indexing import apply_index, fast_index

from strategies import brute_footprint, strided

DTYPES = ["int8", "int16", "float32", "float64", "complex128"]


def address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def view_address(v) -> int:
    return v.storage.address + v.byte_offset


def assert_same_memory(v, arr: np.ndarray):
    """``v`` addresses exactly what ``arr`` does (NumPy's own description of it)."""
    assert v.shape == arr.shape
    assert v.dtype == arr.dtype
    assert np.array_equal(v.numpy(), arr)
    if arr.size == 0:
        return
    assert view_address(v) == address(arr)
    # strides of size-1 axes carry no meaning; NumPy may pick any
    assert [s for s, n in zip(v.byte_strides, v.shape) if n > 1] == \
        [s for s, n in zip(arr.strides, arr.shape) if n > 1]
    low, high = np.lib.array_utils.byte_bounds(arr)
    unit = v.tensor.dtype.itemsize
    assert v.storage.address + v.extent[0] * unit == low
    assert v.storage.address + v.extent[1] * unit + v.dtype.itemsize == high
    assert np.shares_memory(v.numpy(), arr, max_work=-1)


# ------------------------------------------------------------------ indexing, movement ops

odd_int = st.one_of(st.integers(-7, 7).map(np.int64), st.booleans(),
                    st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30, 7.0]))


@st.composite
def index_for(draw, ndim: int):
    """A basic index for ``ndim`` dims: mostly plain ints and slices near the sizes (some
    out of range), sometimes None, ``...``, NumPy ints, bools, huge ints, lists, strings."""
    plain_int = st.integers(-3, 3)
    bound = st.none() | plain_int
    step = st.none() | st.integers(-3, 3)
    usual = st.one_of(plain_int, st.builds(slice, bound, bound, step),
                      st.builds(slice, bound, bound, step))
    odd = st.one_of(st.just(None), st.just(Ellipsis), odd_int,
                    st.builds(slice, odd_int, bound), st.builds(slice, bound, bound, odd_int),
                    st.just([0, 1]), st.just("0"))
    items = [draw(usual) for _ in range(draw(st.integers(0, ndim)))]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        items.insert(draw(st.integers(0, len(items))), draw(odd))
    return tuple(items)


@st.composite
def base_view(draw):
    """A tensor over arange data and a view of it (possibly strided, flipped, offset), with
    the ndarray NumPy makes for the same window."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=4)))
    n = int(np.prod(shape))
    t = af.Tensor("A", shape, dtype, data=np.arange(n).reshape(shape) % 100)
    v, arr = t.view(), t.data
    if draw(st.booleans()) and n:  # a strided window of it first (the fast path's parent)
        index = tuple(draw(st.builds(slice, st.none() | st.integers(0, 2), st.none(),
                                     st.sampled_from([None, 1, 2, -1])))
                      for _ in shape)
        v, arr = v[index], arr[index]
    return t, v, arr


def _copies_or_not_int(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    parts = [p for item in items
             for p in ((item.start, item.stop, item.step) if isinstance(item, slice) else (item,))]
    return any(isinstance(p, (bool, float, list, str, np.bool_))
               or isinstance(p, int) and not -2**63 <= p < 2**63 for p in parts)


@settings(max_examples=300, deadline=None)
@given(base=base_view(), data=st.data(), as_tuple=st.booleans())
def test_indexing_matches_numpy(base, data, as_tuple):
    t, v, arr = base
    index = data.draw(index_for(arr.ndim))
    index = index if as_tuple or len(index) != 1 else index[0]
    try:
        expect = arr[index]
    except (IndexError, ValueError, TypeError, OverflowError):
        with pytest.raises(af.AliasflowError) as err:
            v[index]
        assert repr(v.name) in str(err.value)
        return
    if _copies_or_not_int(index):  # NumPy copies (lists, masks) or takes what aliasflow
        with pytest.raises(af.AliasflowError) as err:  # refuses by design (bools, floats,
            # slice bounds beyond 64 bits)
            v[index]
        assert repr(v.name) in str(err.value)
        return
    if not isinstance(expect, np.ndarray):  # all ints: NumPy gives a scalar, aliasflow 0-d
        got = v[index]
        assert got.shape == () and got.numpy()[()] == expect
        items = index if isinstance(index, tuple) else (index,)
        assert view_address(got) == address(arr) + sum(
            int(i) % n * s for i, n, s in zip(items, arr.shape, arr.strides))
        return
    if v.extent is None and expect.size == 0 and not v.tensor.get_storage_size():
        # an int index into an empty view of an empty tensor moves the offset past the end
        # of its storage, which aliasflow refuses (NumPy does not); known, not a fast-path
        # matter: both paths refuse it alike
        try:
            v[index]
        except af.AliasflowError as exc:
            assert "past the end" in str(exc)
            return
    got = v[index]
    assert_same_memory(got, expect)
    # the general path (the one that converts and checks everything) agrees exactly
    offset, shape, stride, text = apply_index(v, index)
    assert (got.offset, got.shape, got.stride) == (offset, tuple(shape), tuple(stride))
    assert got.name == f"{v.name}[{text}]"
    fast = fast_index(v.offset, v.shape, v.stride, index)
    assert fast is None or fast == (offset, shape, stride)


@settings(max_examples=200, deadline=None)
@given(base=base_view(), data=st.data())
def test_transpose_reshape_squeeze_match_numpy(base, data):
    t, v, arr = base
    op = data.draw(st.sampled_from(["T", "transpose", "reshape", "squeeze", "expand_dims",
                                    "broadcast_to", "rename"]))
    if op == "T":
        got, expect = v.T, arr.T
    elif op == "transpose":
        perm = data.draw(st.permutations(range(arr.ndim)))
        got, expect = v.transpose(*perm), arr.transpose(*perm)
    elif op == "reshape":
        shape = tuple(data.draw(st.lists(st.integers(1, 4), max_size=3))) + (-1,)
        try:
            expect = np.reshape(arr, shape, copy=False)
        except ValueError:
            with pytest.raises(af.AliasflowError) as err:
                v.reshape(shape)
            assert repr(v.name) in str(err.value)
            return
        got = v.reshape(shape)
    elif op == "squeeze":
        got, expect = v.squeeze(), arr.squeeze()
    elif op == "expand_dims":
        axis = data.draw(st.integers(-arr.ndim - 1, arr.ndim))
        got, expect = v.expand_dims(axis), np.expand_dims(arr, axis)
    elif op == "broadcast_to":
        shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=arr.ndim,
                                         max_size=arr.ndim + 1)))
        try:
            expect = np.broadcast_to(arr, shape)
        except ValueError:
            with pytest.raises(af.AliasflowError, match="cannot broadcast"):
                v.broadcast_to(shape)
            return
        got = v.broadcast_to(shape)
    else:
        got, expect = v.rename("r"), arr
        assert got.name == "r"
    assert_same_memory(got, expect)
    # a fresh view made with every check gives the same view
    assert got == af.TensorView("check", t, got.offset, got.shape, got.stride)
    assert got.extent == af.TensorView("check", t, got.offset, got.shape, got.stride).extent


@settings(max_examples=300, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES), size=st.integers(1, 30))
def test_as_strided_matches_numpy_and_bounds(data, dtype, size):
    t = af.Tensor("A", (size,), dtype, data=np.arange(size) % 100)
    if data.draw(st.booleans()):  # valid windows
        offset, shape, stride = data.draw(strided(size))
    else:  # anything, often out of bounds
        ndim = data.draw(st.integers(0, 3))
        shape = tuple(data.draw(st.integers(0, 4)) for _ in range(ndim))
        stride = tuple(data.draw(st.integers(-8, 8)) for _ in range(ndim))
        offset = data.draw(st.integers(-3, size + 3))
    offset = data.draw(st.sampled_from([offset, np.int64(offset)]))
    stride = data.draw(st.sampled_from([stride, list(stride)]))
    touched = brute_footprint(int(offset), shape, tuple(stride))
    fits = (0 <= offset <= size) if not touched else \
        (offset >= 0 and min(touched) >= 0 and max(touched) < size)
    if not fits:
        with pytest.raises(af.AliasflowError, match="'A.as_strided"):
            t.as_strided(shape, stride, offset)
        return
    got = t.as_strided(shape, stride, offset)
    start = t.data[int(offset):] if touched else t.data[:0]
    expect = np.lib.stride_tricks.as_strided(
        t.data if not touched else start, shape=shape,
        strides=[s * t.dtype.itemsize for s in stride])
    if touched:
        assert_same_memory(got, expect)
    else:
        assert got.shape == shape and got.extent is None
    assert got.name == f"A.as_strided({shape}, {tuple(stride)}, {offset})"


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_constructor_fast_and_general_paths_agree(data):
    """Plain arguments take the fast path; the same values as NumPy ints, lists or an
    explicit dtype take the general one: the views must be equal, refusals the same."""
    size = data.draw(st.integers(1, 30))
    t = af.Tensor("A", (size,), "int16", data=np.arange(size))
    ndim = data.draw(st.integers(0, 3))
    shape = tuple(data.draw(st.integers(0, 4)) for _ in range(ndim))
    stride = tuple(data.draw(st.integers(-8, 8)) for _ in range(ndim))
    offset = data.draw(st.integers(-2, size + 2))
    odd = (np.int64(offset), [np.int32(n) for n in shape], list(stride))
    outcomes = []
    for args in [(offset, shape, stride), odd]:
        try:
            outcomes.append(af.TensorView("v", t, *args, dtype=data.draw(
                st.sampled_from([None, "int16", np.dtype("int16")]))))
        except af.AliasflowError as exc:
            outcomes.append(str(exc))
    assert type(outcomes[0]) is type(outcomes[1])
    touched = brute_footprint(offset, shape, stride)
    fits = (0 <= offset <= size) if not touched else \
        (offset >= 0 and min(touched) >= 0 and max(touched) < size)
    assert isinstance(outcomes[0], af.TensorView) == fits
    if fits:
        a, b = outcomes
        assert a == b and a.extent == b.extent and a.shape == b.shape == shape
        if touched:
            expect = np.lib.stride_tricks.as_strided(t.data[offset:], shape=shape,
                                                     strides=[s * 2 for s in stride])
            assert_same_memory(a, expect)
    else:
        assert outcomes[0] == outcomes[1] and "'v'" in outcomes[0]


@pytest.mark.parametrize("bad, match", [
    (dict(offset=2**63), "does not fit in 64 bits"),
    (dict(offset=True), "offset must be an int"),
    (dict(shape=(2, True)), "shape must be a tuple of ints"),
    (dict(shape=(2, -1)), "negative size -1"),
    (dict(shape=(1,) * 65), "65 dims"),
    (dict(shape=(2,), stride=(2**64,)), "does not fit in 64 bits"),
    (dict(shape=(2,), stride=(1.0,)), "stride must be a tuple of ints"),
    (dict(shape=(2,), stride=(1, 1)), "has 1 dims but stride"),
    (dict(dtype="O"), "no fixed-size elements"),
])
def test_constructor_refusals_name_the_value(bad, match):
    t = af.Tensor("A", (8,))
    with pytest.raises(af.AliasflowError, match=match):
        af.TensorView("v", t, **bad)


def test_names_of_any_str_type():
    t = af.Tensor("A", (4,))
    v = af.TensorView(np.str_("v"), t)
    assert v.name == "v" and v[1:].name == "v[1:]" and v.T.name == "v.T"
    assert t[::2].rename(np.str_("w")).name == "w"
    with pytest.raises(af.AliasflowError, match="'A': a new name must be a non-empty string, got 5"):
        t.view().rename(5)
    with pytest.raises(af.AliasflowError, match=r"'A\[::2\]': a new name must be a non-empty string, got ''"):
        t[::2].rename("")


def test_derived_views_are_immutable_and_names_render_once():
    t = af.Tensor("A", (6, 8))
    v = t[1:, ::2][..., None, 0].T.reshape(-1)
    assert v.name == "A[1:, ::2][..., None, 0].T.reshape(5,)"
    assert v.name is v.name
    with pytest.raises(AttributeError):
        v.offset = 0
    with pytest.raises(AttributeError):
        v.name = "x"
    assert type(v) is af.TensorView and copy.copy(v) is v
    assert t.view() == t.view() and t.view().tensor is t and t.view("B").name == "B"
    c = copy.copy(t)  # the copy's full view is its own, not the original's
    assert c.view().tensor is c and c[0].tensor is c


def test_a_tensor_is_freed_when_its_last_reference_goes():
    """Views refer to their tensor, and the tensor keeps no view: no cycle, so its memory
    goes with the last reference, without waiting for the cyclic garbage collector."""
    import gc
    import weakref
    enabled = gc.isenabled()
    gc.disable()
    try:
        t = af.Tensor("A", (64, 64))
        v = t[1:, ::2].T
        gone = weakref.ref(t.storage)
        del t
        assert gone() is not None  # v keeps it
        del v
        assert gone() is None
    finally:
        if enabled:
            gc.enable()


# ------------------------------------------------------------------ imports from NumPy

@st.composite
def buffers(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    base = np.arange(draw(st.integers(1, 64))).astype(dtype)
    if draw(st.booleans()):
        base.flags.writeable = False
    return base


@st.composite
def arrays(draw, base=None):
    """A random ndarray over a random base: slices, steps, flips, transposes, byte windows,
    zero strides, read-only, other dtypes viewed over the same bytes."""
    if base is None:
        base = draw(buffers())
    dtype, n = base.dtype, base.size
    kind = draw(st.sampled_from(["index", "index", "strided", "bytes", "dtype"]))
    if kind == "strided":  # any in-bounds window, counted in elements or in bytes
        offset, shape, stride = draw(strided(n, max_dims=4))
        arr = np.lib.stride_tricks.as_strided(base[offset:], shape=shape,
                                              strides=[s * dtype.itemsize for s in stride])
    elif kind == "bytes":
        raw = base.view(np.uint8)
        offset, shape, stride = draw(strided(raw.size - dtype.itemsize + 1, max_dims=3))
        arr = np.lib.stride_tricks.as_strided(raw[offset:], shape=shape,
                                              strides=stride).view(np.uint8)
        if draw(st.booleans()) and arr.ndim and arr.shape[-1] % 2 == 0 and \
                arr.strides[-1] == 1:
            arr = arr.view(np.int16)  # a 2-byte dtype whose strides may be odd
    else:
        dims = draw(st.sampled_from([d for d in range(1, 4)]))
        cut = n - n % dims
        arr = base[:cut].reshape(dims, -1) if cut else base[:0]
        if kind == "dtype" and dtype.itemsize != 2 and arr.ndim and \
                arr.shape[-1] * dtype.itemsize % 2 == 0:
            arr = arr.view(np.int16)  # the same bytes as another dtype (a C-contiguous array)
        index = tuple(draw(st.builds(slice, st.none() | st.integers(-3, 3),
                                     st.none() | st.integers(-3, 8),
                                     st.sampled_from([None, 1, 2, -1, -2])))
                      for _ in range(arr.ndim))
        arr = arr[index]
        if draw(st.booleans()):
            arr = arr.T
    return arr


@settings(max_examples=300, deadline=None)
@given(arr=arrays(), named=st.booleans())
def test_from_numpy_matches_the_array(arr, named):
    v = af.from_numpy(arr, "x" if named else None)
    assert_same_memory(v, arr)
    assert v.storage.readonly == (not arr.flags.writeable)
    if arr.size:
        low, high = np.lib.array_utils.byte_bounds(arr)
        assert (v.storage.address, v.storage.end) == (low, high)  # exactly its bytes
    # the tensor's data, made when first read, is the storage's memory
    data = v.tensor.data
    assert address(data) == v.storage.address and data.nbytes <= v.storage.nbytes
    assert v.tensor.storage is v.storage and not v.tensor.is_virtual
    # the root, made when first asked for, spans the base-most array's bytes
    base = arr
    while isinstance(base.base, np.ndarray):
        base = base.base
    root = v.storage.root
    if base is arr:
        assert root is v.storage
    else:
        assert (root.address, root.end) == np.lib.array_utils.byte_bounds(base)
    assert root.root is root


@settings(max_examples=200, deadline=None)
@given(base=buffers(), data=st.data())
def test_two_imports_overlap_as_numpy_says(base, data):
    a, b = data.draw(arrays(base)), data.draw(arrays(base))
    va, vb = af.from_numpy(a), af.from_numpy(b)
    assert af.check_memory_overlap(va, vb) == np.shares_memory(a, b, max_work=-1)


def test_import_refusals_unchanged():
    with pytest.raises(af.AliasflowError, match="from_numpy: dtype object has no fixed-size"):
        af.from_numpy(np.array([None, 1], dtype=object))
    with pytest.raises(af.AliasflowError, match=r"from_numpy\('o'\): dtype object"):
        af.from_numpy(np.array([None, 1], dtype=object), "o")
    with pytest.raises(af.AliasflowError, match="name must be a non-empty string"):
        af.from_numpy(np.zeros(3), "")
    with pytest.raises(af.AliasflowError, match="needs an array"):
        af.from_numpy(3)
    v = af.from_numpy(np.zeros((2, 0, 3)))
    assert v.shape == (2, 0, 3) and v.extent is None and v.numpy().shape == (2, 0, 3)


@settings(max_examples=100, deadline=None)
@given(base=buffers(), data=st.data())
def test_storage_bytes_made_late_are_the_arrays_bytes(base, data):
    """An import's storage makes its byte array when first used; before and after, any
    part of it (``Storage.slice``) is the same memory as the array's, byte for byte."""
    arr = data.draw(arrays(base))
    storage = af.from_numpy(arr).storage
    assert storage.has_memory
    start = data.draw(st.integers(0, storage.nbytes))
    part = storage.slice(start, data.draw(st.integers(0, storage.nbytes - start)))
    if data.draw(st.booleans()):
        storage.bytes  # the whole storage's array made before the part's
    got = part.bytes
    at = storage.address + start - address(base)
    expect = base.view(np.uint8)[at:at + part.nbytes]  # NumPy's view of those bytes
    assert address(got) == address(expect) or not part.nbytes
    assert np.array_equal(got, expect) and got.flags.writeable == base.flags.writeable
    if part.nbytes:
        assert np.shares_memory(got, expect, max_work=-1)
