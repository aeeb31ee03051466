"""Programs: tensors, views and ops in program order, with names unique in each kind."""
from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from .errors import AliasflowError
from .operations import Operation
from .record import OpRecord
from .view import Tensor
from .view import TensorView


_name = attrgetter("name")


def check_ops(ops: Iterable[Operation]) -> list[Operation]:
    """Return ``ops`` as a list after checking they are ops (or op records) with distinct
    names."""
    try:
        ops = list(ops)
    except TypeError:
        raise AliasflowError(f"expected a list of Operations, got {type(ops).__name__}") \
            from None
    kinds = (Operation, OpRecord)
    # the common case checked in bulk (a million ops: types seen once each, names in one set)
    if all(issubclass(t, kinds) for t in set(map(type, ops))):
        names = list(map(_name, ops))
        if len(set(names)) == len(names):
            return ops
    seen: set[str] = set()
    for i, op in enumerate(ops):
        if not isinstance(op, kinds):
            raise AliasflowError(f"ops[{i}] is not an Operation or OpRecord: {op!r}")
        if op.name in seen:
            raise AliasflowError(f"op name {op.name!r} is used twice; op names must be unique")
        seen.add(op.name)
    return ops


class Program:
    """A program: its tensors, named views and ops (in program order).

    Tensors and views not listed are collected from the ops.
    """

    def __init__(self, ops: Iterable[Operation], tensors: Iterable[Tensor] = (),
                 views: Iterable[TensorView] = ()):
        self.ops = check_ops(ops)
        self.tensors: dict[str, Tensor] = {}
        self.views: dict[str, TensorView] = {}
        for t in tensors:
            self._add_tensor(t)
        for v in list(views) + [v for op in self.ops
                                for v in op.input_views + op.output_views]:
            self._add_tensor(v.tensor)
            old = self.views.setdefault(v.name, v)
            if old is not v and old != v:
                raise AliasflowError(f"view name {v.name!r} names two different views: "
                                     f"{old!r} and {v!r}")

    def _add_tensor(self, t: Tensor) -> None:
        old = self.tensors.setdefault(t.name, t)
        if old is not t:
            raise AliasflowError(f"tensor name {t.name!r} names two different tensors")

    def op(self, name: str) -> Operation:
        for op in self.ops:
            if op.name == name:
                return op
        raise AliasflowError(f"no op named {name!r}; ops are {', '.join(o.name for o in self.ops)}")

    def __repr__(self) -> str:
        return (f"Program({len(self.tensors)} tensors, {len(self.views)} views, "
                f"{len(self.ops)} ops)")
