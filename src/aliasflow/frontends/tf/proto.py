"""TensorFlow's ``TensorProto`` in its protobuf wire format, written and read by hand.

Fields (``tensorflow/core/framework/tensor.proto``): dtype=1, tensor_shape=2 (a
``TensorShapeProto``: dim=2 ``{size=1, name=2}``, unknown_rank=3), version_number=3,
tensor_content=4 (raw little-endian bytes), float_val=5, double_val=6, int_val=7, string_val=8,
scomplex_val=9, int64_val=10, bool_val=11, dcomplex_val=12, half_val=13 (float16 and bfloat16
bit patterns), uint32_val=16, uint64_val=17. Repeated numbers are written packed and read
packed or not, as protobuf requires.

:func:`make_tensor_proto` chooses fields as TensorFlow's does (``tensor_content`` for more than
one element of the types TensorFlow lists, the typed ``*_val`` fields otherwise), so for the same
input the bytes equal TensorFlow's. :func:`make_ndarray` reads ours and TensorFlow's, repeating the
last value when fewer values than elements are stored, as TensorFlow does.

>>> from aliasflow import tf
>>> p = tf.make_tensor_proto([1.0, 2.0])
>>> p.SerializeToString().hex()
'080112041202080222080000803f00000040'
>>> tf.make_ndarray(p.SerializeToString())
array([1., 2.], dtype=float32)
"""
from __future__ import annotations

import struct
from math import prod

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import INT64, check_nbytes, fit_array, show_value
from .dtypes import MAX_RANK, DType, as_dtype

# dtype name -> (field number, how each value is stored)
_TYPED_FIELD = {
    "float16": (13, "half"), "bfloat16": (13, "half"), "float32": (5, "f32"),
    "float64": (6, "f64"), "int8": (7, "int"), "int16": (7, "int"), "int32": (7, "int"),
    "uint8": (7, "int"), "uint16": (7, "int"), "int64": (10, "int"), "uint32": (16, "uint"),
    "uint64": (17, "uint"), "bool": (11, "uint"), "complex64": (9, "f32"),
    "complex128": (12, "f64"), "string": (8, "bytes"),
}
_CONTENT_TYPES = {"float16", "bfloat16", "float32", "float64", "int32", "uint8", "int16",
                  "int8", "int64", "uint32", "uint64"}
_FIELD_NAMES = {5: "float_val", 6: "double_val", 7: "int_val", 8: "string_val",
                9: "scomplex_val", 10: "int64_val", 11: "bool_val", 12: "dcomplex_val",
                13: "half_val", 16: "uint32_val", 17: "uint64_val"}
_MAX_VARINT = (1 << 64) - 1
_MAX_FIELD = (1 << 29) - 1  # protobuf's largest field number


# ---- wire format ----------------------------------------------------------------------------
def _varint(n: int) -> bytes:
    if n < 0:  # negative int32/int64 are written as their 64-bit two's complement
        n += 1 << 64
    if not 0 <= n <= _MAX_VARINT:
        raise AliasflowError(f"value {n} does not fit a protobuf varint")
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _tag(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _delimited(field: int, payload: bytes) -> bytes:
    return _tag(field, 2) + _varint(len(payload)) + payload


class _Reader:
    """Reads one message's bytes; every failure is an AliasflowError naming the offset."""

    def __init__(self, data: bytes, what: str):
        self.data, self.pos, self.what = data, 0, what

    def fail(self, message: str):
        raise AliasflowError(f"malformed {self.what}: {message} at byte {self.pos}")

    def done(self) -> bool:
        return self.pos >= len(self.data)

    def varint(self) -> int:
        result = shift = 0
        for _ in range(10):
            if self.pos >= len(self.data):
                self.fail("truncated varint")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                if result > _MAX_VARINT:
                    self.fail("varint larger than 64 bits")
                return result
            shift += 7
        self.fail("varint longer than 10 bytes")

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            self.fail(f"field of {n} bytes runs past the end ({len(self.data)} bytes)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def fields(self):
        """Yield ``(field, wire type, value)``: an int for varints, bytes otherwise."""
        while not self.done():
            key = self.varint()
            field, wire = key >> 3, key & 7
            if field == 0:
                self.fail("field number 0")
            if field > _MAX_FIELD:
                self.fail(f"field number {field} is beyond protobuf's {_MAX_FIELD}")
            if wire == 0:
                yield field, wire, self.varint()
            elif wire == 1:
                yield field, wire, self.take(8)
            elif wire == 2:
                yield field, wire, self.take(self.varint())
            elif wire == 5:
                yield field, wire, self.take(4)
            else:
                self.fail(f"unsupported wire type {wire} (field {field})")


def _signed(n: int, bits: int) -> int:
    n &= (1 << bits) - 1
    return n - (1 << bits) if n >> (bits - 1) else n


# ---- the message ----------------------------------------------------------------------------
class TensorProto:
    """A ``TensorProto``: ``dtype`` (DataType enum), ``tensor_shape`` (list of dim sizes, or
    None for an unknown rank), ``dim_names``, ``version_number``, ``tensor_content`` and the
    typed value lists (``float_val``, ``int_val``, ...; ``half_val`` holds bit patterns)."""

    def __init__(self, dtype: int = 0, tensor_shape=(), tensor_content: bytes = b"",
                 version_number: int = 0, dim_names=None, **values):
        self.dtype = dtype
        self.tensor_shape = None if tensor_shape is None else [int(d) for d in tensor_shape]
        self.dim_names = list(dim_names) if dim_names else [""] * len(self.tensor_shape or [])
        self.version_number = version_number
        self.tensor_content = bytes(tensor_content)
        for name in _FIELD_NAMES.values():
            setattr(self, name, list(values.pop(name, [])))
        if values:
            raise AliasflowError(f"TensorProto has no field(s) {sorted(values)}")

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's name
        out = bytearray()
        if self.dtype:
            out += _tag(1, 0) + _varint(self.dtype)
        shape = bytearray()
        if self.tensor_shape is None:
            shape += _tag(3, 0) + _varint(1)
        else:
            for size, name in zip(self.tensor_shape, self.dim_names):
                dim = (_tag(1, 0) + _varint(size) if size else b"") + \
                      (_delimited(2, name.encode()) if name else b"")
                shape += _delimited(2, dim)
        out += _delimited(2, bytes(shape))
        if self.version_number:
            out += _tag(3, 0) + _varint(self.version_number)
        if self.tensor_content:
            out += _delimited(4, self.tensor_content)
        for field in sorted(_FIELD_NAMES):
            values = getattr(self, _FIELD_NAMES[field])
            if not values:
                continue
            if field == 8:
                out += b"".join(_delimited(8, bytes(v)) for v in values)
            elif field in (5, 9):
                out += _delimited(field, struct.pack(f"<{len(values)}f", *values))
            elif field in (6, 12):
                out += _delimited(field, struct.pack(f"<{len(values)}d", *values))
            else:
                out += _delimited(field, b"".join(_varint(int(v)) for v in values))
        return bytes(out)

    __bytes__ = SerializeToString

    @classmethod
    def FromString(cls, data) -> "TensorProto":  # noqa: N802 - protobuf's name
        """Parse TensorProto bytes (ours or TensorFlow's); malformed bytes raise
        :class:`~aliasflow.AliasflowError`."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise AliasflowError(f"TensorProto bytes expected, got {type(data).__name__}")
        proto = cls()
        reader = _Reader(bytes(data), "TensorProto")
        for field, wire, value in reader.fields():
            if field == 1 and wire == 0:
                proto.dtype = _signed(value, 32)
            elif field == 2 and wire == 2:
                proto.tensor_shape, proto.dim_names = _read_shape(value)
            elif field == 3 and wire == 0:
                proto.version_number = _signed(value, 32)
            elif field == 4 and wire == 2:
                proto.tensor_content = value
            elif field in _FIELD_NAMES:
                getattr(proto, _FIELD_NAMES[field]).extend(_read_values(reader, field, wire,
                                                                        value))
            elif field in (1, 2, 3, 4):
                reader.fail(f"field {field} has wire type {wire}")
            # other fields (resource handles, variants, float8) are skipped here and refused by
            # make_ndarray through their dtype
        return proto

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorProto) and \
            self.SerializeToString() == other.SerializeToString()

    def __repr__(self) -> str:
        return (f"TensorProto(dtype={self.dtype}, tensor_shape={self.tensor_shape}, "
                f"{len(self.SerializeToString())} bytes)")


def _read_shape(data: bytes):
    dims, names, unknown = [], [], False
    reader = _Reader(data, "TensorShapeProto")
    for field, wire, value in reader.fields():
        if field == 2 and wire == 2:
            size, name = 0, ""
            inner = _Reader(value, "TensorShapeProto.Dim")
            for f, w, v in inner.fields():
                if f == 1 and w == 0:
                    size = _signed(v, 64)
                elif f == 2 and w == 2:
                    try:
                        name = v.decode()
                    except UnicodeDecodeError:
                        inner.fail("dim name is not UTF-8")
                elif f in (1, 2):
                    inner.fail(f"field {f} has wire type {w}")
            dims.append(size)
            names.append(name)
        elif field == 3 and wire == 0:
            unknown = bool(value)
        elif field in (2, 3):
            reader.fail(f"field {field} has wire type {wire}")
    return (None, []) if unknown else (dims, names)


def _read_values(reader: _Reader, field: int, wire: int, value):
    if field == 8:
        if wire != 2:
            reader.fail("string_val must be length-delimited")
        return [value]
    fixed = {5: ("f", 4, 5), 9: ("f", 4, 5), 6: ("d", 8, 1), 12: ("d", 8, 1)}
    if field in fixed:
        fmt, size, want = fixed[field]
        if wire == want:  # one unpacked value
            return list(struct.unpack("<" + fmt, value))
        if wire != 2 or len(value) % size:
            reader.fail(f"{_FIELD_NAMES[field]} is not a packed list of {size}-byte numbers")
        return list(struct.unpack(f"<{len(value) // size}{fmt}", value))
    if wire == 0:
        raw = [value]
    elif wire == 2:
        inner, raw = _Reader(value, f"packed {_FIELD_NAMES[field]}"), []
        while not inner.done():
            raw.append(inner.varint())
    else:
        reader.fail(f"{_FIELD_NAMES[field]} has wire type {wire}")
    if field in (7, 13):
        return [_signed(v, 32) for v in raw]
    if field == 10:
        return [_signed(v, 64) for v in raw]
    if field == 16:
        return [v & 0xFFFFFFFF for v in raw]
    if field == 11:
        return [bool(v) for v in raw]
    return raw


# ---- NumPy <-> TensorProto --------------------------------------------------------------------
def _python_array(values, dtype: DType | None):
    """TensorFlow's conversion of Python values: float64 becomes float32 and int64 int32 when
    no dtype is given and nothing is lost. A value that does not fit the dtype is refused
    (``3.5`` as int32, as ``tf.constant`` refuses it; ``1e39`` as float32), the rule of
    :mod:`aliasflow.core.values`."""
    try:
        arr = np.array(values)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise AliasflowError(f"make_tensor_proto: cannot make a tensor from "
                             f"{show_value(values)}: {exc}") from None
    if arr.dtype.kind == "O" and (dtype is None or not all(
            isinstance(x, (int, float, complex, np.number)) for x in arr.ravel())):
        raise AliasflowError(f"make_tensor_proto: cannot make a tensor from "
                             f"{show_value(values)} (ragged, too large or not numbers)")
    if dtype is None:
        if arr.dtype == np.float64:
            return fit_array(arr, np.float32, "make_tensor_proto")
        if arr.dtype == np.int64 and np.array_equal(arr.astype(np.int32), arr):
            return arr.astype(np.int32)
        return arr
    return _fit(arr, dtype, values)


def _fit(arr: np.ndarray, dtype: DType, values) -> np.ndarray:
    """``arr`` as ``dtype`` under the fit rule; a float value into an int or bool dtype, or
    an int into bool, is refused whatever it is, as TensorFlow refuses it for Python
    values."""
    kinds = {"O": {type(x).__name__ for x in arr.ravel()}}.get(arr.dtype.kind)
    floats = arr.dtype.kind in "fc" or bool(kinds and kinds & {"float", "complex"})
    if arr.size and ((floats and dtype.numpy.kind in "iub") or
                     (arr.dtype.kind in "iuO" and dtype.numpy.kind == "b")):
        raise AliasflowError(f"make_tensor_proto: expected {dtype.name}, got "
                             f"{show_value(values)} of type {arr.dtype}")
    if arr.dtype.kind in "SUV":
        raise AliasflowError(f"make_tensor_proto: expected {dtype.name}, got "
                             f"{show_value(values)} (not numbers)")
    return fit_array(arr, dtype.numpy, "make_tensor_proto")


def _flatten_strings(values) -> list[bytes]:
    if isinstance(values, (str, bytes)):
        values = [values]
    out = []
    for v in np.asarray(values, dtype=object).ravel():
        if isinstance(v, str):
            v = v.encode()
        if not isinstance(v, bytes):
            raise AliasflowError(f"string tensor element {show_value(v)} is not str or bytes")
        out.append(v)
    return out


def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False,
                      allow_broadcast=False) -> TensorProto:
    """``tf.make_tensor_proto``: a :class:`TensorProto` holding ``values``.

    ``shape`` may ask for more elements than given (the last value repeats when read back),
    never fewer. Call ``SerializeToString()`` for the wire bytes.
    """
    if isinstance(values, TensorProto):
        return values
    dt = as_dtype(dtype).base_dtype if dtype is not None else None
    if isinstance(values, (np.ndarray, np.generic)):
        if dt is not None and dt.name == "string":
            arr = np.asarray(values)
        elif dt is not None:
            arr = np.asarray(values)
            if arr.dtype.kind == "O":
                raise AliasflowError(f"make_tensor_proto: an object array cannot be stored as "
                                     f"{dt.name}")
            arr = fit_array(arr, dt.numpy, "make_tensor_proto")
        else:
            arr = np.asarray(values)
    elif values is None:
        raise AliasflowError("make_tensor_proto: None values are not supported")
    elif (dt is not None and dt.name == "string") or isinstance(values, (str, bytes)) or (
            isinstance(values, (list, tuple)) and values and
            isinstance(np.ravel(np.asarray(values, dtype=object))[0], (str, bytes))):
        arr = np.asarray(values, dtype=object)
    else:
        arr = _python_array(values, dt)
    actual = as_dtype(arr.dtype) if arr.dtype.kind != "O" else as_dtype("string")
    if dt is not None and actual != dt:
        raise AliasflowError(f"make_tensor_proto: dtype {dt.name} is not compatible with "
                             f"values of dtype {arr.dtype}")
    dt = actual
    if shape is None:
        dims, same = list(arr.shape), True
    else:
        dims = _dims(shape)
        same = prod(dims) == arr.size
        if allow_broadcast:
            if arr.shape not in ((1,), ()) and not same:
                raise AliasflowError(f"make_tensor_proto: expected shape {tuple(dims)}, got "
                                     f"{arr.shape}")
        else:
            if verify_shape and arr.shape != tuple(dims):
                raise AliasflowError(f"make_tensor_proto: expected shape {tuple(dims)}, got "
                                     f"{arr.shape}")
            if arr.size > prod(dims):
                raise AliasflowError(f"make_tensor_proto: {arr.size} values do not fit shape "
                                     f"{tuple(dims)} ({prod(dims)} elements)")
    proto = TensorProto(dt.as_datatype_enum, dims)
    if same and dt.name in _CONTENT_TYPES and prod(dims) > 1:
        proto.tensor_content = np.ascontiguousarray(arr).astype(
            arr.dtype.newbyteorder("<"), copy=False).tobytes()
        return proto
    field, kind = _TYPED_FIELD[dt.name]
    flat = arr.ravel()
    if kind == "bytes":
        values = _flatten_strings(values if not isinstance(values, np.ndarray) else flat)
    elif kind == "half":
        values = flat.view(np.uint16).tolist()
    elif dt.name.startswith("complex"):
        values = np.stack([flat.real, flat.imag], axis=-1).ravel().tolist()
    elif kind in ("f32", "f64"):
        values = flat.tolist()
    else:
        values = [int(v) for v in flat.tolist()]
    setattr(proto, _FIELD_NAMES[field], values)
    return proto


def _dims(shape) -> list[int]:
    """A ``shape`` argument as ints from 0 to 2**63 - 1 (TensorFlow refuses anything else)."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__"):
        raise AliasflowError(f"make_tensor_proto: bad shape {show_value(shape)}; a list of "
                             f"ints expected")
    if len(shape) > MAX_RANK:
        raise AliasflowError(f"make_tensor_proto: shape of {len(shape)} dimensions; at most "
                             f"{MAX_RANK}")
    dims = []
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or \
                not 0 <= d <= INT64[1]:
            raise AliasflowError(f"make_tensor_proto: bad dimension {show_value(d)} in shape "
                                 f"{show_value(shape, 60)} (ints from 0 to 2**63 - 1)")
        dims.append(int(d))
    return dims


def _as_proto(proto) -> TensorProto:
    if isinstance(proto, TensorProto):
        return proto
    if hasattr(proto, "SerializeToString") and callable(proto.SerializeToString):
        return TensorProto.FromString(proto.SerializeToString())  # e.g. TensorFlow's own
    return TensorProto.FromString(proto)


def make_ndarray(proto) -> np.ndarray:
    """``tf.make_ndarray``: the NumPy array a TensorProto (object or wire bytes) holds."""
    proto = _as_proto(proto)
    try:
        dt = as_dtype(proto.dtype)
    except AliasflowError:
        raise AliasflowError(f"TensorProto: unsupported dtype enum {proto.dtype}") from None
    if dt.is_ref or dt.name not in _TYPED_FIELD:
        raise AliasflowError(f"TensorProto: unsupported dtype {dt.name}")
    if proto.tensor_shape is None:
        raise AliasflowError("TensorProto: shape has unknown rank; no array can be made")
    shape = proto.tensor_shape
    if any(d < 0 for d in shape):
        raise AliasflowError(f"TensorProto: shape {shape} has unknown (negative) dimensions")
    if len(shape) > MAX_RANK:
        raise AliasflowError(f"TensorProto: shape of {len(shape)} dimensions; at most "
                             f"{MAX_RANK}")
    count = prod(shape)
    npd = np.dtype(dt.numpy)
    # the array to make, checked before anything is allocated (a 20-byte proto may declare
    # terabytes, filled by repeating its last value)
    check_nbytes(tuple(shape), npd if dt.name != "string" else np.dtype(object),
                 f"TensorProto of shape {show_value(shape, 60)}")
    try:
        return _ndarray(proto, dt, npd, shape, count)
    except MemoryError:
        raise AliasflowError(f"TensorProto: cannot allocate {count * npd.itemsize} bytes for "
                             f"shape {show_value(shape, 60)} of {dt.name}") from None


# what the typed fields may hold for each integer dtype (TensorFlow's make_ndarray converts
# them with np.fromiter, which refuses a value out of range)
_FIELD_RANGE = {"half": (0, 0xFFFF)}


def _ndarray(proto: TensorProto, dt: DType, npd: np.dtype, shape, count: int) -> np.ndarray:
    if dt.name == "string":
        values = list(proto.string_val)
        if len(values) > count:
            raise AliasflowError(f"TensorProto: {len(values)} strings for shape {shape}")
        if len(values) < count:
            # TensorFlow pads with the last value, or with the str "" (not bytes) when there
            # is none
            values += [values[-1] if values else ""] * (count - len(values))
        out = np.empty(count, dtype=object)
        out[:] = values
        return out.reshape(shape)
    if proto.tensor_content:
        if len(proto.tensor_content) != count * npd.itemsize:
            raise AliasflowError(f"TensorProto: tensor_content has {len(proto.tensor_content)}"
                                 f" bytes, shape {shape} of {dt.name} needs "
                                 f"{count * npd.itemsize}")
        if npd == np.bool_:  # a byte other than 0 and 1 must not become a NumPy bool as is
            return (np.frombuffer(proto.tensor_content, np.uint8) != 0).reshape(shape)
        return np.frombuffer(proto.tensor_content, dtype=npd.newbyteorder("<")) \
            .astype(npd).reshape(shape)
    field, kind = _TYPED_FIELD[dt.name]
    raw = getattr(proto, _FIELD_NAMES[field])
    if kind == "half":
        lo, hi = _FIELD_RANGE["half"]
        _check_range(raw, lo, hi, "half_val", f"{dt.name} bit patterns")
        values = np.array(raw, dtype=np.int64).astype(np.uint16).view(npd)
    elif dt.name.startswith("complex"):
        if len(raw) % 2:
            raise AliasflowError(f"TensorProto: {dt.name} needs (real, imag) pairs, got "
                                 f"{len(raw)} numbers")
        pairs = np.array(raw, dtype=np.float32 if dt.name == "complex64" else np.float64)
        values = np.empty(len(raw) // 2, npd)
        values.real, values.imag = pairs[0::2], pairs[1::2]  # keeps -0.0 and NaN bits
    elif kind in ("f32", "f64"):
        values = np.array(raw, dtype=npd)
    elif npd == np.bool_:
        values = np.array(raw, dtype=np.bool_)   # protobuf reads any non-zero varint as true
    else:
        info = np.iinfo(npd)
        _check_range(raw, int(info.min), int(info.max), _FIELD_NAMES[field], dt.name)
        values = np.array(raw, dtype=np.int64 if npd.kind == "i" else np.uint64).astype(npd)
    if values.size > count:
        raise AliasflowError(f"TensorProto: {values.size} values for shape {shape} "
                             f"({count} elements)")
    if values.size == 0:
        return np.zeros(shape, npd)
    if values.size < count:  # TensorFlow repeats the last value
        out = np.empty(count, npd)
        out[:values.size] = values
        out[values.size:] = values[-1]
        values = out
    return values.reshape(shape)


def _check_range(raw, lo: int, hi: int, field: str, what: str) -> None:
    for k, v in enumerate(raw):
        if not lo <= v <= hi:
            raise AliasflowError(f"TensorProto: {field}[{k}] = {v} does not fit {what} "
                                 f"({lo}..{hi})")
