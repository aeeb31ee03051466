"""The recorder: turns each watched operation's operands into exact accesses, and decides
before the operation runs whether its result must be confirmed.

A note (what the runtime keeps between an operation's two halves, and what the trace keeps
afterwards) is a list ``[site, what, accesses, check]``: the site index, the operation's
name (``"setitem"``, ``"np.copyto"``, ``"ndarray.sort"``, ``"ufunc add"``), a list of
accesses ``(label, mode, layout, exact, created)`` and a :class:`~.checks.Check` or None.
``exact`` is None or the start addresses of the elements a scattered write touches;
``created`` is, for a read through a view whose making the trace saw, ``(op count then,
how)``.

Checks (re-running on copies) are prepared only where NumPy may get the result wrong: an
overlap between what an operation writes and what it reads, in an operation NumPy does not
protect against overlap (see :func:`assignment_is_safe` and :mod:`.calls`), repeated indices,
two outputs that overlap, and the layouts where NumPy 2.4's kernels are wrong without any
overlap (:mod:`.calls`).
"""
from __future__ import annotations

import weakref

import numpy as np

from ...core.storage import array_address
from . import calls
from .checks import Check, assign, duplicate_values, flat_assign
from .memory import (Lifetimes, element_addresses, flat_addresses, flat_positions,
                     internal_overlap, overlap, same_elements)

_ndarray = np.ndarray
_flatiter = np.flatiter
_basic_types = (int, slice, type(None), type(Ellipsis), np.integer)


def _basic_key(k) -> bool:
    """Is ``k`` a basic index (the result a view)?"""
    if type(k) is tuple:
        for e in k:
            if not isinstance(e, _basic_types) or isinstance(e, (bool, np.bool_)):
                return False
        return True
    return isinstance(k, _basic_types) and not isinstance(k, (bool, np.bool_))


def _key_arrays(k):
    """The arrays an index reads (index arrays and masks)."""
    if type(k) is _ndarray or isinstance(k, _ndarray):
        return [k]
    if type(k) is tuple:
        return [e for e in k if isinstance(e, _ndarray)]
    return []


def _has_mask(k) -> bool:
    if isinstance(k, _ndarray):
        return k.dtype == bool
    if type(k) is tuple:
        return any(isinstance(e, _ndarray) and e.dtype == bool for e in k)
    if isinstance(k, list):
        return any(isinstance(e, (bool, np.bool_)) for e in k)
    return False


def assignment_is_safe(d, v) -> bool:
    """Does NumPy's assignment ``d[...] = v`` give copy semantics whatever the overlap?

    NumPy 2.4 (``PyArray_AssignArray``) copies ``v`` first when their bounds meet and ``d``
    has more than one dimension, or one dimension with a stride of the sign opposite to
    ``v``'s last; a one-dimensional destination otherwise relies on a copy loop that is
    right only as ``memmove`` is: for the same dtype and the same stride.
    """
    if d.ndim >= 2 or d.size <= 1:
        return True
    if v.ndim == 0:
        return False
    ds, vs = d.strides[0], v.strides[-1]
    if ds * vs < 0:
        return True
    return v.ndim == 1 and ds == vs and d.dtype == v.dtype


class Recorder:
    """Notes of one trace (see :class:`~.trace.Trace`, which owns one)."""

    def __init__(self):
        self.ops: list = []            # completed and refused notes, in program order
        self.errors: dict = {}         # op index -> why NumPy refused it
        self.untracked: dict = {}      # op index -> why the recorder could not note it
        self.gens = Lifetimes()
        self.views: dict = {}          # id(view) -> (weak reference, op count, how)

    # ---- shared pieces ----------------------------------------------------------------------
    def layout(self, x):
        return (array_address(x), x.shape, x.strides, x.dtype, self.gens.gen(x))

    def read(self, label, x):
        created = None
        if self.views:
            entry = self.views.get(id(x))
            if entry is not None and entry[0]() is x:
                created = entry[1:]
        return (label, "R", self.layout(x), None, created)

    def finish(self, note):
        if len(note) > 4:
            del note[4:]
        check = note[3]
        self.ops.append(note)
        if check is not None:
            note[3] = check.run()

    def untracked_note(self, site, what, exc):
        """The recorder failed on an operation (a bug of ours, or operands it cannot read):
        the operation runs anyway and is listed as not recorded."""
        note = [site, what, [], None]
        self.untracked[id(note)] = f"{type(exc).__name__}: {exc}".split("\n")[0]
        return note

    def untrack(self, note, exc):
        note[2][:] = []
        note[3] = None
        self.untracked[id(note)] = f"{type(exc).__name__}: {exc}".split("\n")[0]

    def refused(self, note, error):
        self.errors[len(self.ops)] = f"{type(error).__name__}: {error}".split("\n")[0]
        del note[3:]
        note.append(None)
        self.ops.append(note)

    # ---- T[K] = V ---------------------------------------------------------------------------
    def store_item(self, a, k, v, site):
        if type(a) is not _ndarray:
            if type(a) is _flatiter:
                return self.store_flat(a.base, k, v, site, "flat-setitem")
            if not isinstance(a, _ndarray):
                return None
        if type(k) is slice:
            d = a[k]
        elif _basic_key(k):
            d = a[k] if type(k) is tuple and Ellipsis in k else \
                a[(k + (Ellipsis,)) if type(k) is tuple else (k, Ellipsis)]
        else:
            return self.store_advanced(a, k, v, site)
        return self.assign(d, v, site, "setitem")

    def assign(self, d, v, site, what):
        dl = self.layout(d)
        if type(v) is not _ndarray and not isinstance(v, _ndarray):
            return [site, what, [("target", "W", dl, None, None)], None]
        r = self.read("value", v)
        note = [site, what, [("target", "W", dl, None, None), r], None]
        if not assignment_is_safe(d, v) and not same_elements(dl, r[2]) and \
                overlap(dl, r[2]):
            note[3] = Check(assign, (d, v), {}, written=[(0,)], overlapping=True)
        elif d.ndim >= 2 and internal_overlap(dl) and v.ndim and v.size > 1:
            note[3] = Check(assign, (d, v), {}, written=[(0,)], self_overlap=True)
        return note

    def store_advanced(self, a, k, v, site):
        al = self.layout(a)
        addresses = element_addresses(a, k)
        acc = [("target", "W", al, addresses.ravel(), None)]
        arrays = _key_arrays(k)
        acc.extend(self.read("index", x) for x in arrays)
        has_value = isinstance(v, _ndarray)
        if has_value:
            acc.append(self.read("value", v))
        note = [site, "setitem", acc, None]
        mask = _has_mask(k)
        reads = acc[1:]
        if mask and any(overlap(al, r[2]) for r in reads):
            note[3] = Check(assign_key, (a, k, v), {}, written=[(0,)], overlapping=True,
                            indices=[(1,)])
        elif not mask and addresses.size > 1:
            dup = duplicate_values(a, addresses, lambda: np.broadcast_to(
                np.asarray(v), addresses.shape))
            if dup is not None:
                note[3] = dup
        return note

    def store_flat(self, a, k, v, site, what):
        positions = flat_positions(a.size, k)
        addresses = flat_addresses(a, positions)
        al = self.layout(a)
        acc = [("target", "W", al, addresses.ravel(), None)]
        acc.extend(self.read("index", x) for x in _key_arrays(k))
        if isinstance(v, _ndarray):
            acc.append(self.read("value", v))
        note = [site, what, acc, None]
        if any(overlap(al, r[2]) for r in acc[1:]):
            note[3] = Check(flat_assign, (a, k, v), {}, written=[(0,)], overlapping=True,
                            indices=[(1,)])
        elif addresses.size > 1 and not isinstance(k, slice):
            dup = duplicate_values(a, addresses, lambda: np.broadcast_to(
                np.asarray(v), addresses.shape))
            if dup is not None:
                note[3] = dup
        return note

    # ---- T.real = V, T.imag = V, T.flat = V -------------------------------------------------
    def store_attr(self, a, name, v, site):
        if not isinstance(a, _ndarray):
            return None
        if name == "flat":
            return self.store_flat(a, slice(None), v, site, "set-flat")
        try:
            d = getattr(a, name)
        except (TypeError, ValueError, AttributeError):
            return None   # NumPy refuses the store itself
        if not isinstance(d, _ndarray) or not d.flags.writeable:
            return None   # (``imag`` of a real array: NumPy refuses the store)
        return self.assign(d, v, site, "set-" + name)

    # ---- T[K] op= V, x op= V ----------------------------------------------------------------
    def aug_item(self, a, k, site):
        if type(a) is _flatiter:
            a, flat = a.base, True
        elif isinstance(a, _ndarray):
            flat = False
        else:
            return None
        if isinstance(k, str):   # T.attr op= V (an attribute: real or imag)
            try:
                d = getattr(a, k)
            except (TypeError, ValueError, AttributeError):
                return None
            return [site, "aug-" + k, [("target", "RW", self.layout(d), None, None)], None]
        if not flat and (type(k) is slice or _basic_key(k)):
            d = a[k] if type(k) is slice else a[(k + (Ellipsis,)) if type(k) is tuple
                                                 and Ellipsis not in k else k
                                                 if type(k) is tuple else (k, Ellipsis)]
            return [site, "aug-setitem", [("target", "RW", self.layout(d), None, None)], None]
        addresses = (flat_addresses(a, flat_positions(a.size, k)) if flat
                     else element_addresses(a, k))
        al = self.layout(a)
        acc = [("target", "RW", al, addresses.ravel(), None)]
        acc.extend(self.read("index", x) for x in _key_arrays(k))
        note = [site, "aug-setitem", acc, None]
        if addresses.size > 1:
            note.append((a, addresses))   # the values stored are known after the operation
        return note

    def aug_name(self, x, site):
        return [site, "aug-name", [("target", "RW", self.layout(x), None, None)], None]

    def aug_operand(self, note, value):
        if isinstance(value, _ndarray):
            note[2].append(self.read("value", value))

    def aug_value(self, note, value):
        if len(note) > 4 and isinstance(value, _ndarray):
            target, addresses = note.pop()
            dup = duplicate_values(target, addresses,
                                   lambda: np.broadcast_to(value, addresses.shape),
                                   accumulate=True)
            if dup is not None:
                note[3] = dup

    # ---- calls ------------------------------------------------------------------------------
    def call(self, f, site, args, kwargs):
        handler = calls.handler(f)
        if handler is None:
            return None
        return handler(self, f, site, args, kwargs)

    # ---- views ------------------------------------------------------------------------------
    def born(self, values):
        count = len(self.ops)
        for v in values:
            if isinstance(v, _ndarray) and v.base is not None:
                self._remember(v, count, "statement")

    def bind(self, view):
        self._remember(view, len(self.ops), "name")

    def _remember(self, view, count, how):
        try:
            ref = weakref.ref(view, self._forget(id(view)))
        except TypeError:
            return
        self.views[id(view)] = (ref, count, how)

    def _forget(self, key):
        views = self.views

        def forget(ref):
            entry = views.get(key)
            if entry is not None and entry[0] is ref:
                del views[key]
        return forget


def assign_key(a, k, v):
    a[k] = v
