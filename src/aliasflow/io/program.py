"""Program files: an aliasflow :class:`~aliasflow.Program` as JSON.

A program file is one JSON object::

    {
      "format": "aliasflow-program",          // required, exactly this string
      "version": 1,                           // required; supported: SUPPORTED_VERSIONS
      "description": "what the program shows", // optional string
      "tensors": [...],                       // required
      "views": [...],                         // optional, default []
      "ops": [...]                            // required (may be empty)
    }

Every object accepts only the keys listed here (a misspelt key is an error, not ignored), a key
may not appear twice in one object, and names must be non-empty strings, unique among the
tensors, among the views and among the ops. Every object in ``tensors``, ``views`` and ``ops``
may carry a ``"description"`` string, which is documentation only (it is not loaded or saved).

**Tensors** ``{"name", "shape", "dtype"?, "init"?}``

- ``shape``: list of non-negative ints (at most 32 dims; at most ``MAX_TENSOR_BYTES`` of
  storage, since the storage is allocated). All tensors of one file together may hold at most
  ``MAX_TOTAL_BYTES`` (4 GiB) unless the caller passes a larger ``max_total_bytes``; the sum
  is checked before each tensor is allocated.
- ``dtype``: one of ``bool, int8..int64, uint8..uint64, float16, float32, float64``
  (default ``"float32"``).
- ``init``: ``"zeros"`` (default), ``"ones"``, ``"arange"`` (0, 1, 2, ... in row-major order),
  ``{"fill": value}`` or ``{"data": nested lists of exactly the tensor's shape}``. Values are
  ``true``/``false`` for bool, ints for int dtypes (range-checked), and numbers or the strings
  ``"nan"``, ``"inf"``, ``"-inf"`` for floats. A 0-d tensor's data is a bare value.

**Views** are either explicit or derived, in an order where every view is defined before it is
derived from:

- explicit ``{"name", "tensor", "offset"?, "shape"?, "stride"?}``: the arguments of
  ``TensorView(name, tensor, offset=0, shape=None, stride=None)``; missing ``shape`` is the
  tensor's shape, missing ``stride`` row-major strides for ``shape``. Strides may be negative or
  zero; every element must lie inside the storage.
- derived ``{"name", "of", <one derivation>}`` where ``of`` names an earlier view or a tensor
  (its full view) and the derivation is exactly one of

  - ``"index": "1:3, ::-2, ..., None, -1"``: NumPy basic indexing, ``view[1:3, ::-2, ...]``.
    The string is parsed by a small parser that knows only ints, slices, ``...`` and ``None``;
    nothing in a program file is ever evaluated;
  - ``"transpose": [1, 0]`` or ``null`` (reverse the axes): ``view.transpose(...)``;
  - ``"reshape": [2, -1]``: ``view.reshape(...)`` (refused where NumPy would need a copy);
  - ``"broadcast_to": [3, 4]``: ``view.broadcast_to(...)``;
  - ``"as_strided": {"shape", "stride", "offset"?}``: ``view.as_strided(...)``; ``offset`` is
    absolute in the storage and defaults to the base view's offset.

  These call the same methods as Python code, so a file and a Python program agree exactly.

**Shared memory and data files.** Tensors whose memory overlaps (NumPy arrays over one
buffer, reinterpreting views) are tensors over one entry of the optional top-level
``"storages"`` list, ``{"name", "nbytes", "init"?}`` (``init``: ``"zeros"`` or
``"data_file"``): such a tensor has ``"storage"`` (the entry's name) and ``"byte_offset"``
(default 0) instead of ``init``. An explicit view may give ``"dtype"`` (its own element type;
offset and strides stay in elements of the tensor's dtype). With a top-level ``"data_file"``
(a plain file name beside the program file, never a path), contents may come from that
safetensors file: a tensor's ``"init": "data_file"`` reads entry ``"tensor:NAME"``, a
storage's reads ``"storage:NAME"`` (uint8). The data file's whole header is checked against
the file first; then the entries the program uses are copied into fresh memory (no memory
mapping), so the loaded program never depends on the file again: truncating, rewriting or
deleting it afterwards changes nothing the program holds.

**Ops** ``{"name", "kind", "inputs"?, "outputs"?, <params>}`` in program order. ``inputs`` and
``outputs`` (default ``[]``) are lists of view names; a name that is not a view but a tensor
means the tensor's full view (named like the tensor). Kinds and their params (all optional, with
the Python constructors' defaults):

- ``fill``: ``fill_value`` (number, or ``"nan"``/``"inf"``/``"-inf"``; default 1.0)
- ``transform``: ``fn``, a unary function from ``aliasflow.core.functions.UNARY`` (default copy)
- ``binary``: ``fn`` from ``BINARY`` (default add)
- ``reduce``: ``fn`` from ``REDUCE`` (default sum), ``axis`` (int, default -1)

Every list of ints (shapes, strides, axes) has at most 64 entries (NumPy's limit on dims);
integers have at most 400 digits; strings must be valid Unicode (no lone surrogates such as
``"\\ud800"``). Values in ``init`` and ``fill_value`` follow the one rule of
:mod:`aliasflow.core.values`: a value that does not fit the dtype is refused (``300`` in
``int8``, ``1e39`` in ``float32``, an ``"arange"`` past 65504 in ``float16``); floats round to
the nearest value of the dtype.

Loading checks everything above and reports every problem it finds in one
:class:`ProgramFileError`, one line per problem starting with its JSON path
(``$.views[2].stride: expected a list of ints, got "x"``). It does not check that shapes fit
together: a program that cannot run (the seed's complex example) loads and can be analysed.
Files larger than ``MAX_FILE_BYTES`` are refused before they are read, and so is anything
that is not a regular file (a FIFO, a device, a directory), program or data file alike:
opening never waits on it.

Saving writes every view explicitly (tensor, offset, shape, stride, dtype when it differs),
tensor contents as ``"zeros"`` when all bits are zero and as exact ``{"data": ...}``
otherwise (see :mod:`aliasflow.io._values`) or, with ``data="safetensors"``, in a data file
beside the program, tensors that share memory over one storage entry, and every op param
explicitly. Ops whose function is a Python
callable rather than a registered name cannot be saved (the error names the op).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..core.program import Program
from ._format import (FORMAT, MAX_FILE_BYTES, MAX_TOTAL_BYTES, SUPPORTED_VERSIONS, VERSION,
                      ProgramFileError)
from ._datafile import DataFileError, open_regular
from ._loader import _Loader, _parse_json
from ._saver import dumps_program, save_program

__all__ = ["load_program", "loads_program", "save_program", "dumps_program", "ProgramFileError",
           "FORMAT", "VERSION", "SUPPORTED_VERSIONS", "MAX_FILE_BYTES"]


# ---- public API ------------------------------------------------------------------------------
def loads_program(text, *, source: str = "<string>", max_bytes: int = MAX_FILE_BYTES,
                  base_dir=None, max_total_bytes: int = MAX_TOTAL_BYTES) -> Program:
    """Parse and validate a program file's text (``str`` or ``bytes``) into a Program.

    The program gets a ``description`` attribute (the file's description, or None).
    ``max_total_bytes`` caps the memory all the file's tensors may allocate together.
    Raises :class:`ProgramFileError` listing every problem found.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise ProgramFileError([f"$: expected the file's text (str or bytes), got "
                                f"{type(text).__name__}"], source)
    if len(text) > max_bytes:
        raise ProgramFileError([f"$: {len(text)} bytes is larger than the limit of "
                                f"{max_bytes} bytes for program files"], source)
    doc, problem = _parse_json(text)
    if problem:
        raise ProgramFileError([problem], source)
    loader = _Loader(None if base_dir is None else Path(os.fspath(base_dir)), max_total_bytes)
    program = loader.load(doc)
    if loader.problems or program is None:
        raise ProgramFileError(loader.problems, source)
    return program


def load_program(path, *, max_bytes: int = MAX_FILE_BYTES,
                 max_total_bytes: int = MAX_TOTAL_BYTES) -> Program:
    """Read, parse and validate the program file at ``path`` (see the module docstring).

    Raises :class:`ProgramFileError` for a file that is too large, not a regular file or not a
    valid program (listing every problem found); ``OSError`` when the file cannot be opened.
    """
    path = Path(os.fspath(path))
    try:
        f = open_regular(path)
    except DataFileError as exc:
        raise ProgramFileError([f"$: {exc}"], str(path)) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise ProgramFileError([f"$: the file has {size} bytes, more than the limit of "
                                    f"{max_bytes} bytes for program files"], str(path))
        data = f.read(max_bytes + 1)
    return loads_program(data, source=str(path), max_bytes=max_bytes, base_dir=path.parent,
                         max_total_bytes=max_total_bytes)
