"""The classifier: op records plus :class:`~.model.OpInfo` -> findings, most serious first.

- ``in-op-overlap``: a written argument shares bytes with another argument of the same op,
  outside the pairs the producer marked harmless (an elementwise op whose argument *is* the
  written view). ``wrong`` when re-running the op on copies gave a different value for some
  element of a written argument; ``hazard`` when it agreed, could not run, or the framework
  refused the op (it then stays in the trace as failed, with this finding).
- ``self-overlap-write``: a written view maps several indices to one element. ``wrong`` when
  the re-run differed or copy semantics would give such an element different values;
  ``hazard`` otherwise, unless the op writes one value everywhere (``uniform``).
- ``duplicate-index``: repeated indices written with different values, or at all by the
  store of ``x[idx] += v`` (an index given twice gets ``v`` once) (``wrong``).
- ``stale-view`` (kind ``RAW``): a read through a view object made before a write by another
  op that changed some of its bytes through a view reaching beyond it (``first = x[:, :1]``,
  then ``x[..., :1] = ...``, then reading ``first``: the program may have expected a copy).
  Writes through the view itself or through a part of it (``x[2:5] = y`` then reading ``x``,
  a static KV cache written a slot at a time and read whole) are what views are for, except
  into a ``detach()`` the program made (``best = model.state_dict()``, then ``opt.step()``,
  then ``model.load_state_dict(best)``): a snapshot by intent, stale after a write through
  any other tensor over its memory; and except when the op also reads the same elements
  through a view made after the write (``output.append(h[-1])`` in a loop writing ``h``,
  then ``torch.stack(output)``: one finding for the older views of that write).
  Also ``stale-view``: bytes autograd saved at a forward op and read by its backward op,
  overwritten in between by a forward-phase op through any view (``y = x.sigmoid()``, then
  ``y.data.mul_(2)``, then ``backward()``): autograd refuses such a write through a tensor
  it tracks (the version check), so one it let through went by ``.data``, a NumPy view or
  the like, and the gradient used the new values. An in-place update the forward op makes
  itself (BatchNorm's running statistics) is its state, not a saved value.
- ``order`` (``RAW``/``WAR``/``WAW``, only with ``all=True``): see :mod:`.order`.

Findings at the same source lines with the same severity, kind and names are grouped: one
finding, the first one's details, ``occurrences`` counting the repeats; ``wrong`` and
``hazard`` repeats of one line (a loop whose data made some steps come out right) are one
``wrong`` finding.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

import numpy as np

from ...analysis.overlap import memory_meets, overlap
from ...core.view import Tensor, TensorView
from .model import RANK, Finding, slot_name

EXAMPLES = 4


def _grid(slot, byte_addresses: np.ndarray) -> np.ndarray:
    """Start addresses of the ``slot``-dtype elements (on its grid) holding the bytes."""
    k = slot.itemsize
    return slot.start + np.unique((byte_addresses - slot.start) // k) * k


_BYTE_VIEWS: dict = {}
_U8 = np.dtype("uint8")


def byte_view(v):
    """The same memory as view ``v``, one byte per element: ``v``'s shape and byte strides
    with the element's bytes as a last dim, over the bytes of ``v``'s storage (overlaps of
    byte views count and list bytes)."""
    if v.dtype == _U8 and v.tensor.dtype == _U8:
        return v
    got = _BYTE_VIEWS.get(v.key)
    if got is None:
        if len(_BYTE_VIEWS) > 1 << 16:
            _BYTE_VIEWS.clear()
        t = v.tensor if v.tensor.dtype == _U8 else Tensor.on(v.tensor.storage, "uint8")
        got = _BYTE_VIEWS[v.key] = TensorView._make(
            lambda: v.name, t, v.byte_offset, v.shape + (v.dtype.itemsize,),
            v.byte_strides + (1,), _U8)
    return got


def shared_bytes(va, vb) -> np.ndarray:
    """Absolute addresses of the bytes two views both touch, sorted."""
    ov = overlap(byte_view(va), byte_view(vb))
    if not ov:
        return np.zeros(0, np.int64)
    return ov.elements().astype(np.int64) + va.tensor.storage.address


def _shared_bytes(a, b) -> np.ndarray:
    return shared_bytes(a.view, b.view)


def _restrict(addresses, slot, exact):
    """Addresses of ``slot`` restricted to the elements it really wrote (``exact``)."""
    if exact is None:
        return addresses
    bytes_ = np.add.outer(np.asarray(exact, np.int64), np.arange(slot.itemsize)).reshape(-1)
    return np.intersect1d(addresses, bytes_)


def _outcome_for(info, label):
    if not info.outcomes:
        return None, None
    own = next((o for o in info.outcomes if o.label == label), None)
    worst = max(info.outcomes, key=lambda o: (o.differs + o.conflicts, o.differs))
    return own, worst


def _in_op(info) -> list[Finding]:
    found = []
    slots = info.slots
    for w, ws in enumerate(slots):
        if ws.mode not in ("W", "RW") or ws.view is None:
            continue
        hits, involved = [], [ws]
        for k, s in enumerate(slots):
            if k == w or s.view is None or s.mode is None or (w, k) in info.exempt:
                continue
            if s.mode in ("W", "RW") and k < w:
                continue   # a pair of written arguments is reported once, at the first
            if not memory_meets(ws.view, s.view) or not overlap(ws.view, s.view):
                continue
            hits.append(_restrict(_restrict(_shared_bytes(ws, s), ws, info.exact.get(w)), s,
                                  info.exact.get(k)))
            if s not in involved:
                involved.append(s)
        if not hits:
            continue
        addresses = _grid(ws, np.concatenate(hits))
        if not addresses.size:
            continue
        own, worst = _outcome_for(info, ws.label)
        pick = own if own is not None and own.differs else worst
        written_only = all(s.mode in ("W", "RW") for s in involved)
        if pick is not None and pick.differs:
            found.append(Finding("wrong", "in-op-overlap", [info], int(addresses.size),
                                 involved, differs=pick.differs, example=pick.example,
                                 _addresses=addresses, written_only=written_only))
        else:
            note = "refused by the framework" if info.failed else (
                "this run agreed with copy semantics" if info.outcomes else "not re-run")
            found.append(Finding("hazard", "in-op-overlap", [info], int(addresses.size),
                                 involved, note=note, _addresses=addresses,
                                 written_only=written_only))
    return found


_REPEATS: dict = {}


def _may_repeat(view) -> bool:
    """False when the view's dims provably never reach one byte twice (each byte stride, in
    increasing order, steps past everything the smaller ones and the element reach); True
    means "check exactly"."""
    key = (view.shape, view.stride, view.dtype.itemsize)
    got = _REPEATS.get(key)
    if got is None:
        reach = view.dtype.itemsize - 1
        got = False
        for s, n in sorted((abs(s), n) for n, s in zip(view.shape, view.stride) if n > 1):
            if s <= reach:
                got = True
                break
            reach += s * (n - 1)
        if len(_REPEATS) > 1 << 16:
            _REPEATS.clear()
        _REPEATS[key] = got
    return got


def _repeated(slot) -> np.ndarray:
    """Start addresses of the elements ``slot``'s view reaches through several indices."""
    starts = np.full((), slot.start, dtype=np.int64)
    for n, s in zip(slot.shape, slot.strides):
        starts = np.add.outer(starts, np.arange(n, dtype=np.int64) * (s * slot.itemsize))
    addresses, times = np.unique(starts.reshape(-1), return_counts=True)
    return addresses[times > 1]


def _self_overlap(info) -> list[Finding]:
    found = []
    for w, ws in enumerate(info.slots):
        if ws.mode not in ("W", "RW") or ws.view is None:
            continue
        if not _may_repeat(ws.view) or not ws.view.has_internal_overlap():
            continue
        many = _repeated(ws)
        if not many.size:
            continue
        own, _ = _outcome_for(info, ws.label)
        if own is not None and (own.differs or own.conflicts):
            found.append(Finding("wrong", "self-overlap-write", [info], int(many.size), [ws],
                                 differs=own.differs or own.conflicts, example=own.example,
                                 _addresses=many))
        elif not info.uniform:
            note = "refused by the framework" if info.failed else (
                "this run agreed with copy semantics" if own is not None else "not re-run")
            found.append(Finding("hazard", "self-overlap-write", [info], int(many.size), [ws],
                                 note=note, _addresses=many))
    return found


def _one_per_write(in_op: list[Finding], self_overlap: list[Finding]) -> list[Finding]:
    """One finding per written argument of an op: a write through a view that repeats
    elements (``t1 = x.expand(3, 3); t1 *= t2``) is the finding, naming the arguments it also
    overlaps; their in-op overlap of the same severity is not listed again."""
    if not in_op or not self_overlap:
        return in_op + self_overlap
    kept = []
    for f in in_op:
        mine = next((g for g in self_overlap
                     if g.slots[0] is f.slots[0] and g.severity == f.severity), None)
        if mine is None:
            kept.append(f)
        else:
            mine.slots.extend(s for s in f.slots if not any(s is t for t in mine.slots))
    return kept + self_overlap


def _duplicates(info) -> list[Finding]:
    if not info.duplicates:
        return []
    label, differs, example, indices = info.duplicates
    slot = next((s for s in info.slots if s.label == label), None)
    if slot is None:
        return []
    addresses = np.unique(np.array(
        [slot.start + sum(i * s for i, s in zip(index, slot.strides)) * slot.itemsize
         for index in indices], np.int64))
    return [Finding("wrong", "duplicate-index", [info], differs, [slot], differs=differs,
                    example=example, _addresses=addresses)]


def _distinct_bytes(view) -> int:
    return view.size * view.dtype.itemsize if not view.has_internal_overlap() else \
        int(np.unique(view.footprint()).size)


def _inside(w, r) -> bool:
    """Are all the bytes ``w`` touches inside ``r``'s footprint?"""
    if w.view == r.view:
        return True
    bw, br = byte_view(w.view), byte_view(r.view)
    base_w, base_r = bw.tensor.storage.address, br.tensor.storage.address
    if br.is_dense and bw.extent is not None and br.extent is not None:
        return (br.extent[0] + base_r <= bw.extent[0] + base_w and
                bw.extent[1] + base_w <= br.extent[1] + base_r)
    ov = overlap(bw, br)
    return ov.count >= _distinct_bytes(w.view)


def _writes(infos, keep=lambda info: True) -> dict:
    """memory id -> ([op index], [(info, slot)]) of the writes, in program order, of the ops
    ``keep`` accepts that ran (a fresh result's write, the making of memory, is left out)."""
    writes: dict = {}
    for info in infos:
        if info.failed or not keep(info):
            continue
        for s in info.slots:
            if s.mode in ("W", "RW") and s.view is not None and not s.fresh:
                keys, items = writes.setdefault(s.memory, ([], []))
                keys.append(info.index)
                items.append((info, s))
    return writes


def _meeting(writes: dict, r, after: int, before: int):
    """The writes of ``writes`` by ops after ``after`` and before ``before`` that share bytes
    with slot ``r``, latest first."""
    got = writes.get(r.memory)
    if got is None:
        return
    keys, items = got
    for wi, w in items[bisect_right(keys, after):bisect_left(keys, before)][::-1]:
        if memory_meets(w.view, r.view) and overlap(w.view, r.view):
            yield wi, w


# ops whose result is a snapshot by intent: the same memory, detached from autograd
# (``state_dict()`` hands out its parameters this way, and ``best = model.state_dict()``
# kept while training goes on is the classic stale copy) ...
_SNAPSHOTS = frozenset({"aten.detach.default"})
# ... when the program's own line asks for it (a library's detach, such as an optimizer
# making its state with ``.clone().detach()`` inside ``opt.step()``, is its business)
_ASKED = re.compile(r"\.detach\s*\(|state_dict\s*\(")


def _snapshot(infos, r, w) -> bool:
    """Was ``r`` made by a ``detach()`` the program's line asks for (``.detach()``,
    ``state_dict()``; not the autograd engine's, whose ``AccumulateGrad`` detaches each new
    ``.grad``), and ``w`` written through another tensor object? Then a write inside its
    footprint still makes it stale: it was taken as the values of its moment, not as a
    window onto memory the program writes."""
    if r.born < 0 or w.born == r.born:
        return False
    made = infos[r.born]
    return made.label in _SNAPSHOTS and not made.engine and \
        _ASKED.search(made.source) is not None


def _retaken(info, r, wi) -> bool:
    """Does the op also read ``r``'s very elements through a view made after the write
    ``wi`` (``output.append(h[-1])`` each step of a loop that writes ``h``, then
    ``torch.stack(output)``)? Then the program took the view as the values of its moment:
    the older one is stale even though the write stayed inside it."""
    return any(s is not r and s.born is not None and s.born > wi.index and
               s.mode in ("R", "RW") and s.view == r.view for s in info.slots)


def _stale(infos) -> list[Finding]:
    """Reads through views made before a write through another, wider view (one that
    publishes a buffer's contents, as a collective does, is what such views are for), or
    through any other tensor over a ``detach()``ed snapshot's memory."""
    writes = _writes(infos, keep=lambda info: not info.publishes)
    if not writes:
        return []
    found = []
    for info in infos:
        if info.failed:
            continue
        retaken: dict = {}   # write index -> this op's finding of views read again later
        for r in info.slots:
            if r.born is None or r.mode not in ("R", "RW") or r.view is None:
                continue
            for wi, w in _meeting(writes, r, r.born, info.index):
                again = False
                if _inside(w, r) and not _snapshot(infos, r, w):
                    again = _retaken(info, r, wi)
                    if not again:
                        continue
                shared = _grid(r, _shared_bytes(r, w))
                f = retaken.get(wi.index) if again else None
                if f is not None:   # the older views of one list, stale by one write:
                    f.slots.insert(-1, r)   # one finding
                    f._addresses = np.union1d(f._addresses, shared)
                    f.count = int(f._addresses.size)
                    break
                f = Finding("stale-view", "RAW", [wi, info], int(shared.size), [r, w],
                            _addresses=shared)
                found.append(f)
                if again:
                    retaken[wi.index] = f
                break   # the latest such write is the one to report
    return found


def _saved_overwritten(infos, stale: list[Finding]) -> list[Finding]:
    """Reads by a backward op of bytes its forward op touched, written between the two by a
    forward-phase op (see the module's docstring)."""
    backward = [info for info in infos if info.forward is not None and not info.failed]
    if not backward:
        return []
    writes = _writes(infos, keep=lambda info: info.forward is None)
    reported = {(f.ops[0].index, f.ops[-1].index) for f in stale}
    found = []
    for info in backward:
        fwd = infos[info.forward]
        for r in info.slots:
            if r.mode != "R" or r.view is None or r.memory not in writes:
                continue
            touched = [s for s in fwd.slots if s.memory == r.memory and s.view is not None
                       and memory_meets(s.view, r.view) and overlap(s.view, r.view)]
            # not saved by the forward op, or its own in-place state (running statistics)
            if not touched or any(s.mode == "RW" for s in touched):
                continue
            for wi, w in _meeting(writes, r, fwd.index, info.index):
                if (wi.index, info.index) in reported:
                    continue
                shared = _grid(r, _shared_bytes(r, w))
                found.append(Finding(
                    "stale-view", "RAW", [wi, info], int(shared.size), [r, w],
                    saved=touched[0],
                    note=f"saved for backward by {fwd.label} at {fwd.line}, overwritten at "
                         f"{wi.line} before backward read it", _addresses=shared))
                break   # the latest such write is the one to report
    return found


# ``wrong`` and ``hazard`` are one mechanism whose re-run on copies differed or agreed: a
# loop's steps at one line differ only in the data (a ring buffer shifted in place is right
# while it holds zeros, wrong after), so they are one finding, the most serious first.
_CONFIRMED = {"wrong": "confirmed", "hazard": "confirmed"}


def group(findings: list[Finding], names) -> list[Finding]:
    """Merge repeats: same kind, source lines and names, and the same severity (``wrong``
    and ``hazard`` count as one) -> one finding with ``occurrences`` (the first one's
    details: ``findings`` come most serious first; ``repeats`` keeps the others' ops)."""
    out: dict = {}
    for f in findings:
        f.names = names(f)
        key = (_CONFIRMED.get(f.severity, f.severity), f.kind, tuple(f.lines), tuple(f.names))
        first = out.get(key)
        if first is None:
            out[key] = f
        else:
            first.occurrences += 1
            first.repeats.append(f.ops)
    return list(out.values())


def classify(infos, all: bool = False, order=None, names=None) -> list[Finding]:  # noqa: A002
    """Findings of a trace, grouped, most serious first. ``infos``: the :class:`OpInfo` of
    every op in program order; ``order``: a function giving the order findings (called only
    with ``all=True``); ``names(finding)``: the names of a finding's slots (for grouping)."""
    found: list[Finding] = []
    for info in infos:
        if info.untracked or not info.slots:
            continue
        found.extend(_one_per_write(_in_op(info), _self_overlap(info)))
        found.extend(_duplicates(info))
    stale = _stale(infos)
    found.extend(stale)
    found.extend(_saved_overwritten(infos, stale))
    if all and order is not None:
        pairs = {(f.ops[0].index, f.ops[-1].index) for f in found if f.severity == "stale-view"}
        found.extend(f for f in order()
                     if not (f.kind == "RAW" and (f.ops[0].index, f.ops[-1].index) in pairs))
    found.sort(key=lambda f: (RANK[f.severity], f.ops[0].index, f.ops[-1].index))
    return group(found, names or (lambda f: [slot_name(s) for s in f.slots]))
