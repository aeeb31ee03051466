"""Primitives: one definition per op kind, owning every rule about it.

A :class:`Primitive` says what an op of its kind needs (``arity``: the inputs its kernel
takes; ``params``: name -> type, with ``defaults``), what it computes (``kernel``), what its
result will be without running it (``result``: the shape and dtype, for checks before a
run), what else to refuse before a run (``check``), whether it writes one value everywhere
(``uniform``: such an op may write through a view that maps two indices to one element),
whether it is a small NumPy kernel that holds the GIL (``light``: a bool, or a function of
the params), and how to compute
straight into its one output (``into``). The checker, the runners, the program format, the
front ends and the builders all read the registry, :data:`PRIMITIVES`: adding an op kind is
one :class:`Primitive` and one :meth:`Registry.register` call.

``check_params(op_name, params)`` (optional) refuses parameters of the declared types that
the kind still cannot take (a malformed JSON structure), naming the op and the value: it
runs wherever parameters are bound (:meth:`Primitive.bind`: the checks before a run, the
program loader).

``prepare(params) -> fn`` (optional) binds the kernel to its parameters once for a run:
``fn(inputs)`` must give what ``kernel(params, inputs)`` gives. ``check(record)`` is called
once per group of records with equal parameters and view layouts (shapes, strides, dtypes,
tensors; not offsets), so it must not depend on anything else.

The kernel is ``kernel(params, inputs) -> value``: ``inputs`` are NumPy arrays of the op's
read operands in slot order, and the value is written (broadcast) to every written operand;
an op that writes nothing returns it as its value ``Value(op, 0)``. A primitive with
``outputs="each"`` returns one value per written operand instead (in slot order).

Parameter types: ``"number"`` (int or float, not bool), ``"int"``, ``"bool"``, ``"str"``,
``"json"`` (numbers, strings, booleans, None, and lists and string-keyed dicts of them: what
a program file can hold), ``"any"`` (anything; a program file cannot hold it), or a kernel
family of :data:`aliasflow.core.functions.REGISTRIES` (``"unary"``, ``"binary"``,
``"reduce"``): a function name from it, or a Python callable (a program file cannot hold
one).

Examples
--------
>>> import numpy as np, aliasflow as af
>>> clip = af.Primitive("clip", lambda p, ins: np.clip(ins[0], p["lo"], p["hi"]), arity=1,
...                     params={"lo": "number", "hi": "number"}, defaults={"lo": 0},
...                     result=af.primitives.same_as_input)
>>> _ = af.PRIMITIVES.register(clip)
>>> A = af.Tensor("A", (4,), data=[-1, 0.5, 2, 3])
>>> op = clip.make("c", hi=1).set_inputs(A[:2]).set_outputs(A[2:])
>>> _ = af.run([op]); A.data.tolist()
[-1.0, 0.5, 0.0, 0.5]
>>> PRIMITIVES["reduce"].params
{'fn': 'reduce', 'axis': 'int'}
>>> del af.PRIMITIVES["clip"]
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .direct import ufunc_into
from .errors import AliasflowError
from .functions import REGISTRIES, resolve
from .values import fit_scalar, show_value

FAMILIES = tuple(REGISTRIES)
PARAM_TYPES = ("number", "int", "bool", "str", "json", "any") + FAMILIES


@dataclass(frozen=True, eq=False)
class Primitive:
    """An op kind and its rules (see the module docstring)."""

    name: str
    kernel: Callable | None = None
    arity: int | None = None
    params: Mapping = field(default_factory=dict)
    defaults: Mapping = field(default_factory=dict)
    result: Callable | None = None
    check: Callable | None = None
    uniform: bool = False
    light: bool | Callable = False
    into: Callable | None = None
    prepare: Callable | None = None
    outputs: str = "all"
    doc: str = ""
    check_params: Callable | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise AliasflowError(f"primitive name must be a non-empty string, got "
                                 f"{show_value(self.name)}")
        if self.kernel is not None and not callable(self.kernel):
            raise AliasflowError(f"primitive {self.name!r}: kernel must be callable or None")
        if self.arity is not None and (isinstance(self.arity, bool)
                                       or not isinstance(self.arity, int) or self.arity < 0):
            raise AliasflowError(f"primitive {self.name!r}: arity must be a non-negative int "
                                 f"or None, got {show_value(self.arity)}")
        for p, kind in dict(self.params).items():
            if kind not in PARAM_TYPES:
                raise AliasflowError(f"primitive {self.name!r}: parameter {p!r} has unknown "
                                     f"type {show_value(kind)}; choose one of "
                                     f"{', '.join(PARAM_TYPES)}")
        unknown = set(self.defaults) - set(self.params)
        if unknown:
            raise AliasflowError(f"primitive {self.name!r}: defaults for unknown parameter(s) "
                                 f"{', '.join(sorted(unknown))}")
        if self.check_params is not None and not callable(self.check_params):
            raise AliasflowError(f"primitive {self.name!r}: check_params must be callable or "
                                 f"None")
        if self.outputs not in ("all", "each"):
            raise AliasflowError(f"primitive {self.name!r}: outputs must be 'all' or 'each'")
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "defaults", dict(self.defaults))

    @property
    def runnable(self) -> bool:
        return self.kernel is not None

    def is_light(self, params) -> bool:
        """Whether an op of this kind with ``params`` is a small NumPy kernel that holds the
        GIL throughout (given small views: see :mod:`aliasflow.execution.ready`)."""
        light = self.light
        return bool(light(params) if callable(light) else light)

    def bind(self, op_name: str, given: Mapping) -> dict:
        """The full parameters of an op of this kind: ``given`` checked against the declared
        types (and by ``check_params(op_name, params)`` when the kind has one), defaults
        filled in; :class:`AliasflowError` names the op and the bad value."""
        unknown = [k for k in given if k not in self.params]
        if unknown:
            raise AliasflowError(f"op {op_name!r} ({self.name}): unknown parameter(s) "
                                 f"{', '.join(map(repr, unknown))}; {self.name} takes "
                                 f"{', '.join(self.params) or 'none'}")
        out = {}
        for p, kind in self.params.items():
            if p in given:
                out[p] = check_param(op_name, p, kind, given[p])
            elif p in self.defaults:
                out[p] = self.defaults[p]
            else:
                raise AliasflowError(f"op {op_name!r} ({self.name}): missing parameter {p!r}")
        if self.check_params is not None:
            self.check_params(op_name, out)
        return out

    def make(self, name: str, **params):
        """A builder of an op of this kind (views are set with ``set_inputs``/
        ``set_outputs``): the seed's class for the seed's kinds, else a plain
        :class:`~aliasflow.Operation`."""
        cls = BUILDERS.get(self.name)
        if cls is not None:
            return cls(name, **params)
        return BUILDERS["op"](name, kind=self.name, **params)

    def __repr__(self) -> str:
        return f"Primitive({self.name!r}, arity={self.arity}, params={self.params})"


def check_param(op_name: str, param: str, kind: str, value):
    """``value`` as parameter ``param`` of type ``kind``, or :class:`AliasflowError`."""
    what = f"op {op_name!r}: {param}"
    if kind == "number":
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            raise AliasflowError(f"{what} must be a number, got {show_value(value)}")
    elif kind == "int":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise AliasflowError(f"{what} must be an int, got {show_value(value)}")
        value = int(value)
    elif kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise AliasflowError(f"{what} must be a bool, got {show_value(value)}")
        value = bool(value)
    elif kind == "str":
        if not isinstance(value, str):
            raise AliasflowError(f"{what} must be a string, got {show_value(value)}")
    elif kind == "json":
        bad = _not_json(value)
        if bad is not None:
            raise AliasflowError(f"{what} must be JSON data (numbers, strings, booleans, None, "
                                 f"lists, string-keyed dicts), got {bad}")
    elif kind in REGISTRIES:
        resolve(op_name, kind, value)  # a name of the family, or a callable
    return value


def _not_json(value, depth: int = 0):
    """None when ``value`` is JSON data, else a description of the first part that is not."""
    if depth > 64:
        return "data nested deeper than 64 levels"
    if value is None or isinstance(value, (bool, str)):
        return None
    if isinstance(value, int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"the non-finite number {value!r}"
    if isinstance(value, (list, tuple)):
        for v in value:
            bad = _not_json(v, depth + 1)
            if bad is not None:
                return bad
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"a dict key {show_value(k)} that is not a string"
            bad = _not_json(v, depth + 1)
            if bad is not None:
                return bad
        return None
    return f"{type(value).__name__} {show_value(value)}"


def is_elementwise_fn(fn) -> bool:
    """A kernel named from a registry (NumPy's rules give its result); a callable may be
    anything."""
    return isinstance(fn, str)


class Registry(dict):
    """Name -> :class:`Primitive`."""

    def register(self, prim: Primitive, replace: bool = False) -> Primitive:
        """Add ``prim`` (refused when its name is taken, unless ``replace``)."""
        if not isinstance(prim, Primitive):
            raise AliasflowError(f"register needs a Primitive, got {type(prim).__name__}")
        old = self.get(prim.name)
        if old is not None and old is not prim and not replace:
            raise AliasflowError(f"primitive {prim.name!r} is already registered (pass "
                                 f"replace=True to replace it)")
        self[prim.name] = prim
        return prim


PRIMITIVES: Registry = Registry()
#: Builder classes by kind (:class:`~aliasflow.Operation` subclasses register themselves).
BUILDERS: dict = {}


def lookup(prim_name: str, op_name: str) -> Primitive:
    """The registered primitive ``prim_name``, or :class:`AliasflowError` naming the op."""
    prim = PRIMITIVES.get(prim_name)
    if prim is None:
        raise AliasflowError(f"op {op_name!r}: kind {prim_name!r} is not a registered "
                             f"primitive; registered: {', '.join(sorted(PRIMITIVES))}")
    return prim


# ---- result rules -------------------------------------------------------------------------------
def _sample(shape) -> tuple:
    return (1,) * len(shape)


def same_as_input(params, inputs):
    """Result rule: the first input's shape and dtype."""
    return inputs[0]


def _fn(params, family: str):
    fn = params["fn"]
    return REGISTRIES[family][fn] if isinstance(fn, str) else fn


def _unary_result(params, inputs):
    if not is_elementwise_fn(params["fn"]):
        return None
    (shape, dtype), = inputs
    with np.errstate(all="ignore"):
        return shape, np.asarray(_fn(params, "unary")(np.zeros(_sample(shape), dtype))).dtype


def _binary_result(params, inputs):
    if not is_elementwise_fn(params["fn"]):
        return None
    (sa, da), (sb, db) = inputs
    shape = np.broadcast_shapes(sa, sb)  # the check refused shapes that do not broadcast
    with np.errstate(all="ignore"):
        dtype = np.asarray(_fn(params, "binary")(np.zeros(_sample(sa), da),
                                                 np.zeros(_sample(sb), db))).dtype
    return shape, dtype


def _reduce_result(params, inputs):
    if not is_elementwise_fn(params["fn"]):
        return None
    (shape, dtype), = inputs
    axis = params["axis"] % len(shape)
    with np.errstate(all="ignore"):
        got = np.asarray(_fn(params, "reduce")(np.zeros(_sample(shape), dtype),
                                               axis=params["axis"])).dtype
    return shape[:axis] + shape[axis + 1:], got


# ---- checks -------------------------------------------------------------------------------------
def _check_fill(rec) -> None:
    value = rec.params["fill_value"]
    for out in rec.output_views:
        fit_scalar(value, out.dtype, f"op {rec.name!r}: fill_value for output {out.name!r}")


def _check_binary(rec) -> None:
    if is_elementwise_fn(rec.params["fn"]) and len(rec.input_views) == 2:
        a, b = rec.input_views
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise AliasflowError(f"op {rec.name!r}: input shapes do not broadcast: "
                                 f"{a.name} {a.shape}, {b.name} {b.shape}") from None


def _check_reduce(rec) -> None:
    axis = rec.params["axis"]
    if rec.input_views:
        x = rec.input_views[0]
        if not -x.ndim <= axis < x.ndim:
            raise AliasflowError(f"op {rec.name!r}: axis {axis} out of range for input "
                                 f"{x.name!r} of shape {x.shape}")


# ---- kernels ------------------------------------------------------------------------------------
def _fill_kernel(params, inputs):
    return np.asarray(params["fill_value"])


def _unary_kernel(params, inputs):
    return _fn(params, "unary")(inputs[0])


def _binary_kernel(params, inputs):
    return _fn(params, "binary")(inputs[0], inputs[1])


def _reduce_kernel(params, inputs):
    return np.asarray(_fn(params, "reduce")(inputs[0], axis=params["axis"]))


def _named_fn(params) -> bool:
    return is_elementwise_fn(params["fn"])


def _prepare_fill(params):
    value = np.asarray(params["fill_value"])
    return lambda inputs: value


def _prepare_unary(params):
    fn = _fn(params, "unary")
    return lambda inputs: fn(inputs[0])


def _prepare_binary(params):
    fn = _fn(params, "binary")
    return lambda inputs: fn(inputs[0], inputs[1])


def _prepare_reduce(params):
    fn, axis = _fn(params, "reduce"), params["axis"]
    return lambda inputs: fn(inputs[0], axis=axis)


def _ufunc_into(family: str):
    def into(params, inputs, out) -> bool:
        # only a registry ufunc: a callable may be anything
        return is_elementwise_fn(params["fn"]) and ufunc_into(_fn(params, family), inputs, out)
    return into


PRIMITIVES.register(Primitive(
    "fill", _fill_kernel, arity=0, params={"fill_value": "number"}, defaults={"fill_value": 1.0},
    check=_check_fill, uniform=True, light=True, prepare=_prepare_fill,
    doc="Write fill_value to every element of every output."))
PRIMITIVES.register(Primitive(
    "transform", _unary_kernel, arity=1, params={"fn": "unary"}, defaults={"fn": "copy"},
    result=_unary_result, light=_named_fn, into=_ufunc_into("unary"), prepare=_prepare_unary,
    doc="Elementwise unary op: out = fn(in)."))
PRIMITIVES.register(Primitive(
    "binary", _binary_kernel, arity=2, params={"fn": "binary"}, defaults={"fn": "add"},
    result=_binary_result, check=_check_binary, light=_named_fn, into=_ufunc_into("binary"),
    prepare=_prepare_binary,
    doc="Binary op: out = fn(a, b); named kernels broadcast as NumPy does."))
PRIMITIVES.register(Primitive(
    "reduce", _reduce_kernel, arity=1, params={"fn": "reduce", "axis": "int"},
    defaults={"fn": "sum", "axis": -1}, result=_reduce_result, check=_check_reduce,
    light=_named_fn, prepare=_prepare_reduce,
    doc="Reduce the input along axis."))
