"""Op records: what an operation does to memory, as plain immutable data.

An :class:`OpRecord` is ``(name, prim, accesses, params)``, as a jaxpr equation is
``(primitive, invars, outvars, params)`` with its effects keyed by operand: each
:class:`Access` is one operand slot with a mode, read (``"R"``), write (``"W"``) or both
(``"RW"``: an in-place operand). The analyses need nothing else: ``input_views`` and
``output_views`` are derived from the modes, so a record can be analysed, checked for races or
flowed exactly like an :class:`~aliasflow.Operation` (whose :meth:`~aliasflow.Operation.record`
gives one). Values an op returns without writing memory are named ``Value(op, index)``, as a
TVM tensor is ``(op, value_index)``.

Front ends and tracers that know more than the four seed kinds (an aten call, a TensorFlow
variable update) produce records directly, with their own ``prim`` names.

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

from dataclasses import dataclass, field
from typing import NamedTuple

from .errors import AliasflowError
from .view import TensorView

MODES = ("R", "W", "RW")


class Access(NamedTuple):
    """Operand ``slot`` of an op touches ``view`` with ``mode`` ``"R"``, ``"W"`` or ``"RW"``."""

    slot: int
    mode: str
    view: TensorView


class Value(NamedTuple):
    """Result ``index`` of op ``op`` (a value returned, not written to memory)."""

    op: str
    index: int


@dataclass(frozen=True)
class OpRecord:
    """An operation as data: name, primitive, per-operand accesses, parameters.

    ``n_values`` counts the values it returns without writing memory (``Value(name, i)``).
    """

    name: str
    prim: str
    accesses: tuple = ()
    params: dict = field(default_factory=dict, compare=False)
    n_values: int = 0

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise AliasflowError(f"op name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.prim, str) or not self.prim:
            raise AliasflowError(f"op {self.name!r}: prim must be a non-empty string, "
                                 f"got {self.prim!r}")
        accesses = tuple(self.accesses)
        for a in accesses:
            if not isinstance(a, tuple) or len(a) != 3 or a[1] not in MODES \
                    or not isinstance(a[2], TensorView):
                raise AliasflowError(f"op {self.name!r}: accesses must be Access(slot, mode, "
                                     f"view) with mode one of {MODES}, got {a!r}")
        object.__setattr__(self, "accesses", tuple(Access(*a) for a in accesses))

    @property
    def input_views(self) -> list[TensorView]:
        return [a.view for a in self.accesses if a.mode != "W"]

    @property
    def output_views(self) -> list[TensorView]:
        return [a.view for a in self.accesses if a.mode != "R"]

    def value(self, index: int = 0) -> Value:
        if not 0 <= index < self.n_values:
            raise AliasflowError(f"op {self.name!r} returns {self.n_values} value(s); "
                                 f"no value {index}")
        return Value(self.name, index)

    def __repr__(self) -> str:
        body = ", ".join(f"{a.mode} {a.view.name}" for a in self.accesses)
        return f"OpRecord({self.name!r}, {self.prim}: {body})"
