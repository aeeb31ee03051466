"""TensorProto wire format without TensorFlow: bytes derived by hand from the protobuf encoding
rules, bit-exact round trips for every dtype, and malformed bytes refused with AliasflowError
(never another exception, never a hang). tests/test_tf_real.py exchanges bytes with TensorFlow."""
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import aliasflow as af
from aliasflow import tf

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool", "complex64", "complex128"]


def key(field, wire):
    return bytes([field << 3 | wire]) if field < 16 else bytes([(field << 3 | wire) & 0x7F | 0x80,
                                                                (field << 3 | wire) >> 7])


def test_hand_encoded_bytes():
    # [1.0, 2.0] float32: dtype=1 (DT_FLOAT); shape {dim {size 2}}; tensor_content 8 bytes
    content = struct.pack("<2f", 1.0, 2.0)
    expected = (key(1, 0) + b"\x01" + key(2, 2) + b"\x04" + key(2, 2) + b"\x02" + key(1, 0)
                + b"\x02" + key(4, 2) + b"\x08" + content)
    assert tf.make_tensor_proto([1.0, 2.0]).SerializeToString() == expected
    # scalar int32 -1: int_val packed, -1 as a 10-byte varint; the empty shape is still written
    expected = key(1, 0) + b"\x03" + key(2, 2) + b"\x00" + key(7, 2) + b"\x0a" + \
        b"\xff" * 9 + b"\x01"
    assert tf.make_tensor_proto(-1).SerializeToString() == expected
    # scalar uint64 2**64-1 in uint64_val (field 17: a two-byte key)
    got = tf.make_tensor_proto(np.uint64(2 ** 64 - 1)).SerializeToString()
    assert got == key(1, 0) + b"\x17" + key(2, 2) + b"\x00" + key(17, 2) + b"\x0a" + \
        b"\xff" * 9 + b"\x01"
    # float16 scalar 1.0 -> half_val (field 13) holding the bit pattern 0x3c00
    got = tf.make_tensor_proto(np.float16(1.0)).SerializeToString()
    assert got == key(1, 0) + b"\x13" + key(2, 2) + b"\x00" + key(13, 2) + b"\x02\x80\x78"
    # strings: one length-delimited string_val per element
    got = tf.make_tensor_proto([b"ab", "c"]).SerializeToString()
    assert got == key(1, 0) + b"\x07" + key(2, 2) + b"\x04" + key(2, 2) + b"\x02" + key(1, 0) + \
        b"\x02" + key(8, 2) + b"\x02ab" + key(8, 2) + b"\x01c"


def test_fields_chosen_like_tensorflow():
    assert tf.make_tensor_proto(np.float32(2.5)).float_val == [2.5]
    assert tf.make_tensor_proto(np.arange(3, dtype=np.int16)).tensor_content != b""
    # TensorFlow keeps bool, complex and uint16 in typed fields whatever the size
    assert tf.make_tensor_proto([True, False]).bool_val == [True, False]
    assert tf.make_tensor_proto(np.array([1 + 2j], np.complex64)).scomplex_val == [1.0, 2.0]
    assert tf.make_tensor_proto(np.arange(3, dtype=np.uint16)).int_val == [0, 1, 2]
    # Python values: float32 and int32 unless int64 is needed
    assert tf.make_tensor_proto([1.5]).dtype == 1 and tf.make_tensor_proto(3).dtype == 3
    assert tf.make_tensor_proto(2 ** 40).dtype == 9
    # fewer values than the shape: the last one repeats when read back
    np.testing.assert_array_equal(tf.make_ndarray(tf.make_tensor_proto([1, 2], shape=[4])),
                                  [1, 2, 2, 2])
    np.testing.assert_array_equal(tf.make_ndarray(tf.make_tensor_proto(7.0, shape=[2, 2])),
                                  np.full((2, 2), 7.0, np.float32))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(
    lambda d: hnp.arrays(np.dtype(d), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                       max_side=4))))
def test_round_trip_is_bit_exact(arr):
    data = tf.make_tensor_proto(arr).SerializeToString()
    back = tf.make_ndarray(data)
    assert back.dtype == arr.dtype and back.shape == arr.shape
    assert back.tobytes() == arr.tobytes()
    assert tf.TensorProto.FromString(data).SerializeToString() == data  # parse, write again


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=4), st.binary(max_size=4)), max_size=5))
def test_strings_round_trip(values):
    back = tf.make_ndarray(tf.make_tensor_proto(values, dtype="string").SerializeToString())
    assert back.dtype == object and back.shape == (len(values),)
    assert list(back) == [v.encode() if isinstance(v, str) else v for v in values]


GOOD = [tf.make_tensor_proto(x).SerializeToString() for x in
        (np.arange(6, dtype=np.float32).reshape(2, 3), -5, [True, False], np.float16(3),
         np.array([1 + 2j, 3], np.complex128), [b"xy", b"z"], np.uint64(2 ** 63))]


@pytest.mark.parametrize("data", GOOD)
def test_every_truncation_is_refused_or_parsed(data):
    for n in range(len(data)):
        try:
            tf.make_ndarray(data[:n])
        except af.AliasflowError:
            pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_random_bytes_never_crash(data):
    try:
        out = tf.make_ndarray(data)
    except af.AliasflowError:
        return
    assert isinstance(out, np.ndarray)


@pytest.mark.parametrize("data, message", [
    (b"\x08" + b"\xff" * 11, "varint longer than 10 bytes"),
    (b"\x22\x05ab", "runs past the end"),
    (b"\x0b", "wire type 3"),
    (b"\x08\x01\x12\x04\x12\x02\x08\x03\x22\x04abcd", "tensor_content has 4 bytes"),
    (b"\x08\x63\x12\x00", "unsupported dtype enum 99"),
    (b"\x08\x01\x12\x02\x18\x01", "unknown rank"),
    (b"\x08\x01\x12\x0d\x12\x0b\x08" + b"\xff" * 9 + b"\x01", "negative"),  # dim -1
    (b"\x08\x01\x12\x04\x12\x02\x08\x01\x2a\x08" + struct.pack("<2f", 1, 2), "2 values"),
    (b"\x08\x14\x12\x00", "unsupported dtype"),      # DT_RESOURCE
    (b"\x08\x08\x12\x04\x12\x02\x08\x01\x4a\x04" + struct.pack("<f", 1), "pairs"),
    (b"\x00\x01", "field number 0"),
])
def test_malformed_bytes_are_refused(data, message):
    with pytest.raises(af.AliasflowError, match=message):
        tf.make_ndarray(data)


def test_bad_arguments():
    with pytest.raises(af.AliasflowError, match="None values"):
        tf.make_tensor_proto(None)
    with pytest.raises(af.AliasflowError, match="do not fit shape"):
        tf.make_tensor_proto([1, 2, 3], shape=[2])
    with pytest.raises(af.AliasflowError, match="unknown dtype"):
        tf.make_tensor_proto([1], dtype="float7")
    with pytest.raises(af.AliasflowError, match="TensorProto bytes expected"):
        tf.make_ndarray(12)
