"""Op records: what an operation does to memory, as plain immutable data.

An :class:`OpRecord` is ``(name, prim, accesses, params)``, as a jaxpr equation is
``(primitive, invars, outvars, params)`` with its effects keyed by operand: each
:class:`Access` is one operand slot with a mode, read (``"R"``), write (``"W"``) or both
(``"RW"``: an in-place operand). Records are the one form of an op: analyses, runners,
program files, front ends and tracers all produce or consume them, and nothing changes a
record once it is made, so nothing needs checking again after analysis.

- ``prim`` names the op's kind, a :class:`~aliasflow.Primitive` of the registry
  (:data:`aliasflow.PRIMITIVES`): it owns the kernel and the rules. A record whose kind is
  not registered (a traced aten call) can be analysed but not run by :func:`aliasflow.run`.
- Values an op returns without writing memory are named ``Value(op, index)``, as a TVM
  tensor is ``(op, value_index)``; ``n_values`` counts them. :func:`aliasflow.run` returns
  them in its environment.
- ``after`` names earlier ops this one must follow although no memory orders them (a
  TensorFlow control dependency): ordering edges that are not data.
- ``info`` is what the producer knows beyond memory (a traced call's source line and
  stream, say). Analyses never read it, and it takes no part in equality.

Examples
--------
>>> import aliasflow as af
>>> A = af.Tensor("A", (4,))
>>> rec = af.OpRecord("inc", "add_", (af.Access(0, "RW", A[1:3]), af.Access(1, "R", A[:2])))
>>> [v.name for v in rec.input_views], [v.name for v in rec.output_views]
(['A[1:3]', 'A[:2]'], ['A[1:3]'])
>>> [(d.src, d.dst, d.kind) for d in af.analyze([af.FillOperation("w").set_outputs(A[0]), rec]
...                                              ).dependencies]
[('w', 'inc', 'RAW')]
"""
from __future__ import annotations

import struct
from collections.abc import Mapping
from itertools import count, repeat
from types import MappingProxyType
from typing import NamedTuple

from .errors import AliasflowError
from .values import show_value
from .view import TensorView

MODES = ("R", "W", "RW")
_EMPTY = MappingProxyType({})


class Access(NamedTuple):
    """Operand ``slot`` of an op touches ``view`` with ``mode`` ``"R"``, ``"W"`` or ``"RW"``."""

    slot: int
    mode: str
    view: TensorView


class Value(NamedTuple):
    """Result ``index`` of op ``op`` (a value returned, not written to memory)."""

    op: str
    index: int


_new = object.__new__
_set = object.__setattr__


class _RecordFields:
    """A record's fields as plain writable slots: a record is filled in as one of these and
    then made an :class:`OpRecord` by assigning its class (the layouts are the same), since
    an OpRecord refuses every attribute write (see :class:`~aliasflow.TensorView`)."""

    __slots__ = ("name", "prim", "_accesses", "params", "n_values", "after", "info",
                 "input_views", "output_views", "__weakref__")


_tuple_new = tuple.__new__


class OpRecord(_RecordFields):
    """An operation as data: name, primitive, per-operand accesses, parameters (see the module
    docstring). Immutable; equal records have the same name, kind, accesses, value count and
    ``after`` edges (``params`` and ``info`` are left out: they may hold arrays or objects
    that do not compare)."""

    __slots__ = ()

    @property
    def accesses(self) -> tuple:
        """The operands: ``Access(slot, mode, view)`` each."""
        got = self._accesses
        if got is None:  # made from view lists: reads in slots 0..n-1, then writes
            ins, outs = self.input_views, self.output_views
            n = len(ins)
            got = tuple(map(_tuple_new, repeat(Access), zip(count(), repeat("R", n), ins))) \
                + tuple(map(_tuple_new, repeat(Access), zip(count(n), repeat("W"), outs)))
            _set(self, "_accesses", got)
        return got

    def __init__(self, name: str, prim: str, accesses=(), params=None, n_values: int = 0,
                 after=(), info=None):
        if not isinstance(name, str) or not name:
            raise AliasflowError(f"op name must be a non-empty string, got {show_value(name)}")
        if not isinstance(prim, str) or not prim:
            raise AliasflowError(f"op {name!r}: prim must be a non-empty string, "
                                 f"got {show_value(prim)}")
        try:
            items = tuple(accesses)
        except TypeError:
            raise AliasflowError(f"op {name!r}: accesses must be a sequence of Access(slot, "
                                 f"mode, view), got {show_value(accesses)}") from None
        made = []
        for a in items:
            if not isinstance(a, tuple) or len(a) != 3 or a[1] not in MODES \
                    or not isinstance(a[2], TensorView) or isinstance(a[0], bool) \
                    or not isinstance(a[0], int):
                raise AliasflowError(f"op {name!r}: accesses must be Access(slot, mode, view) "
                                     f"with an int slot and mode one of {MODES}, got "
                                     f"{show_value(a, 80)}")
            made.append(a if type(a) is Access else Access(*a))
        if params is None:
            params = _EMPTY
        elif not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
            raise AliasflowError(f"op {name!r}: params must be a mapping with string keys, "
                                 f"got {show_value(params)}")
        else:
            params = MappingProxyType(dict(params))
        if isinstance(n_values, bool) or not isinstance(n_values, int) or n_values < 0:
            raise AliasflowError(f"op {name!r}: n_values must be a non-negative int, got "
                                 f"{show_value(n_values)}")
        if isinstance(after, str):
            after = (after,)
        try:
            after = tuple(after)
        except TypeError:
            raise AliasflowError(f"op {name!r}: after must be a sequence of op names, got "
                                 f"{show_value(after)}") from None
        for a in after:
            if not isinstance(a, str) or not a:
                raise AliasflowError(f"op {name!r}: after must name ops (non-empty strings), "
                                     f"got {show_value(a)}")
        _fill(self, name, prim, tuple(made), params, n_values, after, info)

    @staticmethod
    def _trusted(name, prim, accesses, params, n_values=0, after=(), info=None,
                 input_views=None, output_views=None) -> "OpRecord":
        """A record from fields already checked (builders, tracers): ``accesses`` a tuple of
        :class:`Access`, ``params`` a read-only mapping; the view tuples when known. Given
        ``accesses=None`` and the view tuples, the accesses are reads in slots ``0..n-1``
        then writes, made when first asked for."""
        rec = _new(_RecordFields)
        rec.name = name
        rec.prim = prim
        rec._accesses = accesses
        rec.params = params
        rec.n_values = n_values
        rec.after = after
        rec.info = info
        rec.input_views = tuple([a.view for a in accesses if a.mode != "W"]) \
            if input_views is None else input_views
        rec.output_views = tuple([a.view for a in accesses if a.mode != "R"]) \
            if output_views is None else output_views
        rec.__class__ = OpRecord
        return rec

    def __setattr__(self, name, value):
        raise AttributeError(f"op records are immutable; cannot set {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"op records are immutable; cannot delete {name!r}")

    def __copy__(self):
        return self

    def __reduce__(self):
        return OpRecord, (self.name, self.prim, self.accesses, dict(self.params), self.n_values,
                          self.after, self.info)

    def __deepcopy__(self, memo):
        from copy import deepcopy
        return OpRecord._trusted(self.name, self.prim, deepcopy(self.accesses, memo),
                                 self.params, self.n_values, self.after, self.info)

    def _identity(self) -> tuple:
        return self.name, self.prim, self.accesses, self.n_values, self.after

    def __eq__(self, other):
        if not isinstance(other, OpRecord):
            return NotImplemented
        return self is other or self._identity() == other._identity()

    def __hash__(self):
        return hash(self._identity())

    def record(self) -> "OpRecord":
        """The record itself (what a builder's ``record()`` gives)."""
        return self

    @property
    def kind(self) -> str:
        """The primitive's name (``prim``)."""
        return self.prim

    @property
    def outputs(self) -> tuple[Value, ...]:
        """The values the op returns without writing memory."""
        return tuple(Value(self.name, k) for k in range(self.n_values))

    def value(self, index: int = 0) -> Value:
        if isinstance(index, bool) or not isinstance(index, int) or \
                not 0 <= index < self.n_values:
            raise AliasflowError(f"op {self.name!r} returns {self.n_values} value(s); "
                                 f"no value {show_value(index)}")
        return Value(self.name, index)

    def replace(self, **changes) -> "OpRecord":
        """A new record with some fields changed (checked as a new record is)."""
        fields = {"name": self.name, "prim": self.prim, "accesses": self.accesses,
                  "params": self.params, "n_values": self.n_values, "after": self.after,
                  "info": self.info}
        unknown = set(changes) - set(fields)
        if unknown:
            raise AliasflowError(f"op {self.name!r}: no field(s) {', '.join(sorted(unknown))} "
                                 f"to replace")
        fields.update(changes)
        return OpRecord(**fields)

    def __repr__(self) -> str:
        body = ", ".join(f"{a.mode} {a.view.name}" for a in self.accesses)
        return f"OpRecord({self.name!r}, {self.prim}: {body})"


def _fill(rec, name, prim, accesses, params, n_values, after, info) -> None:
    _set(rec, "name", name)
    _set(rec, "prim", prim)
    _set(rec, "_accesses", accesses)
    _set(rec, "params", params)
    _set(rec, "n_values", n_values)
    _set(rec, "after", after)
    _set(rec, "info", info)
    _set(rec, "input_views", tuple([a.view for a in accesses if a.mode != "W"]))
    _set(rec, "output_views", tuple([a.view for a in accesses if a.mode != "R"]))


def frozen_params(params: dict) -> Mapping:
    """``params`` as the read-only mapping a record keeps."""
    return MappingProxyType(params) if params else _EMPTY


_PLAIN = frozenset({int, float, str, bool, type(None)})
_float_bits = struct.Struct("<d").pack
_shared: dict = {}


def shared_params(params: dict) -> Mapping:
    """``params`` as a read-only mapping, one object for all equal parameters: plain values
    (ints, floats, strings, bools, None) equal with the same types, any other value the very
    same object (a kernel function, say; the shared mapping holds it, so its id stays its
    own): a program's many ops of one kind then share their parameters, and what is worked
    out per parameters (checks, bound kernels) is worked out once."""
    if not params:
        return _EMPTY
    key = []
    for name, value in params.items():
        t = type(value)
        if t not in _PLAIN:
            key.append((name, None, id(value)))
        else:
            # -0.0 == 0.0 and NaNs differ in payload, but a kernel writes one or the other:
            # floats by their bits
            key.append((name, t, _float_bits(value) if t is float else value))
    key = tuple(key)
    got = _shared.get(key)
    if got is None:
        if len(_shared) >= 4096:  # a bound, not a leak: an unbounded variety is not shared
            _shared.clear()
        got = _shared[key] = MappingProxyType(dict(params))
    return got


class Results(Mapping):
    """What a run returned: ``Value(op, index) -> array`` for every value an op returned
    without writing memory (an op without outputs returns one). ``results["op"]`` is
    ``results[Value("op", 0)]``.

    >>> import aliasflow as af
    >>> A = af.Tensor("A", (3,), data=[1, 2, 3])
    >>> results = af.run([af.ReduceOperation("total").set_inputs(A)])
    >>> results["total"], list(results)
    (array(6., dtype=float32), [Value(op='total', index=0)])
    """

    __slots__ = ("_values",)

    def __init__(self, values=None):
        self._values = dict(values or {})

    def __getitem__(self, key):
        if isinstance(key, str):
            key = Value(key, 0)
        return self._values[key]

    def __contains__(self, key):
        if isinstance(key, str):
            key = Value(key, 0)
        return key in self._values

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Results({len(self._values)} value(s): {', '.join(f'{v.op}#{v.index}' for v in list(self._values)[:5])}{', ...' if len(self._values) > 5 else ''})"
