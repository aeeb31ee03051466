"""The seed's op classes, as builders of op records.

``FillOperation("f", 1.0).set_outputs(v)`` and friends are how the seed writes programs:
an op is made, then given its views. These classes collect the name, the kind's parameters
and the views, and build an immutable :class:`~aliasflow.OpRecord` from them when asked
(:meth:`Operation.record`); :func:`aliasflow.analyze`, :func:`aliasflow.run` and program
files take builders and records alike and turn builders into records first. Changing a
builder (more views, another parameter) after that gives a new record next time; a graph
analysed from the old one refuses to run the changed op.

``set_inputs`` and ``set_outputs`` add views and return the builder itself (the seed calls
them without using the result). Inputs become read accesses in slots ``0..n-1``, outputs
write accesses after them; an op without outputs returns one value, ``Value(name, 0)``,
which :func:`aliasflow.run` returns and ``op.result`` shows after a run.
"""
from __future__ import annotations


from .errors import AliasflowError
from .functions import resolve
from .interpret import execute
from .primitives import BUILDERS, PRIMITIVES
from .record import OpRecord, Results, Value, shared_params
from .values import check_name
from .view import TensorView

_set = object.__setattr__
_QUIET = frozenset({"_record", "_results"})  # writes that keep the op
_VIEW_LISTS = frozenset({"input_views", "output_views"})


class _Views(list):
    """A builder's list of views: a list that forgets the builder's record when it changes
    (so ``op.input_views.append(v)`` or ``op.output_views[:] = [...]`` give a new record next
    time, and an unchanged builder gives its record at once)."""

    __slots__ = ("_op",)

    def __init__(self, op, views=()):
        super().__init__(views)
        self._op = op

    def _changed(self):
        _set(self._op, "_record", None)


def _changing(name):
    method = getattr(list, name)

    def wrapper(self, *args):
        out = method(self, *args)
        self._changed()
        return out
    wrapper.__name__ = name
    return wrapper


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend",
              "insert", "pop", "remove", "clear", "sort", "reverse"):
    setattr(_Views, _name, _changing(_name))


class Operation:
    """A builder of one op: a name, a kind (a registered primitive's name), its parameters
    and its views. ``Operation(name, kind, **params)`` builds an op of any registered kind;
    the subclasses below are the seed's kinds with their parameters spelt out."""

    kind = "op"

    def __init__(self, name: str, kind: str | None = None, **params):
        check_name(name, "op")
        self.name = name
        if kind is not None:
            if not isinstance(kind, str) or not kind:
                raise AliasflowError(f"op {name!r}: kind must be a non-empty string, got "
                                     f"{kind!r}")
            self.kind = kind
        prim = PRIMITIVES.get(self.kind)
        self._params = prim.bind(name, params) if prim is not None else dict(params)
        self.input_views: list[TensorView] = _Views(self)
        self.output_views: list[TensorView] = _Views(self)
        self._results = None
        self._record = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for method in ("compute", "execute", "record"):
            if method in cls.__dict__ and cls.__module__ != __name__:
                # an op's kernel belongs to its primitive: a builder's method would be ignored
                # by every runner, so a subclass defining one is refused, not silently run wrong
                raise TypeError(f"{cls.__name__} defines {method}(): an op kind's kernel and "
                                f"rules belong to a Primitive (af.Primitive, registered in "
                                f"af.PRIMITIVES); builders only collect names, parameters and "
                                f"views")
        if "kind" in cls.__dict__:
            BUILDERS.setdefault(cls.kind, cls)

    def __setattr__(self, name, value):
        if name in _VIEW_LISTS:  # a list that tells this builder when it changes
            value = _Views(self, value)
        elif name == "_params":  # read-only, one object for equal params (the record's too)
            value = shared_params(value)
        _set(self, name, value)
        if name not in _QUIET:
            _set(self, "_record", None)

    def __deepcopy__(self, memo):
        """A builder over deep copies of the views (so of the memory); what it cached is
        made again."""
        from copy import deepcopy
        new = object.__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            if key == "_params":
                value = shared_params(deepcopy(dict(value), memo))
            elif key not in _QUIET:
                value = deepcopy(value, memo)
            else:
                continue
            _set(new, key, value)
        _set(new, "_record", None)
        _set(new, "_results", None)
        return new

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

    def _set_param(self, name: str, value) -> None:
        """Change one parameter (checked as the constructor checks it)."""
        prim = PRIMITIVES.get(self.kind)
        given = {**self._params, name: value}
        self._params = prim.bind(self.name, given) if prim is not None else given

    @property
    def params(self) -> dict:
        """Parameters beyond the views (a callable kernel given as ``fn`` is named)."""
        out = dict(self._params)
        if "fn" in out and not isinstance(out["fn"], str):
            out["fn"] = getattr(out["fn"], "__name__", repr(out["fn"]))
        return out

    def record(self) -> OpRecord:
        """The op as an :class:`~aliasflow.OpRecord` (the same object while the builder is
        unchanged)."""
        rec = self._record
        if rec is not None:  # nothing changed since (the view lists say when they do)
            return rec
        outs = self.output_views
        # its accesses (reads in slots 0..n-1, then writes) are made when first asked for
        rec = OpRecord._trusted(self.name, self.kind, None, self._params, 0 if outs else 1,
                                (), None, tuple(self.input_views), tuple(outs))
        _set(self, "_record", rec)
        return rec

    @property
    def result(self):
        """The value this op returned in the last run (ops without outputs), else None."""
        results = self._results
        return None if results is None else results.get(Value(self.name, 0))

    @result.setter
    def result(self, value):
        _set(self, "_results", None if value is None else Results({Value(self.name, 0): value}))

    def execute(self) -> None:
        """Run this op once, alone: check, read all inputs, compute, write every output."""
        values = execute(self.record())
        self.result = values[0] if values else None

    def __repr__(self) -> str:
        ins = ", ".join(v.name for v in self.input_views)
        outs = ", ".join(v.name for v in self.output_views)
        return f"{type(self).__name__}({self.name!r}: [{ins}] -> [{outs}])"


BUILDERS["op"] = Operation


class FillOperation(Operation):
    """Write ``fill_value`` to every element of every output (the only op allowed to write
    through a view with internal overlap, since every write stores the same value)."""

    kind = "fill"

    def __init__(self, name: str, fill_value: float = 1.0):
        super().__init__(name, fill_value=fill_value)

    @property
    def fill_value(self):
        return self._params["fill_value"]

    @fill_value.setter
    def fill_value(self, value):
        self._set_param("fill_value", value)


class _FnOperation(Operation):
    family = ""

    @property
    def fn(self):
        """The kernel function (a registry function for a name)."""
        return resolve(self.name, self.family, self._params["fn"])[0]

    @fn.setter
    def fn(self, value):
        self._set_param("fn", value)

    @property
    def fn_name(self) -> str:
        return resolve(self.name, self.family, self._params["fn"])[1]

    @property
    def elementwise(self) -> bool:
        """A registry kernel (named): NumPy's rules give its result; a callable may be
        anything."""
        return isinstance(self._params["fn"], str)


class TransformOperation(_FnOperation):
    """Elementwise unary op: ``out = fn(in)`` (default: copy)."""

    kind = "transform"
    family = "unary"

    def __init__(self, name: str, fn="copy"):
        super().__init__(name, fn=fn)


class BinaryOperation(_FnOperation):
    """Binary op: ``out = fn(a, b)`` (default: add). Named kernels are elementwise with
    NumPy broadcasting, and inputs that do not broadcast are refused; a callable (say
    ``np.matmul``) decides for itself."""

    kind = "binary"
    family = "binary"

    def __init__(self, name: str, fn="add"):
        super().__init__(name, fn=fn)


class ReduceOperation(_FnOperation):
    """Reduce the input along ``axis`` (default: sum over the last axis)."""

    kind = "reduce"
    family = "reduce"

    def __init__(self, name: str, axis: int = -1, fn="sum"):
        super().__init__(name, fn=fn, axis=axis)

    @property
    def axis(self) -> int:
        return self._params["axis"]

    @axis.setter
    def axis(self, value):
        self._set_param("axis", value)


def show_results(ops, results: Results) -> None:
    """Let every builder among ``ops`` show what a run returned (its ``result``)."""
    for op in ops:
        if isinstance(op, Operation):
            _set(op, "_results", results)  # keeps its record (see __setattr__)


def as_record(op) -> OpRecord:
    """``op`` itself when it is a record, else the record its builder gives."""
    return op if type(op) is OpRecord else op.record()
