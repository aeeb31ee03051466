"""NumPy calls that write: which operands each reads and writes, and when to confirm.

:func:`handler` maps a callee (found at run time: the rewriter only knew its name) to a
function ``(recorder, f, site, args, kwargs) -> note or None``. Operands are labelled by
their path in the call: ``(0, i)`` the i-th positional argument, ``(0, i, j)`` the j-th
array of a sequence argument (``concatenate``), ``(1, name)`` a keyword, ``("self",)`` the
array a method is bound to.

When to confirm (re-run on copies, :mod:`.checks`):

- an elementwise ufunc call (no ``where``) protects itself against overlap (NumPy's
  iterator copies overlapping operands): confirmed only for the layouts where NumPy 2.4's
  kernels are wrong without overlap: a one-input ufunc writing a non-contiguous ``out``
  (``np.negative`` of a strided input into a strided output, ``np.isfinite`` into a strided
  boolean output);
- every other call when something it writes overlaps something it reads (its own
  arguments), or its outputs overlap each other;
- ``np.choose`` into a non-contiguous ``out`` (it writes as if ``out`` were contiguous);
- repeated indices of a scatter (``put``, ``put_along_axis``).
"""
from __future__ import annotations

import numpy as np

from .checks import Check, Verdict, duplicate_values
from .memory import (element_addresses, flat_addresses, internal_overlap, overlap,
                     same_elements)
from .names import OUT_POSITION, _METHOD_OUT, _UFUNC_METHOD_OUT

_ndarray = np.ndarray
_builtin = type(len)

# calls whose result is a copy of some of their input elements: compared bit for bit
_EXACT = frozenset({"concatenate", "concat", "stack", "choose", "take", "compress",
                    "copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis",
                    "setfield", "take_along_axis"})


def _arrays_in(args, kwargs, skip):
    """``(path, array)`` for every array operand (one level into lists and tuples)."""
    for i, a in enumerate(args):
        if (0, i) in skip:
            continue
        if isinstance(a, _ndarray):
            yield (0, i), a
        elif type(a) in (list, tuple):
            for j, x in enumerate(a):
                if isinstance(x, _ndarray) and (0, i, j) not in skip:
                    yield (0, i, j), x
    for k, a in kwargs.items():
        if (1, k) in skip:
            continue
        if isinstance(a, _ndarray):
            yield (1, k), a
        elif type(a) in (list, tuple):
            for j, x in enumerate(a):
                if isinstance(x, _ndarray) and (1, k, j) not in skip:
                    yield (1, k, j), x


def _outs(args, kwargs, position):
    """``(path, array)`` for each array ``out`` (keyword, or positional from
    ``position``), or [] when nothing is written."""
    if "out" in kwargs:
        out = kwargs["out"]
        if isinstance(out, _ndarray):
            return [((1, "out"), out)]
        if type(out) is tuple:
            return [((1, "out", j), o) for j, o in enumerate(out) if isinstance(o, _ndarray)]
        return []
    if position is None:
        return []
    return [((0, i), a) for i, a in enumerate(args[position:], position)
            if isinstance(a, _ndarray)]


def _path(p):
    """A check's path (``("kw", name, ...)`` for keywords, positions otherwise)."""
    return ("kw",) + p[1:] if p[0] == 1 else p[1:]


def _discontiguous(x) -> bool:
    return x.size > 1 and not x.flags.c_contiguous


def _outputs_overlap(rec, outs):
    for i in range(len(outs)):
        for j in range(i):
            if overlap(rec.layout(outs[i][1]), rec.layout(outs[j][1])):
                return True
    return False


class _Always:
    """A check whose outcome is known before the operation runs."""
    __slots__ = ("outcome",)

    def __init__(self, outcome):
        self.outcome = outcome

    def run(self):
        return self.outcome


def _note(rec, site, what, writes, reads, check):
    accesses = [(p, mode, rec.layout(x), exact, None) for p, mode, x, exact in writes]
    accesses.extend(rec.read(p, x) for p, x in reads)
    return [site, what, accesses, check]


# ---- calls with ``out`` -------------------------------------------------------------------------
def out_call(rec, f, site, args, kwargs, *, what, position, perform=None, elementwise=False,
             exact=False, head=None):
    outs = _outs(args, kwargs, position)
    if not outs:
        return None
    skip = {p for p, _ in outs}
    reads = list(_arrays_in(args, kwargs, skip))
    if head is not None:
        reads.insert(0, head)
    where = kwargs.get("where", True)
    partial = isinstance(where, _ndarray)
    writes = []
    for p, o in outs:
        exact_at = None
        if partial:
            exact_at = element_addresses(o, np.broadcast_to(where, o.shape)).ravel()
        writes.append((p, "W", o, exact_at))
    note = _note(rec, site, what, writes, reads, None)
    check_args, check_kwargs = ((head[1],) + tuple(args), kwargs) if head else (args, kwargs)
    shift = 1 if head else 0

    def check(overlapping, guarded=False):
        written = [_shift(_path(p), shift) for p, _ in outs]
        indices = [_shift(_path(p), shift) for p, x in reads
                   if p != ("self",) and x.dtype.kind in "biu" and not elementwise]
        # np.choose writes a non-contiguous out as if it were contiguous: past the view too
        guard = [o for _, o in outs if _discontiguous(o)] if what.endswith("choose") else ()
        return Check(perform or f, check_args, check_kwargs, written, overlapping=overlapping,
                     indices=indices, exact=exact, shadow=not guarded, guard=guard)

    if len(outs) > 1 and _outputs_overlap(rec, outs):
        note[3] = _Always(Verdict("hazard", "in-op-overlap", 0, None,
                                  _shift(_path(outs[0][0]), shift), True))
        return note
    layouts = note[2]
    n_out = len(outs)
    overlapping = any(
        overlap(w[2], r[2]) and not (elementwise and same_elements(w[2], r[2]))
        for w in layouts[:n_out] for r in layouts[n_out:])
    if elementwise and not partial:
        if f.nin == 1 and any(_discontiguous(o) for _, o in outs):
            note[3] = check(overlapping, guarded=True)
        return note
    if overlapping:
        note[3] = check(True)
    elif what.endswith("choose") and any(_discontiguous(o) for _, o in outs):
        note[3] = check(False)
    return note


def _shift(path, shift):
    if not shift or path[0] == "kw":
        return path
    return (path[0] + shift,) + path[1:]


def ufunc_call(rec, f, site, args, kwargs):
    elementwise = f.signature is None
    return out_call(rec, f, site, args, kwargs, what=f"ufunc {f.__name__}", position=f.nin,
                    elementwise=elementwise, exact=False)


def _function(name, position):
    def handle(rec, f, site, args, kwargs):
        return out_call(rec, f, site, args, kwargs, what=f"np.{name}", position=position,
                        exact=name in _EXACT)
    return handle


def _ufunc_method(name):
    position = _UFUNC_METHOD_OUT.get(name)

    def handle(rec, f, site, args, kwargs):
        return out_call(rec, f, site, args, kwargs, what=f"ufunc {f.__self__.__name__}."
                        f"{name}", position=position, exact=False)
    return handle


def _method(name, position):
    def handle(rec, f, site, args, kwargs):
        owner = f.__self__
        return out_call(rec, f, site, args, kwargs, what=f"ndarray.{name}", position=position,
                        perform=getattr(type(owner), name), exact=name in _EXACT,
                        head=(("self",), owner))
    return handle


# ---- in-place functions -------------------------------------------------------------------------
def _arg(args, kwargs, i, name, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _scatter(rec, f, site, args, kwargs, *, what, target, positions, values, perform=None,
             shift=0, self_target=False, exact=True, accumulate=False):
    """A write of ``target`` at flat ``positions`` (None: all of it) reading the other
    array operands; ``values()`` gives the values in position order (for repeats)."""
    tpath = ("self",) if self_target else (0, 0)
    skip = set() if self_target else {(0, 0)}
    reads = list(_arrays_in(args, kwargs, skip))
    addresses = None if positions is None else flat_addresses(target, positions)
    mode = "RW" if accumulate else "W"
    note = _note(rec, site, what, [(tpath, mode, target, None if addresses is None
                                    else addresses.ravel())], reads, None)
    tl = note[2][0][2]
    call_args = ((target,) + tuple(args)) if self_target else args
    if addresses is not None and addresses.size > 1 and values is not None \
            and not accumulate:
        note[3] = duplicate_values(target, addresses, values)
    if note[3] is None and any(overlap(tl, r[2]) for r in note[2][1:]):
        indices = [_shift(_path(p), shift) for p, x in reads if x.dtype.kind in "biu"]
        note[3] = Check(perform or f, call_args, kwargs, [(0,)], overlapping=True,
                        indices=indices, exact=exact)
    return note


def _flat_indices(ind, size, mode):
    ind = np.asarray(ind, dtype=np.int64).ravel()
    if mode == "wrap":
        return ind % size if size else ind
    if mode == "clip":
        return np.clip(ind, 0, max(size - 1, 0))
    return np.where(ind < 0, ind + size, ind)


def copyto(rec, f, site, args, kwargs):
    dst, src = _arg(args, kwargs, 0, "dst"), _arg(args, kwargs, 1, "src")
    where = _arg(args, kwargs, 3, "where", True)
    if not isinstance(dst, _ndarray):
        return None
    from .recorder import assignment_is_safe
    reads = list(_arrays_in(args, kwargs, {(0, 0)}))
    partial = isinstance(where, _ndarray)
    exact_at = element_addresses(dst, np.broadcast_to(where, dst.shape)).ravel() \
        if partial else None
    note = _note(rec, site, "np.copyto", [((0, 0), "W", dst, exact_at)], reads, None)
    dl = note[2][0][2]
    if not partial and isinstance(src, _ndarray) and len(note[2]) > 1 and \
            assignment_is_safe(dl, note[2][1][2]):
        return note
    if any(overlap(dl, r[2]) and not same_elements(dl, r[2]) for r in note[2][1:]):
        indices = [_path(p) for p, x in reads if x.dtype == bool]
        note[3] = Check(f, args, kwargs, [(0,)], overlapping=True, indices=indices)
    return note


def put(rec, f, site, args, kwargs, self_target=False):
    a = f.__self__ if self_target else _arg(args, kwargs, 0, "a")
    base = 0 if self_target else 1
    ind, v = _arg(args, kwargs, base, "ind"), _arg(args, kwargs, base + 1, "v")
    mode = _arg(args, kwargs, base + 2, "mode", "raise")
    if not isinstance(a, _ndarray):
        return None
    positions = _flat_indices(ind, a.size, mode)
    values = (lambda: np.resize(np.ravel(np.asarray(v)), positions.size)) \
        if np.size(v) else None
    return _scatter(rec, f, site, args, kwargs, what="ndarray.put" if self_target else "np.put",
                    target=a, positions=positions, values=values,
                    perform=np.ndarray.put if self_target else None,
                    shift=1 if self_target else 0, self_target=self_target)


def place(rec, f, site, args, kwargs):
    a, mask = _arg(args, kwargs, 0, "arr"), _arg(args, kwargs, 1, "mask")
    if not isinstance(a, _ndarray):
        return None
    positions = np.flatnonzero(np.asarray(mask)).astype(np.int64)
    return _scatter(rec, f, site, args, kwargs, what="np.place", target=a,
                    positions=positions, values=None)


def putmask(rec, f, site, args, kwargs):
    a, mask = _arg(args, kwargs, 0, "a"), _arg(args, kwargs, 1, "mask")
    if not isinstance(a, _ndarray):
        return None
    positions = np.flatnonzero(np.broadcast_to(np.asarray(mask), a.shape)).astype(np.int64)
    return _scatter(rec, f, site, args, kwargs, what="np.putmask", target=a,
                    positions=positions, values=None)


def fill_diagonal(rec, f, site, args, kwargs):
    a = _arg(args, kwargs, 0, "a")
    wrap = _arg(args, kwargs, 2, "wrap", False)
    if not isinstance(a, _ndarray) or a.ndim < 2:
        return None
    # NumPy's own positions (numpy/lib/_index_tricks_impl.py: ``a.flat[:end:step] = val``)
    if a.ndim == 2:
        step, end = a.shape[1] + 1, (None if wrap else a.shape[1] * a.shape[1])
    else:
        step, end = 1 + int(np.cumprod(a.shape[:-1]).sum()), None
    positions = np.arange(a.size, dtype=np.int64)[:end:step]
    return _scatter(rec, f, site, args, kwargs, what="np.fill_diagonal", target=a,
                    positions=positions, values=None)


def put_along_axis(rec, f, site, args, kwargs):
    a, indices = _arg(args, kwargs, 0, "arr"), _arg(args, kwargs, 1, "indices")
    values, axis = _arg(args, kwargs, 2, "values"), _arg(args, kwargs, 3, "axis")
    if not isinstance(a, _ndarray) or axis is None or a.size > 1 << 24:
        return None
    grid = element_addresses(a, Ellipsis)
    addresses = np.take_along_axis(grid, np.asarray(indices), axis)
    positions = None
    reads = list(_arrays_in(args, kwargs, {(0, 0)}))
    note = _note(rec, site, "np.put_along_axis", [((0, 0), "W", a, addresses.ravel())],
                 reads, None)
    al = note[2][0][2]
    if addresses.size > 1:
        note[3] = duplicate_values(a, addresses, lambda: np.broadcast_to(
            np.asarray(values), addresses.shape))
    if note[3] is None and any(overlap(al, r[2]) for r in note[2][1:]):
        note[3] = Check(f, args, kwargs, [(0,)], overlapping=True,
                        indices=[_path(p) for p, x in reads if x.dtype.kind in "biu"])
    del positions
    return note


def ufunc_at(rec, f, site, args, kwargs):
    a, indices = _arg(args, kwargs, 0, "a"), _arg(args, kwargs, 1, "indices")
    if not isinstance(a, _ndarray):
        return None
    addresses = element_addresses(a, indices if type(indices) is tuple else (indices,))
    reads = list(_arrays_in(args, kwargs, {(0, 0)}))
    note = _note(rec, site, f"ufunc {f.__self__.__name__}.at",
                 [((0, 0), "RW", a, addresses.ravel())], reads, None)
    al = note[2][0][2]
    if any(overlap(al, r[2]) for r in note[2][1:]):
        note[3] = Check(f, args, kwargs, [(0,)], overlapping=True, exact=False,
                        indices=[_path(p) for p, x in reads if x.dtype.kind in "biu"])
    return note


def _whole(what, mode, self_target=True, position=0, name=None, when=None):
    """An operation that reads and/or writes one whole array and nothing else we follow."""
    def handle(rec, f, site, args, kwargs):
        x = f.__self__ if self_target else _arg(args, kwargs, position, name)
        if not isinstance(x, _ndarray) or (when is not None and not when(args, kwargs)):
            return None
        label = ("self",) if self_target else (0, position)
        note = _note(rec, site, what, [(label, mode, x, None)], [], None)
        if what in ("ndarray.sort", "ndarray.partition") and x.ndim and \
                internal_overlap(note[2][0][2]):
            note[3] = _Always(Verdict("hazard", "self-overlap-write", 0, None, (0,), True))
        return note
    return handle


def setfield(rec, f, site, args, kwargs):
    owner = f.__self__
    dtype = _arg(args, kwargs, 1, "dtype")
    offset = _arg(args, kwargs, 2, "offset", 0)
    try:
        field = owner.getfield(dtype, offset)
    except Exception:  # noqa: BLE001 - NumPy refuses the call itself
        return None
    reads = [(p, x) for p, x in _arrays_in(args, kwargs, set())]
    note = _note(rec, site, "ndarray.setfield", [(("self",), "W", field, None)], reads, None)
    fl = note[2][0][2]
    if any(overlap(fl, r[2]) for r in note[2][1:]):
        note[3] = Check(np.ndarray.setfield, (owner,) + tuple(args), kwargs, [(0,)],
                        overlapping=True)
    return note


def _not_copy(args, kwargs):
    return _arg(args, kwargs, 1, "copy", True) is False


def _inplace_byteswap(args, kwargs):
    return bool(_arg(args, kwargs, 0, "inplace", False))


_METHODS = {name: _method(name, position) for name, position in _METHOD_OUT.items()}
_METHODS.update({
    "put": lambda rec, f, site, args, kwargs: put(rec, f, site, args, kwargs, True),
    "sort": _whole("ndarray.sort", "RW"), "partition": _whole("ndarray.partition", "RW"),
    "fill": _whole("ndarray.fill", "W"), "setfield": setfield,
    "byteswap": _whole("ndarray.byteswap", "RW", when=_inplace_byteswap),
})
_UFUNC_METHODS = {name: _ufunc_method(name) for name in ("reduce", "accumulate", "reduceat",
                                                         "outer")}
_UFUNC_METHODS["at"] = ufunc_at
_RANDOM = {"shuffle": _whole("shuffle", "RW", self_target=False, position=0, name="x")}


def _functions():
    table = {}
    for name, position in OUT_POSITION.items():
        obj = getattr(np, name, None)
        if obj is None or isinstance(obj, np.ufunc) or not callable(obj):
            continue
        table[id(obj)] = (obj, _function(name, position))
    for name in ("einsum", "cumulative_sum", "cumulative_prod"):
        obj = getattr(np, name, None)
        if obj is not None:
            table[id(obj)] = (obj, _function(name, None))
    for obj, fn in ((np.copyto, copyto), (np.put, put), (np.place, place),
                    (np.putmask, putmask), (np.fill_diagonal, fill_diagonal),
                    (np.put_along_axis, put_along_axis),
                    (np.nan_to_num, _whole("np.nan_to_num", "RW", self_target=False,
                                           position=0, name="x", when=_not_copy))):
        table[id(obj)] = (obj, fn)
    return table


_FUNCTIONS = _functions()
_RANDOM_TYPES = (np.random.Generator, np.random.RandomState)


def handler(f):
    """The handler of callee ``f``, or None when ``f`` is no NumPy operation we follow."""
    t = type(f)
    if t is np.ufunc:
        return ufunc_call
    entry = _FUNCTIONS.get(id(f))
    if entry is not None and entry[0] is f:
        return entry[1]
    owner = getattr(f, "__self__", None)
    if owner is None:
        return None
    name = getattr(f, "__name__", None)
    if type(owner) is np.ufunc:
        return _UFUNC_METHODS.get(name)
    if isinstance(owner, _ndarray):
        return _METHODS.get(name)
    if isinstance(owner, _RANDOM_TYPES):
        return _RANDOM.get(name)
    return None

