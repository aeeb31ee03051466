"""Operations: records ``(kind, inputs, outputs, params)`` plus the kernel that runs them.

Semantics (see SPEC): an op reads every input before it writes any output, so an output that
overlaps one of its own inputs sees the old values; writing through a view with internal
overlap is ambiguous and refused for every op but Fill; shape and dtype mismatches are refused
before anything is written.
"""
from __future__ import annotations

import numpy as np

from .direct import ufunc_into
from .errors import AliasflowError, ExecutionError
from .functions import resolve
from .values import fit_scalar
from .view import TensorView


class Operation:
    """Base class: a named op reading ``input_views`` and writing ``output_views``.

    Ops without outputs keep their value in ``result`` after :meth:`execute`.
    """

    kind = "op"
    arity: int | None = None  # inputs the kernel needs; None: any number
    # Parameters beyond the views, with their type or the kernel family that names them:
    # the schema program files and front ends read (see aliasflow.core.primitives).
    param_types: dict[str, str] = {}
    # Every element gets one value checked to fit each output exactly (Fill): writing through
    # overlapping indices is then unambiguous, and no dtype rule is needed.
    uniform_value = False

    def __init__(self, name: str):
        if not isinstance(name, str) or not name:
            raise AliasflowError(f"op name must be a non-empty string, got {name!r}")
        self.name = name
        self.input_views: list[TensorView] = []
        self.output_views: list[TensorView] = []
        self.result: np.ndarray | None = None

    def _checked(self, role: str, views) -> list[TensorView]:
        for v in views:
            if not isinstance(v, TensorView):
                raise AliasflowError(f"op {self.name!r}: {role} must be TensorViews, "
                                     f"got {type(v).__name__}")
        return list(views)

    def set_inputs(self, *views: TensorView) -> "Operation":
        """Append input views; returns the op for chaining."""
        self.input_views.extend(self._checked("inputs", views))
        return self

    def set_outputs(self, *views: TensorView) -> "Operation":
        """Append output views; returns the op for chaining."""
        self.output_views.extend(self._checked("outputs", views))
        return self

    @property
    def params(self) -> dict:
        """Parameters beyond the views (what a program file stores)."""
        return {}

    def record(self):
        """This op as an :class:`~aliasflow.OpRecord`: inputs in slots ``0..n-1`` (read),
        outputs after them (written); an op without outputs returns one value."""
        from .record import Access, OpRecord
        n = len(self.input_views)
        accesses = [Access(k, "R", v) for k, v in enumerate(self.input_views)]
        accesses += [Access(n + k, "W", v) for k, v in enumerate(self.output_views)]
        return OpRecord(self.name, self.kind, tuple(accesses), dict(self.params),
                        0 if self.output_views else 1)

    def compute(self, values: list[np.ndarray]):
        """The kernel: the value to write to every output, from the input values."""
        raise NotImplementedError

    def _writes_into(self, inputs: list[np.ndarray], out: np.ndarray) -> bool:
        """Compute straight into the one output ``out`` where that is indistinguishable from
        :meth:`compute` plus a copy; answer whether it did (see ``core.direct``)."""
        return False

    def _shapes(self, views) -> str:
        return ", ".join(f"{v.name} {v.shape}" for v in views)

    def execute(self) -> None:
        """Run the op once: read all inputs, compute, check, then write every output."""
        if self.arity is not None and len(self.input_views) != self.arity:
            raise AliasflowError(f"op {self.name!r} ({self.kind}) needs {self.arity} input(s), "
                                 f"has {len(self.input_views)}")
        for out in self.output_views:
            if out.storage.readonly:
                raise AliasflowError(f"op {self.name!r}: output view {out.name!r} is over "
                                     f"read-only memory (storage {out.storage.name!r})")
        if not self.uniform_value:
            for out in self.output_views:
                if out.has_internal_overlap():
                    raise AliasflowError(
                        f"op {self.name!r}: output view {out.name!r} (shape {out.shape}, "
                        f"stride {out.stride}) maps several indices to one element; writing "
                        f"through it is ambiguous")
        # Inputs are read (the kernel runs to completion) before any output is written; only
        # a result that still aliases an output (a kernel returning a view) must be copied.
        # A big elementwise ufunc may write its one output directly where NumPy guarantees
        # the same bytes and no write on failure (core.direct).
        inputs = [v.numpy() for v in self.input_views]
        # (a uniform value is written through TensorView.fill, which needs no array of the
        # whole view: a view may repeat its elements over more indices than NumPy can hold)
        arrays = [] if self.uniform_value else [out._ndarray() for out in self.output_views]
        try:
            if len(arrays) == 1 and self._writes_into(inputs, arrays[0]):
                self.result = None
                return
            value = np.asarray(self.compute(inputs))
        except (AliasflowError, ExecutionError):
            raise
        except Exception as exc:  # a user kernel's bug: say whose, keep the original chained
            kernel = getattr(self, "fn_name", None) or type(self).__name__ + ".compute"
            raise ExecutionError(self.name, f"kernel {kernel!r} raised "
                                            f"{type(exc).__name__}: {exc}") from exc
        # ...and a result kept in op.result must not change when later ops write its storage
        if _may_share(value, arrays or inputs):
            value = value.copy()
        for out in self.output_views:
            if value.shape and (not _broadcasts(value.shape, out.shape)  # () fits any shape
                                or np.broadcast_shapes(value.shape, out.shape) != out.shape):
                raise AliasflowError(f"op {self.name!r}: result of shape {value.shape} does "
                                     f"not fit output {out.name!r} of shape {out.shape}")
            if not self.uniform_value and not np.can_cast(value.dtype, out.dtype, "same_kind"):
                raise AliasflowError(f"op {self.name!r}: result dtype {value.dtype} cannot be "
                                     f"written to output {out.name!r} of dtype {out.dtype}")
        if self.uniform_value:  # one value everywhere: each element once (TensorView.fill)
            for out in self.output_views:
                out.fill(value)
        else:
            for arr in arrays:
                arr[...] = value
        self.result = None if self.output_views else value

    def __repr__(self) -> str:
        ins = ", ".join(v.name for v in self.input_views)
        outs = ", ".join(v.name for v in self.output_views)
        return f"{type(self).__name__}({self.name!r}: [{ins}] -> [{outs}])"


def _may_share(value: np.ndarray, arrays) -> bool:
    """Whether ``value`` may share memory with one of ``arrays`` (``np.may_share_memory``'s
    bounds test, which is never wrong when it answers False).

    A kernel's result that NumPy allocated itself (it owns its memory, no base) shares none
    with an array whose memory another live ndarray owns: two live allocations are disjoint.
    That common case is answered here, holding the GIL: ``np.may_share_memory`` releases it,
    and in a parallel run each release with a thread waiting for the GIL wakes that thread
    (thousands of context switches per second of tiny ops)."""
    if value.base is None and value.flags.owndata:
        for arr in arrays:
            owner = arr if arr.base is None else arr.base  # NumPy collapses bases to the owner
            if owner is value or not (type(owner) is np.ndarray and owner.base is None
                                      and owner.flags.owndata):
                break
        else:
            return False
    return any(np.may_share_memory(value, arr) for arr in arrays)


def _broadcasts(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


class FillOperation(Operation):
    """Write ``fill_value`` to every element of every output (the only op allowed to write
    through a view with internal overlap, since every write stores the same value)."""

    kind = "fill"
    arity = 0
    uniform_value = True
    param_types = {"fill_value": "number"}

    def __init__(self, name: str, fill_value: float = 1.0):
        super().__init__(name)
        if isinstance(fill_value, (bool, np.bool_)) or not isinstance(
                fill_value, (int, float, np.integer, np.floating)):
            raise AliasflowError(f"op {name!r}: fill_value must be a number, got {fill_value!r}")
        self.fill_value = fill_value

    @property
    def params(self) -> dict:
        return {"fill_value": self.fill_value}

    def compute(self, values):
        return np.asarray(self.fill_value)

    def check_value(self) -> None:
        """Refuse a fill value that does not fit an output's dtype (see core.values)."""
        for out in self.output_views:
            fit_scalar(self.fill_value, out.dtype, f"op {self.name!r}: fill_value for output "
                                                   f"{out.name!r}")

    def execute(self) -> None:
        self.check_value()
        super().execute()


class _FnOperation(Operation):
    family = ""

    def __init__(self, name: str, fn="copy"):
        super().__init__(name)
        self.fn, self.fn_name = resolve(name, self.family, fn)
        self.elementwise = isinstance(fn, str)  # registry kernels; a callable may be anything

    def _writes_into(self, inputs, out) -> bool:
        # only a registry ufunc, and only where the class's own compute is fn(*inputs)
        return self.elementwise and type(self).compute in _UFUNC_COMPUTES \
            and ufunc_into(self.fn, inputs, out)

    @property
    def params(self) -> dict:
        return {"fn": self.fn_name}


class TransformOperation(_FnOperation):
    """Elementwise unary op: ``out = fn(in)`` (default: copy)."""

    kind = "transform"
    arity = 1
    family = "unary"
    param_types = {"fn": "unary"}

    def __init__(self, name: str, fn="copy"):
        super().__init__(name, fn)

    def compute(self, values):
        return self.fn(values[0])


class BinaryOperation(_FnOperation):
    """Binary op: ``out = fn(a, b)`` (default: add). Named kernels are elementwise with
    NumPy broadcasting, and inputs that do not broadcast are refused; a callable (say
    ``np.matmul``) decides for itself."""

    kind = "binary"
    arity = 2
    family = "binary"
    param_types = {"fn": "binary"}

    def __init__(self, name: str, fn="add"):
        super().__init__(name, fn)

    def compute(self, values):
        a, b = values
        if self.elementwise and not _broadcasts(a.shape, b.shape):
            raise AliasflowError(f"op {self.name!r}: input shapes do not broadcast: "
                                 f"{self._shapes(self.input_views)}")
        return self.fn(a, b)


_UFUNC_COMPUTES = (TransformOperation.compute, BinaryOperation.compute)


class ReduceOperation(_FnOperation):
    """Reduce the input along ``axis`` (default: sum over the last axis)."""

    kind = "reduce"
    arity = 1
    family = "reduce"
    param_types = {"fn": "reduce", "axis": "int"}

    def __init__(self, name: str, axis: int = -1, fn="sum"):
        super().__init__(name, fn)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise AliasflowError(f"op {name!r}: axis must be an int, got {axis!r}")
        self.axis = int(axis)

    @property
    def params(self) -> dict:
        return {"fn": self.fn_name, "axis": self.axis}

    def compute(self, values):
        (x,) = values
        if not -x.ndim <= self.axis < x.ndim:
            raise AliasflowError(f"op {self.name!r}: axis {self.axis} out of range for input "
                                 f"{self.input_views[0].name!r} of shape {x.shape}")
        return np.asarray(self.fn(x, axis=self.axis))
