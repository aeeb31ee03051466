"""MegEngine-style eager tensors in three refcounted layers (seed 001), recorded as aliasflow ops.

The Python :class:`Tensor` holds one reference, to its current implementation
(:class:`~.runtime.Impl`: shape, stride, offset on a :class:`~.runtime.Storage`). What each
statement does to the three layers follows the seed's table; see :mod:`.runtime` for the
settings (``config``) and the recording (``recorded_ops``).
"""
from __future__ import annotations

import numpy as np

from ...core.errors import AliasflowError
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


PRIMITIVES.register(Primitive(
    "mge.const", lambda params, inputs: np.asarray(params["value"], params["dtype"]), arity=0,
    params={"value": "json", "dtype": "str"},
    result=lambda p, ins: (np.shape(p["value"]), np.dtype(p["dtype"])),
    doc="Write given values (tensor creation, scalar assignment)."), replace=True)
PRIMITIVES.register(Primitive(
    "mge.cast", lambda params, inputs: np.asarray(inputs[0]).astype(params["dtype"]), arity=1,
    params={"dtype": "str"}, result=lambda p, ins: (ins[0][0], np.dtype(p["dtype"])),
    doc="Copy with a cast to the output's dtype (as assignment does in NumPy and MegEngine)."),
    replace=True)
PRIMITIVES.register(Primitive(
    "mge.scalar", _scalar_kernel, arity=1,
    params={"op": "str", "scalar": "json", "reverse": "bool"},
    result=_sample_result(_scalar_kernel),
    doc="An arithmetic op of a tensor and a Python number: op(x, scalar) or op(scalar, x)."),
    replace=True)


def _record(kind: str, name: str, inputs, outputs, **params) -> OpRecord:
    n = len(inputs)
    return OpRecord(name, kind, [Access(k, "R", v) for k, v in enumerate(inputs)]
                    + [Access(n + k, "W", v) for k, v in enumerate(outputs)], params,
                    0 if outputs else 1)


def _const(name: str, arr: np.ndarray, view) -> OpRecord:
    return _record("mge.const", name, [], [view], value=arr.tolist(), dtype=arr.dtype.name)


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
    return array[items]


def _basic_index(index, what: str):
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        ok = item is None or item is Ellipsis or isinstance(item, slice) or (
            isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)))
        if not ok:
            raise AliasflowError(f"mge: {what}: unsupported index {item!r} (ints, slices, ... "
                                 f"and None only)")
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
        try:
            arr = np.asarray(data)
            target = _demote(arr.dtype) if dtype is None else np.dtype(dtype)
            arr = arr.astype(target)
        except (TypeError, ValueError, OverflowError) as exc:
            raise AliasflowError(f"mge.tensor: cannot make a tensor of {data!r} "
                                 f"(dtype {dtype!r}): {exc}") from exc
        if arr.dtype.hasobject or arr.dtype.kind not in "biuf":
            raise AliasflowError(f"mge.tensor: unsupported dtype {arr.dtype}")
        impl = Impl.fresh(arr.shape, arr.dtype)
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
            raise IndexOutOfRange(f"mge: index {index!r} for shape {self.shape}: {exc}") from exc
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
    def _operand(self, other):
        if isinstance(other, Tensor) or _is_scalar(other):
            return other
        if isinstance(other, (list, tuple, np.ndarray)):
            return Tensor(other)
        return NotImplemented

    def _binary(self, kind: str, other, reverse: bool = False, name: str | None = None):
        other = self._operand(other)
        if other is NotImplemented:
            return NotImplemented
        fn = _FNS[kind]
        one = np.ones((), self.dtype)
        if isinstance(other, Tensor):
            x, y = (other, self) if reverse else (self, other)
            try:
                shape = np.broadcast_shapes(x.shape, y.shape)
            except ValueError:
                raise AliasflowError(f"mge: {kind}: shapes {x.shape} and {y.shape} do not "
                                     f"broadcast") from None
            with np.errstate(all="ignore"):
                dtype = _demote(fn(np.ones((), x.dtype), np.ones((), y.dtype)).dtype)
            op = BinaryOperation(name or _op_name(kind), kind).set_inputs(x._impl.view,
                                                                          y._impl.view)
        else:
            shape = self.shape
            with np.errstate(all="ignore"):
                dtype = _demote((fn(other, one) if reverse else fn(one, other)).dtype)
            op = None
        out = Impl.fresh(shape, dtype)
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
        other = self._operand(other)
        if other is NotImplemented:
            return NotImplemented
        fn, impl = _FNS[kind], self._impl
        with np.errstate(all="ignore"):
            if isinstance(other, Tensor):
                if not _fits(other.shape, self.shape):
                    raise AliasflowError(f"mge: in-place {kind}: operand of shape "
                                         f"{other.shape} does not broadcast to {self.shape}")
                dtype = fn(np.ones((), self.dtype), np.ones((), other.dtype)).dtype
                op = BinaryOperation(name, kind).set_inputs(impl.view, other._impl.view)
            else:
                dtype = fn(np.ones((), self.dtype), other).dtype
                op = _record("mge.scalar", name, [impl.view], [impl.view], op=kind,
                             scalar=_plain(other), reverse=False)
            if not np.can_cast(dtype, impl.dtype, "same_kind"):
                raise AliasflowError(f"mge: in-place {kind} gives {_demote(dtype)}, which "
                                     f"cannot be written into this {impl.dtype} tensor")
            _execute(op if isinstance(op, OpRecord) else op.set_outputs(impl.view))
        return self

    def __iadd__(self, o): return self._inplace("add", o)
    def __isub__(self, o): return self._inplace("subtract", o)
    def __imul__(self, o): return self._inplace("multiply", o)
    def __itruediv__(self, o): return self._inplace("divide", o)

    def __setitem__(self, index, value) -> None:
        index = _basic_index(index, "assignment")
        if not (isinstance(value, Tensor) or _is_scalar(value)):
            value = Tensor(value)
        impl = self._impl
        if _State.semantics == "megengine":
            # a new storage holding a copy, then the write; the old storage loses a reference
            target = Impl.fresh(impl.shape, impl.dtype)
            _execute(TransformOperation(_op_name("setitem_copy"), "copy")
                     .set_inputs(impl.view).set_outputs(target.view))
        else:
            target = impl
        try:
            window = _window(target.ndarray(), index)
        except IndexError as exc:
            raise IndexOutOfRange(f"mge: index {index!r} for shape {self.shape}: {exc}") from exc
        dst = Impl.over(target.storage, window)
        name = _op_name("setitem")
        if isinstance(value, Tensor):
            if not _fits(value.shape, dst.shape):
                raise AliasflowError(f"mge: cannot assign shape {value.shape} to a window of "
                                     f"shape {dst.shape}")
            op = _record("mge.cast", name, [value._impl.view], [dst.view],
                         dtype=dst.dtype.name)
        else:
            op = _const(name, np.asarray(value).astype(dst.dtype), dst.view)
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
