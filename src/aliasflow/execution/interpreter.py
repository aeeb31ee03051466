"""The interpreter over op records: check once per kind of op, then run prepared kernels.

Before any op runs, every record is checked (:func:`aliasflow.core.interpret.check`), once
per *signature*: the kind, the parameters and the views' layouts up to their offsets (shape,
stride, dtype, tensor) — a trace repeats a few signatures many times. The first record
refused, in program order, stops the run before anything is written (:class:`OpRefused`).

Then each record gets a *step*: a function of no arguments that runs it on NumPy arrays
made once, over its views, with the kernel bound to its parameters once per distinct
parameters (:meth:`Primitive.prepare`, when the kind has one). A step writes every output
only after its kernel has read all inputs (copy semantics), exactly as
:func:`aliasflow.core.interpret.execute`; values the op returns go into the run's
:class:`~aliasflow.Results`. The runners (:mod:`.runner`) call the steps in program order
or in any order the dependency graph allows. In program order, consecutive fills of one value
into one tensor through 1-d views are one indexed assignment (:class:`FillRun`).
"""
from __future__ import annotations

import struct
from operator import attrgetter

import numpy as np

from ..core import interpret
from ..core.errors import AliasflowError, ExecutionError
from ..core.record import Value

_VIEW_KEY = attrgetter("shape", "stride", "dtype", "tensor.storage", "tensor.dtype")
_MISSING = object()
_FLOATS = frozenset({float, np.float16, np.float32, np.float64})
_float_bits = struct.Struct("<d").pack
_PLAIN = frozenset({int, float, str, bool, type(None), np.float16, np.float32, np.float64,
                    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                    np.uint64})


class OpRefused(AliasflowError, ExecutionError):
    """An op that cannot run, found before any op ran (both a bad-input error and an
    execution error: ``op_name`` names the first refused op in program order)."""

    def __init__(self, op_name: str, message: str):
        Exception.__init__(self, f"{message} (found before running: no op has run)")
        self.op_name = op_name


def params_key(params) -> tuple | None:
    """A hashable stand-in for ``params``: plain values by value and type (``1``, ``1.0`` and
    ``True`` differ), anything else by identity (a user's object may answer anything to
    ``==``; every record, so every object, is alive while it is used). None when a value is a
    container whose identity would not say what it holds."""
    key = []
    for name, value in params.items():
        t = type(value)
        if t in _PLAIN:
            # -0.0 == 0.0 (and NaN != NaN), but a kernel writes one or the other: by bits
            key.append((name, t, (_float_bits(value) if t is float else value.tobytes())
                        if t in _FLOATS else value))
        elif isinstance(value, (list, dict, set, np.ndarray)):
            return None
        else:
            key.append((name, t, id(value)))
    return tuple(key)


def signature(rec, keys: dict | None = None) -> tuple | None:
    """Everything the checks read of ``rec`` (its kind, parameters, and each access's mode
    and the view's shape, stride, dtype and tensor), or None when it must be checked alone.
    Two records with equal signatures pass or fail the checks alike. ``keys`` memoises
    :func:`params_key` by parameters object (records share them: see ``shared_params``)."""
    if keys is None:
        pk = params_key(rec.params)
    else:
        got = keys.get(id(rec.params), _MISSING)
        pk = got if got is not _MISSING else keys.setdefault(id(rec.params),
                                                             params_key(rec.params))
    if pk is None:
        return None
    # a view's layout, dtype and memory (its tensor's storage object and element type: two
    # tensors over one storage with one dtype check alike)
    return (rec.prim, pk, tuple(map(_VIEW_KEY, rec.input_views)),
            tuple(map(_VIEW_KEY, rec.output_views)))


def check_all(records) -> tuple[list, bytes]:
    """Check every record; refuse the first (in program order) that cannot run. Returns each
    record's primitive and, for the parallel runner, one byte per record: 1 for a light op
    (:func:`aliasflow.execution.ready.is_light`), else 0."""
    from .ready import is_light  # ready imports the core only

    prims: list = [None] * len(records)
    light = bytearray(len(records))
    checked: dict = {}
    keys: dict = {}  # params_key by id(params): the records are alive, so ids are theirs
    view_key = _VIEW_KEY
    for k, rec in enumerate(records):
        # the record's signature (see :func:`signature`), inline: this loop sees every op
        try:
            pk = keys.get(id(rec.params), _MISSING)
            if pk is _MISSING:
                pk = keys[id(rec.params)] = params_key(rec.params)
            if pk is None:
                key = None
            else:
                ins, outs = rec.input_views, rec.output_views
                key = (rec.prim, pk, tuple(map(view_key, ins)) if ins else (),
                       (view_key(outs[0]),) if len(outs) == 1 else tuple(map(view_key, outs)))
        except Exception:  # noqa: BLE001 - a record the checks below report better
            key = None
        hit = checked.get(key) if key is not None else None
        if hit is None:
            try:
                prim = interpret.check(rec)
            except (AliasflowError, ExecutionError) as exc:
                text = str(exc)
                if isinstance(exc, ExecutionError):  # the kernel refused the dtypes
                    text = f"op {rec.name!r}: " + text.removeprefix(f"op {rec.name!r} failed: ")
                raise OpRefused(rec.name, text) from None
            hit = (prim, is_light(rec, prim))
            if key is not None:
                checked[key] = hit
        prims[k], light[k] = hit
    return prims, bytes(light)


def _flat(tensor, flats: dict) -> np.ndarray:
    """The tensor's storage as a flat array of its dtype (made once per tensor in a run)."""
    flat = flats.get(id(tensor))
    if flat is None:
        storage = tensor.storage
        buf = storage._bytes if storage._bytes is not None else storage.bytes
        isz = tensor.dtype.itemsize
        flat = flats[id(tensor)] = buf[:buf.nbytes // isz * isz].view(tensor.dtype)
    return flat


def _arrays(views, made: dict, flats: dict, writable: bool) -> list:
    """NumPy arrays over ``views``, made once per view object in a run. A one-dimensional
    view of its tensor's dtype with a positive stride is a basic slice of the tensor's flat
    array (the same memory, strides and flags as the view's own array, at a fraction of the
    cost); any other view makes its own (read-only where writing would be ambiguous, unless
    ``writable``)."""
    out = []
    for view in views:
        key = id(view) if writable else ~id(view)
        arr = made.get(key)
        if arr is None:
            shape, stride = view.shape, view.stride
            t = view.tensor
            if len(shape) == 1 and stride[0] > 0 and shape[0] and view.dtype is t.dtype:
                flat = flats.get(id(t))
                if flat is None:
                    flat = _flat(t, flats)
                o = view.offset
                arr = flat[o:o + (shape[0] - 1) * stride[0] + 1:stride[0]]
            else:
                arr = view._ndarray() if writable else view.numpy()
            made[key] = arr
        out.append(arr)
    return out


def _bind(prim, params) -> tuple:
    """``(kernel bound to params or None, into or None, value or None)`` of a kind: None for
    the kernel means the reference way (every check per call); the value, of a uniform kind
    that takes no inputs (a fill), is its one value."""
    if prim.prepare is None or prim.outputs != "all":
        return None, None, None
    fn = prim.prepare(params)
    if prim.uniform and not prim.arity:
        return fn, None, np.asarray(fn([]))
    return fn, prim.into, None


class FillRun:
    """Consecutive fills in program order (records ``first..last``) of one value into one
    tensor's elements through 1-d views: written as one indexed assignment. They commute
    (one value; nothing in between reads), so the memory after it is program order's."""

    __slots__ = ("first", "last", "flat", "value", "starts", "counts", "strides")

    def __init__(self, k, flat, value, start, count, stride):
        self.first = self.last = k
        self.flat, self.value = flat, value
        self.starts, self.counts, self.strides = [start], [count], [stride]

    def __call__(self) -> None:
        starts = np.array(self.starts, np.intp)
        if all(c == 1 for c in self.counts):
            index = starts
        else:  # element j of view i: starts[i] + j * strides[i]
            counts = np.array(self.counts, np.intp)
            which = np.repeat(np.arange(len(counts)), counts)
            within = np.arange(len(which)) - np.repeat(np.cumsum(counts) - counts, counts)
            index = starts[which] + within * np.array(self.strides, np.intp)[which]
        self.flat[index] = self.value


class Steps:
    """The steps of a run: ``steps(k)`` runs record ``k`` (see the module docstring); its
    values go into ``results``. Each record's step is a tuple made once: the record, its
    primitive, its kernel bound to its parameters, its input and output arrays, the kind's
    ``into`` when it has one output, and the value itself for a uniform kind without inputs
    (a fill: one value for every element, checked to fit every output before the run).

    With ``runs`` (a run in program order), ``plan`` lists what to do in order: a record's
    index, or a :class:`FillRun` standing for several consecutive fills (their ``items`` are
    not made)."""

    __slots__ = ("records", "items", "results", "alive", "plan")

    def __init__(self, records, prims, results: dict, runs: bool = False):
        self.records = records
        self.results = results
        made: dict = {}
        flats: dict = {}
        alive: list = []
        # per kind: id(params) -> (the kernel bound to them, into, the value of a uniform kind
        # without inputs); records keep their params alive, so the ids are theirs
        bound: dict = {}
        items = []
        append = items.append
        plan = [] if runs else None
        fill = None  # the FillRun being extended
        for k, (rec, prim) in enumerate(zip(records, prims)):
            kind = bound.get(prim)
            if kind is None:
                kind = bound[prim] = {}
            got = kind.get(id(rec.params))
            if got is None:
                got = kind[id(rec.params)] = _bind(prim, rec.params)
            fn, into, value = got
            if runs:
                outs = rec.output_views
                if value is not None and not rec.input_views and len(outs) == 1 \
                        and not value.ndim:
                    view = outs[0]
                    shape, t = view.shape, view.tensor
                    if len(shape) == 1 and view.dtype is t.dtype and (view.stride[0]
                                                                      or shape[0] == 1):
                        flat = flats.get(id(t))
                        if flat is None:
                            flat = _flat(t, flats)
                        if fill is not None and fill.flat is flat and fill.value is value \
                                and fill.last == k - 1:
                            fill.last = k
                            fill.starts.append(view.offset)
                            fill.counts.append(shape[0])
                            fill.strides.append(view.stride[0])
                        else:
                            fill = FillRun(k, flat, value, view.offset, shape[0],
                                           view.stride[0])
                            plan.append(fill)
                        append(None)
                        continue
                plan.append(k)
            ins = _arrays(rec.input_views, made, flats, False) if rec.input_views else []
            views = rec.output_views
            if prim.uniform and not ins:  # one value everywhere: each element once
                views = [v.uniform_view() for v in views]
                alive.extend(views)  # made is keyed by id: these must outlive the run
            outs = _arrays(views, made, flats, True)
            append((rec, prim, fn, ins, outs, into if len(outs) == 1 else None,
                    value if outs and not ins else None))
        self.items = items
        self.alive = alive
        self.plan = plan

    def __len__(self) -> int:
        return len(self.items)

    def __call__(self, k: int) -> None:
        rec, prim, fn, ins, outs, into, value = self.items[k]
        if value is not None and not value.ndim:  # one value everywhere: it fits each output
            for arr in outs:
                arr[...] = value
            return
        if fn is None:  # the reference way, every check made per call
            values = interpret.compute(rec, prim, ins, outs)
            for j, got in enumerate(values[:rec.n_values]):
                self.results[Value(rec.name, j)] = got
            return
        try:
            if into is not None and into(rec.params, ins, outs[0]):
                return
            value = np.asarray(fn(ins))
        except (AliasflowError, ExecutionError):
            raise
        except Exception as exc:
            raise ExecutionError(rec.name, f"kernel {interpret.kernel_label(rec, prim)!r} "
                                           f"raised {type(exc).__name__}: {exc}") from exc
        if not outs:
            self.results[Value(rec.name, 0)] = value.copy() \
                if interpret._may_share(value, ins) else value
            return
        if len(outs) > 1 and interpret._may_share(value, outs):
            value = value.copy()  # a result aliasing an output would change as it is written
        for arr, view in zip(outs, rec.output_views):  # all checked before any is written
            if value.ndim and value.shape != arr.shape:
                interpret.fits_shape(rec.name, value.shape, view)
            if value.dtype != arr.dtype and not prim.uniform:
                interpret.fits_dtype(rec.name, value.dtype, view)
        for arr in outs:
            arr[...] = value
