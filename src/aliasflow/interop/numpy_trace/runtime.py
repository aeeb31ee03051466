"""What rewritten code calls: notes each watched operation around the operation itself.

The rewritten code reaches this module as the builtin ``@aliasflow_numpy`` (see
:mod:`.rewrite`). Each watched operation is a pair: a *pre* function (``store_item``,
``aug_item``, ``call``, ...) that gets the operands, evaluated in Python's order, and returns
them for the real operation, which runs in the user's frame; then an *end* function
(``end``, ``done``, ``aug_item_store``, ...) called with its result. Between the two the
pending note is kept per frame (keyed by the frame's id, so threads and generators never mix
their notes); a statement that raises drops its notes in ``fail``.

With no trace recording (``_recorder`` is None) the functions only pass values through, so
rewritten code keeps working after a trace ends.
"""
from __future__ import annotations

import builtins
import operator
import sys
from functools import partial

import numpy as np

# what the rewritten code uses in place of syntax (C functions: they add no frame)
setitem, getitem = operator.setitem, operator.getitem
setattr, getattr = builtins.setattr, builtins.getattr   # noqa: A001 - the builtins themselves
isinstance, slice = builtins.isinstance, builtins.slice   # noqa: A001
arrays = (np.ndarray, np.flatiter)
iadd, isub, imul, itruediv = operator.iadd, operator.isub, operator.imul, operator.itruediv
ifloordiv, imod, ipow, imatmul = operator.ifloordiv, operator.imod, operator.ipow, \
    operator.imatmul
ilshift, irshift, ior, ixor, iand = operator.ilshift, operator.irshift, operator.ior, \
    operator.ixor, operator.iand

_recorder = None          # the active recorder (see .recorder.Recorder), or None
_unwrapped: dict = {}     # id(a trace's wrapper of a NumPy function) -> that function
_pending: dict = {}       # id(frame) -> (note, previous pending entry of that frame or None)
_frame = sys._getframe
_ndarray = np.ndarray


def _push(fid, note):
    _pending[fid] = (note, _pending.get(fid))


def _pop(fid):
    entry = _pending.pop(fid, None)
    if entry is None:
        return None
    if entry[1] is not None:
        _pending[fid] = entry[1]
    return entry[0]


# ---- T[K] = V ---------------------------------------------------------------------------------
def store_item(v, a, k, site):
    rec = _recorder
    if rec is not None:
        try:
            note = rec.store_item(a, k, v, site)
        except Exception as exc:  # noqa: BLE001 - never the program's failure
            note = rec.untracked_note(site, "setitem", exc)
        if note is not None:
            _push(id(_frame(1)), note)
    return (a, k, v)


def store_attr(v, a, name, site):
    rec = _recorder
    if rec is not None:
        try:
            note = rec.store_attr(a, name, v, site)
        except Exception as exc:  # noqa: BLE001
            note = rec.untracked_note(site, "set-" + name, exc)
        if note is not None:
            _push(id(_frame(1)), note)
    return (a, name, v)


def end(result):
    """After a store: the pending note of this frame, if any, is complete."""
    if _pending:
        note = _pop(id(_frame(1)))
        if note is not None and _recorder is not None:
            _finish(note)
    return result


def _finish(note):
    try:
        _recorder.finish(note)
    except Exception as exc:  # noqa: BLE001
        _recorder.untrack(note, exc)


# ---- T[K] op= V, T.attr op= V, x op= V ----------------------------------------------------------
class _Aug:
    """The target of an augmented subscript or attribute assignment, held between reading it
    and storing the new value back (Python's own evaluation holds the same objects)."""
    __slots__ = ("container", "key", "note")

    def __init__(self, container, key, note):
        self.container, self.key, self.note = container, key, note


def aug_item(a, k, site):
    rec = _recorder
    note = None
    if rec is not None:
        try:
            note = rec.aug_item(a, k, site)
        except Exception as exc:  # noqa: BLE001
            note = rec.untracked_note(site, "aug-setitem", exc)
    _push(id(_frame(1)), _Aug(a, k, note))
    return (a, k)


def aug_item_store(value):
    aug = _pop(id(_frame(1)))
    if aug.note is not None:
        # the pending note stays until ``end`` (after the store): put it back
        _push(id(_frame(1)), aug.note)
        if _recorder is not None:
            try:
                _recorder.aug_value(aug.note, value)
            except Exception as exc:  # noqa: BLE001
                _recorder.untrack(aug.note, exc)
    return (aug.container, aug.key, value)


aug_attr = aug_item
aug_attr_store = aug_item_store


def aug_operand(value):
    """The right-hand side of an augmented assignment, evaluated after the target was read."""
    if _recorder is not None:
        entry = _pending.get(id(_frame(1)))
        if entry is not None:
            note = entry[0]
            if isinstance(note, _Aug):
                note = note.note
            if note is not None:
                try:
                    _recorder.aug_operand(note, value)
                except Exception as exc:  # noqa: BLE001
                    _recorder.untrack(note, exc)
    return value


def aug_name(x, site):
    rec = _recorder
    if rec is not None and builtins.isinstance(x, _ndarray):
        try:
            note = rec.aug_name(x, site)
        except Exception as exc:  # noqa: BLE001
            note = rec.untracked_note(site, "aug-name", exc)
        if note is not None:
            _push(id(_frame(1)), note)
    return x


aug_name_end = end   # (``end`` looks one frame up: the user's, as for a store)


# ---- F(args) ----------------------------------------------------------------------------------
def call(f, site, /, *args, **kwargs):
    """The call to make, as a C ``partial`` (so ``f`` runs from the user's frame); notes the
    operands first when ``f`` is a NumPy operation that writes."""
    rec = _recorder
    fid = id(_frame(1))
    note = None
    if _unwrapped:   # NumPy's own function, not the trace's wrapper (one frame less)
        f = _unwrapped.get(id(f), f)
    if rec is not None:
        try:
            note = rec.call(f, site, args, kwargs)
        except Exception as exc:  # noqa: BLE001
            note = rec.untracked_note(site, "call", exc)
    _pending[fid] = (note, _pending.get(fid))   # always: ``done`` pops exactly this entry
    return partial(f, *args, **kwargs)


def done(result):
    note = _pop(id(_frame(1)))
    if note is not None and _recorder is not None:
        _finish(note)
    return result


# ---- failures and views -----------------------------------------------------------------------
def fail():
    """A rewritten statement raised: its pending notes (all of this frame's) are dropped, and
    the operations they describe are recorded as refused."""
    fid = id(_frame(1))
    while True:
        note = _pop(fid)
        if note is None and fid not in _pending:
            return
        if isinstance(note, _Aug):
            note = note.note
        if note is not None and _recorder is not None:
            _recorder.refused(note, sys.exc_info()[1])


def born(*values):
    """Values unpacked by one statement before its stores (tuple assignment)."""
    rec = _recorder
    if rec is not None:
        try:
            rec.born(values)
        except Exception:  # noqa: BLE001 - only the stale-view check loses a fact
            pass


def bind(value):
    """``name = <an expression that makes a view>``: when the view was made."""
    rec = _recorder
    if rec is not None and type(value) is _ndarray and value.base is not None:
        try:
            rec.bind(value)
        except Exception:  # noqa: BLE001
            pass
    return value


def install() -> None:
    """Make the runtime reachable from rewritten code (a builtin no identifier can name)."""
    builtins.__dict__["@aliasflow_numpy"] = sys.modules[__name__]


# ---- sites ------------------------------------------------------------------------------------
SITES: list = []   # index -> Site; rewritten code refers to its sites by index


class Site(tuple):
    """A watched place in the source: ``path, line, col, end_line, end_col, kind, text,
    names`` (the operands as written)."""
    __slots__ = ()
    path = property(operator.itemgetter(0))
    line = property(operator.itemgetter(1))
    kind = property(operator.itemgetter(5))
    text = property(operator.itemgetter(6))
    names = property(operator.itemgetter(7))


def register_site(path, line, col, end_line, end_col, kind, text, names) -> int:
    SITES.append(Site((path, line, col, end_line, end_col, kind, text, names)))
    return len(SITES) - 1
