"""Writing program files: exact values, explicit views and params."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import numpy as np

from ..core.functions import REGISTRIES
from ..core.operations import OP_KINDS, Operation
from ..core.program import Program
from ._format import _FAMILY_WORD, FORMAT, KIND_PARAMS, VERSION, ProgramFileError
from ._values import DTYPES, encode_array, encode_float, is_all_zero


def _fn_problem(op: Operation, family: str) -> str | None:
    table = REGISTRIES[family]
    if table.get(op.fn_name) is op.fn:
        return None
    return (f"op {op.name!r}: function {op.fn_name!r} is a Python callable, not a registered "
            f"{_FAMILY_WORD[family]} function, so it cannot be saved; use one of "
            f"{', '.join(sorted(table))}")


def _op_entry(op: Operation, problems: list) -> dict | None:
    cls = OP_KINDS.get(op.kind)
    if cls is None or type(op) is not cls or op.kind not in KIND_PARAMS:
        problems.append(f"op {op.name!r}: a {type(op).__name__} cannot be saved; program files "
                        f"hold only {', '.join(KIND_PARAMS)} ops")
        return None
    entry: dict = {"name": op.name, "kind": op.kind}
    for param, family in KIND_PARAMS[op.kind].items():
        if family == "number":
            value = op.params[param]
            if isinstance(value, (np.integer, int)):
                entry[param] = int(value)
            else:
                entry[param] = _RawJSON(encode_float(float(value)))
        elif family == "int":
            entry[param] = int(op.params[param])
        else:
            problem = _fn_problem(op, family)
            if problem:
                problems.append(problem)
                return None
            entry[param] = op.fn_name
    entry["inputs"] = [v.name for v in op.input_views]
    entry["outputs"] = [v.name for v in op.output_views]
    return entry


class _RawJSON(str):
    """JSON text to insert as it is (exact floats, nested data)."""


def _compact(obj) -> str:
    """One-line JSON, with _RawJSON parts inserted verbatim."""
    raws: dict[str, str] = {}

    def swap(value):
        if isinstance(value, _RawJSON):
            token = f"@raw{uuid.uuid4().hex}@"
            raws[json.dumps(token)] = str(value)
            return token
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    text = json.dumps(swap(obj), ensure_ascii=False, allow_nan=False)
    for token, raw in raws.items():
        text = text.replace(token, raw, 1)
    return text


def dumps_program(program: Program, *, description: str | None = None) -> str:
    """The program as program-file text (see the module docstring).

    ``description`` defaults to the program's ``description`` attribute, if any. Raises
    :class:`ProgramFileError` naming every tensor or op that a file cannot hold.
    """
    if not isinstance(program, Program):
        raise ProgramFileError([f"expected a Program, got {type(program).__name__}"],
                               "<program>")
    problems: list[str] = []
    if description is None:
        description = getattr(program, "description", None)
    named = [("tensor", t.name) for t in program.tensors.values()] + \
        [("view", v.name) for v in program.views.values()] + \
        [("op", op.name) for op in program.ops] + \
        ([("description", description)] if isinstance(description, str) else [])
    for what, text in named:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            problems.append(f"{what} {ascii(text)[:60]}: holds a lone surrogate "
                            f"({ascii(text[exc.start])}), which a UTF-8 file cannot hold")
    tensors = []
    for t in program.tensors.values():
        if t.dtype.name not in DTYPES:
            problems.append(f"tensor {t.name!r}: dtype {t.dtype} cannot be saved; program "
                            f"files hold {', '.join(DTYPES)}")
            continue
        entry = {"name": t.name, "shape": list(t.shape), "dtype": t.dtype.name}
        data = t.data.reshape(t.shape)
        if is_all_zero(data):
            entry["init"] = "zeros"
        else:
            entry["init"] = {"data": _RawJSON(encode_array(data, indent=4))}
        tensors.append(entry)
    views = [{"name": v.name, "tensor": v.tensor.name, "offset": v.offset,
              "shape": list(v.shape), "stride": list(v.stride)}
             for v in program.views.values()]
    ops = [_op_entry(op, problems) for op in program.ops]
    if problems:
        raise ProgramFileError(problems, "<program>")
    lines = ["{", f'  "format": {json.dumps(FORMAT)},', f'  "version": {VERSION},']
    if description is not None:
        lines.append(f'  "description": {json.dumps(description, ensure_ascii=False)},')
    for key, entries, last in (("tensors", tensors, False), ("views", views, False),
                               ("ops", ops, True)):
        body = ",\n".join(f"    {_compact(e)}" for e in entries)
        lines.append(f'  "{key}": [' + (f"\n{body}\n  ]" if entries else "]")
                     + ("" if last else ","))
    lines.append("}")
    return "\n".join(lines) + "\n"


def save_program(program: Program, path, *, description: str | None = None) -> None:
    """Write ``program`` to ``path`` as a program file (see :func:`dumps_program`)."""
    text = dumps_program(program, description=description)
    Path(os.fspath(path)).write_text(text, encoding="utf-8")
