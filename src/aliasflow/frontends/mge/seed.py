"""Seed 001's table and exercises, run and observed through :func:`layers`.

Each row's statement is run on fresh tensors; what changed in each layer is *observed* by
comparing the layers before and after (object identity, implementation and storage ids,
refcounts), never written down. The seed's own words are kept next to each row only so a
reader (and the tests) can compare them with what was observed.
"""
from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass
from typing import Callable

from ...analysis.dependencies import analyze
from . import functional as F
from .runtime import config, recorded_ops, reset, storage_info
from .tensor import Tensor, layers


def _fresh():
    return {"a": Tensor([[1.0, 2.0], [3.0, 4.0]])}


def _iadd(ns):
    a = ns.pop("a")
    a += 1
    ns["a"] = a


def _rebind(ns):
    ns["a"] = ns["a"] + 1


def _getitem(ns):
    ns["b"] = ns["a"][0]


def _reshape(ns):
    ns["b"] = ns["a"].reshape(4)


def _transpose(ns):
    ns["b"] = F.transpose(ns["a"])


def _setitem(ns):
    ns["a"][0] = 1


def _alias(ns):
    ns["b"] = ns["a"]


@dataclass(frozen=True)
class Row:
    statement: str
    version: str
    target: str            # the variable the statement (re)binds or changes
    run: Callable[[dict], None]
    seed: tuple[str, str, str]   # the seed's words: Python tensor, C++ tensor, storage


# The seed's table; versions as its rows say (rows without a version are run on 1.9).
ROWS = [
    Row("a += 1", "1.9", "a", _iadd, ("unchanged", "new", "new, old ref -1")),
    Row("a = a + 1", "1.9", "a", _rebind, ("new, old ref -1", "new", "new, old ref -1")),
    Row("b = a[0]", "1.8", "b", _getitem, ("new", "new", "new, copied from old")),
    Row("b = a[0]", "1.9", "b", _getitem, ("new", "new", "reused, ref +1")),
    Row("b = a.reshape(4)", "1.9", "b", _reshape, ("new", "new", "reused, ref +1")),
    Row("b = F.transpose(a)", "1.9", "b", _transpose, ("new", "new", "reused, ref +1")),
    Row("a[0] = 1", "1.9", "a", _setitem, ("unchanged", "new", "new, copied from old, old ref -1")),
    Row("b = a", "1.9", "b", _alias, ("unchanged", "unchanged", "unchanged")),
]


@dataclass(frozen=True)
class Observation:
    row: Row
    semantics: str
    python: str
    impl: str
    storage: str
    before: object   # Layers of a before
    after: object    # Layers of the target after

    def kinds(self) -> tuple[str, str, str]:
        """The observation reduced to the seed's vocabulary (details in brackets dropped)."""
        return tuple(_plain(x) for x in (self.python, self.impl, self.storage))


def _plain(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")"
    return " ".join("".join(out).split()).replace(" ,", ",")


def observe(row: Row, semantics: str) -> Observation:
    """Run ``row`` on a fresh ``a`` and report, per layer, what changed."""
    with config(version=row.version, semantics=semantics):
        ns = _fresh()
        a = ns["a"]
        before = layers(a)
        old_py = weakref.ref(a)
        old_impl_uid = before.impl.uid
        old_storage = a._impl.storage
        old_rc = old_storage.refcount
        del a
        start = len(recorded_ops())
        row.run(ns)
        ops = recorded_ops()[start:]
        gc.collect()
        t = ns[row.target]
        after = layers(t)
    # Python tensor
    if t is old_py():
        python = "unchanged"
    elif row.target == "a":
        python = "new, old ref -1" + (" (old released)" if old_py() is None else "")
    else:
        python = "new"
    impl = "unchanged" if after.impl.uid == old_impl_uid else "new"
    # Storage
    if after.storage.uid == old_storage.uid:
        delta = after.storage.refcount - old_rc
        storage = ("unchanged" if delta == 0 else
                   f"reused, ref {delta:+d} ({old_rc} -> {after.storage.refcount})")
        if any(_inside(v, after.storage) for op in ops for v in op.output_views):
            storage += " (written in place)"
    else:
        old = storage_info(old_storage)
        delta = old.refcount - old_rc
        storage = "new"
        if _copies(ops, old, after.storage):
            storage += ", copied from old"
            if after.storage.nbytes < before.storage.nbytes:
                storage += (f" (the needed part: {after.storage.nbytes} of "
                            f"{before.storage.nbytes} bytes)")
        if delta:
            storage += f", old ref {delta:+d} ({old_rc} -> {old.refcount}" + (
                ", released)" if old.released else ")")
    return Observation(row, semantics, python, impl, storage, before, after)


def _inside(view, storage) -> bool:
    """Do the bytes ``view`` touches lie inside ``storage``'s address range?"""
    arr = view.numpy()
    if arr.size == 0:
        return False
    lo = hi = arr.__array_interface__["data"][0]
    for n, s in zip(arr.shape, arr.strides):
        lo, hi = (lo + s * (n - 1), hi) if s < 0 else (lo, hi + s * (n - 1))
    hi += arr.itemsize
    return storage.address <= lo and hi <= storage.address + storage.nbytes


def _copies(ops, old, new) -> bool:
    """Did one of ``ops`` copy memory of storage ``old`` into storage ``new``?"""
    return any(op.params.get("fn") == "copy" and op.input_views and op.output_views
               and _inside(op.input_views[0], old) and _inside(op.output_views[0], new)
               for op in ops)


EXERCISES = [
    ("a = mge.tensor([1, 2]); b = a; b += 1; print(a)", "a", [2, 3]),
    ("a = mge.tensor([1, 2]); b = a; b = b + 1; print(a)", "a", [1, 2]),
    ("a = mge.tensor([1, 2]); b = a[0]; b += 1; print(a)", "a", [1, 2]),
    ("a = mge.tensor([1, 2]); b = a; a[0] += 1; print(b)", "b", [2, 2]),
]


def _exercise(i: int):
    a = Tensor([1, 2])
    if i == 0:
        b = a
        b += 1
        return a, b
    if i == 1:
        b = a
        b = b + 1
        return a, b
    if i == 2:
        b = a[0]
        b += 1
        return a, b
    b = a
    a[0] += 1
    return a, b


@dataclass(frozen=True)
class ExerciseResult:
    code: str
    seed_answer: list
    printed: str          # what print(...) shows
    values: list          # the printed tensor's values
    edges: list           # dependencies into the final read: (src op, kind, implicit)


def run_exercise(i: int, semantics: str, version: str = "1.9") -> ExerciseResult:
    """Run exercise ``i`` (0-3); the recording is reset first and holds exactly this program."""
    code, shown, answer = EXERCISES[i]
    with config(version=version, semantics=semantics):
        reset()
        a, b = _exercise(i)
        printed = repr(a if shown == "a" else b)   # the print: one recorded read
        ops = recorded_ops()
        values = (a if shown == "a" else b).numpy().tolist()
    read = ops[-1]
    graph = analyze(ops, complete=True)
    edges = sorted({(d.src, d.kind, d.implicit) for d in graph.dependencies
                    if d.dst == read.name})
    return ExerciseResult(code, answer, printed, values, edges)
