"""The recorder: turns each watched operation's operands into exact accesses, and decides
before the operation runs whether its result must be confirmed.

An operation is recorded when it is issued, as a *note*, an immutable tuple
``(site, what, accesses, outcome)``: the site index, the operation's name (``"setitem"``,
``"np.copyto"``, ``"ndarray.sort"``, ``"ufunc add"``), a tuple of accesses
``(label, mode, layout, exact, created)`` and the confirmation's outcome (None until one
found something). ``exact`` is None or the start addresses of the elements a scattered
write touches; ``created`` is, for a read through a view whose making the trace saw,
``(op count then, how)``. Notes hold no array and no Python object the garbage collector
follows (tuples of numbers, strings and dtypes), so a long trace costs it nothing.

Checks (re-running on copies) are prepared only where NumPy may get the result wrong: an
overlap between what an operation writes and what it reads, in an operation NumPy does not
protect against overlap (see :func:`assignment_is_safe` and :mod:`.calls`), repeated indices,
two outputs that overlap, and the layouts where NumPy 2.4's kernels are wrong without any
overlap (:mod:`.calls`).
"""
from __future__ import annotations

import weakref

import numpy as np

from ...core.gcpause import paused_gc
from ...core.storage import array_address
from . import calls, fastpath
from .checks import Check, assign, duplicate_values, flat_assign
from .memory import (element_addresses, extent, flat_addresses, flat_positions,
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


def _view_of(a, k):
    """``a[k]`` for a basic ``k`` as a view (a 0-d view where ``a[k]`` is a scalar)."""
    if type(k) is slice or k is Ellipsis:
        return a[k]
    if type(k) is tuple:
        return a[k] if Ellipsis in k else a[k + (Ellipsis,)]
    return a[(k, Ellipsis)]


def _key_arrays(k):
    """The arrays an index reads (index arrays and masks)."""
    if isinstance(k, _ndarray):
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


def assignment_is_safe(dl, vl) -> bool:
    """Does NumPy's assignment ``d[...] = v`` (layouts ``dl``, ``vl``) give copy semantics
    whatever the overlap?

    NumPy 2.4 (``PyArray_AssignArray``) copies ``v`` first when their bounds meet and ``d``
    has more than one dimension, or one dimension with a stride of the sign opposite to
    ``v``'s last; a one-dimensional destination otherwise relies on a copy loop that is
    right only as ``memmove`` is: for the same dtype and the same stride.
    """
    dshape = dl[1]
    if len(dshape) != 1 or dshape[0] <= 1:   # (0-d: a single element)
        return True
    vshape = vl[1]
    if not vshape:
        return False
    ds, vs = dl[2][0], vl[2][-1]
    if ds * vs < 0:
        return True
    return len(vshape) == 1 and ds == vs and dl[3] == vl[3]


class Pending:
    """An operation recorded before it ran whose result is to be confirmed after it."""
    __slots__ = ("index", "check")

    def __init__(self, index, check):
        self.index, self.check = index, check


class Recorder:
    """The notes of one trace (see :class:`~.trace.Trace`, which owns one). While it
    records, its methods are the hooks of :mod:`.fastpath`, which numbers the operations
    and keeps the notes of those it records itself (read back by :meth:`freeze`)."""

    def __init__(self):
        self.notes: dict = {}          # op index -> note, for the ops recorded here
        self.frozen: list | None = None   # every note, program order, once recording ended
        self.table = None              # the fast path's notes, until decoded
        self.errors: dict = {}         # op index -> why NumPy refused it
        self.untracked_ops: dict = {}  # op index -> why the recorder could not note it
        self.spans: list = []          # lifetime number -> (first byte, end) of its owner
        self.views: dict = {}          # id(view) -> (weak reference, op count, how)
        self.owners: dict = {}         # id(base-most ndarray) -> (weak reference, lifetime)
        self.codes: dict = {}          # dtype / ufunc / name -> code (the compiled notes')
        self.objects: list = []        # code -> dtype / ufunc / name

    # ---- the fast path's tables -------------------------------------------------------------
    def start(self):
        fastpath.reset()
        self.resume()

    def resume(self):
        from .runtime import _unwrapped
        fastpath.begin(tuple(getattr(self, name) for name in fastpath.HOOKS), self.owners,
                       self.views, self.codes, self.objects, _unwrapped)

    def stop(self):
        fastpath.begin(None, self.owners, self.views, self.codes, self.objects, {})

    def freeze(self):
        """Take over what the fast path recorded (O(1): the notes are decoded when first
        asked for, see :attr:`ops`)."""
        self.table = fastpath.detach()
        self.frozen = []

    def snapshot(self, table=None) -> list:
        notes = []
        with paused_gc(promote=True):   # many small tuples, none of them garbage
            for i in range(fastpath.count(table)):
                note = self.notes.get(i)
                if note is None:
                    site, what, accesses = fastpath.note(i, table)
                    obj = self.objects[what]
                    what = obj if isinstance(obj, str) else f"ufunc {obj.__name__}"
                    note = (site, what, accesses, None)
                notes.append(note)
        return notes

    @property
    def ops(self) -> list:
        """Every note, in program order (while recording: those so far)."""
        if self.frozen is None:
            return self.snapshot()
        if self.table is not None:
            self.frozen, self.table = self.snapshot(self.table), None
        return self.frozen

    def note(self, index):
        """One note, decoding nothing else."""
        if self.frozen is not None and self.table is None:
            return self.frozen[index]
        note = self.notes.get(index)
        if note is not None:
            return note
        site, what, accesses = fastpath.note(index, self.table)
        obj = self.objects[what]
        return (site, obj if isinstance(obj, str) else f"ufunc {obj.__name__}", accesses, None)

    def count(self) -> int:
        if self.frozen is None:
            return fastpath.count()
        return fastpath.count(self.table) if self.table is not None else len(self.frozen)

    def outcomes(self):
        """``(index, note)`` of the notes with an outcome, without decoding the others."""
        return sorted((i, n) for i, n in self.notes.items() if n[3] is not None) \
            if self.frozen is not None and self.table is not None else \
            [(i, n) for i, n in enumerate(self.ops) if n[3] is not None]

    def stale_candidates(self) -> bool:
        """Does any read go through a view whose making was seen (else no stale view)?"""
        notes = self.notes.values() if self.table is not None else self.ops
        return any(a[4] is not None for n in notes for a in n[2])

    # ---- layouts -----------------------------------------------------------------------------
    def owner(self, owner):
        """A new lifetime for ``owner`` (a base-most ndarray the trace had not met)."""
        gen = len(self.spans)
        key = id(owner)
        owners = self.owners

        def forget(ref):
            entry = owners.get(key)
            if entry is not None and entry[0] is ref:
                del owners[key]
        try:
            ref = weakref.ref(owner, forget)
        except TypeError:   # an ndarray subclass without weak references
            ref = _never
        owners[key] = (ref, gen)
        self.spans.append(extent(array_address(owner), owner.shape, owner.strides,
                                 owner.itemsize))
        return gen

    def layout(self, x):
        owner = x
        base = x.base
        while isinstance(base, _ndarray):
            owner = base
            base = owner.base
        entry = self.owners.get(id(owner))
        gen = entry[1] if entry is not None and entry[0]() is owner else self.owner(owner)
        return (array_address(x), x.shape, x.strides, x.dtype, gen)

    _slow_layout = layout

    def read(self, label, x):
        created = None
        if self.views:
            entry = self.views.get(id(x))
            if entry is not None and entry[0]() is x:
                created = entry[1:]
        return (label, "R", self.layout(x), None, created)

    # ---- notes -------------------------------------------------------------------------------
    def emit(self, site, what, accesses, check=None):
        """Record an operation now; its index, or a :class:`Pending` with its check."""
        index = fastpath.next_index()
        self.notes[index] = (site, what, tuple(accesses), None)
        return index if check is None else Pending(index, check)

    def complete(self, pending):
        outcome = pending.check.run()
        pending.check = None
        if outcome is not None:
            site, what, accesses, _ = self.notes[pending.index]
            self.notes[pending.index] = (site, what, accesses, outcome)

    def refused(self, entry, error):
        index = entry if type(entry) is int else entry.index
        self.errors[index] = f"{type(error).__name__}: {error}".split("\n")[0]
        self.untracked_ops.pop(index, None)   # (NumPy's refusal is the reason)
        if type(entry) is Pending:
            entry.check = None

    def untracked(self, site, what, exc):
        """The recorder failed on an operation (operands it cannot read, or a bug of ours):
        the operation runs anyway and is listed as not recorded."""
        index = self.emit(site, what, ())
        self.untracked_ops[index] = f"{type(exc).__name__}: {exc}".split("\n")[0]
        return index

    # ---- entry points (the fast path's hooks): never raise -----------------------------------
    def store_item(self, a, k, v, site):
        try:
            return self._store_item(a, k, v, site)
        except Exception as exc:  # noqa: BLE001 - an index NumPy will refuse, or our bug
            return self.untracked(site, "setitem", exc)

    def store_attr(self, a, name, v, site):
        try:
            return self._store_attr(a, name, v, site)
        except Exception as exc:  # noqa: BLE001
            return self.untracked(site, "set-" + str(name), exc)

    def aug_target(self, a, k, site):
        try:
            return self._aug_target(a, k, site)
        except Exception as exc:  # noqa: BLE001
            return self.untracked(site, "aug-setitem", exc)

    def call(self, f, site, args, kwargs):
        try:
            return self._call(f, site, args, kwargs)
        except Exception as exc:  # noqa: BLE001
            return self.untracked(site, "call", exc)

    # ---- T[K] = V ----------------------------------------------------------------------------
    def _store_item(self, a, k, v, site):
        if type(a) is not _ndarray:
            if type(a) is _flatiter:
                return self.store_flat(a.base, k, v, site, "flat-setitem")
            if not isinstance(a, _ndarray):
                return None
        if type(k) is slice or _basic_key(k):
            return self.assign(_view_of(a, k), v, site, "setitem")
        return self.store_advanced(a, k, v, site)

    def assign(self, d, v, site, what):
        dl = self.layout(d)
        if type(v) is not _ndarray and not isinstance(v, _ndarray):
            return self.emit(site, what, (("target", "W", dl, None, None),))
        r = self.read("value", v)
        vl = r[2]
        check = None
        if not assignment_is_safe(dl, vl) and not same_elements(dl, vl) and overlap(dl, vl):
            check = Check(assign, (d, v), {}, written=[(0,)], overlapping=True)
        elif len(dl[1]) >= 2 and vl[1] and _may_repeat(dl) and internal_overlap(dl) and \
                not _one_value(vl):
            check = Check(assign, (d, v), {}, written=[(0,)], self_overlap=True)
        return self.emit(site, what, (("target", "W", dl, None, None), r), check)

    def store_advanced(self, a, k, v, site):
        al = self.layout(a)
        addresses = element_addresses(a, k)
        acc = [("target", "W", al, addresses.ravel(), None)]
        acc.extend(self.read("index", x) for x in _key_arrays(k))
        if isinstance(v, _ndarray):
            acc.append(self.read("value", v))
        check = None
        mask = _has_mask(k)
        if not mask and addresses.size > 1:
            check = duplicate_values(a, addresses, lambda: np.broadcast_to(
                np.asarray(v), addresses.shape))
        if check is None and mask and any(overlap(al, r[2]) for r in acc[1:]):
            check = Check(assign_key, (a, k, v), {}, written=[(0,)], overlapping=True,
                          indices=[(1,)])
        return self.emit(site, "setitem", acc, check)

    def store_flat(self, a, k, v, site, what, perform=None):
        positions = flat_positions(a.size, k)
        addresses = flat_addresses(a, positions)
        al = self.layout(a)
        acc = [("target", "W", al, addresses.ravel(), None)]
        acc.extend(self.read("index", x) for x in _key_arrays(k))
        if isinstance(v, _ndarray):
            acc.append(self.read("value", v))
        check = None
        if addresses.size > 1 and not isinstance(k, slice) and perform is None:
            check = duplicate_values(a, addresses, lambda: np.broadcast_to(
                np.asarray(v), addresses.shape))
        if check is None and any(overlap(al, r[2]) for r in acc[1:]):
            check = Check(flat_assign, (a, k, v), {}, written=[(0,)], overlapping=True,
                          indices=[(1,)]) if perform is None else \
                Check(perform, (a, v), {}, written=[(0,)], overlapping=True)
        return self.emit(site, what, acc, check)

    # ---- T.real = V, T.imag = V, T.flat = V ----------------------------------------------------
    def _store_attr(self, a, name, v, site):
        if not isinstance(a, _ndarray):
            return None
        if name == "flat":
            return self.store_flat(a, slice(None), v, site, "set-flat", perform=set_flat)
        try:
            d = getattr(a, name)
        except (TypeError, ValueError, AttributeError):
            return None   # NumPy refuses the store itself
        if not isinstance(d, _ndarray) or not d.flags.writeable:
            return None   # (``imag`` of a real array: NumPy refuses the store)
        return self.assign(d, v, site, "set-" + name)

    # ---- T[K] op= V, x op= V -----------------------------------------------------------------
    def _aug_target(self, a, k, site):
        """The target of an augmented assignment, as a note still open (a list) until its
        right-hand side is known: ``[site, what, accesses, (array, addresses) or None]``."""
        if k is None:   # x op= V
            return [site, "aug-name", [("target", "RW", self.layout(a), None, None)], None]
        if type(a) is _flatiter:
            a, flat = a.base, True
        elif isinstance(a, _ndarray):
            flat = False
        else:
            return None
        if isinstance(k, str):   # T.attr op= V (real or imag)
            try:
                d = getattr(a, k)
            except (TypeError, ValueError, AttributeError):
                return None
            return [site, "aug-" + k, [("target", "RW", self.layout(d), None, None)], None]
        if not flat and (type(k) is slice or _basic_key(k)):
            d = _view_of(a, k)
            return [site, "aug-setitem", [("target", "RW", self.layout(d), None, None)],
                    None]
        addresses = (flat_addresses(a, flat_positions(a.size, k)) if flat
                     else element_addresses(a, k))
        acc = [("target", "RW", self.layout(a), addresses.ravel(), None)]
        acc.extend(self.read("index", x) for x in _key_arrays(k))
        return [site, "aug-setitem", acc, (a, addresses) if addresses.size > 1 else None]

    def aug_commit(self, note, value):
        if type(note) is not list:   # not recorded (an index NumPy refuses)
            return note
        site, what, acc, repeats = note
        if isinstance(value, _ndarray):
            acc.append(self.read("value", value))
        if repeats is None:
            return self.emit(site, what, acc)
        return self.emit(site, what, acc, _Repeats(*repeats))

    def aug_value(self, pending, value):
        """The values an augmented scatter stores (for repeated indices)."""
        repeats = pending.check
        if type(repeats) is _Repeats:
            pending.check = None
            if isinstance(value, _ndarray):
                target, addresses = repeats.target, repeats.addresses
                pending.check = duplicate_values(
                    target, addresses, lambda: np.broadcast_to(value, addresses.shape),
                    accumulate=True)
            if pending.check is None:
                pending.check = _Nothing

    # ---- calls -------------------------------------------------------------------------------
    def _call(self, f, site, args, kwargs):
        handler = calls.handler(f)
        if handler is None:
            return None
        note = handler(self, f, site, args, kwargs)
        return None if note is None else self.emit(*note)

    # ---- views -------------------------------------------------------------------------------
    def born(self, values):
        count = fastpath.count()
        for v in values:
            if isinstance(v, _ndarray) and v.base is not None:
                self._remember(v, count, "statement")

    def bind(self, view):
        self._remember(view, fastpath.count(), "name")

    def _remember(self, view, count, how):
        views = self.views
        key = id(view)

        def forget(ref):
            entry = views.get(key)
            if entry is not None and entry[0] is ref:
                del views[key]
        try:
            views[key] = (weakref.ref(view, forget), count, how)
        except TypeError:
            pass


class _Repeats:
    """An augmented scatter's target and addresses, until its stored values are known."""
    __slots__ = ("target", "addresses")

    def __init__(self, target, addresses):
        self.target, self.addresses = target, addresses

    def run(self):
        return None


class _NothingToCheck:
    def run(self):
        return None


_Nothing = _NothingToCheck()


def _never():
    return None


def _may_repeat(lay) -> bool:
    """False when a layout of two dimensions visibly maps no two indices to one byte (each
    stride steps past everything the other reaches); True means "ask the solver"."""
    shape, strides = lay[1], lay[2]
    if len(shape) != 2:
        return True
    (n0, n1), (s0, s1) = shape, strides
    isz = lay[3].itemsize
    a0, a1 = abs(s0), abs(s1)
    if n0 <= 1 or n1 <= 1:
        return (a1 if n0 <= 1 else a0) < isz and n0 * n1 > 1
    small, n_small, big = (a1, n1, a0) if a1 <= a0 else (a0, n0, a1)
    return small < isz or big < small * (n_small - 1) + isz


def _one_value(lay) -> bool:
    return all(n <= 1 or s == 0 for n, s in zip(lay[1], lay[2]))


def assign_key(a, k, v):
    a[k] = v


def set_flat(a, v):
    a.flat = v
