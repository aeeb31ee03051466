"""aliasflow.tf's memory model (seed 002): TensorShapeRep bytes against an independent statement of
tensor_shape.h/.cc's rules, buffer refcounts across slices and deletes, the five-step pointer
walk re-done with raw reads, from_numpy without a copy, and the dangerous data-pointer swap."""
import ctypes
import gc
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow import tf
from aliasflow.tf import memory
DataType, TensorBuffer, TensorShapeRep = memory.DataType, memory.TensorBuffer, memory.TensorShapeRep


def TensorShape(dims):  # noqa: N802 - a shape, partial where it has unknown dims or rank
    return TensorShapeRep(dims, partial=dims is None or -1 in dims)


TensorShape.from_bytes = TensorShapeRep.from_bytes

# ---- the rules, restated from tensorflow/core/framework/tensor_shape.h ----------------------
# kMaxRep16 = uint16 max - 1, kMaxRep32 = uint32 max - 1; UnsafeAddDim keeps a dim in Rep16
# while fewer than 6 dims are stored and size < kMaxRep16, in Rep32 while fewer than 3 and
# size < kMaxRep32; a shape built from scratch therefore ends in Rep16 when it has <= 6 dims
# all below kMaxRep16, else in Rep32 when it has <= 3 dims all below kMaxRep32, else out of
# line. Unknown dims (-1) are stored as the type's max; unknown rank is rank byte 255.
MAX16, MAX32 = 0xFFFF - 1, 0xFFFFFFFF - 1


def expected_tag(dims):
    if len(dims) <= 6 and all(d < MAX16 for d in dims):
        return 0
    if len(dims) <= 3 and all(d < MAX32 for d in dims):
        return 1
    return 2


def expected_bytes(dims, dtype):
    """Bytes 0..15 (out-of-line: the pointer bytes left zero) and num_elements."""
    tag = expected_tag(dims)
    out = bytearray(16)
    if tag == 0:
        for i, d in enumerate(dims):
            out[2 * i:2 * i + 2] = (0xFFFF if d == -1 else d).to_bytes(2, "little")
    elif tag == 1:
        for i, d in enumerate(dims):
            out[4 * i:4 * i + 4] = (0xFFFFFFFF if d == -1 else d).to_bytes(4, "little")
    out[13], out[14], out[15] = dtype, len(dims), tag
    n = -1 if -1 in dims else int(np.prod(dims, dtype=object))
    return bytes(out), n


def overflows(dims):
    """AddDim multiplies as it goes: an int64 overflow errors even if a later dim is 0."""
    n = 1
    for d in dims:
        if n < 0 or d < 0:
            n = -1
            continue
        n *= d
        if n > 2 ** 63 - 1:
            return True
    return False


BOUNDARY = [0, 1, 2, 7, 55108, 55109, MAX16 - 1, MAX16, MAX16 + 1, 70000,
            MAX32 - 1, MAX32, MAX32 + 1, 2 ** 40, -1]


def check_shape(dims, dtype=DataType.DT_FLOAT):
    if overflows(dims):
        with pytest.raises(af.AliasflowError, match="overflow"):
            TensorShape(dims)
        return
    s = TensorShape(dims)
    data = s.to_bytes(dtype)
    want, n = expected_bytes(dims, int(dtype))
    assert len(data) == 16 and s.num_elements == n and s.tag == expected_tag(dims)
    if s.tag == 2:   # out of line: a pointer to the dims, then unused bytes, then the 3 bytes
        (ptr,) = struct.unpack_from("<Q", data)
        assert list((ctypes.c_int64 * len(dims)).from_address(ptr)) == list(dims)
        assert data[8:] == want[8:]
    else:
        assert data == want
    back = TensorShape.from_bytes(data)
    assert back.dims == tuple(dims) and back.tag == s.tag and back.data_type == dtype
    rep = s.rep_bytes(dtype)
    assert rep[:16] == data and struct.unpack("<q", rep[16:]) == (n,)
    assert TensorShape.from_bytes(rep).num_elements == n


@pytest.mark.parametrize("dims", [
    [], [5], [2, 3], [1, 2, 3, 4], [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6, 7],
    [MAX16 - 1], [MAX16], [MAX16 + 1], [MAX16 - 1] * 2, [0, MAX16],
    [1, 1, 1, 1, 1, MAX16 - 1], [1, 1, 1, 1, 1, MAX16],
    [MAX32 - 1], [MAX32], [0, 0, MAX32 - 1], [0, 0, MAX32], [0, 0, 0, 70000],
    [70000, 0, 1], [0, 1, 1, 70000], [0, 2 ** 40], [-1], [-1, 3], [7, -1, 70000],
    [-1] * 6, [-1] * 7, [2 ** 62, 2], [2 ** 62, 2, 0], [2 ** 32, 2 ** 32, 0], [3] * 254,
])
def test_shape_bytes_at_the_boundaries(dims):
    check_shape(dims)


@settings(max_examples=200, deadline=None)
@given(dims=st.lists(st.sampled_from(BOUNDARY) | st.integers(0, 70000), max_size=8),
       dtype=st.sampled_from(list(DataType)))
def test_shape_bytes_random(dims, dtype):
    check_shape(dims, dtype)


def test_dims_compare_with_lists_and_tuples():
    assert TensorShape([2, 3]).dims == [2, 3] == TensorShape((2, 3)).dims
    assert TensorShape([2, 3]).dims == (2, 3) and TensorShape([2, 3]).dims != [3, 2]
    assert tf.memory_walk(memory.Tensor.allocate("int8", [1]))[4]["offset"] == 16


def test_unknown_rank_and_the_dtype_byte():
    s = TensorShape(None)
    assert s.to_bytes(DataType.DT_INT32) == bytes(13) + bytes([3, 255, 0])
    assert s.num_elements == -1 and s.ndims == -1 and s.dims is None
    assert TensorShape.from_bytes(s.to_bytes()).unknown_rank
    assert TensorShape([2]).to_bytes(np.float64)[13] == 2
    assert TensorShape([2]).to_bytes("int64")[13] == 9


def test_set_dim_upgrades_but_never_downgrades():
    s = TensorShape([70000, 2])
    s.set_dim(0, 5)
    assert s.tag == 1 and s.to_bytes()[:8] == bytes([5, 0, 0, 0, 2, 0, 0, 0])
    assert TensorShape([5, 2]).tag == 0
    t = TensorShape([5, 2])
    t.set_dim(1, 70000)
    assert t.tag == 1 and t.dims == (5, 70000) and t.num_elements == 350000
    u = TensorShape([1, 2, 3, 4])
    u.set_dim(0, 70000)                 # four dims cannot be Rep32
    assert u.tag == 2 and u.num_elements == 70000 * 24


@pytest.mark.parametrize("call, message", [
    (lambda: TensorShape([-2]), ">= -1"),
    (lambda: TensorShapeRep([-1]), "exists only in a partial shape"),
    (lambda: TensorShapeRep(None), "exists only in a partial shape"),
    (lambda: TensorShapeRep([2]).set_dim(0, -1), "exists only in a partial shape"),
    (lambda: TensorShapeRep([2 ** 63]), "fit in int64"),
    (lambda: TensorShapeRep([0, 2 ** 70]), "fit in int64"),
    (lambda: TensorShapeRep([1] * 10**6), "too many dimensions"),
    (lambda: TensorShapeRep("abc"), "sequence of ints"),
    (lambda: memory.Tensor.allocate("float64", [2 ** 40, 2 ** 20]), "cannot allocate|nbytes"),
    (lambda: memory.Tensor("float32", [4], TensorBuffer(16).sub_buffer("0", 4)), "must be ints"),
    (lambda: TensorShape([1.5]), "must be an int"),
    (lambda: TensorShape([1] * 255), "too many dimensions"),
    (lambda: TensorShape([2 ** 40, 2 ** 40]), "overflow"),
    (lambda: TensorShape.from_bytes(b"\0" * 15), "16 or 24"),
    (lambda: TensorShape.from_bytes(bytes(15) + b"\x03"), "bad tag"),
    (lambda: TensorShape.from_bytes(bytes(14) + b"\x07\x00"), "rank 7"),
    (lambda: TensorShape.from_bytes(bytes(8) + bytes(6) + b"\x01\x02"), "not a live dims"),
    (lambda: TensorShape.from_bytes(TensorShape([2]).to_bytes() + struct.pack("<q", 3)),
     "does not match"),
    (lambda: memory.Tensor("float32", [-1], None), "exists only in a partial shape"),
    (lambda: memory.Tensor("float32", [4], TensorBuffer.allocate(8)), "needs 16 bytes"),
    (lambda: memory.Tensor("str", [1], None), "no TensorFlow DataType"),
    (lambda: tf.from_numpy(np.zeros((3, 3))[:, 0]), "C-contiguous"),
])
def test_bad_input_is_refused_clearly(call, message):
    with pytest.raises(af.AliasflowError, match=message):
        call()


# ---- buffers, refcounts, slices -------------------------------------------------------------
def refcount_in_memory(buffer):
    return ctypes.c_int32.from_address(buffer.address + 8).value


def test_buffer_refcounts_across_slices_and_deletes():
    root = TensorBuffer(4 * 3 * 4)
    assert root.refcount == 1 and root.owns_memory() and root.root_buffer() is root
    t = memory.Tensor(DataType.DT_FLOAT, [4, 3], root)
    assert root.refcount == 2
    root.unref()                                   # the creator lets go: the tensor owns it
    assert root.refcount == refcount_in_memory(root) == 1
    t.numpy()[...] = np.arange(12).reshape(4, 3)
    s = t.slice(1, 3)
    sub = s.buffer
    assert sub.root_buffer() is root and not sub.owns_memory()
    assert root.refcount == 2 and sub.refcount == 1
    assert sub.data == root.data + 12 and sub.size() == sub.size == 24
    np.testing.assert_array_equal(s.numpy(), [[3, 4, 5], [6, 7, 8]])
    assert np.shares_memory(s.numpy(), t.numpy())
    ss = s.slice(1, 2)                             # a slice of a slice refs the root
    assert ss.buffer.root_buffer() is root and root.refcount == 3 and sub.refcount == 1
    assert ss.buffer.data == root.data + 24
    del t
    gc.collect()
    assert root.refcount == 2 and not root.released
    s.numpy()[0, 0] = 42                           # the memory is still there
    del s
    gc.collect()
    assert sub.released and root.refcount == 1
    del ss
    gc.collect()
    assert root.released


def test_buffer_over_an_array_does_not_own_it():
    x = np.arange(6, dtype=np.int32)
    buf = TensorBuffer(x)
    assert not buf.owns_memory() and buf.data == x.ctypes.data and buf.size == 24
    t = memory.Tensor("int32", [2, 3], buf)
    buf.unref()
    assert buf.refcount == 1
    np.testing.assert_array_equal(t.numpy(), x.reshape(2, 3))
    with pytest.raises(af.AliasflowError, match="C-contiguous"):
        TensorBuffer(x[::2])
    with pytest.raises(af.AliasflowError, match="nbytes must be an int"):
        TensorBuffer(-1)


def test_empty_slice_and_no_buffer():
    t = memory.Tensor.allocate("int32", [3, 2])
    e = t.slice(2, 2)
    assert e.dims == (0, 2) and e.buffer.size() == 0
    z = memory.Tensor("int32", [0, 2], None)
    assert z.slice(0, 0).buffer is None
    with pytest.raises(af.AliasflowError, match="buf_ is null"):
        tf.memory_walk(z)
    with pytest.raises(af.AliasflowError, match="start <= limit"):
        t.slice(2, 1)


def test_slice_keeps_the_representation():
    t = memory.Tensor.allocate("uint8", [70000, 1])
    s = t.slice(0, 2)
    assert s.dims == (2, 1) and s.shape.tag == 1
    assert s.shape_bytes()[:8] == bytes([2, 0, 0, 0, 1, 0, 0, 0]) and s.shape_bytes()[15] == 1


# ---- the walk -------------------------------------------------------------------------------
def read_ptr(address):
    return ctypes.c_void_p.from_address(address).value or 0


@pytest.mark.parametrize("make", [
    lambda: memory.Tensor.allocate("float32", [4, 3]),
    lambda: memory.Tensor.allocate("int64", [1, 2, 3, 4, 5, 6, 7]),
    lambda: memory.Tensor.allocate("float32", [5, 3]).slice(2, 4),
    lambda: tf.from_numpy(np.arange(10, dtype=np.int16)),
])
def test_memory_walk_follows_the_article(make):
    t = make()
    steps = tf.memory_walk(t)
    assert [s.step for s in steps] == [1, 2, 3, 4, 5]
    assert [s.offset for s in steps] == [0, 0, 8, 24, 16]
    # the same five steps, re-done with raw reads
    tt = read_ptr(t.tf_tensor_pointer)
    ai = read_ptr(tt)
    tensor = ai + 8
    tb = read_ptr(tensor + 24)
    data = read_ptr(tb + 16)
    assert [s.value for s in steps] == [tt, ai, tensor, tb, data]
    assert data == t.buffer.data and tb == t.buffer.address
    assert data == t.numpy().__array_interface__["data"][0]
    # what lies between: the shape's 24 bytes, and the refcount after the buffer's vtable ptr
    assert ctypes.string_at(tensor, 16) == t.shape.to_bytes(t.dtype)
    assert ctypes.c_int64.from_address(tensor + 16).value == t.num_elements
    assert ctypes.c_int32.from_address(tb + 8).value == t.buffer.refcount == 1
    assert ctypes.string_at(tensor + 13, 1)[0] == int(t.dtype)


# ---- NumPy memory without a copy, and the swap ----------------------------------------------
def test_from_numpy_aliases_and_aliasflow_sees_it():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    t = tf.from_numpy(x)
    assert t.buffer.data == x.ctypes.data and not t.buffer.owns_memory()
    assert t.dtype == DataType.DT_FLOAT and t.dims == (4, 3)
    x[1, 1] = -5
    assert t.numpy()[1, 1] == -5
    t.numpy()[3, 2] = 9
    assert x[3, 2] == 9
    row = t.slice(1, 2)
    write = af.FillOperation("write_x_col", 0.0).set_outputs(af.from_numpy(x[:, 1], "x[:, 1]"))
    read = af.TransformOperation("read_row").set_inputs(row.af_view("row"))
    assert af.check_memory_overlap(write.output_views[0], read.input_views[0])
    graph = af.analyze([write, read])
    assert [(d.src, d.dst, d.kind, d.implicit) for d in graph.dependencies] == \
        [("write_x_col", "read_row", "RAW", True)]
    af.run([write, read])
    np.testing.assert_array_equal(read.result, [[3, 0, 5]])


def test_swap_data_pointer_silently_aliases():
    t = memory.Tensor.allocate("float32", [4])
    t.numpy()[...] = 1
    twin = memory.Tensor(t.dtype, t.shape, t.buffer)   # another tensor on the same buffer
    before_slice = t.slice(0, 2)
    x = np.zeros(4, np.float32)
    old = t.buffer.data
    write = af.FillOperation("write_x", 7.0).set_outputs(af.from_numpy(x[1:3], "x[1:3]"))
    read_before = af.TransformOperation("read_t").set_inputs(t.af_view("t_before"))
    assert not af.check_memory_overlap(write.output_views[0], read_before.input_views[0])
    assert tf.swap_data_pointer(t, x) == old
    # nothing in the tensor says so: same shape, same buffer size, still "owns" its memory
    assert t.dims == (4,) and t.buffer.size() == 16 and t.buffer.owns_memory()
    assert t.buffer.data == x.ctypes.data and tf.memory_walk(twin)[-1].value == x.ctypes.data
    assert before_slice.buffer.data == old            # sub-buffers made earlier kept it
    read = af.TransformOperation("read_twin").set_inputs(twin.af_view("twin"))
    ops = [write, read]
    graph = af.analyze(ops)
    assert [(d.src, d.dst, d.kind, d.implicit) for d in graph.dependencies] == \
        [("write_x", "read_twin", "RAW", True)]
    af.run(ops)
    np.testing.assert_array_equal(read.result, [0, 7, 7, 0])
    np.testing.assert_array_equal(before_slice.numpy(), [1, 1])


def test_exports():
    assert {"TensorShapeRep", "TensorBuffer", "memory_walk", "swap_data_pointer",
            "from_numpy"} <= set(memory.__all__)
    assert "Tensor" not in memory.__all__ and "TensorShape" not in memory.__all__
    assert tf.TensorShapeRep is TensorShapeRep and isinstance(tf.from_numpy(np.zeros(1)),
                                                              memory.Tensor)
    # issue 22: tf.TensorShape is the graph's shape, as in TensorFlow
    g = tf.Graph()
    with g.as_default():
        assert isinstance(tf.constant([1.0, 2.0]).shape, tf.TensorShape)


# ---- issue 28: freed memory, missing buffers, partial shapes --------------------------------
def test_reading_a_released_buffer_is_refused_not_a_crash():
    t = memory.Tensor.allocate("float32", [1 << 22])
    t.buffer.unref()                      # the tensor's own reference: the memory is gone
    with pytest.raises(af.AliasflowError, match="was released"):
        t.numpy()
    with pytest.raises(af.AliasflowError, match="was released"):
        t.slice(0, 1)
    del t
    gc.collect()                          # its finalizer gives nothing back, raises nothing
    root = memory.Tensor.allocate("int8", [8])
    part = root.slice(2, 4)
    root.buffer.unref()                   # the slice's sub-buffer still holds the root
    np.testing.assert_array_equal(part.numpy(), [0, 0])
    root.buffer.unref()                   # now the root is released under a live slice
    with pytest.raises(af.AliasflowError, match="was released"):
        part.numpy()


def test_a_data_pointer_into_foreign_memory_is_not_read():
    t = memory.Tensor.allocate("float32", [4])
    stray = np.zeros(64, np.float32)
    where = tf.memory_walk(t)[-1].address
    ctypes.c_void_p.from_address(where).value = stray.ctypes.data   # not through the model
    with pytest.raises(af.AliasflowError, match="points at no memory the buffer holds"):
        t.numpy()


def test_a_tensor_made_without_a_buffer_allocates_one():
    t = memory.Tensor("float32", [2, 3])
    np.testing.assert_array_equal(t.numpy(), np.zeros((2, 3), np.float32))
    assert t.buffer.owns_memory() and t.buffer.refcount == 1
    assert t.buffer.data % memory.ALIGNMENT == 0
    assert memory.Tensor("int8", [0, 3]).buffer is None   # no elements: no buffer, as in TF


def test_partial_shapes_hold_unknown_dims_and_decode_as_partial():
    p = TensorShapeRep([-1, 3], partial=True)
    assert p.num_elements == -1 and p.partial and not p.is_fully_defined
    back = TensorShapeRep.from_bytes(p.to_bytes())
    assert back.partial and back.dims == (-1, 3)
    assert not TensorShapeRep.from_bytes(TensorShapeRep([2, 3]).to_bytes()).partial
    with pytest.raises(af.AliasflowError, match="not fully defined"):
        memory.Tensor("float32", p)
