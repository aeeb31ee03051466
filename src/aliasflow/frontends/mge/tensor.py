"""MegEngine-style eager tensors in three refcounted layers (seed 001), recorded as aliasflow ops.

The Python :class:`Tensor` holds one reference, to its current implementation
(:class:`~.runtime.Impl`: shape, stride, offset on a :class:`~.runtime.Storage`). What each
statement does to the three layers follows the seed's table; see :mod:`.runtime` for the
settings (``config``) and the recording (``recorded_ops``).
"""
from __future__ import annotations

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import check_nbytes, fit_array, fit_scalar, show_value
from ...core.builders import BinaryOperation, TransformOperation
from ...core.primitives import PRIMITIVES, Primitive
from ...core.record import Access, OpRecord
from .runtime import (DEVICE, Impl, ImplInfo, Layers, _State, _execute, _op_name,
                      storage_info)


def layers(t: "Tensor") -> Layers:
    """The Python tensor's id, its current implementation and that implementation's storage."""
    if not isinstance(t, Tensor):
        raise AliasflowError(f"mge.layers needs an mge Tensor, got {type(t).__name__}")
    impl = t._impl
    storage = storage_info(impl.storage)
    return Layers(id(t), ImplInfo(impl.uid, impl.shape, impl.stride, impl.offset,
                                  impl.dtype.name, storage), storage)


# ---- dtypes and operands ---------------------------------------------------------------------
def _demote(dtype: np.dtype) -> np.dtype:
    """MegEngine has no 64-bit default types: float64 -> float32, int64/uint64 -> int32."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return np.dtype(np.float32)
    if dtype in (np.dtype(np.int64), np.dtype(np.uint64)):
        return np.dtype(np.int32)
    return dtype


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating))


def _values(data, dtype, what: str) -> np.ndarray:
    """``data`` (numbers, nested lists, an array or an mge Tensor, read without recording) as
    a new array of ``dtype``, or of MegEngine's default for it (Python floats float32, ints
    int32) when ``dtype`` is None. A value that does not fit is refused (``nan`` or ``3.5``
    into an int, ``300`` into int8, ``1e39`` into float32): the rule of
    :mod:`aliasflow.core.values`, on every path that stores values."""
    if isinstance(data, Tensor):
        data = data._impl.ndarray()
    try:
        src = np.asarray(data)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise AliasflowError(f"{what}: cannot make a tensor of {show_value(data)}: "
                             f"{exc}") from None
    if dtype is None:
        if src.dtype.kind == "O":  # Python ints beyond 64 bits: refused as int32 below
            kinds = {type(x) for x in src.ravel().tolist()}
            target = np.dtype(np.float32) if float in kinds else np.dtype(np.int32)
        else:
            target = _demote(src.dtype)
    else:
        try:
            target = np.dtype(dtype)
        except (TypeError, ValueError, SyntaxError):
            raise AliasflowError(f"{what}: unknown dtype {show_value(dtype)}") from None
    if target.hasobject or target.kind not in "biuf":
        raise AliasflowError(f"{what}: unsupported dtype {target}")
    if src.dtype.kind in "SUVMm" and src.size:
        raise AliasflowError(f"{what}: {show_value(data)} is not numbers")
    return fit_array(data if src.dtype.kind == "O" else src, target, what)


def _fresh(shape, dtype, what: str) -> Impl:
    """A new contiguous implementation, its size checked before anything is allocated."""
    nbytes = check_nbytes(tuple(int(n) for n in shape), np.dtype(dtype), what)
    try:
        return Impl.fresh(shape, dtype)
    except (MemoryError, ValueError):
        raise AliasflowError(f"{what}: cannot allocate {nbytes} bytes for shape "
                             f"{tuple(shape)} of {np.dtype(dtype)}") from None


def _scalar_dtype(fn, dtype: np.dtype, scalar, reverse: bool, what: str) -> np.dtype:
    """The dtype ``fn(tensor, scalar)`` computes in (NumPy's rule: a Python scalar takes the
    tensor's kind); the scalar must fit it (``int8 + 300`` and ``float32 + 1e39`` are
    refused, as storing them would be)."""
    one = np.ones((), dtype)
    try:
        with np.errstate(all="ignore"):
            result = (fn(scalar, one) if reverse else fn(one, scalar)).dtype
    except (OverflowError, TypeError, ValueError) as exc:
        raise AliasflowError(f"{what}: value {show_value(scalar)} does not fit dtype {dtype}: "
                             f"{exc}") from None
    if isinstance(scalar, (bool, int, float)):  # weak: converted to the result's dtype
        fit_scalar(scalar, result, what)
    return result


_FNS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
        "divide": np.true_divide}
_INPLACE = {"add": "iadd", "subtract": "isub", "multiply": "imul", "divide": "idiv"}


# The kinds of op this front end adds to aliasflow's (every other op is a seed kind).
def _scalar_kernel(params, inputs):
    fn = _FNS[params["op"]]
    if params["reverse"]:
        return fn(params["scalar"], inputs[0])
    return fn(inputs[0], params["scalar"])


def _sample_result(kernel):
    def result(params, inputs):
        with np.errstate(all="ignore"):
            value = np.asarray(kernel(params, [np.zeros((1,) * len(s), d) for s, d in inputs]))
        return inputs[0][0] if inputs else value.shape, value.dtype
    return result


def _check_dtype(op_name: str, params) -> None:
    try:
        ok = np.dtype(params["dtype"]).kind in "biuf"
    except TypeError:
        ok = False
    if not ok:
        raise AliasflowError(f"op {op_name!r}: dtype must name a bool, integer or float dtype, "
                             f"got {show_value(params['dtype'])}")


def _check_const(op_name: str, params) -> None:
    _check_dtype(op_name, params)
    try:
        with np.errstate(all="ignore"):
            value = np.asarray(params["value"], params["dtype"])
    except (TypeError, ValueError, OverflowError) as exc:
        raise AliasflowError(f"op {op_name!r}: value {show_value(params['value'])} is no array "
                             f"of {params['dtype']}: {exc}") from None
    if value.dtype.kind not in "biuf":
        raise AliasflowError(f"op {op_name!r}: value {show_value(params['value'])} is no array "
                             f"of numbers")


def _check_scalar(op_name: str, params) -> None:
    if params["op"] not in _FNS:
        raise AliasflowError(f"op {op_name!r}: op must be one of {sorted(_FNS)}, got "
                             f"{show_value(params['op'])}")
    if not isinstance(params["scalar"], (int, float)):
        raise AliasflowError(f"op {op_name!r}: scalar must be a number, got "
                             f"{show_value(params['scalar'])}")


PRIMITIVES.register(Primitive(
    "mge.const", lambda params, inputs: np.asarray(params["value"], params["dtype"]), arity=0,
    params={"value": "json", "dtype": "str"}, check_params=_check_const,
    result=lambda p, ins: (np.shape(p["value"]), np.dtype(p["dtype"])),
    doc="Write given values (tensor creation, scalar assignment)."), replace=True)
PRIMITIVES.register(Primitive(
    "mge.cast", lambda params, inputs: np.asarray(inputs[0]).astype(params["dtype"]), arity=1,
    params={"dtype": "str"}, check_params=_check_dtype,
    result=lambda p, ins: (ins[0][0], np.dtype(p["dtype"])),
    doc="Copy with a cast to the output's dtype (as assignment does in NumPy and MegEngine)."),
    replace=True)
PRIMITIVES.register(Primitive(
    "mge.scalar", _scalar_kernel, arity=1,
    params={"op": "str", "scalar": "json", "reverse": "bool"}, check_params=_check_scalar,
    result=_sample_result(_scalar_kernel),
    doc="An arithmetic op of a tensor and a Python number: op(x, scalar) or op(scalar, x)."),
    replace=True)


def _record(kind: str, name: str, inputs, outputs, **params) -> OpRecord:
    n = len(inputs)
    return OpRecord(name, kind, [Access(k, "R", v) for k, v in enumerate(inputs)]
                    + [Access(n + k, "W", v) for k, v in enumerate(outputs)], params,
                    0 if outputs else 1)


def _const(name: str, arr: np.ndarray, view) -> OpRecord:
    return _record("mge.const", name, [], [view], value=_json_values(arr),
                   dtype=arr.dtype.name)


def _json_values(arr: np.ndarray):
    """The values as JSON data (a record's parameter): NaN and the infinities, which fit
    every float dtype but are no JSON numbers, as the strings NumPy reads back."""
    if arr.dtype.kind != "f" or np.isfinite(arr).all():
        return arr.tolist()

    def plain(x):
        return x if isinstance(x, list) else (x if np.isfinite(x) else repr(float(x)))

    def walk(x):
        return [walk(y) for y in x] if isinstance(x, list) else plain(x)
    return walk(arr.tolist())


def _plain(x):
    """A Python number for a NumPy scalar (what a record's JSON parameter holds)."""
    return x.item() if isinstance(x, np.generic) else x



class IndexOutOfRange(AliasflowError, IndexError):
    """An index outside the tensor (an IndexError too, so iteration stops as in Python)."""


def _window(array: np.ndarray, index) -> np.ndarray:
    """``array[index]`` as a view, also when it selects one element (NumPy would copy it out
    as a scalar; a trailing ``...`` keeps it a 0-d view)."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(item is Ellipsis for item in items):
        items = items + (Ellipsis,)
    try:
        return array[items]
    except (OverflowError, ValueError) as exc:  # ints beyond 64 bits, slices NumPy refuses
        raise IndexError(str(exc)) from None


def _basic_index(index, what: str):
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        ok = item is None or item is Ellipsis or isinstance(item, slice) or (
            isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)))
        if not ok:
            raise AliasflowError(f"mge: {what}: unsupported index {show_value(item)} (ints, "
                                 f"slices, ... and None only)")
    return index


# ---- the Python tensor -----------------------------------------------------------------------
class Tensor:
    """A MegEngine-style eager tensor (``mge.tensor(data, dtype=None)``).

    Python ints become int32 and floats float32, as in MegEngine.

    >>> from aliasflow import mge
    >>> a = mge.tensor([1, 2])
    >>> b = a
    >>> b += 1
    >>> a
    Tensor([2 3], dtype=int32, device=xpux:0)
    >>> mge.tensor([1.5, 2.0])
    Tensor([1.5 2. ], device=xpux:0)
    """

    __slots__ = ("_impl", "__weakref__")

    def __init__(self, data, dtype=None):
        if isinstance(data, Tensor):
            data = data.numpy()
        arr = _values(data, dtype, "mge.tensor")
        impl = _fresh(arr.shape, arr.dtype, "mge.tensor")
        _execute(_const(_op_name("const"), arr, impl.view))
        self._impl = impl

    @classmethod
    def _wrap(cls, impl: Impl) -> "Tensor":
        t = object.__new__(cls)
        t._impl = impl
        return t

    # metadata (no memory access, nothing recorded)
    shape = property(lambda self: self._impl.shape)
    dtype = property(lambda self: self._impl.dtype)
    ndim = property(lambda self: len(self._impl.shape))
    size = property(lambda self: int(np.prod(self._impl.shape, dtype=np.int64)))
    device = property(lambda self: DEVICE)

    def __len__(self) -> int:
        if not self._impl.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._impl.shape[0]

    # reads
    def numpy(self) -> np.ndarray:
        """A copy of the values (recorded as a read of this tensor's memory)."""
        values = _execute(TransformOperation(_op_name("numpy"), "copy")
                          .set_inputs(self._impl.view))
        return np.array(values[0], copy=True)

    def __array__(self, dtype=None, copy=None):
        values = self.numpy()
        return values if dtype is None else values.astype(dtype)

    def item(self):
        return self.numpy().item()

    def __repr__(self) -> str:
        with np.printoptions(precision=4, suppress=False):
            text = f"Tensor({self.numpy()}"
        if self.dtype != np.float32:
            text += f", dtype={self.dtype.name}"
        return text + f", device={DEVICE})"

    __str__ = __repr__

    # views (or copies, in 1.8)
    def _derive(self, array: np.ndarray, kind: str) -> "Tensor":
        impl = self._impl
        if _State.version == "1.8":
            out = Impl.fresh(array.shape, impl.dtype)
            src = Impl.over(impl.storage, array)
            _execute(TransformOperation(_op_name(kind), "copy").set_inputs(src.view)
                     .set_outputs(out.view))
            return Tensor._wrap(out)
        return Tensor._wrap(Impl.over(impl.storage, array))

    def __getitem__(self, index) -> "Tensor":
        index = _basic_index(index, "indexing")
        try:
            sub = _window(self._impl.ndarray(), index)
        except IndexError as exc:
            raise IndexOutOfRange(f"mge: index {show_value(index)} for shape {self.shape}: "
                                  f"{exc}") from exc
        return self._derive(sub, "getitem")

    def reshape(self, *shape) -> "Tensor":
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        arr = self._impl.ndarray()
        try:
            new = np.reshape(arr, shape, copy=False)
        except ValueError:
            try:  # not expressible as a view: MegEngine makes it contiguous first
                np.reshape(np.empty(arr.shape, arr.dtype), shape)
            except ValueError as exc:
                raise AliasflowError(f"mge: cannot reshape {self.shape} to {shape}: "
                                     f"{exc}") from exc
            return self._contiguous().reshape(shape)
        return self._derive(new, "reshape")

    def transpose(self, *pattern) -> "Tensor":
        if len(pattern) == 1 and not isinstance(pattern[0], (int, np.integer)):
            pattern = tuple(pattern[0])
        try:
            new = self._impl.ndarray().transpose(pattern or None)
        except (ValueError, TypeError) as exc:
            raise AliasflowError(f"mge: transpose pattern {pattern} for shape "
                                 f"{self.shape}: {exc}") from exc
        return self._derive(new, "transpose")

    @property
    def T(self) -> "Tensor":
        return self.transpose()

    def _contiguous(self) -> "Tensor":
        out = Impl.fresh(self.shape, self.dtype)
        _execute(TransformOperation(_op_name("copy"), "copy").set_inputs(self._impl.view)
                 .set_outputs(out.view))
        return Tensor._wrap(out)

    # arithmetic: always a new tensor on a new storage
    def _operand(self, other, what: str):
        """``other`` checked but not yet recorded: a Tensor, a scalar, or (lists and arrays)
        an array of its values, made a tensor only once the whole statement is checked."""
        if isinstance(other, Tensor) or _is_scalar(other):
            return other
        if isinstance(other, (list, tuple, np.ndarray)):
            return _values(other, None, what)
        return NotImplemented

    def _binary(self, kind: str, other, reverse: bool = False, name: str | None = None):
        what = f"mge: {kind}"
        other = self._operand(other, what)
        if other is NotImplemented:
            return NotImplemented
        fn = _FNS[kind]
        if isinstance(other, (Tensor, np.ndarray)):
            xs, ys = (other, self) if reverse else (self, other)
            try:
                shape = np.broadcast_shapes(xs.shape, ys.shape)
            except ValueError:
                raise AliasflowError(f"mge: {kind}: shapes {xs.shape} and {ys.shape} do not "
                                     f"broadcast") from None
            with np.errstate(all="ignore"):
                dtype = _demote(fn(np.ones((), xs.dtype), np.ones((), ys.dtype)).dtype)
            check_nbytes(shape, dtype, what)  # everything checked: now record
            if isinstance(other, np.ndarray):
                other = Tensor(other)
            x, y = (other, self) if reverse else (self, other)
            op = BinaryOperation(name or _op_name(kind), kind).set_inputs(x._impl.view,
                                                                          y._impl.view)
        else:
            shape = self.shape
            dtype = _demote(_scalar_dtype(fn, self.dtype, other, reverse, what))
            op = None
        out = _fresh(shape, dtype, what)
        if op is None:
            op = _record("mge.scalar", name or _op_name(kind), [self._impl.view], [out.view],
                         op=kind, scalar=_plain(other), reverse=reverse)
        else:
            op = op.set_outputs(out.view)
        with np.errstate(all="ignore"):
            _execute(op)
        return Tensor._wrap(out)

    def __add__(self, o): return self._binary("add", o)
    def __radd__(self, o): return self._binary("add", o, reverse=True)
    def __sub__(self, o): return self._binary("subtract", o)
    def __rsub__(self, o): return self._binary("subtract", o, reverse=True)
    def __mul__(self, o): return self._binary("multiply", o)
    def __rmul__(self, o): return self._binary("multiply", o, reverse=True)
    def __truediv__(self, o): return self._binary("divide", o)
    def __rtruediv__(self, o): return self._binary("divide", o, reverse=True)
    def __neg__(self): return self._binary("multiply", -1)

    # in-place: copy-on-write (megengine) or write-through (alias)
    def _inplace(self, kind: str, other) -> "Tensor":
        name = _op_name(_INPLACE[kind])
        if _State.semantics == "megengine":
            result = self._binary(kind, other, name=name)
            if result is NotImplemented:
                return NotImplemented
            self._impl = result._impl  # the Python tensor stays; impl and storage are new
            return self
        what = f"mge: in-place {kind}"
        other = self._operand(other, what)
        if other is NotImplemented:
            return NotImplemented
        fn, impl = _FNS[kind], self._impl
        with np.errstate(all="ignore"):
            if isinstance(other, (Tensor, np.ndarray)):
                if not _fits(other.shape, self.shape):
                    raise AliasflowError(f"mge: in-place {kind}: operand of shape "
                                         f"{other.shape} does not broadcast to {self.shape}")
                dtype = fn(np.ones((), self.dtype), np.ones((), other.dtype)).dtype
            else:
                dtype = _scalar_dtype(fn, impl.dtype, other, False, what)
            if not np.can_cast(dtype, impl.dtype, "same_kind"):
                raise AliasflowError(f"mge: in-place {kind} gives {_demote(dtype)}, which "
                                     f"cannot be written into this {impl.dtype} tensor")
            if isinstance(other, np.ndarray):  # everything checked: now record
                other = Tensor(other)
            if isinstance(other, Tensor):
                op = BinaryOperation(name, kind).set_inputs(impl.view, other._impl.view) \
                    .set_outputs(impl.view)
            else:
                op = _record("mge.scalar", name, [impl.view], [impl.view], op=kind,
                             scalar=_plain(other), reverse=False)
            _execute(op)
        return self

    def __iadd__(self, o): return self._inplace("add", o)
    def __isub__(self, o): return self._inplace("subtract", o)
    def __imul__(self, o): return self._inplace("multiply", o)
    def __itruediv__(self, o): return self._inplace("divide", o)

    def __setitem__(self, index, value) -> None:
        """``a[index] = value``. Everything is checked before anything is recorded or
        written (the index, the value's shape against the window, every value against the
        tensor's dtype); then, in MegEngine semantics, the copy-on-write storage is made and
        written, in alias semantics the shared storage is written."""
        index = _basic_index(index, "assignment")
        impl = self._impl
        try:
            window = _window(impl.ndarray(), index)
        except IndexError as exc:
            raise IndexOutOfRange(f"mge: index {show_value(index)} for shape {self.shape}: "
                                  f"{exc}") from exc
        what = f"mge: assignment to index {show_value(index)} of a {impl.dtype} tensor"
        if _is_scalar(value):
            fill = np.asarray(fit_scalar(value, impl.dtype, what))
        else:
            # every value must fit the tensor's dtype (a list or array is stored as it, and
            # recorded as a tensor below, once everything is checked)
            checked = _values(value, impl.dtype, what)
            if not isinstance(value, Tensor):
                value = checked
            if not _fits(value.shape, window.shape):
                raise AliasflowError(f"mge: cannot assign shape {value.shape} to a window of "
                                     f"shape {window.shape}")
            fill = None
            if isinstance(value, np.ndarray):       # all checked: record it as a tensor
                value = Tensor(value)
        if _State.semantics == "megengine":
            # a new storage holding a copy, then the write; the old storage loses a reference
            target = _fresh(impl.shape, impl.dtype, what)
            _execute(TransformOperation(_op_name("setitem_copy"), "copy")
                     .set_inputs(impl.view).set_outputs(target.view))
        else:
            target = impl
        dst = Impl.over(target.storage, _window(target.ndarray(), index))
        name = _op_name("setitem")
        if fill is None:
            # the values were checked to fit ``dst``'s dtype above
            op = _record("mge.cast", name, [value._impl.view], [dst.view],
                         dtype=dst.dtype.name)
        else:
            op = _const(name, fill, dst.view)
        _execute(op)
        if target is not impl:
            self._impl = target


def _fits(shape, target) -> bool:
    """Does ``shape`` broadcast to exactly ``target`` (as an in-place operand must)?"""
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


tensor = Tensor


def _operand_tensor(x, what: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    try:
        return Tensor(x)
    except AliasflowError as exc:
        raise AliasflowError(f"mge.functional.{what}: {exc}") from exc
