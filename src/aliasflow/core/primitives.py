"""The one registry of op kinds: each kind's schema (arity, parameters) and its kernel.

A kind is defined once, by its facade class in :mod:`aliasflow.core.operations` (the kernel
is its ``compute``, the schema its ``arity`` and ``param_types``); this registry is what
program files, front ends and interpreters read, so adding a kind needs no other table.
Parameter types: ``"number"`` and ``"int"`` are values; any other type names the kernel
family (:data:`aliasflow.core.functions.REGISTRIES`) whose functions the parameter names.

Examples
--------
>>> PRIMITIVES["reduce"].params
{'fn': 'reduce', 'axis': 'int'}
>>> PRIMITIVES["binary"].arity
2
"""
from __future__ import annotations

from dataclasses import dataclass

from .operations import (BinaryOperation, FillOperation, Operation, ReduceOperation,
                         TransformOperation)


@dataclass(frozen=True)
class Primitive:
    """An op kind: ``name``, inputs its kernel takes (``arity``; None: any), ``params``
    (name -> type) and the facade class whose ``compute`` is the kernel."""

    name: str
    arity: int | None
    params: dict
    operation: type

    def make(self, name: str, **params) -> Operation:
        """A new op of this kind (views are set with ``set_inputs``/``set_outputs``)."""
        return self.operation(name, **params)


PRIMITIVES: dict[str, Primitive] = {
    cls.kind: Primitive(cls.kind, cls.arity, dict(cls.param_types), cls)
    for cls in (FillOperation, TransformOperation, BinaryOperation, ReduceOperation)
}
OP_KINDS = {name: prim.operation for name, prim in PRIMITIVES.items()}
