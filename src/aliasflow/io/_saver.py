"""Writing program files: exact values, explicit views and params."""
from __future__ import annotations

import base64
import json
import os
import uuid
from pathlib import Path

import numpy as np

from ..core.program import Program
from ._format import FORMAT, VERSION, ProgramFileError
from ._ops import RawJSON as _RawJSON, encode_op
from ._datafile import SAFETENSORS_DTYPES, shared_memories, write_data_file
from ._values import DTYPES, encode_array, encode_float, is_all_zero


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


def _odd_nans(data: np.ndarray) -> bool:
    """Does a float array hold a NaN whose bits are not those of ``np.nan`` in its dtype (a
    payload, a sign, a signalling NaN)? Text (``"nan"``) would lose them."""
    if data.dtype.kind not in "fc" or data.size == 0:
        return False
    parts = (data.real, data.imag) if data.dtype.kind == "c" else (data,)
    for part in parts:
        nans = np.isnan(part)
        if nans.any():
            bits = np.ascontiguousarray(part[nans]).view(f"u{part.dtype.itemsize}")
            canonical = np.array([np.nan], part.dtype).view(f"u{part.dtype.itemsize}")[0]
            if (bits != canonical).any():
                return True
    return False


def dumps_program(program: Program, *, description: str | None = None) -> str:
    """The program as program-file text (see the module docstring).

    ``description`` defaults to the program's ``description`` attribute, if any. Raises
    :class:`ProgramFileError` naming every tensor or op that a file cannot hold.
    """
    return _document(program, description, None)[0]


def _document(program, description, data_file):
    """``(text, arrays)``: the file's text and, with a ``data_file`` name, the arrays that go
    into the data file."""
    if isinstance(program, (list, tuple)):
        program = Program(program)
    if not isinstance(program, Program):
        raise ProgramFileError([f"expected a Program or a list of ops, got "
                                f"{type(program).__name__}"], "<program>")
    problems: list[str] = []
    arrays: dict[str, np.ndarray] = {}
    if description is None:
        description = getattr(program, "description", None)
    named = [("tensor", t.name) for t in program.tensors.values()] + \
        [("view", v.name) for v in program.views.values()] + \
        [("op", op.name) for op in program.records] + \
        ([("description", description)] if isinstance(description, str) else [])
    for what, text in named:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            problems.append(f"{what} {ascii(text)[:60]}: holds a lone surrogate "
                            f"({ascii(text[exc.start])}), which a UTF-8 file cannot hold")
    placement, shared = shared_memories(program.tensors.values())
    for t in program.tensors.values():
        # NaNs with payloads other than NumPy's own have no exact text: such a tensor's bytes
        # go over a storage entry of its own, as bytes
        if id(t) not in placement and t.storage.has_memory and _odd_nans(t.data):
            name = f"memory{len(shared)}"
            shared.append((name, t.storage.nbytes, t.storage.bytes.copy()))
            placement[id(t)] = (name, 0)
    storages = []
    for name, nbytes, contents in shared:
        entry = {"name": name, "nbytes": nbytes}
        if contents is None or not contents.any():
            entry["init"] = "zeros"
        elif data_file is not None:
            entry["init"] = "data_file"
            arrays[f"storage:{name}"] = contents
        else:
            entry["init"] = {"base64": base64.b64encode(contents.tobytes()).decode("ascii")}
        storages.append(entry)
    tensors = []
    for t in program.tensors.values():
        if t.dtype.name not in DTYPES:
            problems.append(f"tensor {t.name!r}: dtype {t.dtype} cannot be saved; program "
                            f"files hold {', '.join(DTYPES)}")
            continue
        entry = {"name": t.name, "shape": list(t.shape), "dtype": t.dtype.name}
        if id(t) in placement:
            entry["storage"], entry["byte_offset"] = placement[id(t)]
            tensors.append(entry)
            continue
        data = t.data.reshape(t.shape)
        if is_all_zero(data):
            entry["init"] = "zeros"
        elif data_file is not None and t.dtype.name in SAFETENSORS_DTYPES:
            entry["init"] = "data_file"
            arrays[f"tensor:{t.name}"] = data
        else:
            entry["init"] = {"data": _RawJSON(encode_array(data, indent=4))}
        tensors.append(entry)
    views = []
    for v in program.views.values():
        entry = {"name": v.name, "tensor": v.tensor.name, "offset": v.offset,
                 "shape": list(v.shape), "stride": list(v.stride)}
        if v.dtype != v.tensor.dtype:
            if v.dtype.name not in DTYPES:
                problems.append(f"view {v.name!r}: dtype {v.dtype} cannot be saved")
            entry["dtype"] = v.dtype.name
        views.append(entry)
    ops = [encode_op(rec, problems) for rec in program.records]
    if problems:
        raise ProgramFileError(problems, "<program>")
    lines = ["{", f'  "format": {json.dumps(FORMAT)},', f'  "version": {VERSION},']
    if description is not None:
        lines.append(f'  "description": {json.dumps(description, ensure_ascii=False)},')
    if data_file is not None and arrays:
        lines.append(f'  "data_file": {json.dumps(data_file, ensure_ascii=False)},')
    sections = [("tensors", tensors), ("views", views), ("ops", ops)]
    if storages:
        sections.insert(0, ("storages", storages))
    for k, (key, entries) in enumerate(sections):
        body = ",\n".join(f"    {_compact(e)}" for e in entries)
        lines.append(f'  "{key}": [' + (f"\n{body}\n  ]" if entries else "]")
                     + ("" if k == len(sections) - 1 else ","))
    lines.append("}")
    return "\n".join(lines) + "\n", arrays


def save_program(program, path, *, description: str | None = None, data: str = "json") -> None:
    """Write ``program`` (a Program or a list of ops) to ``path`` as a program file.

    ``data="json"`` keeps contents in the JSON (exact text); ``data="safetensors"`` writes
    them to a safetensors file beside it (``path`` with the suffix ``.safetensors``), which
    loading memory-maps without a copy. Round trips are bit-exact either way, and tensors
    sharing memory stay over one storage.
    """
    if data not in ("json", "safetensors"):
        raise ProgramFileError([f"data must be \"json\" or \"safetensors\", got {data!r}"],
                               "<program>")
    path = Path(os.fspath(path))
    data_path = path.with_suffix(".safetensors") if data == "safetensors" else None
    if data_path is not None and data_path == path:
        raise ProgramFileError([f"{path}: the program file cannot itself end in "
                                f".safetensors"], "<program>")
    text, arrays = _document(program, description,
                             None if data_path is None else data_path.name)
    if arrays:
        write_data_file(data_path, arrays)
    path.write_text(text, encoding="utf-8")
