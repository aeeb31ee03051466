"""Ops in program files: one entry per op record, its parameters typed by its primitive.

An op entry is ``{"name", "kind", <params>, "inputs"?, "outputs"?, "accesses"?, "values"?,
"after"?}``. ``kind`` names a registered primitive (:data:`aliasflow.PRIMITIVES`; kinds of
aliasflow's own front ends, ``"tf.*"``, ``"mge.*"``, ``"te.*"``, are registered when the
file names them, by importing that front end of aliasflow — nothing named by the file is
imported otherwise). Its parameters are written as the primitive declares them: numbers
(floats exactly, ``"nan"``/``"inf"``/``"-inf"`` as strings), ints, booleans, strings, JSON
data, or a function *name* of a kernel family (a Python callable cannot be saved).

Accesses: ``"inputs"`` (read) then ``"outputs"`` (written), lists of view names, as the seed
writes ops; or ``"accesses"``, a list of ``[slot, mode, view]`` with mode ``"R"``, ``"W"`` or
``"RW"`` (one of the two forms). ``"values"``: how many values the op returns without writing
memory (default: 1 for an op with no outputs, else 0). ``"after"``: names of earlier ops this
one must follow although no memory orders them.
"""
from __future__ import annotations

import importlib

import numpy as np

from ..core.builders import BUILDERS
from ..core.errors import AliasflowError
from ..core.functions import REGISTRIES
from ..core.primitives import PRIMITIVES, check_param
from ..core.record import MODES, Access, OpRecord
from ._values import check_scalar, encode_float, show

#: Kinds of aliasflow's own front ends: the module that registers them (never the file's).
HOMES = {"tf": "aliasflow.frontends.tf", "mge": "aliasflow.frontends.mge",
         "te": "aliasflow.frontends.te"}
BASE_KEYS = ("inputs", "outputs", "accesses", "values", "after", "description")
_FAMILY_WORD = {"unary": "transform (unary)", "binary": "binary", "reduce": "reduce"}


def primitive_of(kind: str):
    """The registered primitive ``kind``, registering an aliasflow front end's kinds first
    when ``kind`` is one of them; None when there is no such primitive."""
    prim = PRIMITIVES.get(kind)
    if prim is None and isinstance(kind, str) and "." in kind:
        home = HOMES.get(kind.split(".", 1)[0])
        if home is not None:
            importlib.import_module(home)
            prim = PRIMITIVES.get(kind)
    return prim


# ---- saving -------------------------------------------------------------------------------------
class RawJSON(str):
    """JSON text to insert as it is (exact floats, nested data)."""


def encode_op(rec: OpRecord, problems: list) -> dict | None:
    """The entry of ``rec``, or None with the problems added to ``problems``."""
    prim = PRIMITIVES.get(rec.prim)
    if prim is None:
        problems.append(f"op {rec.name!r}: kind {rec.prim!r} is not a registered primitive; "
                        f"program files hold ops of registered kinds only")
        return None
    entry: dict = {"name": rec.name, "kind": rec.prim}
    ok = True
    for param, kind in prim.params.items():
        value = rec.params.get(param, prim.defaults.get(param))
        encoded = _encode_param(rec.name, param, kind, value, problems)
        if encoded is _REFUSED:
            ok = False
        else:
            entry[param] = encoded
    ins = [a for a in rec.accesses if a.mode == "R"]
    outs = [a for a in rec.accesses if a.mode == "W"]
    seed_form = len(ins) + len(outs) == len(rec.accesses) and \
        [a.slot for a in rec.accesses] == list(range(len(rec.accesses))) and \
        all(a.mode == "R" for a in rec.accesses[:len(ins)])
    if seed_form:
        entry["inputs"] = [a.view.name for a in ins]
        entry["outputs"] = [a.view.name for a in outs]
    else:
        entry["accesses"] = [[a.slot, a.mode, a.view.name] for a in rec.accesses]
    if rec.n_values != (0 if rec.output_views else 1):
        entry["values"] = rec.n_values
    if rec.after:
        entry["after"] = list(rec.after)
    return entry if ok else None


_REFUSED = object()


def _encode_param(op_name, param, kind, value, problems):
    if kind == "number":
        if isinstance(value, (bool, np.bool_)):
            problems.append(f"op {op_name!r}: {param} must be a number, got {value!r}")
            return _REFUSED
        if isinstance(value, (np.integer, int)):
            return int(value)
        return RawJSON(encode_float(float(value)))
    if kind == "int":
        return int(value)
    if kind == "bool":
        return bool(value)
    if kind == "str":
        return value
    if kind == "json":
        return _json_floats(value)
    if kind in REGISTRIES:
        table = REGISTRIES[kind]
        if isinstance(value, str) and value in table:
            return value
        name = getattr(value, "__name__", None)
        if isinstance(name, str) and table.get(name) is value:  # the registry's own function
            return name
        shown = getattr(value, "__name__", repr(value))
        problems.append(f"op {op_name!r}: function {shown!r} is a Python callable, not a "
                        f"registered {_FAMILY_WORD.get(kind, kind)} function, so it cannot be "
                        f"saved; use one of {', '.join(sorted(table))}")
        return _REFUSED
    problems.append(f"op {op_name!r}: parameter {param!r} ({kind}) cannot be saved: a "
                    f"program file holds numbers, ints, booleans, strings, JSON data and "
                    f"function names")
    return _REFUSED


def _json_floats(value):
    """JSON data with floats written exactly (as :func:`encode_float` does)."""
    if isinstance(value, float):
        return RawJSON(encode_float(value))
    if isinstance(value, (list, tuple)):
        return [_json_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_floats(v) for k, v in value.items()}
    return value


# ---- loading ------------------------------------------------------------------------------------
def decode_params(loader, entry, path: str, prim) -> dict | None:
    """The entry's parameters for ``prim``, checked by type (problems reported on
    ``loader``), or None."""
    args = {}
    ok = True
    for param, kind in prim.params.items():
        if param not in entry:
            continue
        value, where = entry[param], f"{path}.{param}"
        if kind == "number":
            converted, problem = check_scalar(value, np.dtype("float64"))
            if problem:
                loader.bad(where, problem.replace(" for dtype float64", ""))
                ok = False
            else:
                args[param] = converted
        elif kind == "int":
            converted = loader.int_value(value, where)
            ok = ok and converted is not None
            args[param] = converted
        elif kind in REGISTRIES:
            table = REGISTRIES[kind]
            if not isinstance(value, str) or value not in table:
                hint = loader.suggest(value, table) if isinstance(value, str) else ""
                loader.bad(where, f"unknown {_FAMILY_WORD.get(kind, kind)} function "
                                  f"{show(value)}{hint}; choose one of "
                                  f"{', '.join(sorted(table))}")
                ok = False
            else:
                args[param] = value
        elif kind == "json":
            args[param] = value  # the parser's values are JSON data already
        elif kind in ("bool", "str"):
            try:
                args[param] = check_param("?", param, kind, value)
            except AliasflowError as exc:
                loader.bad(where, str(exc).split(": ", 1)[-1])
                ok = False
        else:  # "any": nothing a file can hold
            loader.bad(where, f"parameter {param!r} of kind {prim.name!r} cannot be read from a "
                              f"file (type {kind})")
            ok = False
    return args if ok else None


def decode_accesses(loader, entry, path: str, resolve):
    """``(inputs, outputs, accesses, ok)``: the seed form's view lists, or the accesses."""
    if "accesses" in entry and ("inputs" in entry or "outputs" in entry):
        loader.bad(path, "give either \"accesses\" or \"inputs\"/\"outputs\", not both")
        return None, None, None, False
    if "accesses" not in entry:
        views = {}
        ok = True
        for role in ("inputs", "outputs"):
            refs = loader.list_of(entry, role, path, default=[])
            views[role] = [resolve(ref, f"{path}.{role}[{i}]") for i, ref in enumerate(refs or [])]
            ok = ok and refs is not None and all(v is not None for v in views[role])
        return views["inputs"], views["outputs"], None, ok
    items = loader.list_of(entry, "accesses", path)
    if items is None:
        return None, None, None, False
    accesses, ok = [], True
    for i, item in enumerate(items):
        where = f"{path}.accesses[{i}]"
        if not (isinstance(item, list) and len(item) == 3):
            loader.bad(where, f"expected [slot, mode, view], got {show(item)}")
            ok = False
            continue
        slot = loader.int_value(item[0], f"{where}[0]", minimum=0)
        if item[1] not in MODES:
            loader.bad(f"{where}[1]", f"expected a mode, one of {', '.join(MODES)}, got "
                                      f"{show(item[1])}")
            ok = False
        view = resolve(item[2], f"{where}[2]")
        if slot is None or view is None:
            ok = False
        elif ok:
            accesses.append(Access(slot, item[1], view))
    return None, None, accesses, ok


def build_op(loader, entry, path: str, name: str, prim, args, inputs, outputs, accesses,
             after, values):
    """The op of an entry: the seed's builder for the seed's kinds in the seed's form (what
    Python code would have made), else a record."""
    try:
        builder = BUILDERS.get(prim.name)
        if builder is not None and accesses is None and not after and values is None:
            return prim.make(name, **args).set_inputs(*inputs).set_outputs(*outputs)
        params = prim.bind(name, args)
        if accesses is None:
            n = len(inputs)
            accesses = [Access(k, "R", v) for k, v in enumerate(inputs)] + \
                [Access(n + k, "W", v) for k, v in enumerate(outputs)]
        writes = any(a.mode != "R" for a in accesses)
        return OpRecord(name, prim.name, accesses, params,
                        (0 if writes else 1) if values is None else values, after)
    except AliasflowError as exc:
        loader.bad(path, str(exc))
        return None
