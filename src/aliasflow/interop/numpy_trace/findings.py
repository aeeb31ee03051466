"""Findings of a NumPy trace, in the classes the PyTorch tracer's findings use.

Classes, most serious first:

- ``wrong``: the operation's result differs from copy semantics, confirmed by re-running it
  on copies (``differs`` elements; ``example`` = (index, got, expected)). Kinds:
  ``in-op-overlap`` (what it wrote overlaps what it read), ``self-overlap-write`` (a
  destination mapping several indices to one element), ``duplicate-index`` (repeated
  indices writing different values), ``kernel`` (no overlap at all: NumPy's loop for this
  layout is wrong; the finding carries the NumPy version).
- ``hazard``: the same mechanisms where this run happened to agree with copy semantics, but
  the same layouts with other values do not (so the result depends on NumPy's loop order),
  outputs of one operation that overlap each other, and augmented assignments through
  repeated indices (``a[i] += 1`` adds once per distinct index).
- ``stale-view``: a read through a view made before a write changed some of its bytes
  through another view: in one statement (``a[0], a[1] = a[1], a[0]`` with rows), or a
  named view whose old bytes the program evidently meant to keep: first read only after
  the write, and moving data back to where the write took it from (a swap through a
  temporary that was a view). A view read before the write (an iteration over live memory)
  is meant as a view.
- ``order``: every other implicit flow between two operations through different views
  (off by default: ``findings(all=True)``).

Findings are the shared :class:`aliasflow.interop.findings.Finding` (one class, text, JSON
and HTML report for both tracers, ``framework="numpy"`` for NumPy's hints), made in one
place, :func:`to_findings`, from the trace's observations (plain :class:`Observation`
values), grouping repeats at the same lines.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..findings.model import RANK, Finding
from ..findings.source import relative
from .memory import overlap
from .runtime import SITES


@dataclass(frozen=True)
class Observation:
    """One suspicious event, before grouping: ``ops`` are op indices in program order,
    ``names`` the operands as written (the written one first; for a stale view the view
    read, then the write). ``accesses``: for each name, ``(op index, position of the access
    in that op's note)``; ``addresses``: start addresses of the elements involved, in the
    first access's dtype (an array, or a function computing it when asked)."""
    severity: str
    kind: str
    ops: tuple
    names: tuple
    count: int
    differs: int | None = None
    example: tuple | None = None
    numpy: str | None = None
    accesses: tuple = ()
    addresses: object = field(default=None, compare=False, repr=False)


# ---- naming -------------------------------------------------------------------------------------
def line_of(note) -> str:
    site = SITES[note[0]]
    return f"{relative(site.path)}:{site.line}"


def label_text(note, label) -> str:
    """The operand ``label`` of ``note`` as the user wrote it."""
    names = dict(SITES[note[0]].names)
    if label == "target" and note[1] in ("setitem", "flat-setitem", "aug-setitem") and \
            note[2] and note[2][0][3] is not None:
        text = names.get("container", names.get("target", "?"))   # a scatter: all of it
        return text[:-5] if text.endswith(".flat") else text
    if label in names:
        return names[label]
    if isinstance(label, tuple) and label[:-1] in names and len(label) > 2:
        return f"{names[label[:-1]]}[{label[-1]}]"
    return str(label)


# ---- observations ---------------------------------------------------------------------------------
def observe(recorder, numpy_version: str) -> list[Observation]:
    """Outcomes of confirmations and stale views, one observation each."""
    found = []
    for index, note in recorder.outcomes():
        outcome = note[3]
        accesses = note[2]
        writes = [p for p, a in enumerate(accesses) if a[1] != "R"]
        if not writes:
            continue
        target = accesses[writes[0]]
        readers = [p for p, a in enumerate(accesses)
                   if a[1] == "R" and overlap(target[2], a[2])]
        names = tuple(label_text(note, accesses[p][0]) for p in writes[:1] + readers)
        if outcome.kind in ("duplicate-index", "self-overlap-write"):
            hits = _repeated(target)          # the elements written more than once
            count = outcome.differs or int(hits.size)
        elif not readers:
            hits = _targets(target)
            count = outcome.differs or _elements(target)
        else:
            hits = _shared_starts(target, [accesses[p] for p in readers])
            count = int(hits.size)
        found.append(Observation(
            outcome.severity, outcome.kind, (index,), names, count,
            outcome.differs if outcome.severity == "wrong" else None,
            outcome.example, numpy_version if outcome.kind == "kernel" else None,
            tuple((index, p) for p in writes[:1] + readers), hits))
    if recorder.stale_candidates():
        found.extend(stale_views(recorder))
    return found


def _elements(access) -> int:
    if access[3] is not None:
        return int(np.unique(access[3]).size)
    return int(np.prod(access[2][1], dtype=np.int64))


def _targets(access):
    """Start addresses of the elements an access writes, when asked for."""
    if access[3] is not None:
        return np.unique(access[3])
    from .memory import element_starts
    return lambda: np.unique(element_starts(access[2]))


def _repeated(access) -> np.ndarray:
    """Start addresses of the elements an access writes through several indices (repeated
    fancy indices, an ``as_strided`` window)."""
    from .memory import element_starts
    starts = np.asarray(access[3]) if access[3] is not None else element_starts(access[2])
    addresses, times = np.unique(starts, return_counts=True)
    return addresses[times > 1]


def _shared_starts(target, readers) -> np.ndarray:
    """Start addresses of the elements of the written access holding a byte some
    overlapping read touches (enumerated: findings are few and their operands the
    program's own arrays)."""
    from .memory import element_starts
    starts = element_starts(target[2]) if target[3] is None else np.unique(target[3])
    isz = target[2][3].itemsize
    read_bytes = np.unique(np.concatenate([
        np.add.outer(element_starts(r[2]), np.arange(r[2][3].itemsize)).ravel()
        for r in readers]))
    hit = np.isin(np.add.outer(starts, np.arange(isz)), read_bytes).any(axis=-1)
    return np.unique(starts[hit])


def stale_views(recorder) -> list[Observation]:
    ops, errors = recorder.ops, recorder.errors
    writes = defaultdict(lambda: ([], []))     # gen -> (op indices, accesses)
    for i, note in enumerate(ops):
        if i in errors:
            continue
        for a in note[2]:
            if a[1] != "R":
                keys, accs = writes[a[2][4]]
                keys.append(i)
                accs.append(a)
    found = []
    checked = {}   # a read view -> op index up to which no write made it stale
    first_read = {}   # a named view -> the op that first read it
    for j, note in enumerate(ops):
        if j in errors:
            continue
        for read in note[2]:
            if read[1] != "R" or read[4] is None:
                continue
            count, how = read[4]
            lay = read[2]
            key = lay[:4]
            first = first_read.setdefault((key, count), j)
            start = max(count, checked.get(key, count))
            keys, accs = writes.get(lay[4], ((), ()))
            hit = None
            for k in range(bisect_left(keys, start), bisect_left(keys, j)):
                w = accs[k]
                if not overlap(w[2], lay):
                    continue
                i = keys[k]
                # a named view the program read before the write is one it keeps using as
                # a view (an iteration over live memory), not one it took for a copy
                if how == "statement" or (first > i and _round_trip(ops[i], note, lay)):
                    hit = (i, w)
                    break
            if hit is None:
                checked[key] = j
                continue
            i, w = hit
            shared = _shared_starts(read, [w])   # in the stale view's elements
            found.append(Observation(
                "stale-view", "RAW", (i, j), (label_text(note, read[0]),
                                               label_text(ops[i], w[0])),
                int(shared.size), accesses=((j, note[2].index(read)), (i, ops[i][2].index(w))),
                addresses=shared))
    return found


def _round_trip(writer, reader, view) -> bool:
    """Does the reader write back to where the writer read from (a swap through a view it
    meant as a copy), without writing the stale view itself?"""
    sources = [a[2] for a in writer[2] if a[1] == "R"]
    targets = [a[2] for a in reader[2] if a[1] != "R"]
    if any(overlap(t, view) for t in targets):
        return False
    return any(overlap(t, s) for t in targets for s in sources)


# ---- the interface: observations -> findings ------------------------------------------------------
def to_findings(observations, records, *, ops, memory=None) -> list[Finding]:
    """Shared :class:`~aliasflow.interop.findings.Finding` objects for ``observations``,
    repeats of one severity and kind at the same lines grouped into one (the first one's
    details, the number of occurrences), most serious first. ``records[i]`` is op ``i``'s
    record (its ``info`` the op's :class:`~aliasflow.interop.findings.OpInfo`); ``ops[i]``
    its note; ``memory`` (:class:`.records.Memory` of those notes) gives the findings their
    views as slots (the footprint grid, ``elements()``), as the PyTorch tracer's have."""
    groups: dict = {}
    for obs in observations:
        lines = tuple(dict.fromkeys(line_of(ops[i]) for i in obs.ops))
        key = (obs.severity, obs.kind, lines)
        if key in groups:
            groups[key][1] += 1
        else:
            groups[key] = [obs, 1]
    out = []
    for (severity, kind, _lines), (obs, occurrences) in groups.items():
        slots = _slots(obs, ops, memory) if memory is not None else []
        out.append(Finding(
            severity, kind, [records[i].info for i in obs.ops], obs.count, slots,
            differs=obs.differs, example=obs.example, occurrences=occurrences,
            names=list(obs.names), framework="numpy", numpy=obs.numpy,
            _addresses=obs.addresses if slots else None))
    out.sort(key=lambda f: (RANK[f.severity], f.ops[0].index))
    return out


def _slots(obs, ops, memory) -> list:
    """The observation's accesses as shared :class:`~aliasflow.interop.findings.Slot` s
    (element views at their real addresses, named as the user wrote them); empty when one
    cannot be an element view (an unaligned layout: its grid would not be one of elements)."""
    from ..findings.model import Slot
    out = []
    for name, (i, position) in zip(obs.names, obs.accesses):
        label, mode, lay, at, _created = ops[i][2][position]
        view = memory.element_view(lay, name)
        if view is None:
            return []
        dtype = lay[3]
        out.append(Slot(str(label), "RW" if at is not None else mode, view,
                        dtype.name if dtype.isnative else dtype.str, lay[4], lay[4], name))
    return out
