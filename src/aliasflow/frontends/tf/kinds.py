"""The op kinds of a ``Session.run``: one :class:`~aliasflow.Primitive` per TensorFlow graph
op type, named ``tf.<Type>`` (as :mod:`.races` names its records), with parameters a program
file holds (JSON data, strings, booleans) and a kernel over NumPy arrays.

Every kernel returns one value per written operand (``outputs="each"``): the graph ops that
only forward memory (``Identity``, ``VariableV2``, ``NoOp``, a ``StridedSlice`` or ``Sum``
that TensorFlow forwards, see :mod:`.accesses`) read and write nothing and return no value;
their records carry only ``after`` edges. A slice's index is in the views its record reads
or writes, so ``StridedSlice`` and ``StridedSliceAssign`` need no parameters.

``tf.Const`` holds its value as ``{"dtype", "shape", "data"}``: ``data`` the elements in
row-major order as JSON numbers (``true``/``false`` for bool, ``[re, im]`` for complex,
``"nan"``/``"inf"``/``"-inf"`` for non-finite floats). A value that does not fit its dtype,
a wrong count or a malformed element is refused with an error naming the op and the value.

>>> import numpy as np
>>> v = encode_value(np.array([[1.5, np.nan]], np.float32)); v
{'dtype': 'float32', 'shape': [1, 2], 'data': [1.5, 'nan']}
>>> decode_value("c", v)
array([[1.5, nan]], dtype=float32)
>>> decode_value("c", {"dtype": "float32", "shape": [2], "data": [1.5]})
Traceback (most recent call last):
...
aliasflow.core.errors.AliasflowError: op 'c': value: shape [2] holds 2 element(s), data has 1
"""
from __future__ import annotations

import math

import numpy as np

from ...core.errors import AliasflowError
from ...core.primitives import PRIMITIVES, Primitive
from ...core.values import fit_array, show_value
from .dtypes import as_dtype

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def numpy_dtype(op_name: str, name) -> np.dtype:
    """The NumPy dtype of the TensorFlow dtype ``name`` (not ``string``), or an error."""
    try:
        dt = as_dtype(name) if isinstance(name, str) else None
    except AliasflowError:
        dt = None
    if dt is None or dt.is_ref or dt.name == "string" or dt._numpy is None:
        raise AliasflowError(f"op {op_name!r}: dtype must name a TensorFlow numeric or bool "
                             f"dtype, got {show_value(name)}")
    return dt.numpy


# ---- tf.Const's value -----------------------------------------------------------------------
def _encode_element(x):
    if isinstance(x, complex):
        return [_encode_element(x.real), _encode_element(x.imag)]
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def encode_value(arr: np.ndarray) -> dict:
    """``arr`` as a ``tf.Const`` value parameter (JSON data; floats exact)."""
    arr = np.asarray(arr)
    flat = arr.reshape(-1)
    if arr.dtype.kind == "V":  # bfloat16: every value is exactly a float
        flat = flat.astype(np.float64)
    return {"dtype": as_dtype(arr.dtype).name, "shape": list(arr.shape),
            "data": [_encode_element(x) for x in flat.tolist()]}


def _decode_element(op_name: str, k: int, x, kind: str):
    def bad(why):
        raise AliasflowError(f"op {op_name!r}: value: data[{k}] {why}, got {show_value(x)}")
    if kind == "b":
        if not isinstance(x, bool):
            bad("must be true or false")
        return x
    if kind == "c":
        if not (isinstance(x, list) and len(x) == 2):
            bad("must be [real, imaginary]")
        re, im = (_decode_element(op_name, k, y, "f") for y in x)
        return complex(re, im)
    if isinstance(x, str) and kind != "iu" and x in _NONFINITE:
        return _NONFINITE[x]
    if isinstance(x, bool) or not isinstance(x, (int, float)) or \
            (kind == "iu" and not isinstance(x, int)):
        bad("must be an int" if kind == "iu" else "must be a number or \"nan\"/\"inf\"/\"-inf\"")
    return x


def decode_value(op_name: str, value) -> np.ndarray:
    """The array a ``tf.Const`` value parameter holds, or :class:`AliasflowError` naming the
    op and what is wrong."""
    if not isinstance(value, dict) or set(value) != {"dtype", "shape", "data"}:
        raise AliasflowError(f"op {op_name!r}: value must be {{\"dtype\", \"shape\", \"data\"}}, "
                             f"got {show_value(value)}")
    dtype = numpy_dtype(op_name, value["dtype"])
    shape = value["shape"]
    if not isinstance(shape, list) or len(shape) > 64 or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise AliasflowError(f"op {op_name!r}: value: shape must be a list of at most 64 "
                             f"non-negative ints, got {show_value(shape)}")
    data = value["data"]
    size = math.prod(shape)
    if not isinstance(data, list) or len(data) != size:
        got = len(data) if isinstance(data, list) else show_value(data)
        raise AliasflowError(f"op {op_name!r}: value: shape {shape} holds {size} element(s), "
                             f"data has {got}")
    kind = "iu" if dtype.kind in "iu" else ("f" if dtype.kind == "V" else dtype.kind)
    elements = [_decode_element(op_name, k, x, kind) for k, x in enumerate(data)]
    src = np.array(elements, dtype=object if kind == "iu" else None)
    if kind == "f" and not elements:
        src = src.astype(np.float64)
    return fit_array(src, dtype, f"op {op_name!r}: value").reshape(shape)


# ---- kernels --------------------------------------------------------------------------------
def _one(fn):
    """A kernel giving the one value ``fn(params, inputs)`` (TensorFlow's float semantics:
    no warnings for overflow or division by zero)."""
    def kernel(params, inputs):
        with np.errstate(all="ignore"):
            return [np.asarray(fn(params, inputs))]
    return kernel


def _forwarded(params, inputs):
    return []


def _sum(params, inputs):
    if params["forward"]:
        return []
    x = inputs[0]
    acc = np.float32 if x.dtype.itemsize < 4 and x.dtype.kind == "f" else x.dtype
    with np.errstate(all="ignore"):  # half sums accumulate in float, as TensorFlow's do
        total = np.sum(x, axis=tuple(params["axes"]), keepdims=params["keep_dims"], dtype=acc)
    return [np.asarray(total).astype(x.dtype)]


def _slice(params, inputs):
    return [] if params["forward"] else [inputs[0]]


def _check_forward(rec) -> None:
    """A forwarded op reads and writes nothing; any other reads one view and writes one."""
    want = (0, 0) if rec.params["forward"] else (1, 1)
    got = (len(rec.input_views), len(rec.output_views))
    if got != want:
        raise AliasflowError(f"op {rec.name!r} ({rec.prim}, forward="
                             f"{rec.params['forward']}) reads {want[0]} and writes {want[1]} "
                             f"view(s), has {got[0]} and {got[1]}")


def _check_axes(op_name: str, params) -> None:
    axes = params.get("axes")
    if axes is not None and not (isinstance(axes, list) and all(
            isinstance(a, int) and not isinstance(a, bool) and a >= 0 for a in axes)):
        raise AliasflowError(f"op {op_name!r}: axes must be a list of non-negative ints, got "
                             f"{show_value(axes)}")


def _check_sum(rec) -> None:
    _check_forward(rec)
    if rec.input_views and any(a >= rec.input_views[0].ndim for a in rec.params["axes"]):
        raise AliasflowError(f"op {rec.name!r}: axes {rec.params['axes']} out of range for "
                             f"input {rec.input_views[0].name!r} of shape "
                             f"{rec.input_views[0].shape}")


def _check_shape(op_name: str, params) -> None:
    shape = params.get("shape")
    if not (isinstance(shape, list) and all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise AliasflowError(f"op {op_name!r}: shape must be a list of non-negative ints, "
                             f"got {show_value(shape)}")


def _dtype_param(op_name: str, params) -> None:
    numpy_dtype(op_name, params["dtype"])


def _const_param(op_name: str, params) -> None:
    decode_value(op_name, params["value"])


def _prepare_const(params):
    value = decode_value("tf.Const", params["value"])
    return lambda inputs: [value]


_BINARY = {"AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.true_divide,
           "MatMul": np.matmul, "BatchMatMulV2": np.matmul}


def _binary(fn):
    return _one(lambda p, ins: fn(ins[0], ins[1]))


def _kind(type_, kernel, arity=None, params=None, defaults=None, check=None,
          check_params=None, prepare=None, doc=""):
    return PRIMITIVES.register(Primitive(
        f"tf.{type_}", kernel, arity=arity, params=params or {}, defaults=defaults or {},
        check=check, check_params=check_params, prepare=prepare, outputs="each",
        doc=doc), replace=True)


for _type, _fn in _BINARY.items():
    _kind(_type, _binary(_fn), 2, doc=f"TensorFlow {_type}: out = {_fn.__name__}(x, y).")
_kind("Const", lambda p, ins: [decode_value("tf.Const", p["value"])], 0,
      {"value": "json"}, check_params=_const_param, prepare=_prepare_const,
      doc="TensorFlow Const: writes its value.")
_kind("Range", _one(lambda p, ins: np.arange(ins[0], ins[1], ins[2], dtype=np.int32)), 3,
      doc="TensorFlow Range: int32 start, limit, delta.")
_kind("Fill", _one(lambda p, ins: ins[0]), 1, doc="TensorFlow Fill: the scalar everywhere.")
_kind("ZerosLike", _one(lambda p, ins: np.zeros((), numpy_dtype("tf.ZerosLike", p["dtype"]))),
      0, {"dtype": "str"}, check_params=_dtype_param,
      doc="TensorFlow ZerosLike: zeros (the input's shape is the output view's).")
_kind("Shape", _one(lambda p, ins: np.asarray(p["shape"], np.int32)), 0, {"shape": "json"},
      check_params=_check_shape, doc="TensorFlow Shape: the input's shape, known at run time.")
_kind("Neg", _one(lambda p, ins: np.negative(ins[0])), 1, doc="TensorFlow Neg.")
_kind("Cast", _one(lambda p, ins: ins[0].astype(numpy_dtype("tf.Cast", p["dtype"]))), 1,
      {"dtype": "str"}, check_params=_dtype_param, doc="TensorFlow Cast to dtype.")
_kind("Sum", _sum, None, {"axes": "json", "keep_dims": "bool", "forward": "bool"},
      check=_check_sum, check_params=_check_axes,
      doc="TensorFlow Sum over axes (forward: TensorFlow forwards the input buffer).")
_kind("StridedSlice", _slice, None, {"forward": "bool"},
      check=_check_forward, doc="TensorFlow StridedSlice: copies the slice it reads "
                                "(forward: TensorFlow forwards the input buffer).")
_kind("Assign", _one(lambda p, ins: ins[0]), 1, doc="TensorFlow Assign: variable = value.")
_kind("AssignAdd", _one(lambda p, ins: np.add(ins[0], ins[1])), 2,
      doc="TensorFlow AssignAdd: variable += value.")
_kind("AssignSub", _one(lambda p, ins: np.subtract(ins[0], ins[1])), 2,
      doc="TensorFlow AssignSub: variable -= value.")
_kind("StridedSliceAssign", _one(lambda p, ins: ins[0]), 1,
      doc="TensorFlow StridedSliceAssign: variable[slice] = value.")
for _type in ("Identity", "VariableV2", "NoOp"):
    _kind(_type, _forwarded, 0, doc=f"TensorFlow {_type}: no memory access of its own "
                                    f"(ordering only).")
