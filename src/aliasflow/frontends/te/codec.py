"""The expressions of a lowered te compute op as JSON data, and back.

A compute op's body is a graph of expression nodes (a node may be used twice). It is written
as a node table in post order: ``nodes[k]`` is ``[kind, dtype, *fields]`` and a field that is
a sub-expression is the index of an earlier node, so the table is acyclic by construction
and shared nodes stay shared. Kinds and their fields:

- ``["int", dtype, value]``, ``["float", dtype, value]`` (``"nan"``/``"inf"``/``"-inf"`` for
  non-finite values): constants;
- ``["loop", dtype, k]``: loop variable ``k`` of the op's ``loops`` (axes, then reduce axes);
- ``["var", dtype, name, value]``: a symbolic size bound to ``value``; ``["var", dtype,
  name]``: an unbound var (evaluating it is refused, as it is in Python);
- ``["cast", dtype, x]``, ``["select", dtype, cond, then, else]``, ``["call", dtype, name,
  [args]]`` (an intrinsic the evaluator knows), and the binary kinds of :data:`BINARY`
  (``["add", dtype, a, b]``, ...);
- ``["load", dtype, producer, input, whole, [indices]]``: an element of the record's read
  operand ``input`` (its exact view over the loop nest, or with ``whole`` the producer's whole
  tensor, indexed by ``indices``); ``producer`` is the te tensor's name, for messages;
- ``["reduce", dtype, combiner, combiner dtype, value_index, [sources], condition, [init],
  [[k, min, extent], ...]]``: a reduction over reduce loops ``k``.

The op's parameters are ``{"op": name, "loops": [[name, dtype, min, extent], ...], "naxis",
"results": [[name, dtype], ...], "nodes", "body": [node per output]}``. :func:`decode`
rebuilds the expression objects (with their own constructors) and refuses anything malformed
with an error naming the op, the node and the bad value; nothing is evaluated as code.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import show_value
from .evaluate import _CALLS, IF_THEN_ELSE, Domain
from .expr import (Var, IntImm, FloatImm, Cast, Add, Sub, Mul, Div, FloorDiv, FloorMod, Min,
                   Max, LT, LE, GT, GE, EQ, NE, And, Or, ProducerLoad, _dtype_name,
                   post_order_visit)
from .intrin import Call, Select
from .tensor import CommReducer, IterVar, Range, Reduce

BINARY = {"add": Add, "sub": Sub, "mul": Mul, "div": Div, "floordiv": FloorDiv,
          "floormod": FloorMod, "min": Min, "max": Max, "lt": LT, "le": LE, "gt": GT, "ge": GE,
          "eq": EQ, "ne": NE, "and": And, "or": Or}
_BINARY_NAME = {cls: name for name, cls in BINARY.items()}
CALLS = (IF_THEN_ELSE, *_CALLS)
COMBINERS = ("sum", "max", "min")
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
MAX_NODES = 1 << 20


# ---- encoding -------------------------------------------------------------------------------
def _float(x: float):
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def encode(op, domain: Domain, binds: dict, reads: dict) -> dict:
    """The parameters of the record of te compute ``op`` over ``domain`` (``binds``: id(var)
    -> int; ``reads``: id(load) -> (read operand, whole tensor?))."""
    index: dict[int, int] = {}
    nodes: list = []

    def ref(n) -> int:
        return index[id(n)]

    def add(n):
        t = type(n)
        if isinstance(n, IntImm):
            node = ["int", n.dtype, n.value]
        elif isinstance(n, FloatImm):
            node = ["float", n.dtype, _float(n.value)]
        elif isinstance(n, Var):
            if id(n) in domain.position:
                node = ["loop", n.dtype, domain.position[id(n)]]
            elif id(n) in binds:
                node = ["var", n.dtype, n.name, int(binds[id(n)])]
            else:
                node = ["var", n.dtype, n.name]
        elif isinstance(n, Cast):
            node = ["cast", n.dtype, ref(n.value)]
        elif t in _BINARY_NAME:
            node = [_BINARY_NAME[t], n.dtype, ref(n.a), ref(n.b)]
        elif isinstance(n, Select):
            node = ["select", n.dtype, ref(n.condition), ref(n.true_value), ref(n.false_value)]
        elif isinstance(n, Call):
            node = ["call", n.dtype, n.op_name, [ref(a) for a in n.args]]
        elif isinstance(n, ProducerLoad):
            k, whole = reads[id(n)]
            node = ["load", n.dtype, n.producer.name, k, bool(whole),
                    [ref(i) for i in n.indices]]
        elif isinstance(n, Reduce):
            node = ["reduce", n.dtype, n.combiner.name, n.combiner.dtype, n.value_index,
                    [ref(s) for s in n.source], ref(n.condition), [ref(i) for i in n.init],
                    [[domain.position[id(iv.var)], ref(iv.dom.min), ref(iv.dom.extent)]
                     for iv in n.axis]]
        else:
            raise AliasflowError(f"op {op.name!r}: expression node {type(n).__name__} ({n}) "
                                 f"cannot be written as data")
        index[id(n)] = len(nodes)
        nodes.append(node)
    for e in op.body:
        post_order_visit(e, add)
    return {"op": op.name,
            "loops": [[v.name, v.dtype, lo, ext] for v, lo, ext in
                      zip(domain.vars, domain.mins, domain.extents)],
            "naxis": domain.naxis,
            "results": [[t.name, t.dtype] for t in op._outputs],
            "nodes": nodes, "body": [ref(e) for e in op.body]}


# ---- decoding -------------------------------------------------------------------------------
class _Producer:
    """What a decoded load knows of its producer: the name and dtype."""

    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype


class _Op:
    """What evaluating a decoded op needs of a te op."""

    class _Out:
        def __init__(self, name, dtype):
            self.name, self.dtype = name, dtype

    def __init__(self, name, outputs, body):
        self.name, self.body = name, body
        self._outputs = [self._Out(n, d) for n, d in outputs]


class Decoded:
    """A decoded compute op: ``op`` (name, body, outputs), ``domain``, ``reads`` (id(load)
    -> (read operand, whole?)) and ``env`` (id(bound var) -> its value)."""

    def __init__(self, op, domain, reads, env):
        self.op, self.domain, self.reads, self.env = op, domain, reads, env


def _fail(op_name, where, why, value):
    raise AliasflowError(f"op {op_name!r}: {where}: {why}, got {show_value(value, 80)}")


def _int(op_name, where, x, lo=None, hi=None) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or (lo is not None and x < lo) or \
            (hi is not None and x >= hi):
        bound = "" if lo is None else f" in [{lo}, {'...' if hi is None else hi})"
        _fail(op_name, where, f"expected an int{bound}", x)
    return x


def _dtype(op_name, where, x) -> str:
    if not isinstance(x, str):
        _fail(op_name, where, "expected a dtype name", x)
    try:
        return _dtype_name(x, where)
    except AliasflowError as exc:
        raise AliasflowError(f"op {op_name!r}: {exc}") from None


def _list(op_name, where, x, length=None) -> list:
    if not isinstance(x, list) or (length is not None and len(x) != length):
        _fail(op_name, where, "expected a list" + ("" if length is None else
                                                   f" of {length} items"), x)
    return x


def _str(op_name, where, x) -> str:
    if not isinstance(x, str) or not x:
        _fail(op_name, where, "expected a non-empty string", x)
    return x


_FIELDS = {"int": 1, "float": 1, "loop": 1, "cast": 1, "select": 3, "call": 2, "load": 4,
           "reduce": 7, **{name: 2 for name in BINARY}}


def decode(op_name: str, params) -> Decoded:
    """The compute op ``params`` describe (see the module docstring), or
    :class:`AliasflowError` naming the op and what is wrong."""
    if not isinstance(params, Mapping):
        _fail(op_name, "params", "expected a mapping", params)
    name = _str(op_name, "op", params.get("op"))
    loops = _list(op_name, "loops", params.get("loops"))
    naxis = _int(op_name, "naxis", params.get("naxis"), 0, len(loops) + 1)
    loop_vars, mins, extents = [], [], []
    for k, loop in enumerate(loops):
        where = f"loops[{k}]"
        lname, ldtype, lo, ext = _list(op_name, where, loop, 4)
        loop_vars.append(Var(_str(op_name, where, lname), _dtype(op_name, where, ldtype)))
        mins.append(_int(op_name, f"{where} min", lo))
        extents.append(_int(op_name, f"{where} extent", ext, 0))
    outputs = [(_str(op_name, f"results[{k}]", _list(op_name, f"results[{k}]", o, 2)[0]),
                _dtype(op_name, f"results[{k}]", o[1]))
               for k, o in enumerate(_list(op_name, "results", params.get("results")))]
    table = _list(op_name, "nodes", params.get("nodes"))
    if len(table) > MAX_NODES:
        _fail(op_name, "nodes", f"at most {MAX_NODES} nodes", len(table))
    nodes: list = []
    reads: dict = {}
    env: dict = {}
    for k, item in enumerate(table):
        nodes.append(_node(op_name, k, item, nodes, loop_vars, reads, env))
    body = [nodes[_int(op_name, f"body[{k}]", b, 0, len(nodes))]
            for k, b in enumerate(_list(op_name, "body", params.get("body"), len(outputs)))]
    domain = Domain.of(name, loop_vars, mins, extents, naxis)
    return Decoded(_Op(name, outputs, body), domain, reads, env)


def _node(op_name, k, item, nodes, loop_vars, reads, env):
    where = f"nodes[{k}]"
    if not isinstance(item, list) or len(item) < 2 or not isinstance(item[0], str):
        _fail(op_name, where, "expected [kind, dtype, ...]", item)
    kind = item[0]
    if kind not in _FIELDS and kind != "var":
        _fail(op_name, where, f"unknown node kind; choose one of "
                              f"{', '.join(sorted([*_FIELDS, 'var']))}", kind)
    dtype = _dtype(op_name, where, item[1])
    fields = item[2:]
    want = _FIELDS.get(kind)
    if (want is not None and len(fields) != want) or (kind == "var" and len(fields) not in (1, 2)):
        _fail(op_name, where, f"a {kind!r} node has {want or '1 or 2'} field(s) after the "
                              f"dtype", item)

    def sub(x, what="operand"):
        return nodes[_int(op_name, f"{where} {what}", x, 0, len(nodes))]

    def subs(x, what):
        return [sub(i, what) for i in _list(op_name, f"{where} {what}s", x)]

    if kind == "int":
        node = IntImm(dtype, _int(op_name, where, fields[0]))
    elif kind == "float":
        x = fields[0]
        x = _NONFINITE.get(x, x) if isinstance(x, str) else x
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            _fail(op_name, where, "expected a number or \"nan\"/\"inf\"/\"-inf\"", fields[0])
        node = FloatImm(dtype, x)
    elif kind == "loop":
        node = loop_vars[_int(op_name, f"{where} loop", fields[0], 0, len(loop_vars))]
    elif kind == "var":
        node = Var(_str(op_name, where, fields[0]), dtype)
        if len(fields) == 2:
            env[id(node)] = np.asarray(_int(op_name, f"{where} value", fields[1]))
    elif kind == "cast":
        node = Cast(dtype, sub(fields[0]))
    elif kind in BINARY:
        node = BINARY[kind](sub(fields[0]), sub(fields[1]))
    elif kind == "select":
        node = Select(sub(fields[0]), sub(fields[1]), sub(fields[2]))
    elif kind == "call":
        if fields[0] not in CALLS:
            _fail(op_name, where, f"unknown call; choose one of {', '.join(CALLS)}", fields[0])
        node = Call(dtype, fields[0], subs(fields[1], "arg"))
    elif kind == "load":
        producer, slot, whole, indices = fields
        if not isinstance(whole, bool):
            _fail(op_name, where, "whole must be true or false", whole)
        node = ProducerLoad(_Producer(_str(op_name, where, producer), dtype),
                            subs(indices, "index"))
        reads[id(node)] = (_int(op_name, f"{where} input", slot, 0), whole)
    else:  # reduce
        combiner, cdtype, value_index, sources, cond, init, axes = fields
        if combiner not in COMBINERS:
            _fail(op_name, where, f"combiner must be one of {', '.join(COMBINERS)}", combiner)
        sources = subs(sources, "source")
        axis = []
        for a in _list(op_name, f"{where} axes", axes):
            lk, lo, ext = _list(op_name, f"{where} axis", a, 3)
            var = loop_vars[_int(op_name, f"{where} axis loop", lk, 0, len(loop_vars))]
            axis.append(IterVar(Range(sub(lo), sub(ext)), var, "CommReduce"))
        node = Reduce(CommReducer(combiner, _dtype(op_name, where, cdtype)), sources, axis,
                      sub(cond, "condition"), _int(op_name, f"{where} value_index",
                                                   value_index, 0, len(sources)),
                      subs(init, "init"))
    if node.dtype != dtype:
        _fail(op_name, where, f"the node's dtype is {node.dtype}, not {dtype}", item)
    return node
