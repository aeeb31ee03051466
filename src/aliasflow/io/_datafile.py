"""Storage contents beside a program file: shared memory in JSON, safetensors data files.

Tensors whose memory overlaps (imports of one buffer, reinterpreting views) are saved as
tensors over one ``"storages"`` entry at byte offsets, so a round trip keeps their aliasing.
Contents can live in a safetensors file next to the JSON: it is written with the
``safetensors`` library and read memory-mapped (copy-on-write: running a loaded program never
changes the file) without copying, after its header has been checked against the file.
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np

from ..core.storage import Storage, memory_groups

# safetensors dtype names for the dtypes program files hold
SAFETENSORS_DTYPES = {"bool": "BOOL", "int8": "I8", "int16": "I16", "int32": "I32",
                      "int64": "I64", "uint8": "U8", "uint16": "U16", "uint32": "U32",
                      "uint64": "U64", "float16": "F16", "float32": "F32", "float64": "F64"}
_FROM_SAFETENSORS = {v: k for k, v in SAFETENSORS_DTYPES.items()}
MAX_HEADER_BYTES = 100 * 2**20


class DataFileError(Exception):
    """A data file that cannot be used; the message says why (the loader adds the path)."""


def check_data_file_name(name) -> str | None:
    """A problem with a ``data_file`` value, or None: it must be a plain file name beside the
    program file (no directories, so a file cannot point anywhere else)."""
    if not isinstance(name, str) or not name:
        return f"expected a file name (a string), got {name!r}"
    if "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        return (f"{name!r} is not a plain file name; the data file must sit beside the "
                f"program file")
    return None


def read_data_file(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a safetensors file, memory-mapped (copy-on-write), header checked."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise DataFileError("too short to be a safetensors file")
            (n,) = struct.unpack("<Q", head)
            if n > min(MAX_HEADER_BYTES, size - 8):
                raise DataFileError(f"header length {n} does not fit in the file of {size} "
                                    f"bytes")
            header = json.loads(f.read(n))
    except OSError as exc:
        raise DataFileError(f"cannot read it: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataFileError(f"header is not valid JSON: {exc}") from None
    if not isinstance(header, dict):
        raise DataFileError("header is not a JSON object")
    start = 8 + n
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        try:
            dtype = np.dtype(_FROM_SAFETENSORS[info["dtype"]])
            shape = tuple(int(d) for d in info["shape"])
            b, e = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise DataFileError(f"entry {key!r}: bad or unsupported header {info!r}") from None
        count = 1
        for d in shape:
            if d < 0:
                raise DataFileError(f"entry {key!r}: negative size in shape {shape}")
            count *= d
        if not 0 <= b <= e <= size - start or e - b != count * dtype.itemsize:
            raise DataFileError(f"entry {key!r}: data offsets [{b}, {e}) do not hold shape "
                                f"{shape} of {dtype.name} inside the file")
        if count == 0:
            out[key] = np.zeros(shape, dtype)
            continue
        raw = np.memmap(path, dtype=np.uint8, mode="c", offset=start + b, shape=(e - b,))
        out[key] = raw.view(dtype).reshape(shape)
    return out


def write_data_file(path: Path, arrays: dict[str, np.ndarray]) -> None:
    from safetensors.numpy import save_file
    save_file({k: np.ascontiguousarray(a) for k, a in arrays.items()}, os.fspath(path))


def shared_memories(tensors) -> tuple[dict[int, tuple[str, int]], list[tuple[str, int, object]]]:
    """Which tensors must be saved over a common storage entry.

    Returns ``(placement, storages)``: ``placement[id(tensor)] = (storage name, byte
    offset)`` for tensors whose memory meets another tensor's (or that see only part of
    their storage), and ``storages`` as ``(name, nbytes, contents-or-None)`` entries.
    """
    tensors = list(tensors)
    groups = memory_groups(t.storage for t in tensors)
    members: dict[int, list] = {}
    for t in tensors:
        members.setdefault(groups[id(t.storage)][0], []).append(t)
    placement, storages = {}, []
    for g, ts in members.items():
        own = len(ts) == 1 and ts[0].storage.nbytes == ts[0].size * ts[0].dtype.itemsize
        if own:
            continue
        base = min(t.storage.address for t in ts)
        end = max(t.storage.end for t in ts)
        name = f"memory{len(storages)}"
        contents = None
        if all(t.storage.has_memory for t in ts):
            contents = np.zeros(end - base, np.uint8)
            for t in ts:  # connected ranges: the storages cover [base, end) between them
                s = t.storage
                contents[s.address - base:s.end - base] = s.bytes
        storages.append((name, end - base, contents))
        for t in ts:
            placement[id(t)] = (name, t.storage.address - base)
    return placement, storages


def storage_from(name: str, nbytes: int, contents: np.ndarray | None) -> Storage:
    """A loaded storage entry: fresh memory, or the (memory-mapped) contents given."""
    if contents is None:
        return Storage.allocate(nbytes, name)
    return Storage.of_contiguous(contents, name)
