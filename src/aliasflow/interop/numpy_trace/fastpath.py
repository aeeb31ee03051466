"""The runtime rewritten code calls, in pure Python: the reference of the compiled
``_fastpath`` module (``_native_src/fastpath.cpp``), used when that is built (and not
``AF_PURE=1``). The tests compare the notes the two record.

Each watched operation is one call: it records the operation (through the recorder's
methods, the *hooks*), performs it, and confirms it afterwards when the recorder asked for
that. The compiled module records the common cases itself and performs every operation
without a Python frame of its own; this reference adds one (tracebacks and warnings of an
operation name this file as well as the user's line).

- ``setitem(v, a, k, site)``: ``a[k] = v``; ``setattr(v, a, name, site)``: ``a.name = v``
- ``aug_load(a, k, site)`` / ``aug_load_attr(a, name, site)``, then ``aug_store(h, v, op)``:
  ``a[k] op= v`` / ``a.name op= v`` (``op`` a code: :data:`INPLACE` order)
- ``aug_name(x, v, op, site)``: ``x op= v`` (returns the new ``x``)
- ``call(f, site, *args, **kwargs)``: ``f(*args, **kwargs)``
- ``begin(hooks or None, owners, views, codes, objects, unwrapped)``, ``reset()``,
  where ``hooks`` is a tuple of the recorder's functions in :data:`HOOKS` order (the compiled
  module calls them by position: it looks up no attribute of ours by name),
  ``next_index()``, ``count(table=None)``, ``note(i, table=None)``, ``detach()``: the
  recorder's side (``note`` is None here: every note of this reference is the recorder's
  own; ``detach`` hands over what was recorded when a trace ends).
"""
from __future__ import annotations

import operator

import numpy as np

from ...solver.native import load

#: in-place operators by code (the rewriter's and the compiled module's order)
INPLACE = (operator.iadd, operator.isub, operator.imul, operator.itruediv,
           operator.ifloordiv, operator.imod, operator.ipow, operator.ilshift,
           operator.irshift, operator.ior, operator.ixor, operator.iand, operator.imatmul)

#: the recorder's functions, in the order ``begin`` takes them
HOOKS = ("store_item", "store_attr", "aug_target", "aug_commit", "aug_value", "call",
         "complete", "refused", "owner")
_HOOK = {name: k for k, name in enumerate(HOOKS)}

_hooks = None
_count = 0
_unwrapped: dict = {}


def begin(hooks, owners, views, codes, objects, unwrapped):
    global _hooks, _unwrapped
    _hooks, _unwrapped = hooks, unwrapped


def reset():
    global _count
    _count = 0


def next_index():
    global _count
    _count += 1
    return _count - 1


def count(table=None):
    return _count if table is None else table


def note(index, table=None):
    if not 0 <= index < (_count if table is None else table):
        raise IndexError("note: no such op")
    return None


def detach():
    """The recorded table (here: its length; every note is the recorder's own)."""
    global _count
    n, _count = _count, 0
    return n


def _hook(name, *args):
    try:
        return _hooks[_HOOK[name]](*args)
    except Exception:  # noqa: BLE001 - never the program's failure
        return None


def _finish(entry):
    if entry is not None and type(entry) is not int and _hooks is not None:
        _hook("complete", entry)


def _refuse(entry, exc):
    if entry is not None and _hooks is not None:
        _hook("refused", entry, exc)


def setitem(v, a, k, site):
    entry = _hook("store_item", a, k, v, site) if _hooks is not None else None
    try:
        a[k] = v
    except BaseException as exc:
        _refuse(entry, exc)
        raise
    _finish(entry)


def setattr(v, a, name, site):   # noqa: A001 - the runtime's name for ``a.name = v``
    entry = _hook("store_attr", a, name, v, site) if _hooks is not None else None
    try:
        builtins_setattr(a, name, v)
    except BaseException as exc:
        _refuse(entry, exc)
        raise
    _finish(entry)


builtins_setattr = __builtins__["setattr"] if isinstance(__builtins__, dict) else \
    __builtins__.setattr


class _Handle:
    __slots__ = ("container", "key", "name", "read", "note")

    def __init__(self, container, key, name, read, note):
        self.container, self.key, self.name = container, key, name
        self.read, self.note = read, note


def aug_load(a, k, site):
    note = _hook("aug_target", a, k, site) if _hooks is not None else None
    return _Handle(a, k, None, a[k], note)


def aug_load_attr(a, name, site):
    note = _hook("aug_target", a, name, site) if _hooks is not None else None
    return _Handle(a, None, name, getattr(a, name), note)


def aug_store(h, v, op):
    entry = None
    if _hooks is not None and h.note is not None:
        entry = _hook("aug_commit", h.note, v)
    try:
        result = INPLACE[op](h.read, v)
        if entry is not None and type(entry) is not int:
            _hook("aug_value", entry, result)
        if h.name is None:
            h.container[h.key] = result
        else:
            builtins_setattr(h.container, h.name, result)
    except BaseException as exc:
        _refuse(entry, exc)
        raise
    _finish(entry)


def aug_name(x, v, op, site):
    entry = None
    if _hooks is not None and isinstance(x, np.ndarray):
        note = _hook("aug_target", x, None, site)
        if note is not None:
            entry = _hook("aug_commit", note, v)
    try:
        result = INPLACE[op](x, v)
    except BaseException as exc:
        _refuse(entry, exc)
        raise
    _finish(entry)
    return result


def call(f, site, /, *args, **kwargs):
    if _unwrapped:   # NumPy's own function, not the trace's wrapper
        f = _unwrapped.get(id(f), f)
    entry = _hook("call", f, site, args, kwargs) if _hooks is not None else None
    try:
        result = f(*args, **kwargs)
    except BaseException as exc:
        _refuse(entry, exc)
        raise
    _finish(entry)
    return result


API = ("setitem", "setattr", "aug_load", "aug_load_attr", "aug_store", "aug_name", "call",
       "begin", "reset", "next_index", "count", "note", "detach")
PURE = {name: globals()[name] for name in API}   # the reference, kept for the tests

_compiled = load(__package__ + "._fastpath")
if _compiled is not None:   # the compiled functions replace the reference's, name by name
    globals().update({name: getattr(_compiled, name) for name in API})
COMPILED = _compiled is not None
