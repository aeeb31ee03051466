"""TensorFlow's C++ tensor memory model (seed 002), in real memory through ctypes.

``TF_Tensor { AbstractTensorInterface* tensor; }`` points at a ``TensorInterface``
(vtable pointer, then ``tensorflow::Tensor tensor_``); a ``Tensor`` is
``{ TensorShapeRep shape_ (16 bytes of union + int64 num_elements_); TensorBuffer* buf_; }``;
a ``TensorBuffer`` starts with ``core::RefCounted`` (vtable pointer, int32 count, padding:
16 bytes) followed by ``void* data_``. The structures here have exactly that layout (64-bit,
little-endian) and live in ctypes memory, so :func:`memory_walk` can follow the article's five
steps with raw reads at addresses.

What is modelled and what is not: the vtables are tables of placeholder entries (nothing calls
through them); an out-of-line shape points at a plain int64 array standing in for
``gtl::InlinedVector<int64_t, 4>`` (whose own layout is not modelled); derived buffer classes
(``Buffer<T>``, ``SubBuffer<T>``) keep their extra fields on the Python side.

:class:`TensorShapeRep` follows ``tensor_shape.cc`` (TensorFlow 2.x): dims are added one by one
(``AddDim``), a dim goes into the current representation if it fits (Rep16: fewer than 6 dims
so far and size < 2^16 - 2; Rep32: fewer than 3 and size < 2^32 - 2), otherwise the shape
moves to Rep32 if it then has at most 3 dims all < 2^32 - 2, else out of line. ``set_dim`` never
moves back to a smaller representation. So a dim of 65534 is already Rep32, although the
header's comment ("each dimension is < 2^16 - 1") suggests Rep16; the tests check this against
tensors made by real TensorFlow. Unknown dims (-1) and an unknown rank exist only in partial
shapes (``TensorShapeRep(dims, partial=True)``, TensorFlow's ``PartialTensorShape``); they
are stored as 0xFFFF / 0xFFFFFFFF, an unknown rank as rank byte 255.

Memory safety: a buffer whose count drops to 0 is released (TensorFlow frees it); reading a
tensor on a released buffer (or a sub-buffer of a released root) is refused, and so is
reading through a data pointer that points at no memory the buffer holds or was given, so
no input reads freed or foreign memory. Sizes are checked before anything is allocated.
"""
from __future__ import annotations

import ctypes
import struct
import weakref
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import show_value
from ...core.exchange import from_numpy as _af_from_numpy

__all__ = ["DataType", "TensorShapeRep", "TensorBuffer", "WalkStep", "memory_walk",
           "swap_data_pointer", "from_numpy"]


class DataType(IntEnum):
    """TensorFlow's ``DataType`` enum (``tensorflow/core/framework/types.proto``)."""
    DT_INVALID = 0
    DT_FLOAT = 1
    DT_DOUBLE = 2
    DT_INT32 = 3
    DT_UINT8 = 4
    DT_INT16 = 5
    DT_INT8 = 6
    DT_STRING = 7
    DT_COMPLEX64 = 8
    DT_INT64 = 9
    DT_BOOL = 10
    DT_QINT8 = 11
    DT_QUINT8 = 12
    DT_QINT32 = 13
    DT_BFLOAT16 = 14
    DT_QINT16 = 15
    DT_QUINT16 = 16
    DT_UINT16 = 17
    DT_COMPLEX128 = 18
    DT_HALF = 19
    DT_RESOURCE = 20
    DT_VARIANT = 21
    DT_UINT32 = 22
    DT_UINT64 = 23
    DT_FLOAT8_E5M2 = 24
    DT_FLOAT8_E4M3FN = 25
    DT_FLOAT8_E4M3FNUZ = 26
    DT_FLOAT8_E4M3B11FNUZ = 27
    DT_FLOAT8_E5M2FNUZ = 28
    DT_INT4 = 29
    DT_UINT4 = 30
    DT_INT2 = 31
    DT_UINT2 = 32
    DT_FLOAT4_E2M1FN = 33


_NUMPY = {np.dtype(np.float32): DataType.DT_FLOAT, np.dtype(np.float64): DataType.DT_DOUBLE,
          np.dtype(np.int32): DataType.DT_INT32, np.dtype(np.uint8): DataType.DT_UINT8,
          np.dtype(np.int16): DataType.DT_INT16, np.dtype(np.int8): DataType.DT_INT8,
          np.dtype(np.complex64): DataType.DT_COMPLEX64, np.dtype(np.int64): DataType.DT_INT64,
          np.dtype(np.bool_): DataType.DT_BOOL, np.dtype(np.uint16): DataType.DT_UINT16,
          np.dtype(np.complex128): DataType.DT_COMPLEX128,
          np.dtype(np.float16): DataType.DT_HALF, np.dtype(np.uint32): DataType.DT_UINT32,
          np.dtype(np.uint64): DataType.DT_UINT64}
_FROM_ENUM = {v: k for k, v in _NUMPY.items()}


def _data_type(dtype) -> tuple[DataType, np.dtype]:
    """``(DataType, numpy dtype)`` for a DataType, its number, or anything NumPy reads as a
    dtype; refused when the type has no fixed-size NumPy equivalent here."""
    if isinstance(dtype, (DataType, int)) and not isinstance(dtype, bool):
        try:
            dt = DataType(dtype)
        except ValueError:
            raise AliasflowError(f"tf: unknown DataType number {show_value(dtype)}") from None
        if dt not in _FROM_ENUM:
            raise AliasflowError(f"tf: {dt.name} has no NumPy element type in this model")
        return dt, _FROM_ENUM[dt]
    try:
        npd = np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError):
        raise AliasflowError(f"tf: unknown dtype {show_value(dtype)}") from None
    if npd not in _NUMPY:
        raise AliasflowError(f"tf: dtype {npd} has no TensorFlow DataType in this model")
    return _NUMPY[npd], npd


# ---- TensorShape -----------------------------------------------------------------------------
REP16, REP32, REP_OUT_OF_LINE = 0, 1, 2
K_MAX_REP16 = 0xFFFF - 1
K_MAX_REP32 = 0xFFFFFFFF - 1
K_UNKNOWN_REP16 = 0xFFFF
K_UNKNOWN_REP32 = 0xFFFFFFFF
K_UNKNOWN_RANK = 255
MAX_DIMENSIONS = 254
_INT64_MAX = 2 ** 63 - 1

# address of an out-of-line dims array -> the array (for from_bytes on shapes we made)
_OUT_OF_LINE: "weakref.WeakValueDictionary[int, ctypes.Array]" = weakref.WeakValueDictionary()


class Dims(tuple):
    """A shape's dim sizes: a tuple that also compares equal to a list of the same ints."""

    def __eq__(self, other):
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__


def _int(x, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise AliasflowError(f"tf.TensorShapeRep: {what} must be an int, got {show_value(x)}")
    if not -1 <= x <= _INT64_MAX:
        raise AliasflowError(f"tf.TensorShapeRep: {what} must be >= -1 (-1: unknown) and fit "
                             f"in int64, got {x}")
    return int(x)


class TensorShapeRep:
    """TensorFlow's ``TensorShapeRep``: dims, ``num_elements`` and the 16 bytes it stores.

    ``TensorShapeRep(dims)``: dims are ints >= 0 (TensorFlow's ``TensorShape``);
    ``TensorShapeRep(dims, partial=True)`` (its ``PartialTensorShape``) also takes -1 for an
    unknown dim, and ``None`` for an unknown rank.

    >>> s = TensorShapeRep([2, 3])
    >>> s.num_elements, s.tag, s.to_bytes(DataType.DT_FLOAT).hex(" ")
    (6, 0, '02 00 03 00 00 00 00 00 00 00 00 00 00 01 02 00')
    >>> TensorShapeRep([70000, 3]).to_bytes().hex(" ")
    '70 11 01 00 03 00 00 00 00 00 00 00 00 00 02 01'
    >>> TensorShapeRep.from_bytes(bytes.fromhex("0200030000000000000000000001 0200")).dims
    (2, 3)
    >>> TensorShapeRep([-1, 3], partial=True).num_elements
    -1
    """

    def __init__(self, dims=(), data_type=DataType.DT_INVALID, *, partial: bool = False):
        self.data_type = _data_type_number(data_type)
        self.partial = bool(partial)
        self._tag = REP16
        self._dims: list[int] = []
        self._ool = None
        if dims is None:
            if not self.partial:
                raise AliasflowError("tf.TensorShapeRep: an unknown rank (None) exists only "
                                     "in a partial shape (partial=True, TensorFlow's "
                                     "PartialTensorShape)")
            self._rank_known = False
            self._num_elements = -1
            return
        self._rank_known = True
        self._num_elements = 1
        if isinstance(dims, (str, bytes)) or not hasattr(dims, "__len__"):
            raise AliasflowError(f"tf.TensorShapeRep: dims must be a sequence of ints or None, "
                                 f"got {show_value(dims)}")
        if len(dims) > MAX_DIMENSIONS:
            raise AliasflowError(f"tf.TensorShapeRep: too many dimensions in tensor ({len(dims)};"
                                 f" at most {MAX_DIMENSIONS})")
        dims = list(dims)
        # InitDims: a fast path for <= 4 small dims that lands on the same Rep16 encoding,
        # else AddDim one by one; both are AddDim's result.
        for d in dims:
            self.add_dim(d)

    # -- queries
    @property
    def unknown_rank(self) -> bool:
        return not self._rank_known

    @property
    def ndims(self) -> int:
        """Rank, or -1 when unknown."""
        return len(self._dims) if self._rank_known else -1

    @property
    def dims(self) -> Dims | None:
        """Dim sizes (-1 unknown), or None for unknown rank."""
        return Dims(self._dims) if self._rank_known else None

    def dim_size(self, d: int) -> int:
        if not self._rank_known:
            return -1
        if not isinstance(d, (int, np.integer)) or not 0 <= d < len(self._dims):
            raise AliasflowError(f"tf.TensorShapeRep: dim {show_value(d)} out of range for {self}")
        return self._dims[d]

    @property
    def num_elements(self) -> int:
        """Product of the dims; -1 when a dim or the rank is unknown."""
        return self._num_elements

    @property
    def is_fully_defined(self) -> bool:
        return self._num_elements >= 0

    @property
    def tag(self) -> int:
        """The representation: 0 Rep16, 1 Rep32, 2 out of line."""
        return self._tag

    # -- changes, as tensor_shape.cc does them
    def add_dim(self, size) -> None:
        """``AddDimWithStatus``: append a dim, changing representation when it must."""
        size = self._size(size)
        if not self._rank_known:
            return
        if len(self._dims) >= MAX_DIMENSIONS:
            raise AliasflowError("tf.TensorShapeRep: too many dimensions in tensor "
                                 f"(at most {MAX_DIMENSIONS})")
        if self._num_elements < 0 or size < 0:
            new = -1
        else:
            new = self._num_elements * size
            if new > _INT64_MAX:
                raise AliasflowError(f"tf.TensorShapeRep: encountered overflow when "
                                     f"multiplying {self._num_elements} with {size}")
        nd = len(self._dims)
        if self._tag == REP16 and nd < 6 and size < K_MAX_REP16:
            pass
        elif self._tag == REP32 and nd < 3 and size < K_MAX_REP32:
            pass
        elif self._tag == REP_OUT_OF_LINE:
            pass
        else:
            vals = self._dims + [size]
            if len(vals) <= 3 and all(v < K_MAX_REP32 for v in vals):
                self._tag = REP32
            else:
                self._tag = REP_OUT_OF_LINE
        self._dims.append(size)
        self._num_elements = new
        self._sync_out_of_line()

    def _size(self, size) -> int:
        size = _int(size, "dim")
        if size < 0 and not self.partial:
            raise AliasflowError(f"tf.TensorShapeRep: dim {size} (unknown) exists only in a "
                                 f"partial shape (partial=True, TensorFlow's "
                                 f"PartialTensorShape); a TensorShape needs sizes >= 0")
        return size

    def set_dim(self, d: int, size) -> None:
        """``set_dim``: change one dim; upgrades the representation if needed, never
        downgrades it."""
        size = self._size(size)
        if not self._rank_known or not isinstance(d, (int, np.integer)) or \
                not 0 <= d < len(self._dims):
            raise AliasflowError(f"tf.TensorShapeRep: set_dim({show_value(d)}) out of range for {self}")
        if (self._tag == REP16 and size < K_MAX_REP16) or \
                (self._tag == REP32 and size < K_MAX_REP32) or self._tag == REP_OUT_OF_LINE:
            self._dims[d] = size
        else:  # must upgrade: clear (back to Rep16) and add every dim again
            vals = list(self._dims)
            vals[d] = size
            self._tag, self._dims, self._num_elements = REP16, [], 1
            for v in vals:
                self.add_dim(v)
        self._recompute()
        self._sync_out_of_line()

    def _recompute(self) -> None:
        n = 1
        for v in self._dims:
            if v < 0:
                n = -1
                break
            n *= v
            if n > _INT64_MAX:
                raise AliasflowError(f"tf.TensorShapeRep: {self._dims} overflows int64")
        self._num_elements = n

    def _sync_out_of_line(self) -> None:
        if self._tag == REP_OUT_OF_LINE:
            self._ool = (ctypes.c_int64 * len(self._dims))(*self._dims)
            _OUT_OF_LINE[ctypes.addressof(self._ool)] = self._ool

    # -- bytes
    def to_bytes(self, dtype=None) -> bytes:
        """The 16 bytes of ``TensorShapeRep::u_``: dims (or a pointer), byte 13 the DataType
        (``dtype``, default this shape's ``data_type``), 14 the rank (255 unknown), 15 the tag.
        Bytes a representation does not use are zero here (TensorFlow leaves them as they
        were)."""
        dt = self.data_type if dtype is None else _data_type_number(dtype)
        buf = bytearray(16)
        if self._tag == REP16:
            for i, v in enumerate(self._dims):
                struct.pack_into("<H", buf, 2 * i, K_UNKNOWN_REP16 if v < 0 else v)
        elif self._tag == REP32:
            for i, v in enumerate(self._dims):
                struct.pack_into("<I", buf, 4 * i, K_UNKNOWN_REP32 if v < 0 else v)
        else:
            struct.pack_into("<Q", buf, 0, ctypes.addressof(self._ool))
        buf[13] = int(dt)
        buf[14] = len(self._dims) if self._rank_known else K_UNKNOWN_RANK
        buf[15] = self._tag
        return bytes(buf)

    def rep_bytes(self, dtype=None) -> bytes:
        """All 24 bytes of ``TensorShapeRep``: :meth:`to_bytes` then int64 ``num_elements_``."""
        return self.to_bytes(dtype) + struct.pack("<q", self._num_elements)

    @classmethod
    def from_bytes(cls, data: bytes) -> "TensorShapeRep":
        """Decode :meth:`to_bytes` (16 bytes; 24 with ``num_elements_``, which is checked).

        An out-of-line shape is read through its pointer only if it points at a dims array
        this module made and still holds; the decoded shape gets its own copy (as
        TensorFlow's copy constructor does). Unknown dims or rank give a partial shape."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise AliasflowError(f"tf.TensorShapeRep.from_bytes: needs bytes, got "
                                 f"{type(data).__name__}")
        data = bytes(data)
        if len(data) not in (16, 24):
            raise AliasflowError(f"tf.TensorShapeRep.from_bytes: need 16 or 24 bytes, got "
                                 f"{len(data)}")
        tag, nd, dt = data[15], data[14], data[13]
        try:
            dtype = DataType(dt)
        except ValueError:
            raise AliasflowError(f"tf.TensorShapeRep.from_bytes: byte 13 = {dt} is not a "
                                 f"DataType") from None
        if nd == K_UNKNOWN_RANK:
            if tag != REP16:
                raise AliasflowError(f"tf.TensorShapeRep.from_bytes: unknown rank with tag {tag}")
            out = cls(None, dtype, partial=True)
        elif tag == REP16:
            if nd > 6:
                raise AliasflowError(f"tf.TensorShapeRep.from_bytes: Rep16 with rank {nd} > 6")
            vals = struct.unpack_from(f"<{nd}H", data, 0)
            dims = [-1 if v == K_UNKNOWN_REP16 else v for v in vals]
            out = cls._with_tag(dims, REP16, dtype)
        elif tag == REP32:
            if nd > 3:
                raise AliasflowError(f"tf.TensorShapeRep.from_bytes: Rep32 with rank {nd} > 3")
            vals = struct.unpack_from(f"<{nd}I", data, 0)
            dims = [-1 if v == K_UNKNOWN_REP32 else v for v in vals]
            out = cls._with_tag(dims, REP32, dtype)
        elif tag == REP_OUT_OF_LINE:
            (ptr,) = struct.unpack_from("<Q", data, 0)
            arr = _OUT_OF_LINE.get(ptr)
            if arr is None or len(arr) != nd:
                raise AliasflowError(f"tf.TensorShapeRep.from_bytes: out-of-line pointer "
                                     f"{ptr:#x} is not a live dims array of rank {nd}")
            out = cls._with_tag(list(arr), REP_OUT_OF_LINE, dtype)
        else:
            raise AliasflowError(f"tf.TensorShapeRep.from_bytes: bad tag {tag} in byte 15")
        if len(data) == 24:
            (n,) = struct.unpack_from("<q", data, 16)
            if n != out.num_elements:
                raise AliasflowError(f"tf.TensorShapeRep.from_bytes: num_elements_ {n} does not "
                                     f"match dims {out.dims} ({out.num_elements})")
        return out

    @classmethod
    def _with_tag(cls, dims, tag, dtype, partial=None) -> "TensorShapeRep":
        dims = [int(v) for v in dims]
        out = cls((), dtype, partial=any(v < 0 for v in dims) if partial is None else partial)
        out._dims, out._tag = dims, tag
        out._recompute()
        out._sync_out_of_line()
        return out

    def copy(self) -> "TensorShapeRep":
        return TensorShapeRep._with_tag(self._dims, self._tag, self.data_type, self.partial) \
            if self._rank_known else TensorShapeRep(None, self.data_type, partial=True)

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorShapeRep) and self.dims == other.dims

    def __hash__(self) -> int:
        return hash(self.dims)

    def __repr__(self) -> str:
        if not self._rank_known:
            return "TensorShapeRep(<unknown>)"
        return "TensorShapeRep([" + ",".join("?" if v < 0 else str(v) for v in self._dims) + "])"


def _data_type_number(dtype) -> DataType:
    if isinstance(dtype, (DataType, int)) and not isinstance(dtype, bool):
        try:
            return DataType(dtype)
        except ValueError:
            raise AliasflowError(f"tf: unknown DataType number {show_value(dtype)}") from None
    return _data_type(dtype)[0]


# ---- the C++ objects' layouts ----------------------------------------------------------------
class _TensorBufferLayout(ctypes.Structure):
    """``TensorBuffer``: ``core::RefCounted`` (vptr, int32 ref_, padding) then ``data_``."""
    _fields_ = [("vptr", ctypes.c_void_p), ("ref_", ctypes.c_int32), ("pad", ctypes.c_int32),
                ("data_", ctypes.c_void_p)]


class _TensorLayout(ctypes.Structure):
    """``tensorflow::Tensor``: ``TensorShape shape_`` (16 + 8 bytes), ``TensorBuffer* buf_``."""
    _fields_ = [("shape_u", ctypes.c_uint8 * 16), ("num_elements_", ctypes.c_int64),
                ("buf_", ctypes.c_void_p)]


class _TensorInterfaceLayout(ctypes.Structure):
    """``TensorInterface``: vptr (``AbstractTensorInterface`` is polymorphic), ``tensor_``."""
    _fields_ = [("vptr", ctypes.c_void_p), ("tensor_", _TensorLayout)]


class _TFTensorLayout(ctypes.Structure):
    """``TF_Tensor { AbstractTensorInterface* tensor; }``."""
    _fields_ = [("tensor", ctypes.c_void_p)]


assert ctypes.sizeof(_TensorBufferLayout) == 24 and ctypes.sizeof(_TensorLayout) == 32
assert _TensorBufferLayout.data_.offset == 16 and _TensorLayout.buf_.offset == 24
assert _TensorInterfaceLayout.tensor_.offset == 8

# Placeholder vtables: real memory for the vtable pointers to point at; nothing calls them.
_BUFFER_VTABLE = (ctypes.c_void_p * 8)()
_INTERFACE_VTABLE = (ctypes.c_void_p * 16)()
ALIGNMENT = 64   # Allocator::kAllocatorAlignment (tsl/framework/allocator.h)


class _CallableInt(int):
    """An int that returns itself when called, so ``size`` and ``size()`` both work."""

    def __call__(self) -> int:
        return int(self)


def _read_pointer(address: int) -> int:
    return ctypes.c_void_p.from_address(address).value or 0


class TensorBuffer:
    """A refcounted ``TensorBuffer`` in ctypes memory.

    Made with a count of 1 (the creator's reference, as ``core::RefCounted`` starts);
    every :class:`Tensor` on it holds one more; :meth:`unref` to 0 releases it (an owning
    buffer drops its memory; a sub-buffer gives back its reference on the root).

    ``TensorBuffer(nbytes)`` (or ``allocate(nbytes)``) owns fresh aligned memory;
    ``TensorBuffer(array)`` (or ``wrap(array)``) points into a C-contiguous NumPy array and
    does not own it; ``sub_buffer(offset, nbytes)`` is a window of the same root (what
    ``Tensor::Slice`` makes).
    """

    def __init__(self, nbytes_or_array):
        if isinstance(nbytes_or_array, np.ndarray):
            array = nbytes_or_array
            if not array.flags.c_contiguous:
                raise AliasflowError("tf.TensorBuffer: needs a C-contiguous NumPy array "
                                     "(anything else would need a copy)")
            self._init(array.ctypes.data, array.nbytes, owner=array, root=None, owns=False)
            return
        nbytes = nbytes_or_array
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or \
                not 0 <= nbytes <= _INT64_MAX - ALIGNMENT:
            raise AliasflowError(f"tf.TensorBuffer: nbytes must be an int from 0 to "
                                 f"{_INT64_MAX - ALIGNMENT} (or pass an array), got {show_value(nbytes)}")
        try:
            raw = np.zeros(int(nbytes) + ALIGNMENT, np.uint8)
        except (MemoryError, ValueError):
            raise AliasflowError(f"tf.TensorBuffer: cannot allocate {int(nbytes)} bytes") \
                from None
        shift = -raw.ctypes.data % ALIGNMENT
        memory = raw[shift:shift + int(nbytes)]
        self._init(memory.ctypes.data, int(nbytes), owner=memory, root=None, owns=True)

    def _init(self, data: int, size: int, *, owner, root, owns: bool) -> None:
        self._layout = _TensorBufferLayout(ctypes.cast(_BUFFER_VTABLE, ctypes.c_void_p), 1,
                                           0, data)
        self._size = size
        self._owner = owner      # the NumPy array whose memory this is (kept alive)
        self._root = root        # for sub-buffers: the root, which we hold a reference on
        self._owns = owns
        self._kept: list[np.ndarray] = []   # arrays swapped in (kept alive, see swap)
        self.released = False

    @classmethod
    def allocate(cls, nbytes: int) -> "TensorBuffer":
        """A buffer owning ``nbytes`` of fresh memory aligned to :data:`ALIGNMENT` bytes."""
        return cls(nbytes)

    @classmethod
    def wrap(cls, array: np.ndarray) -> "TensorBuffer":
        """A buffer over a C-contiguous array's memory; it does not own it (no copy)."""
        if not isinstance(array, np.ndarray):
            raise AliasflowError(f"tf.TensorBuffer.wrap: needs a NumPy array, got "
                                 f"{type(array).__name__}")
        return cls(array)

    def sub_buffer(self, offset: int, nbytes: int) -> "TensorBuffer":
        """``SubBuffer``: ``nbytes`` from byte ``offset`` of this buffer, sharing its root
        (and taking a reference on the root, not on this buffer)."""
        self._check_live("sub_buffer")
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool)
                   for x in (offset, nbytes)):
            raise AliasflowError(f"tf.TensorBuffer.sub_buffer: offset and nbytes must be "
                                 f"ints, got {show_value(offset)} and {show_value(nbytes)}")
        if offset < 0 or nbytes < 0 or offset + nbytes > self._size:
            raise AliasflowError(f"tf.TensorBuffer.sub_buffer: bytes {offset}..{offset + nbytes}"
                                 f" are outside the buffer's {self._size}")
        root = self.root_buffer()
        root.ref()
        sub = TensorBuffer.__new__(TensorBuffer)
        sub._init(self.data + offset, nbytes, owner=root._owner, root=root, owns=False)
        return sub

    @property
    def address(self) -> int:
        """Where the ``TensorBuffer`` object itself is."""
        return ctypes.addressof(self._layout)

    @property
    def data(self) -> int:
        """``data()``: the data pointer, read from the object's memory."""
        return _read_pointer(self.address + _TensorBufferLayout.data_.offset)

    @property
    def refcount(self) -> int:
        """The reference count, read from the object's memory."""
        return ctypes.c_int32.from_address(self.address + _TensorBufferLayout.ref_.offset).value

    @property
    def size(self) -> "_CallableInt":
        """Size in bytes: an int, also callable as in C++ (``buffer.size()``)."""
        return _CallableInt(self._size)

    def root_buffer(self) -> "TensorBuffer":
        return self if self._root is None else self._root

    def owns_memory(self) -> bool:
        return self._owns

    def ref(self) -> None:
        self._check_live("ref")
        self._layout.ref_ += 1

    def unref(self) -> None:
        self._check_live("unref")
        self._layout.ref_ -= 1
        if self._layout.ref_ == 0:
            self.released = True
            self._owner = None
            self._kept = []
            if self._root is not None:
                self._root._give_back()

    def _check_live(self, what: str) -> None:
        if self.released:
            raise AliasflowError(f"tf.TensorBuffer.{what}: buffer at {self.address:#x} was "
                                 f"released (refcount 0)")

    def _give_back(self) -> None:
        """A tensor's reference, given back when the tensor dies: nothing to give back if
        someone already unref'd the buffer to 0 (TensorFlow would crash; the model must not,
        and a finalizer must not raise)."""
        if not self.released:
            self.unref()

    def _array_at(self, address: int, nbytes: int) -> np.ndarray:
        """A uint8 array over ``nbytes`` at ``address``, sliced from memory this buffer holds
        or was given (so the aliasflow view keeps it alive). Refused when the buffer or its
        root was released (TensorFlow would have freed the memory) or when the address is
        not inside such memory: nothing reads freed or foreign memory."""
        root = self.root_buffer()
        for buf in (self, root):
            if buf.released:
                raise AliasflowError(f"tf: the tensor's buffer at {buf.address:#x} was "
                                     f"released (refcount 0); its memory is gone, so it "
                                     f"cannot be read")
        if nbytes == 0:
            return np.zeros(0, np.uint8)
        for owner in [root._owner, *root._kept, *self._kept]:
            if owner is None:
                continue
            raw = owner.reshape(-1).view(np.uint8)
            lo = raw.ctypes.data
            if lo <= address and address + nbytes <= lo + raw.size:
                return raw[address - lo:address - lo + nbytes]
        raise AliasflowError(f"tf: the data pointer {address:#x} ({nbytes} bytes) points at "
                             f"no memory the buffer holds or was given; it is not read")

    def __repr__(self) -> str:
        kind = "owns memory" if self._owns else "does not own memory"
        return (f"TensorBuffer(data={self.data:#x}, size={self._size}, "
                f"refcount={self.refcount}, {kind})")


class Tensor:
    """``tensorflow::Tensor`` inside a ``TensorInterface`` behind a ``TF_Tensor``.

    ``Tensor(dtype, shape, buffer)`` takes a reference on ``buffer`` (as TensorFlow's
    constructor does) and gives it back when the tensor is deleted. Unlike TensorFlow it
    checks that the buffer is large enough and alive. ``Tensor(dtype, shape)`` with no buffer
    allocates an owning one, as TensorFlow's ``Tensor(DataType, const TensorShape&)`` does
    with the default allocator (none for a tensor of no elements).
    """

    _count = 0

    def __init__(self, dtype, shape, buffer: TensorBuffer | None = None):
        self.dtype, self.np_dtype = _data_type(dtype)
        shape = shape.copy() if isinstance(shape, TensorShapeRep) else TensorShapeRep(shape)
        if not shape.is_fully_defined:
            raise AliasflowError(f"tf.Tensor: shape {shape} is not fully defined")
        shape.data_type = self.dtype
        nbytes = shape.num_elements * self.np_dtype.itemsize
        owned = None
        if buffer is not None:
            if not isinstance(buffer, TensorBuffer):
                raise AliasflowError(f"tf.Tensor: buffer must be a TensorBuffer, got "
                                     f"{type(buffer).__name__}")
            buffer._check_live("ref")
            if buffer.size() < nbytes:
                raise AliasflowError(f"tf.Tensor: {shape} of {self.np_dtype} needs {nbytes} "
                                     f"bytes, the buffer has {buffer.size()}")
        elif nbytes:
            buffer = owned = TensorBuffer.allocate(nbytes)  # checks nbytes, refuses if too big
        self.shape = shape
        if buffer is not None:
            buffer.ref()
            weakref.finalize(self, buffer._give_back)
            if owned is not None:
                owned.unref()  # the creator's reference, handed to this tensor
        self.buffer = buffer
        Tensor._count += 1
        self.name = f"tf_tensor{Tensor._count}"
        # the C++ objects, in that layout, in real memory
        self._interface = _TensorInterfaceLayout(ctypes.cast(_INTERFACE_VTABLE,
                                                             ctypes.c_void_p))
        self._write_shape()
        self._interface.tensor_.buf_ = 0 if buffer is None else buffer.address
        self._tf_tensor = _TFTensorLayout(ctypes.addressof(self._interface))
        self._tt_ptr = ctypes.c_void_p(ctypes.addressof(self._tf_tensor))  # a TF_Tensor*

    def _write_shape(self) -> None:
        rep = self.shape.rep_bytes(self.dtype)
        ctypes.memmove(ctypes.addressof(self._interface.tensor_), rep, 24)

    @classmethod
    def allocate(cls, dtype, shape) -> "Tensor":
        """A tensor on a new owning buffer (the creator's reference handed to the tensor):
        ``Tensor(dtype, shape)``, always with a buffer (also of 0 bytes)."""
        _, npd = _data_type(dtype)
        s = shape if isinstance(shape, TensorShapeRep) else TensorShapeRep(shape)
        if not s.is_fully_defined:
            raise AliasflowError(f"tf.Tensor.allocate: shape {s} is not fully defined")
        buffer = TensorBuffer.allocate(s.num_elements * npd.itemsize)
        t = cls(dtype, s, buffer)
        buffer.unref()
        return t

    @property
    def tf_tensor_pointer(self) -> int:
        """The address of a ``TF_Tensor*`` variable pointing at this tensor's ``TF_Tensor``."""
        return ctypes.addressof(self._tt_ptr)

    @property
    def dims(self) -> tuple[int, ...]:
        return self.shape.dims

    @property
    def num_elements(self) -> int:
        return self.shape.num_elements

    def shape_bytes(self) -> bytes:
        """The 24 bytes of ``shape_`` as they are in the object's memory."""
        return ctypes.string_at(ctypes.addressof(self._interface.tensor_), 24)

    def _data_pointer(self) -> int:
        buf = self._interface.tensor_.buf_
        return 0 if not buf else _read_pointer(buf + _TensorBufferLayout.data_.offset)

    def tensor_data(self) -> np.ndarray:
        """The tensor's bytes (a uint8 array over them, no copy), found through ``buf_`` and
        the buffer's ``data_`` as they are in memory."""
        nbytes = self.num_elements * self.np_dtype.itemsize
        if self.buffer is None:
            return np.zeros(0, np.uint8)
        return self.buffer._array_at(self._data_pointer(), nbytes)  # refuses freed memory

    def numpy(self) -> np.ndarray:
        """The values, as an array over the tensor's memory (no copy)."""
        return self.tensor_data().view(self.np_dtype).reshape(self.dims)

    def af_view(self, name: str | None = None):
        """An aliasflow view over the memory the tensor's data pointer addresses now."""
        return _af_from_numpy(self.numpy(), name or self.name)

    def slice(self, start: int, limit: int) -> "Tensor":
        """``Tensor::Slice``: rows ``start:limit`` of dim 0, sharing memory through a
        sub-buffer of the same root (no copy). The shape changes with ``set_dim``, so it
        keeps this tensor's representation."""
        if len(self.dims) < 1:
            raise AliasflowError("tf.Tensor.slice: needs at least one dimension")
        dim0 = self.dims[0]
        if not (isinstance(start, (int, np.integer)) and isinstance(limit, (int, np.integer))
                and 0 <= start <= limit <= dim0):
            raise AliasflowError(f"tf.Tensor.slice: need 0 <= start <= limit <= {dim0}, got "
                                 f"start={show_value(start)}, limit={show_value(limit)}")
        shape = self.shape.copy()
        buffer = None
        if dim0 > 0:
            per_row = self.num_elements // dim0
            shape.set_dim(0, limit - start)
            isz = self.np_dtype.itemsize
            if self.buffer is not None:
                buffer = self.buffer.sub_buffer(
                    self._data_pointer() - self.buffer.data + start * per_row * isz,
                    (limit - start) * per_row * isz)
        out = Tensor(self.dtype, shape, buffer)
        if buffer is not None:
            buffer.unref()   # the new tensor holds the sub-buffer's only reference
        return out

    def __repr__(self) -> str:
        return (f"tf.memory.Tensor({self.dtype.name}, {self.shape}, data={self._data_pointer():#x},"
                f" buffer refcount={self.buffer.refcount if self.buffer else 0})")


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor over a NumPy array's memory, without a copy (the article's goal, done through
    a buffer that does not own the memory instead of by overwriting a data pointer).

    >>> import numpy as np, aliasflow as af
    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> t = from_numpy(x)
    >>> t.buffer.owns_memory(), t.buffer.data == x.ctypes.data, t.buffer.refcount
    (False, True, 1)
    >>> x[0, 0] = 7; float(t.numpy()[0, 0])
    7.0
    """
    if not isinstance(array, np.ndarray):
        raise AliasflowError(f"tf.from_numpy: expected a NumPy array, got "
                             f"{type(array).__name__}")
    _data_type(array.dtype)
    buffer = TensorBuffer.wrap(array)
    t = Tensor(array.dtype, array.shape, buffer)
    buffer.unref()
    return t


@dataclass(frozen=True)
class WalkStep:
    """One step of :func:`memory_walk`: read 8 bytes at ``address`` (= ``base + offset``), or
    just add ``offset`` to the previous value (``read`` False); ``value`` is the result."""
    step: int
    what: str
    base: int
    offset: int
    address: int
    read: bool
    value: int

    def __getitem__(self, key: str):
        return getattr(self, key)


def memory_walk(t: Tensor) -> list[WalkStep]:
    """The article's five steps from a ``TF_Tensor*`` to the data pointer, following the
    pointers through memory (raw reads at addresses).

    1. the ``TF_Tensor*`` gives the ``TF_Tensor``'s address;
    2. its first 8 bytes are the ``AbstractTensorInterface*``;
    3. 8 bytes further (past the vtable pointer) is the ``tensorflow::Tensor``;
    4. 24 bytes into it (past the shape) is the ``TensorBuffer*``;
    5. 16 bytes into the buffer (past vtable pointer and refcount) is ``data_``.
    """
    if not isinstance(t, Tensor):
        raise AliasflowError(f"tf.memory_walk needs a tf.memory.Tensor, got {type(t).__name__}")
    steps = []
    p = t.tf_tensor_pointer
    tt_ad = _read_pointer(p)
    steps.append(WalkStep(1, "TF_Tensor* -> TF_Tensor", p, 0, p, True, tt_ad))
    ai_ad = _read_pointer(tt_ad)
    steps.append(WalkStep(2, "TF_Tensor.tensor -> TensorInterface", tt_ad, 0, tt_ad, True,
                          ai_ad))
    t_ad = ai_ad + 8
    steps.append(WalkStep(3, "skip the vtable pointer -> tensorflow::Tensor", ai_ad, 8, t_ad,
                          False, t_ad))
    tb_ad = _read_pointer(t_ad + 24)
    steps.append(WalkStep(4, "skip TensorShape (24 bytes) -> TensorBuffer* buf_", t_ad, 24,
                          t_ad + 24, True, tb_ad))
    if tb_ad == 0:
        raise AliasflowError("tf.memory_walk: the tensor has no buffer (buf_ is null)")
    data = _read_pointer(tb_ad + 16)
    steps.append(WalkStep(5, "skip vtable pointer and refcount (16 bytes) -> data_", tb_ad, 16,
                          tb_ad + 16, True, data))
    return steps


def swap_data_pointer(t: Tensor, array: np.ndarray) -> int:
    """Overwrite the tensor's buffer's ``data_`` (found by :func:`memory_walk`) with the
    address of ``array``; returns the old pointer. The article's dangerous trick, on the model.

    Every tensor on that buffer now silently aliases ``array``: writes through either are seen
    by the other, and nothing in the tensor says so (aliasflow's analysis of ops on both does).
    In TensorFlow the buffer would still free its old memory and never this one; here the
    model keeps ``array`` alive so Python does not crash.
    """
    if not isinstance(t, Tensor) or t.buffer is None:
        raise AliasflowError(f"tf.swap_data_pointer: needs a tf.memory.Tensor with a buffer, "
                             f"got {show_value(t)}")
    t.buffer._check_live("swap_data_pointer")
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        raise AliasflowError("tf.swap_data_pointer: needs a C-contiguous NumPy array")
    nbytes = t.num_elements * t.np_dtype.itemsize
    if array.nbytes < nbytes:
        raise AliasflowError(f"tf.swap_data_pointer: the tensor reads {nbytes} bytes, the "
                             f"array has {array.nbytes}")
    location = memory_walk(t)[-1].address
    old = _read_pointer(location)
    t.buffer._kept.append(array)
    ctypes.c_void_p.from_address(location).value = array.ctypes.data
    return old
