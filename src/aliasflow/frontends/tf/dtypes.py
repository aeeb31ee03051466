"""TensorFlow's dtypes and static shapes, in TensorFlow's names.

``DType`` carries the ``DataType`` enum number of TensorFlow's ``types.proto`` (what a
``TensorProto`` stores in its field 1) and the NumPy dtype values are held in. Reference types
(``float32_ref``, the type of a TensorFlow 1 variable's output) are the enum plus 100.

>>> from aliasflow import tf
>>> tf.float32, tf.float32.name, tf.as_dtype("int64").as_datatype_enum
(tf.float32, 'float32', 9)
>>> str(tf.TensorShape([None, 3])), str(tf.TensorShape(None)), repr(tf.TensorShape([2]))
('(None, 3)', '<unknown>', 'TensorShape([2])')
"""
from __future__ import annotations

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import INT64, show_value

try:  # bfloat16 has no NumPy dtype of its own; ml_dtypes (TensorFlow's) provides one
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None


class DType:
    """A TensorFlow element type: ``name``, ``as_datatype_enum``, ``as_numpy_dtype``."""

    def __init__(self, name: str, enum: int, numpy_dtype):
        self.name = name
        self.as_datatype_enum = enum
        self._numpy = numpy_dtype

    @property
    def is_ref(self) -> bool:
        return self.as_datatype_enum > 100

    @property
    def base_dtype(self) -> "DType":
        return _BY_ENUM[self.as_datatype_enum - 100] if self.is_ref else self

    @property
    def as_ref(self) -> "DType":  # noqa: D401 - TensorFlow's name
        return self if self.is_ref else _BY_ENUM[self.as_datatype_enum + 100]

    @property
    def as_numpy_dtype(self):
        if self._numpy is None:
            raise AliasflowError(f"dtype {self.name} has no NumPy type here"
                                 + (" (install ml_dtypes)" if "bfloat16" in self.name else ""))
        return self._numpy

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of values (object for strings)."""
        return np.dtype(self.base_dtype.as_numpy_dtype)

    @property
    def is_floating(self) -> bool:
        return self.base_dtype.name in ("float16", "bfloat16", "float32", "float64")

    @property
    def is_integer(self) -> bool:
        return self.base_dtype.name.startswith(("int", "uint"))

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return other.as_datatype_enum == self.as_datatype_enum
        try:
            return as_dtype(other).as_datatype_enum == self.as_datatype_enum
        except AliasflowError:
            return False

    def __hash__(self) -> int:
        return self.as_datatype_enum

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: {self.name!r}>"


_TABLE = [  # name, DataType enum, NumPy type
    ("float32", 1, np.float32), ("float64", 2, np.float64), ("int32", 3, np.int32),
    ("uint8", 4, np.uint8), ("int16", 5, np.int16), ("int8", 6, np.int8),
    ("string", 7, np.object_), ("complex64", 8, np.complex64), ("int64", 9, np.int64),
    ("bool", 10, np.bool_), ("bfloat16", 14, _ml_dtypes.bfloat16 if _ml_dtypes else None),
    ("uint16", 17, np.uint16), ("complex128", 18, np.complex128), ("float16", 19, np.float16),
    ("uint32", 22, np.uint32), ("uint64", 23, np.uint64),
]
_BY_ENUM: dict[int, DType] = {}
_BY_NAME: dict[str, DType] = {}
for _name, _enum, _np in _TABLE:
    for _dt in (DType(_name, _enum, _np), DType(_name + "_ref", _enum + 100, _np)):
        _BY_ENUM[_dt.as_datatype_enum] = _dt
        _BY_NAME[_dt.name] = _dt
_BY_NAME.update(half=_BY_NAME["float16"], float=_BY_NAME["float32"], double=_BY_NAME["float64"])

float16 = half = _BY_NAME["float16"]
bfloat16 = _BY_NAME["bfloat16"]
float32 = _BY_NAME["float32"]
float64 = double = _BY_NAME["float64"]
int8, int16, int32, int64 = (_BY_NAME[n] for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (_BY_NAME[n] for n in ("uint8", "uint16", "uint32", "uint64"))
complex64, complex128 = _BY_NAME["complex64"], _BY_NAME["complex128"]
string = _BY_NAME["string"]
# ``bool`` would shadow the builtin inside this module; it is exported as ``tf.bool``
bool_ = _BY_NAME["bool"]


def as_dtype(value) -> DType:
    """A :class:`DType` from a DType, a name (``"float32"``), a DataType enum or a NumPy dtype."""
    if isinstance(value, DType):
        return value
    if hasattr(value, "as_datatype_enum") and isinstance(value.as_datatype_enum, int):
        return as_dtype(value.as_datatype_enum)  # e.g. TensorFlow's own DType
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise AliasflowError(f"unknown dtype {show_value(value)}")
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if int(value) in _BY_ENUM:
            return _BY_ENUM[int(value)]
        raise AliasflowError(f"unknown DataType enum {show_value(value)}")
    try:
        npd = np.dtype(value)
    except TypeError:
        raise AliasflowError(f"unknown dtype {show_value(value)}") from None
    if npd.kind in "SUO":
        return string
    for dt in _BY_ENUM.values():
        if not dt.is_ref and dt._numpy is not None and dt.name != "string" \
                and np.dtype(dt._numpy) == npd:
            return dt
    raise AliasflowError(f"dtype {npd} has no TensorFlow equivalent")


MAX_RANK = 254  # TensorFlow's TensorShape::MaxDimensions()
_V2_TENSORSHAPE = [True]  # TensorFlow 2's default; disable_v2_behavior() turns it off


def enable_v2_tensorshape() -> None:
    """``tf.compat.v1.enable_v2_tensorshape``: unknown dims print as ``None`` (the default
    of TensorFlow 2, whose ``tf.compat.v1`` this imitates)."""
    _V2_TENSORSHAPE[0] = True


def disable_v2_tensorshape() -> None:
    """``tf.compat.v1.disable_v2_tensorshape`` (part of ``disable_v2_behavior()``): unknown
    dims print as ``?`` and shapes repr with ``Dimension``, as in TensorFlow 1."""
    _V2_TENSORSHAPE[0] = False


def _dimension(d, dims):
    """One dim as TensorFlow's ``as_dimension`` reads it: None, or an int from 0 to
    2**63 - 1 (a negative size is refused, as TensorFlow refuses it)."""
    if d is None:
        return None
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise AliasflowError(f"bad dimension {show_value(d)} in shape {show_value(dims, 60)}: "
                             f"a dimension is an int or None")
    if d < 0:
        raise AliasflowError(f"bad dimension {int(d)} in shape {show_value(dims, 60)}: "
                             f"dimension {int(d)} must be >= 0 (None is unknown)")
    if d > INT64[1]:
        raise AliasflowError(f"bad dimension {show_value(d)} in shape {show_value(dims, 60)}: "
                             f"it does not fit in int64")
    return int(d)


class TensorShape:
    """A static shape: a list of dims (ints >= 0, or None where unknown), or an unknown rank.

    ``str`` is TensorFlow 2's ``(None, 3)`` (``(?, 3)`` after :func:`disable_v2_tensorshape`
    or ``disable_v2_behavior()``, as in TensorFlow); iterating yields ints and None
    (TensorFlow 2's style; TensorFlow 1's ``Dimension`` objects are not modelled).
    """

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims.dims
        if dims is None:
            self.dims = None
            return
        if isinstance(dims, (str, bytes)):
            raise AliasflowError(f"bad shape {show_value(dims)}: a list of dimensions expected")
        try:
            items = list(dims) if hasattr(dims, "__iter__") else [dims]
        except (TypeError, ValueError):
            items = [dims]
        if len(items) > MAX_RANK:
            raise AliasflowError(f"shape {show_value(dims, 60)} has {len(items)} dimensions; "
                                 f"TensorFlow allows at most {MAX_RANK}")
        self.dims = [_dimension(d, dims) for d in items]
        count = 1
        for d in self.dims:
            count *= 1 if d is None else d
            if count > INT64[1]:  # TensorFlow's TensorShapeRep counts elements in an int64
                raise AliasflowError(f"shape {show_value(dims, 60)}: the known dimensions "
                                     f"multiply to more elements than int64 can count")

    @property
    def rank(self):
        return None if self.dims is None else len(self.dims)

    ndims = rank

    def is_fully_defined(self) -> bool:
        return self.dims is not None and None not in self.dims

    def as_list(self) -> list:
        if self.dims is None:
            raise AliasflowError("as_list() is not defined on an unknown TensorShape")
        return list(self.dims)

    def as_tuple(self) -> tuple:
        """The dims as a tuple of ints (only for fully defined shapes)."""
        if not self.is_fully_defined():
            raise AliasflowError(f"shape {self} is not fully defined")
        return tuple(self.dims)

    def is_compatible_with(self, other) -> bool:
        other = other if isinstance(other, TensorShape) else TensorShape(other)
        if self.dims is None or other.dims is None:
            return True
        return len(self.dims) == len(other.dims) and all(
            a is None or b is None or a == b for a, b in zip(self.dims, other.dims))

    def __len__(self) -> int:
        if self.dims is None:
            raise AliasflowError("cannot take the length of a shape with unknown rank")
        return len(self.dims)

    def __iter__(self):
        if self.dims is None:
            raise AliasflowError("cannot iterate over a shape with unknown rank")
        return iter(self.dims)

    def __getitem__(self, i):
        return self.as_list()[i]

    def __eq__(self, other) -> bool:
        try:
            other = other if isinstance(other, TensorShape) else TensorShape(other)
        except AliasflowError:
            return False
        return self.dims == other.dims

    def __hash__(self):
        return hash(None if self.dims is None else tuple(self.dims))

    def __str__(self) -> str:
        if self.dims is None:
            return "<unknown>"
        unknown = "None" if _V2_TENSORSHAPE[0] else "?"
        inner = ", ".join(unknown if d is None else str(d) for d in self.dims)
        return f"({inner},)" if len(self.dims) == 1 else f"({inner})"

    def __repr__(self) -> str:
        if self.dims is None:
            return "TensorShape(None)"
        if _V2_TENSORSHAPE[0]:
            return "TensorShape([" + ", ".join(str(d) for d in self.dims) + "])"
        return "TensorShape([" + ", ".join(f"Dimension({d})" for d in self.dims) + "])"
