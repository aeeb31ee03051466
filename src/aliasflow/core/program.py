"""Programs: tensors, views and op records in program order, with names unique in each kind."""
from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from .builders import Operation
from .errors import AliasflowError
from .record import OpRecord
from .view import Tensor, TensorView


_name = attrgetter("name")


def op_list(ops) -> list:
    """``ops`` as a list, or :class:`AliasflowError` when it is not a sequence of ops."""
    if isinstance(ops, list):
        return ops
    if isinstance(ops, (str, bytes, OpRecord, Operation)):
        raise AliasflowError(f"expected a list of ops (OpRecords or Operations), got "
                             f"{type(ops).__name__}")
    try:
        return list(ops)
    except TypeError:
        raise AliasflowError(f"expected a list of ops (OpRecords or Operations), got "
                             f"{type(ops).__name__}") from None


def as_records(ops) -> list[OpRecord]:
    """``ops`` as a list of records, after checking their names are distinct: each op is an
    :class:`OpRecord`, or anything whose ``record()`` makes one (the seed's builders, a
    producer's op with more to say than memory)."""
    ops = op_list(ops)
    types = set(map(type, ops))
    if types == {OpRecord}:
        records = ops
    elif all(issubclass(t, Operation) for t in types):  # builders: the common case, in bulk
        records = [op.record() for op in ops]
    else:
        records = []
        for i, op in enumerate(ops):
            rec = op if type(op) is OpRecord else getattr(op, "record", None)
            if rec is not op:
                if isinstance(op, OpRecord) or not callable(rec) or isinstance(op, type):
                    raise AliasflowError(f"ops[{i}] is not an Operation or an OpRecord (nor "
                                         f"anything whose record() makes one): {op!r:.80}")
                rec = rec()
                if type(rec) is not OpRecord:
                    raise AliasflowError(f"ops[{i}]: record() gave {type(rec).__name__}, not "
                                         f"an OpRecord")
            records.append(rec)
    names = list(map(_name, records))
    if len(set(names)) != len(names):
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise AliasflowError(f"op name {name!r} is used twice; op names must be "
                                     f"unique")
            seen.add(name)
    return records


class Program:
    """A program: its tensors, named views and ops (in program order; builders or records).

    Tensors and views not listed are collected from the ops.
    """

    def __init__(self, ops: Iterable, tensors: Iterable[Tensor] = (),
                 views: Iterable[TensorView] = ()):
        self.ops = list(op_list(ops))
        self.records = as_records(self.ops)
        self.tensors: dict[str, Tensor] = {}
        self.views: dict[str, TensorView] = {}
        for t in tensors:
            self._add_tensor(t)
        for v in list(views) + [v for rec in self.records
                                for v in rec.input_views + rec.output_views]:
            self._add_tensor(v.tensor)
            old = self.views.setdefault(v.name, v)
            if old is not v and old != v:
                raise AliasflowError(f"view name {v.name!r} names two different views: "
                                     f"{old!r} and {v!r}")

    def _add_tensor(self, t: Tensor) -> None:
        old = self.tensors.setdefault(t.name, t)
        if old is not t:
            raise AliasflowError(f"tensor name {t.name!r} names two different tensors")

    def op(self, name: str):
        for op in self.ops:
            if op.name == name:
                return op
        raise AliasflowError(f"no op named {name!r}; ops are {', '.join(o.name for o in self.ops)}")

    def __repr__(self) -> str:
        return (f"Program({len(self.tensors)} tensors, {len(self.views)} views, "
                f"{len(self.ops)} ops)")
