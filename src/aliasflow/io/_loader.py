"""Reading program files: JSON parsing and the validating loader (every problem, with its
JSON path; never runs code from the file)."""
from __future__ import annotations

import base64
import binascii
import difflib
import json
from math import prod

import numpy as np

from ..core.errors import AliasflowError
from ..core.primitives import PRIMITIVES
from ..core.program import Program
from ..core.view import Tensor
from ..core.values import MAX_DIMS as NUMPY_MAX_DIMS, show_value
from ..core.view import TensorView
from ._datafile import (DataFileError, check_data_file_name, read_data_file,
                        storage_from)
from ._index import IndexSyntaxError, parse_index
from ._values import DTYPES, check_scalar, parse_init, show
from ._format import (_INT64, _KEY_HINTS, DERIVATIONS, FORMAT, MAX_DIMS, MAX_TENSOR_BYTES,
                      MAX_TOTAL_BYTES, SUPPORTED_VERSIONS)
from ._ops import BASE_KEYS, build_op, decode_accesses, decode_params, primitive_of


# ---- JSON parsing ----------------------------------------------------------------------------
class _Object(dict):
    """A JSON object that remembers keys given more than once (json keeps the last)."""

    duplicates: tuple = ()


def _object_pairs(pairs):
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen, dups = set(), []
        for k, _ in pairs:
            if k in seen and k not in dups:
                dups.append(k)
            seen.add(k)
        obj.duplicates = tuple(dups)
    return obj


MAX_INT_DIGITS = 400  # more than any field can hold (float64 tops out at 309 digits)


def _parse_int(text: str):
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _HugeNumber(text)
    return int(text)


class _HugeNumber(Exception):
    pass


def _surrogates(value, path: str, found: list) -> None:
    """JSON paths of strings holding lone surrogates (``"\\ud800"``): not Unicode text, so
    such a name could be neither printed nor saved."""
    stack = [(value, path)]
    while stack and len(found) < 5:
        value, path = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                found.append(f"{path}: the string {ascii(value)[:60]} holds a lone surrogate "
                             f"({ascii(value[exc.start])}), which is not valid Unicode text")
        elif isinstance(value, dict):
            for k, v in value.items():
                stack.append((k, f"{path} (a key)"))
                stack.append((v, f"{path}.{ascii(k)[1:-1]}"))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))


def _parse_json(text):
    try:
        doc = json.loads(text, object_pairs_hook=_object_pairs, parse_int=_parse_int)
    except _HugeNumber as exc:
        digits = len(str(exc.args[0]).lstrip("-"))
        return None, (f"$: the file holds an integer of {digits} digits (starting "
                      f"{exc.args[0][:20]}...); no field accepts more than "
                      f"{MAX_INT_DIGITS} digits")
    except json.JSONDecodeError as exc:
        return None, (f"$: not valid JSON: {exc.msg} at line {exc.lineno}, "
                      f"column {exc.colno}")
    except UnicodeDecodeError as exc:
        return None, f"$: not valid UTF-8 text: {exc}"
    except RecursionError:
        return None, "$: not usable JSON: nested too deeply"
    except ValueError as exc:  # anything else json refuses
        return None, f"$: not usable JSON: {exc}"
    found: list = []
    _surrogates(doc, "$", found)
    if found:
        return None, "; ".join(found)
    return doc, None


# ---- the loader ------------------------------------------------------------------------------
def _kind_of(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Broken:
    """Placeholder for a tensor or view whose definition had problems (already reported)."""


BROKEN = _Broken()


class _Loader:
    def __init__(self, base_dir=None, max_total_bytes: int = MAX_TOTAL_BYTES):
        self.base_dir = base_dir  # where a data file named by the program would be
        self.data: dict | None = None  # the data file's arrays, when the program has one
        self.storages: dict = {}
        self.max_total_bytes = max_total_bytes
        self.total_bytes = 0  # of the tensors accepted so far: checked before allocating
        self.problems: list[str] = []
        self.tensors: dict[str, Tensor | _Broken] = {}
        self.views: dict[str, TensorView | _Broken] = {}
        self.full_views: dict[str, TensorView] = {}
        self.later_views: set[str] = set()

    def bad(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    # -- generic checks --
    def keys(self, obj, path: str, required, optional=()) -> bool:
        """Report duplicate, missing and unknown keys; False when a required key is missing."""
        for k in getattr(obj, "duplicates", ()):
            self.bad(f"{path}.{k}", f"key {k!r} is given more than once")
        ok = True
        for k in required:
            if k not in obj:
                self.bad(path, f"missing key {k!r}")
                ok = False
        allowed = list(required) + list(optional)
        for k in obj:
            if k not in allowed:
                hint = _KEY_HINTS.get(k, "") if "of" in allowed else ""
                self.bad(f"{path}.{k}", f"unknown key {show(k)}{_suggest(k, allowed)}; "
                                        f"allowed keys: {', '.join(allowed)}{hint}")
        return ok

    def object(self, value, path: str, what: str) -> bool:
        if isinstance(value, dict):
            return True
        self.bad(path, f"expected {what} (a JSON object), got {_kind_of(value)} {show(value)}")
        return False

    def list_of(self, obj, key: str, path: str, default=None):
        value = obj.get(key, default)
        if not isinstance(value, list):
            self.bad(f"{path}.{key}", f"expected a list, got {_kind_of(value)} {show(value)}")
            return None
        return value

    def name(self, obj, path: str, seen: dict, what: str):
        name = obj.get("name")
        if "name" not in obj:
            return None  # reported by keys()
        if not isinstance(name, str) or not name:
            self.bad(f"{path}.name", f"expected a non-empty string, got {show(name)}")
            return None
        if name in seen:
            self.bad(f"{path}.name", f"duplicate {what} name {name!r} (first defined at "
                                     f"{seen[name]})")
            return None
        seen[name] = path
        return name

    def int_value(self, value, path: str, *, minimum=None) -> int | None:
        if not _is_int(value):
            self.bad(path, f"expected an int, got {show(value)}")
            return None
        if not _INT64[0] <= value <= _INT64[1]:
            self.bad(path, f"{show_value(value)} does not fit in 64 bits")
            return None
        if minimum is not None and value < minimum:
            word = "negative size" if minimum == 0 else f"must be at least {minimum}, got"
            self.bad(path, f"{word} {value}")
            return None
        return value

    def int_list(self, value, path: str, *, minimum=None, what="ints") -> list | None:
        if isinstance(value, list) and len(value) > NUMPY_MAX_DIMS:  # every int list is per dim
            self.bad(path, f"{len(value)} entries; at most {NUMPY_MAX_DIMS} dims are supported")
            return None
        if not isinstance(value, list) or any(not _is_int(v) for v in value):
            self.bad(path, f"expected a list of {what}, got {show(value)}")
            return None
        out = [self.int_value(v, f"{path}[{i}]", minimum=minimum) for i, v in enumerate(value)]
        return None if any(v is None for v in out) else out

    # -- sections --
    def load(self, doc) -> Program | None:
        if not isinstance(doc, dict):
            self.bad("$", f"expected a JSON object with keys format, version, tensors, views, "
                          f"ops; got {_kind_of(doc)} {show(doc)}")
            return None
        self.keys(doc, "$", ("format", "version", "tensors", "ops"),
                  ("description", "views", "storages", "data_file"))
        if "format" in doc and doc["format"] != FORMAT:
            self.bad("$.format", f"expected {show(FORMAT)}, got {show(doc['format'])}")
        if "version" in doc:
            version = doc["version"]
            if version not in SUPPORTED_VERSIONS or not _is_int(version):
                supported = ", ".join(map(str, SUPPORTED_VERSIONS))
                self.bad("$.version", f"unsupported version {show(version)}; this aliasflow "
                                      f"reads version {supported}")
                if _is_int(version) and version > max(SUPPORTED_VERSIONS):
                    return None  # a newer format: the rest cannot be judged
        description = doc.get("description")
        if description is not None and not isinstance(description, str):
            self.bad("$.description", f"expected a string, got {show(description)}")
        tensors = self.list_of(doc, "tensors", "$", default=[])
        views = self.list_of(doc, "views", "$", default=[])
        ops = self.list_of(doc, "ops", "$", default=[])
        # Names of views defined later, to say "defined later" rather than "unknown".
        for entry in views or []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                self.later_views.add(entry["name"])
        if "data_file" in doc:
            self.data_file(doc["data_file"])
        seen: dict = {}
        for i, entry in enumerate(self.list_of(doc, "storages", "$", default=[]) or []):
            self.storage(entry, f"$.storages[{i}]", seen)
        seen = {}
        for i, entry in enumerate(tensors or []):
            self.tensor(entry, f"$.tensors[{i}]", seen)
        seen = {}
        for i, entry in enumerate(views or []):
            self.view(entry, f"$.views[{i}]", seen)
        seen = {}
        built = [self.op(entry, f"$.ops[{i}]", seen) for i, entry in enumerate(ops or [])]
        if self.problems:
            return None
        program = Program(built, [t for t in self.tensors.values()],
                          [v for v in self.views.values()])
        program.description = description
        return program

    def data_file(self, name) -> None:
        problem = check_data_file_name(name)
        if problem is None and self.base_dir is None:
            problem = "a program read from text has no folder to find its data file in"
        if problem is None:
            try:
                self.data = read_data_file(self.base_dir / name)
            except DataFileError as exc:
                problem = f"data file {name!r}: {exc}"
        if problem:
            self.bad("$.data_file", problem)

    def from_data_file(self, key: str, shape, dtype, path: str):
        """The data file's array ``key``, checked against the shape and dtype expected."""
        if self.data is None:
            self.bad(path, "\"data_file\" contents need a \"data_file\" in the program")
            return None
        arr = self.data.get(key)
        if arr is None:
            self.bad(path, f"the data file has no entry {key!r}")
        elif arr.shape != tuple(shape) or arr.dtype != dtype:
            self.bad(path, f"the data file's entry {key!r} is {arr.dtype.name} {arr.shape}, "
                           f"expected {dtype.name} {tuple(shape)}")
        else:
            return arr
        return None

    def allocate(self, nbytes: int, path: str, what: str) -> bool:
        """Count ``nbytes`` against the file's total cap, before anything is allocated."""
        if self.total_bytes + nbytes > self.max_total_bytes:
            self.bad(path, f"{what} of {nbytes} bytes would bring the file's memory to "
                           f"{self.total_bytes + nbytes} bytes, more than the limit of "
                           f"{self.max_total_bytes} (max_total_bytes)")
            return False
        self.total_bytes += nbytes
        return True

    def storage(self, entry, path: str, seen: dict) -> None:
        if not self.object(entry, path, "a storage"):
            return
        self.keys(entry, path, ("name", "nbytes"), ("init", "description"))
        name = self.name(entry, path, seen, "storage")
        nbytes = self.int_value(entry.get("nbytes"), f"{path}.nbytes", minimum=0) \
            if "nbytes" in entry else None
        if nbytes is not None and nbytes > MAX_TENSOR_BYTES:
            self.bad(f"{path}.nbytes", f"{nbytes} bytes; at most {MAX_TENSOR_BYTES} are allowed")
            nbytes = None
        elif nbytes is not None and not self.allocate(nbytes, f"{path}.nbytes",
                                                      f"storage {show(entry.get('name'))}"):
            nbytes = None
        init = entry.get("init", "zeros")
        contents = None
        if isinstance(init, dict) and set(init) == {"base64"} and isinstance(init["base64"], str):
            try:
                contents = np.frombuffer(base64.b64decode(init["base64"], validate=True),
                                         np.uint8).copy()
            except (binascii.Error, ValueError) as exc:
                self.bad(f"{path}.init.base64", f"not valid base64: {exc}")
                return
            if nbytes is not None and contents.size != nbytes:
                self.bad(f"{path}.init.base64", f"holds {contents.size} bytes, expected "
                                                f"{nbytes}")
                return
        elif init not in ("zeros", "data_file"):
            self.bad(f"{path}.init", f"expected \"zeros\", \"data_file\" or "
                                     f"{{\"base64\": ...}}, got {show(init)}")
            return
        if name is None or nbytes is None:
            return
        if init == "data_file":
            contents = self.from_data_file(f"storage:{name}", (nbytes,), np.dtype(np.uint8),
                                           f"{path}.init")
            if contents is None:
                return
        self.storages[name] = storage_from(name, nbytes, contents)

    def tensor(self, entry, path: str, seen: dict) -> None:
        if not self.object(entry, path, "a tensor"):
            return
        self.keys(entry, path, ("name", "shape"), ("dtype", "init", "description", "storage",
                                                   "byte_offset"))
        name = self.name(entry, path, seen, "tensor")
        shape = None
        if "shape" in entry:
            shape = self.int_list(entry["shape"], f"{path}.shape", minimum=0,
                                  what="non-negative ints")
            if shape is not None and len(shape) > MAX_DIMS:
                self.bad(f"{path}.shape", f"{len(shape)} dims; at most {MAX_DIMS} are supported")
                shape = None
        dtype_name = entry.get("dtype", "float32")
        dtype = None
        if dtype_name not in DTYPES:
            self.bad(f"{path}.dtype", f"unknown dtype {show(dtype_name)}"
                     f"{_suggest(dtype_name, DTYPES) if isinstance(dtype_name, str) else ''}; "
                     f"supported: {', '.join(DTYPES)}")
        else:
            dtype = np.dtype(dtype_name)
        if shape is not None and dtype is not None:
            nbytes = prod(shape) * dtype.itemsize
            if nbytes > MAX_TENSOR_BYTES:
                self.bad(f"{path}.shape", f"tensor {show(entry.get('name'))}: shape {shape} of "
                                          f"{dtype.name} needs {nbytes} bytes; at most "
                                          f"{MAX_TENSOR_BYTES} are allowed")
                shape = None
            elif "storage" not in entry and "byte_offset" not in entry and \
                    not self.allocate(nbytes, f"{path}.shape", f"tensor {show(entry.get('name'))}"):
                shape = None  # a tensor over a storage allocates nothing: its storage did
        description = entry.get("description")
        if description is not None and not isinstance(description, str):
            self.bad(f"{path}.description", f"expected a string, got {show(description)}")
        if name is None:
            return
        self.tensors[name] = BROKEN
        if shape is None or dtype is None:
            return
        if "storage" in entry or "byte_offset" in entry:
            self.tensor_over_storage(entry, path, name, tuple(shape), dtype)
            return
        if entry.get("init") == "data_file":
            arr = self.from_data_file(f"tensor:{name}", shape, dtype, f"{path}.init")
            if arr is not None:  # memory-mapped: the tensor's storage is the file's pages
                self.tensors[name] = Tensor.from_numpy(name, arr)
            return
        before = len(self.problems)
        data = parse_init(entry.get("init", "zeros"), tuple(shape), dtype, f"{path}.init",
                          self.problems)
        if len(self.problems) > before:
            return
        try:
            self.tensors[name] = Tensor(name, tuple(shape), dtype, data)
        except AliasflowError as exc:  # pragma: no cover - checked above
            self.bad(path, str(exc))

    def tensor_over_storage(self, entry, path: str, name: str, shape, dtype) -> None:
        if "init" in entry:
            self.bad(f"{path}.init", "a tensor over a storage takes its contents from the "
                                     "storage; drop \"init\"")
        ref = entry.get("storage")
        if not isinstance(ref, str) or ref not in self.storages:
            known = list(self.storages)
            self.bad(f"{path}.storage", f"unknown storage {show(ref)}"
                     f"{_suggest(ref, known) if isinstance(ref, str) else ''}")
            return
        offset = self.int_value(entry.get("byte_offset", 0), f"{path}.byte_offset", minimum=0)
        if offset is None or "init" in entry:
            return
        storage = self.storages[ref]
        try:
            part = storage.slice(offset, prod(shape) * dtype.itemsize, name)
            self.tensors[name] = Tensor.on(part, dtype, shape, name)
        except AliasflowError as exc:
            self.bad(path, str(exc))

    def resolve(self, ref, path: str, *, deriving: bool = False):
        """The view (or tensor full view) named ``ref``; BROKEN if it was already reported."""
        if not isinstance(ref, str):
            self.bad(path, f"expected a view or tensor name (a string), got {show(ref)}")
            return BROKEN
        if ref in self.views:
            return self.views[ref]
        if ref in self.tensors:
            tensor = self.tensors[ref]
            if tensor is BROKEN:
                return BROKEN
            if ref not in self.full_views:
                self.full_views[ref] = tensor.view()
            return self.full_views[ref]
        if deriving and ref in self.later_views:
            self.bad(path, f"view {ref!r} is defined later; a view can only be derived from "
                           f"views defined before it")
        else:
            known = list(self.views) + list(self.tensors) + list(self.later_views)
            self.bad(path, f"unknown view {ref!r}{_suggest(ref, known)}")
        return BROKEN

    def view(self, entry, path: str, seen: dict) -> None:
        if not self.object(entry, path, "a view"):
            return
        derived = "of" in entry
        if derived:
            steps = [k for k in DERIVATIONS if k in entry]
            self.keys(entry, path, ("name", "of"), DERIVATIONS + ("description",))
            if len(steps) != 1:
                self.bad(path, f"a derived view needs exactly one of "
                               f"{', '.join(DERIVATIONS)}; got "
                               f"{', '.join(steps) if steps else 'none'}")
        else:
            if "tensor" not in entry:
                self.keys(entry, path, ("name",), ("tensor", "of", "offset", "shape", "stride",
                                                   "description"))
                self.bad(path, "a view needs \"tensor\" (an explicit view) or \"of\" (a view "
                               "derived from an earlier view or a tensor)")
                self.name(entry, path, seen, "view")
                return
            self.keys(entry, path, ("name", "tensor"), ("offset", "shape", "stride", "dtype",
                                                        "description"))
        name = self.name(entry, path, seen, "view")
        description = entry.get("description")
        if description is not None and not isinstance(description, str):
            self.bad(f"{path}.description", f"expected a string, got {show(description)}")
        view = self.derived_view(entry, path, name) if derived \
            else self.explicit_view(entry, path, name)
        if name is not None:
            self.views[name] = view if view is not None else BROKEN

    def explicit_view(self, entry, path: str, name):
        ok = True
        tensor = entry.get("tensor")
        if not isinstance(tensor, str):
            self.bad(f"{path}.tensor", f"expected a tensor name (a string), got {show(tensor)}")
            ok = False
        elif tensor not in self.tensors:
            self.bad(f"{path}.tensor", f"unknown tensor {tensor!r}"
                                       f"{_suggest(tensor, self.tensors)}")
            ok = False
        elif self.tensors[tensor] is BROKEN:
            ok = False
        offset = self.int_value(entry.get("offset", 0), f"{path}.offset")
        shape = stride = None
        if entry.get("shape") is not None:
            shape = self.int_list(entry["shape"], f"{path}.shape", minimum=0,
                                  what="non-negative ints")
            ok = ok and shape is not None
        if entry.get("stride") is not None:
            stride = self.int_list(entry["stride"], f"{path}.stride")
            ok = ok and stride is not None
        dtype = entry.get("dtype")
        if dtype is not None and dtype not in DTYPES:
            self.bad(f"{path}.dtype", f"unknown dtype {show(dtype)}; supported: "
                                      f"{', '.join(DTYPES)}")
            ok = False
        if not ok or offset is None or name is None:
            return None
        try:
            return TensorView(name, self.tensors[tensor], offset,
                              None if shape is None else tuple(shape),
                              None if stride is None else tuple(stride), dtype)
        except AliasflowError as exc:
            self.bad(path, str(exc))
            return None

    def derived_view(self, entry, path: str, name):
        base = self.resolve(entry.get("of"), f"{path}.of", deriving=True) \
            if "of" in entry else BROKEN
        steps = [k for k in DERIVATIONS if k in entry]
        if len(steps) != 1:
            return None
        step = steps[0]
        arg, where = entry[step], f"{path}.{step}"
        call = None
        if step == "index":
            if not isinstance(arg, str):
                self.bad(where, f"expected an index string such as \"1:3, ::2\", got {show(arg)}")
            else:
                try:
                    index = parse_index(arg)
                except IndexSyntaxError as exc:
                    self.bad(where, f"bad index {show(arg)}: {exc}")
                else:
                    call = lambda v: v[index]  # noqa: E731
        elif step == "transpose":
            if arg is None:
                call = lambda v: v.transpose()  # noqa: E731
            else:
                axes = self.int_list(arg, where)
                if axes is not None:
                    call = lambda v: v.transpose(*axes)  # noqa: E731
        elif step == "reshape":
            shape = self.int_list(arg, where, minimum=-1, what="ints (sizes, or -1)")
            if shape is not None:
                call = lambda v: v.reshape(tuple(shape))  # noqa: E731
        elif step == "broadcast_to":
            shape = self.int_list(arg, where, minimum=0, what="non-negative ints")
            if shape is not None:
                call = lambda v: v.broadcast_to(tuple(shape))  # noqa: E731
        else:
            call = self.as_strided_call(arg, where, name)
        if call is None or base is BROKEN or name is None:
            return None
        try:
            view = call(base)
            return view if view.name == name else view.rename(name)
        except AliasflowError as exc:
            self.bad(where, str(exc))
            return None

    def as_strided_call(self, arg, where: str, name):
        if not self.object(arg, where, "{\"shape\", \"stride\", \"offset\"?}"):
            return None
        if not self.keys(arg, where, ("shape", "stride"), ("offset",)):
            return None
        shape = self.int_list(arg["shape"], f"{where}.shape", minimum=0,
                              what="non-negative ints")
        stride = self.int_list(arg["stride"], f"{where}.stride")
        offset = None
        if arg.get("offset") is not None:
            offset = self.int_value(arg["offset"], f"{where}.offset")
            if offset is None:
                return None
        if shape is None or stride is None:
            return None
        return lambda v: v.as_strided(tuple(shape), tuple(stride), offset, name=name)

    def suggest(self, word: str, choices) -> str:
        return _suggest(word, choices)

    def op(self, entry, path: str, seen: dict):
        if not self.object(entry, path, "an op"):
            return None
        kind = entry.get("kind")
        prim = primitive_of(kind) if isinstance(kind, str) else None
        if prim is None:
            # Unknown kind: check the common keys only, allowing any kind's params.
            any_params = tuple(sorted({p for q in PRIMITIVES.values() for p in q.params}))
            self.keys(entry, path, ("name", "kind"), BASE_KEYS + any_params)
            if "kind" in entry:
                kinds = [k for k in PRIMITIVES if "." not in k]
                self.bad(f"{path}.kind", f"unknown op kind {show(kind)}"
                         f"{_suggest(kind, list(PRIMITIVES)) if isinstance(kind, str) else ''}"
                         f"; choose one of {', '.join(kinds)}")
        else:
            self.keys(entry, path, ("name", "kind"), BASE_KEYS + tuple(prim.params))
        earlier = set(seen)
        name = self.name(entry, path, seen, "op")
        description = entry.get("description")
        if description is not None and not isinstance(description, str):
            self.bad(f"{path}.description", f"expected a string, got {show(description)}")
        args = decode_params(self, entry, path, prim) if prim is not None else None

        def resolve(ref, where):
            view = self.resolve(ref, where)
            return None if view is BROKEN else view
        inputs, outputs, accesses, ok = decode_accesses(self, entry, path, resolve)
        values = None
        if "values" in entry:
            values = self.int_value(entry["values"], f"{path}.values", minimum=0)
            ok = ok and values is not None
        after = self.list_of(entry, "after", path, default=[])
        for i, ref in enumerate(after or []):
            if not isinstance(ref, str) or ref not in earlier:
                why = "no earlier op has that name" if isinstance(ref, str) else "not a name"
                self.bad(f"{path}.after[{i}]", f"{show(ref)}: {why}")
                ok = False
        if not ok or after is None or args is None or name is None:
            return None
        return build_op(self, entry, path, name, prim, args, inputs, outputs, accesses,
                        tuple(after), values)
