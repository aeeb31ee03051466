"""Storage contents beside a program file: shared memory in JSON, safetensors data files.

Tensors whose memory overlaps (imports of one buffer, reinterpreting views) are saved as
tensors over one ``"storages"`` entry at byte offsets, so a round trip keeps their aliasing.
Contents can live in a safetensors file next to the JSON: it is written with the
``safetensors`` library. Reading checks the whole header against the file first, then copies
the entries the program uses (and only those) into fresh memory through one open file, with
no memory mapping: a loaded program never depends on the file again, so truncating,
rewriting or deleting the file afterwards changes nothing a program holds (a mapped page
that vanished would kill the process with SIGBUS, and one rewritten in place would silently
change the loaded values), and a header with any number of entries costs no file handles or
mappings beyond the one file. Only regular files are read: a FIFO, a device or a directory
named as a data file is refused before anything waits on it.
"""
from __future__ import annotations

import json
import os
import stat
import struct
from pathlib import Path

import numpy as np

from ..core.storage import Storage, memory_groups
from ..core.values import MAX_DIMS

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


MAX_HEADER_DIGITS = 30  # no shape or offset of a real file needs more


class DataFile:
    """A checked safetensors file, open for reading the entries a program asks for.

    ``entries`` maps each name to ``(dtype, shape, start, nbytes)`` (``start`` from the
    beginning of the file); :meth:`read` copies one entry into a fresh array. Use as a
    context manager, or call :meth:`close`.
    """

    def __init__(self, path: Path):
        self.path = path
        try:
            self.file = open_regular(path)
        except OSError as exc:
            raise DataFileError(f"cannot read it: {exc.strerror or exc}") from None
        try:
            self.size = os.fstat(self.file.fileno()).st_size
            self.entries = self._header()
        except BaseException:
            self.file.close()
            raise

    def _header(self) -> dict:
        head = self.file.read(8)
        if len(head) < 8:
            raise DataFileError("too short to be a safetensors file")
        (n,) = struct.unpack("<Q", head)
        if n > min(MAX_HEADER_BYTES, self.size - 8):
            raise DataFileError(f"header length {n} does not fit in the file of {self.size} "
                                f"bytes")
        text = self.file.read(n)
        if len(text) != n:
            raise DataFileError("the file changed while its header was read")
        try:
            header = json.loads(text, object_pairs_hook=_no_duplicates,
                                parse_constant=_no_constant, parse_int=_bounded_int)
        except _HeaderProblem as exc:
            raise DataFileError(f"header: {exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataFileError(f"header is not valid JSON: {exc}") from None
        except (ValueError, RecursionError) as exc:
            raise DataFileError(f"header is not usable JSON: {exc}") from None
        if not isinstance(header, dict):
            raise DataFileError("header is not a JSON object")
        start = 8 + n
        entries = {}
        for key, info in header.items():
            if key == "__metadata__":
                if not isinstance(info, dict) or not all(isinstance(v, str)
                                                         for v in info.values()):
                    raise DataFileError(f"__metadata__ must map strings to strings, got "
                                        f"{_show(info)}")
                continue
            entries[key] = _entry(key, info, start, self.size - start)
        return entries

    def read(self, key: str) -> np.ndarray:
        """A copy of entry ``key`` (an array of its dtype and shape)."""
        dtype, shape, start, nbytes = self.entries[key]
        try:
            out = np.empty(shape, dtype)
        except (MemoryError, ValueError):
            raise DataFileError(f"entry {key!r}: cannot allocate {nbytes} bytes") from None
        buf = memoryview(out.reshape(-1).view(np.uint8))
        self.file.seek(start)
        done = 0
        while done < nbytes:  # a read may stop short (Linux: 2 GiB at most at a time)
            got = self.file.readinto(buf[done:])
            if not got:
                raise DataFileError(f"entry {key!r}: the file changed while it was read "
                                    f"(got {done} of {nbytes} bytes)")
            done += got
        return out

    def close(self) -> None:
        self.file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_regular(path: Path):
    """``path`` opened for reading in binary; :class:`DataFileError` unless it is a regular
    file (``OSError`` when it cannot be opened). Opening does not wait (``O_NONBLOCK``, so a
    FIFO with no writer cannot block) and the check is on the opened file itself
    (``fstat``), so nothing can be swapped in between."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise DataFileError(f"not a regular file ({_file_kind(mode)}); only regular files "
                                f"are read, so nothing can wait on it forever")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _file_kind(mode: int) -> str:
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "not a regular file"


class _HeaderProblem(Exception):
    pass


def _no_duplicates(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _HeaderProblem(f"key {k!r} is given more than once")
            seen.add(k)
    return out


def _no_constant(name):
    raise _HeaderProblem(f"{name} is not a number a safetensors header may hold")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_HEADER_DIGITS:
        raise _HeaderProblem(f"the integer {text[:20]}... has {len(text.lstrip('-'))} digits; "
                             f"no shape or offset needs more than {MAX_HEADER_DIGITS}")
    return int(text)


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _entry(key: str, info, start: int, data_bytes: int):
    """``(dtype, shape, start, nbytes)`` of one header entry, checked against the file's
    ``data_bytes`` bytes of data: every field of the right type and size."""
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise DataFileError(f"entry {key!r}: expected {{\"dtype\", \"shape\", "
                            f"\"data_offsets\"}}, got {_show(info)}")
    dtype_name, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype_name, str) or dtype_name not in _FROM_SAFETENSORS:
        raise DataFileError(f"entry {key!r}: dtype {_show(dtype_name)} is not one of "
                            f"{', '.join(_FROM_SAFETENSORS)}")
    if not isinstance(shape, list) or len(shape) > MAX_DIMS or \
            not all(_plain_int(d) and d >= 0 for d in shape):
        raise DataFileError(f"entry {key!r}: shape {_show(shape)} is not a list of at most "
                            f"{MAX_DIMS} non-negative ints")
    if not isinstance(offsets, list) or len(offsets) != 2 or \
            not all(_plain_int(x) for x in offsets):
        raise DataFileError(f"entry {key!r}: data_offsets {_show(offsets)} is not a pair of "
                            f"ints")
    dtype = np.dtype(_FROM_SAFETENSORS[dtype_name])
    b, e = offsets
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    if not 0 <= b <= e <= data_bytes or e - b != nbytes:
        raise DataFileError(f"entry {key!r}: data offsets [{b}, {e}) do not hold shape "
                            f"{tuple(shape)} of {dtype.name} ({nbytes} bytes) inside the "
                            f"file's {data_bytes} bytes of data")
    return dtype, tuple(shape), start + b, nbytes


def _plain_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


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
    """A loaded storage entry: fresh memory, or the contents given (a fresh copy)."""
    if contents is None:
        return Storage.allocate(nbytes, name)
    return Storage.of_contiguous(contents, name)
