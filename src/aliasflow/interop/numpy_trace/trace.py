"""A NumPy trace: the operations a program's watched code performed, as records and findings.

What a trace sees:

- in code rewritten at import (the script run by ``aliasflow trace``, ``-m module``, the
  modules it imports from its own directory, packages named with ``--include``; see
  :mod:`.hook`): subscript and augmented assignment, ``.flat``/``.real``/``.imag``
  assignment, and calls of NumPy functions, ufuncs and ndarray methods that write;
- anywhere, while a trace is recording: calls of the NumPy *functions* that write
  (``np.copyto``, ``np.put``, ``np.concatenate(out=)``, ... : :data:`WRAPPED`), made through
  the ``numpy`` module's attributes (``np.copyto(...)``; a name bound before the trace
  started, ``from numpy import copyto``, is the original function and is not seen);
- not: subscript assignment, in-place operators, ufuncs and ndarray methods in code that
  was not rewritten (NumPy's own Python code, installed packages): their syntax is compiled
  already, and ufuncs and ``ndarray`` cannot be replaced without changing them.

Memory is keyed by address (:mod:`.records`), as in the PyTorch tracer, so a later shared
trace can take these records as they are.
"""
from __future__ import annotations

import functools
import sys

import numpy as np

from ...core.errors import AliasflowError
from . import runtime
from .calls import _FUNCTIONS
from .findings import Observation, observe, to_findings
from .recorder import Recorder

#: NumPy functions wrapped at the module level while a trace records (un-rewritten code).
WRAPPED = tuple(sorted({obj.__name__ for obj, _ in _FUNCTIONS.values()
                        if getattr(np, getattr(obj, "__name__", ""), None) is obj}))


class NumpyTrace:
    """NumPy operations recorded while ``with trace:`` runs (and rewritten code runs).

    ``ops``: the operations as ``af.OpRecord``s (program order), ready for ``af.analyze``,
    ``af.value_flow`` and ``af.find_races``; ``findings(all=False)``: the findings, most
    serious first (:mod:`.findings`); ``modules``: what the import hook rewrote (summaries
    of watched and unwatched constructs).
    """

    def __init__(self, wrap_functions: bool = True):
        self.recorder = Recorder()
        self.wrap_functions = wrap_functions
        self.modules = []           # rewrite summaries of the modules rewritten meanwhile
        self.running = False
        self._records = None
        self._saved = {}

    # ---- recording ---------------------------------------------------------------------------
    def __enter__(self):
        if self.running:
            raise AliasflowError("this NumPy trace is already recording")
        if runtime._recorder is not None:
            raise AliasflowError("another NumPy trace is recording; traces do not nest")
        if self.recorder.frozen is not None:
            raise AliasflowError("a NumPy trace records once; make a new one")
        runtime.install()
        runtime._recorder = self.recorder
        self.running = True
        if self.wrap_functions:
            self._wrap()
        self.recorder.start()
        return self

    def __exit__(self, *exc):
        self.recorder.stop()
        self._unwrap()
        if runtime._recorder is self.recorder:
            runtime._recorder = None
        self.running = False
        self.recorder.freeze()
        self._records = None
        return False

    def _wrap(self):
        space = vars(np)   # (set in one update each way: a program may trace every step)
        originals = {name: space[name] for name in WRAPPED}
        made = _WRAPPING[0]
        if made is None or made[0] != originals:   # first use, or the program rebound one
            wrappers = {}
            for name, original in originals.items():
                wrapper = _WRAPPERS.get(original)
                if wrapper is None:   # made once per function: a wrapper keeps no trace state
                    wrapper = _WRAPPERS[original] = _wrapper(original)
                wrappers[name] = wrapper
            made = _WRAPPING[0] = (originals, wrappers,
                                   {id(wrappers[n]): o for n, o in originals.items()})
        self._saved = made
        runtime._unwrapped.update(made[2])
        space.update(made[1])

    def _unwrap(self):
        if not self._saved:
            return
        originals, wrappers, ids = self._saved
        space = vars(np)
        if {name: space.get(name) for name in wrappers} == wrappers:
            space.update(originals)
        else:   # a name the program rebound meanwhile keeps the program's value
            space.update({n: o for n, o in originals.items() if space.get(n) is wrappers[n]})
        unwrapped = runtime._unwrapped
        if unwrapped == ids:   # (traces do not nest: usually only this trace's are there)
            unwrapped.clear()
        else:
            for key in ids:
                unwrapped.pop(key, None)
        self._saved = {}

    # ---- results -----------------------------------------------------------------------------
    @property
    def ops(self) -> list:
        """Op records (``af.OpRecord``), program order; see :mod:`.records`."""
        if self._records is None:
            from .records import build
            self._records = build(self.recorder, self._name)
        return self._records

    def _name(self, index, label):
        from .findings import label_text
        return label_text(self.recorder.note(index), label)

    def __len__(self) -> int:
        return self.recorder.count()

    def observations(self, all: bool = False) -> list[Observation]:
        found = observe(self.recorder, np.__version__)
        if all:
            found.extend(self._order())
        return found

    def findings(self, all: bool = False) -> list:
        """Findings, most serious first: wrong, hazard, stale-view (and with ``all=True``
        the order facts); repeats at the same lines grouped."""
        observations = self.observations(all)
        wanted = sorted({i for obs in observations for i in obs.ops})
        if self._records is not None:
            records = {i: self._records[i] for i in wanted}
        else:
            from .records import build
            records = dict(zip(wanted, build(self.recorder, self._name, wanted)))
        notes = {i: self.recorder.note(i) for i in wanted}
        from .records import Memory
        return to_findings(observations, records, ops=notes,
                           memory=Memory(self.recorder, list(notes.values())))

    def _order(self) -> list[Observation]:
        """Implicit flows between different operations through different views."""
        from ...analysis.dependencies import analyze
        from .findings import label_text
        records = {r.name: r for r in self.ops if r.accesses}
        notes = self.recorder.ops
        out = []
        for d in analyze(list(records.values())).dependencies:
            if not d.implicit:
                continue
            src, dst = records[d.src], records[d.dst]
            i, j = src.info.index, dst.info.index
            out.append(Observation("order", d.kind, (i, j),
                                   (label_text(notes[i], _label_of(src, d.src_access, notes[i])),
                                    label_text(notes[j], _label_of(dst, d.dst_access, notes[j]))),
                                   _elements_holding(d.src_access, d.elements)))
        return out

    def errors(self) -> dict:
        """op index -> why NumPy refused the operation."""
        return dict(self.recorder.errors)

    def to_json(self, all: bool = False) -> dict:
        """The trace as JSON: what was watched, refused, not recorded, and the findings."""
        from .report import to_json
        return dict(to_json(self), findings=[f.to_json() for f in self.findings(all)])

    def __repr__(self) -> str:
        return f"NumpyTrace({len(self)} operations)"


def _label_of(record, view, note):
    """The label of the access of ``record`` through ``view`` (records share view objects)."""
    slot = next(a.slot for a in record.accesses if a.view is view)
    return note[2][slot][0]


def _elements_holding(view, byte_indices) -> int:
    """How many elements of the byte view ``view`` (an element grid, the element's bytes a
    last dimension) hold one of the storage bytes ``byte_indices``."""
    if byte_indices is None or not len(byte_indices):
        return 0
    itemsize = view.shape[-1]
    starts = np.full((), view.byte_offset, dtype=np.int64)
    for size, stride in zip(view.shape[:-1], view.byte_strides[:-1]):
        starts = np.add.outer(starts, np.arange(size, dtype=np.int64) * stride)
    starts = np.unique(starts)
    hit = np.isin(np.add.outer(starts, np.arange(itemsize)), np.asarray(byte_indices))
    return int(hit.any(axis=-1).sum())


_WRAPPERS: dict = {}   # NumPy function -> its recording wrapper
# the last wrapping: ({name: NumPy function}, {name: wrapper}, {id(wrapper): function})
_WRAPPING: list = [None]


def _wrapper(f):
    """``f`` recording its calls while a trace records, for code the hook did not rewrite
    (its site: the caller's line)."""
    @functools.wraps(f)
    def numpy_function(*args, **kwargs):
        rec = runtime._recorder
        if rec is None:
            return f(*args, **kwargs)
        frame = sys._getframe(1)
        try:
            note = rec.call(f, _caller_site(frame), args, kwargs)
        except Exception:  # noqa: BLE001 - never the program's failure
            note = None
        try:
            result = f(*args, **kwargs)
        except BaseException as exc:
            if note is not None:
                rec.refused(note, exc)
            raise
        if note is not None and type(note) is not int:
            try:
                rec.complete(note)
            except Exception:  # noqa: BLE001
                pass
        return result
    numpy_function.__aliasflow_original__ = f
    return numpy_function


_caller_sites: dict = {}


def _caller_site(frame) -> int:
    key = (frame.f_code.co_filename, frame.f_lineno)
    site = _caller_sites.get(key)
    if site is None:
        import linecache
        text = linecache.getline(key[0], key[1]).strip()
        site = _caller_sites[key] = runtime.register_site(
            key[0], key[1], 0, key[1], 0, "call", text, ())
    return site


def trace(wrap_functions: bool = True) -> NumpyTrace:
    """Record the NumPy operations of ``with trace() as t:`` (see :class:`NumpyTrace`)."""
    return NumpyTrace(wrap_functions)
