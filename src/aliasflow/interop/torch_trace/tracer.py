"""The tracer: a ``TorchDispatchMode`` that records every aten call as an op record.

At each call it notes, for every tensor argument the schema says the op reads or writes, a
:class:`~.memory.Ref` (storage generation, offset, sizes, strides, dtype) taken *before* the
call for reads and *after* it for writes (an ``out=`` argument may be resized by the op), the
user's source line, and, unless ``values=False``, the bytes the op wrote (for replay).
Nothing here keeps a traced tensor's memory alive.
"""
from __future__ import annotations

import gc
import linecache
import weakref
import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ...core.errors import AliasflowError
from .memory import Ref, StorageGen
from .schema import TENSOR, op_spec
from .streams import StreamLog
from . import datadep

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_PAGE = 20   # generations are indexed by the 1 MiB pages they touch
_AF_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


_expired = torch.UntypedStorage._expired


def _free_weak_refs(cdatas, free=torch.UntypedStorage._free_weak_ref):
    for cdata in cdatas:
        free(cdata)


class Raw:
    """What the mode notes per call; :class:`~.records.TraceOp` is built from it later."""

    __slots__ = ("index", "func", "spec", "accesses", "args", "kwargs", "results", "where",
                 "stream", "error", "rng", "values", "exact", "repeats", "resized",
                 "untracked")

    def __init__(self, index, func, spec):
        self.index = index
        self.func = func
        self.spec = spec
        self.accesses = []      # (argument label, mode "R"/"W", Ref, may)
        self.args = self.kwargs = None   # call template: tensors replaced by Refs
        self.results = None     # returned value with tensors replaced by Refs
        self.where = None       # (filename, lineno, function) of the user's frame
        self.stream = None
        self.error = None       # the exception text when PyTorch refused the call
        self.rng = None         # generator state before a random op
        self.values = None      # [(Ref, tensor copy)] of what the op wrote, for replay
        self.exact = {}         # label -> sorted element start addresses of a data-dependent write
        self.repeats = {}       # label -> {address: times written} where > 1
        self.resized = set()    # arguments the op moved onto new memory (out= resizing)
        self.untracked = None   # why the tracer could not record this call's tensors


class _Mode(TorchDispatchMode):
    def __init__(self, trace):
        super().__init__()
        self.trace = trace

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.trace._call(func, args, kwargs or {})


class Trace:
    """A recorded PyTorch program. Use as ``with af.trace() as t: ...``.

    ``values=False`` skips copying what each op writes: tracing is cheaper, and
    :meth:`replay` is then unavailable. ``pause_gc`` (default True) turns Python's cyclic
    garbage collector off while tracing (the trace makes many small objects, and repeated
    full collections over them dominate the cost); memory freed by reference counting, which
    is how tensors are freed, is unaffected, and cyclic garbage is collected after the trace.
    """

    def __init__(self, values: bool = True, pause_gc: bool = True):
        self.values = values
        self.pause_gc = pause_gc
        self._gc_was_enabled = False
        self.raw: list[Raw] = []
        self.storages: list[StorageGen] = []
        self._by_cdata: dict[int, StorageGen] = {}
        self._weak: list = []   # StorageImpl addresses we hold weak references to
        weakref.finalize(self, _free_weak_refs, self._weak)
        self._pages: dict[int, list] = {}     # address >> _PAGE -> generations there
        self._streams = StreamLog(self.raw)   # streams, events, synchronisation (streams.py)
        self._mode = None
        self._ops = None
        self._internal: dict[str, bool] = {}
        self.running = False

    # ---- context manager ----------------------------------------------------------------
    def __enter__(self):
        if self.running:
            raise AliasflowError("this trace is already running")
        self._streams.start()
        self._mode = _Mode(self)
        self._mode.__enter__()
        self.running = True
        if self.pause_gc:
            self._gc_was_enabled = gc.isenabled()
            gc.disable()
        return self

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)
        self.running = False
        self._streams.stop()
        if self.pause_gc and self._gc_was_enabled:
            gc.enable()
        self._finish()
        return False

    # ---- streams (see streams.py) ---------------------------------------------------------
    def stream(self, name: str):
        """The trace's CPU stream ``name`` (the same object for the same name). ``with s:``
        issues the ops inside on it, as ``torch.cuda.stream`` does; like a CUDA stream it is
        ordered with other streams only by events, ``wait_stream`` and host waits (a region's
        end orders nothing)."""
        return self._streams.stream(name)

    @property
    def default_stream(self):
        """The stream of ops issued outside every ``with stream:`` region."""
        self._streams.use()
        return self._streams.default

    @property
    def current_stream(self):
        return self._streams.current

    def event(self):
        """A new event (``e.record(stream)``, ``e.wait(stream)``, ``e.synchronize()``)."""
        return self._streams.event()

    def synchronize(self) -> None:
        """The host waits for every stream (as ``torch.cuda.synchronize()``)."""
        self._streams.add("sync")

    # ---- storages -----------------------------------------------------------------------
    def _gen(self, t: torch.Tensor, index: int, creating: bool) -> StorageGen:
        st = t.untyped_storage()
        cdata = st._cdata
        ptr, nbytes = st.data_ptr(), st.nbytes()
        gen = self._by_cdata.get(cdata)
        if gen is not None and gen.address == ptr and gen.nbytes == nbytes:
            return gen
        if gen is None:
            st._weak_ref()   # pins the StorageImpl object, not its bytes; freed with the trace
            self._weak.append(cdata)
        gen = StorageGen(len(self.storages), ptr, nbytes, index if creating else None, index,
                         cdata)
        if not creating:
            # memory the allocator did not just hand out may be shared with live storages
            gen.aliases = frozenset(
                g.id for g in self._near(gen)
                if g.address < gen.end and gen.address < g.end and not _expired(g.weak)
                and self._by_cdata.get(g.weak) is g)
            if self.values:
                gen.snapshot = st.clone()
        self.storages.append(gen)
        pages = self._pages
        for page in range(ptr >> _PAGE, ((ptr + max(nbytes, 1) - 1) >> _PAGE) + 1):
            bucket = pages.get(page)
            if bucket is None:
                pages[page] = [gen]
            else:
                bucket.append(gen)
        self._by_cdata[cdata] = gen
        return gen

    def _near(self, gen):
        """Generations on the same address pages as ``gen`` (a superset of those whose
        ranges meet it)."""
        out = {}
        for page in range(gen.address >> _PAGE, ((gen.end - 1) >> _PAGE) + 1):
            for g in self._pages.get(page, ()):
                out[g.id] = g
        return out.values()

    def _ref(self, t: torch.Tensor, index: int, creating: bool = False) -> Ref:
        st = t.untyped_storage()
        gen = self._by_cdata.get(st._cdata)
        if gen is None or gen.address != st.data_ptr() or gen.nbytes != st.nbytes():
            gen = self._gen(t, index, creating)
        return Ref(gen, t.storage_offset(), t.shape, t.stride(), t.dtype, t.element_size(),
                   t.is_conj(), t.is_neg())

    def _where(self):
        f = sys._getframe(3)
        internal = self._internal
        while f is not None:
            code = f.f_code
            inside = internal.get(code)
            if inside is None:
                fn = code.co_filename
                inside = internal[code] = fn.startswith((_TORCH_DIR, _AF_DIR, "<frozen"))
            if not inside:
                return code.co_filename, f.f_lineno, code.co_name
            f = f.f_back
        return None

    # ---- the hot path -------------------------------------------------------------------
    def _template(self, x, index):
        if isinstance(x, torch.Tensor):
            return self._ref(x, index)
        if isinstance(x, (list, tuple)) and any(isinstance(y, torch.Tensor) for y in x):
            return type(x)(self._template(y, index) for y in x)
        return x

    def _call(self, func, args, kwargs):
        spec = op_spec(func)
        index = len(self.raw)
        raw = Raw(index, func, spec)
        raw.stream = self._streams.region
        raw.where = self._where()
        self.raw.append(raw)
        self._ops = None
        # a view, or a stream command (record_stream): no data touched, nothing to replay
        if spec.view_only or (self._streams.active and
                              self._streams.issued(raw, func, args, kwargs)):
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                raw.error = f"{type(exc).__name__}: {exc}".split("\n")[0]
                raise
        try:
            state = self._before(raw, func, spec, index, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - never break the user's program
            return self._untracked(raw, func, args, kwargs, exc)
        try:
            out = func(*args, **kwargs)
        except Exception as exc:
            raw.error = f"{type(exc).__name__}: {exc}".split("\n")[0]
            for label, v, tv, _ in state[0]:
                raw.accesses.append((label, "W", tv, False))
            raise
        try:
            self._after(raw, index, state, out)
        except Exception as exc:  # noqa: BLE001
            raw.untracked = f"{type(exc).__name__}: {exc}".split("\n")[0]
            raw.accesses, raw.args, raw.kwargs, raw.values = [], None, None, None
        return out

    def _untracked(self, raw, func, args, kwargs, exc):
        """The tracer could not read this call's tensors (a sparse or otherwise unusual
        tensor): run it anyway, and say so (replay refuses a trace with such calls)."""
        raw.untracked = f"{type(exc).__name__}: {exc}".split("\n")[0]
        raw.accesses, raw.args, raw.kwargs = [], None, None
        try:
            return func(*args, **kwargs)
        except Exception as err:
            raw.error = f"{type(err).__name__}: {err}".split("\n")[0]
            raise

    def _before(self, raw, func, spec, index, args, kwargs):
        n = len(args)
        # reads (and the call template) before the call
        Tensor, ref, template = torch.Tensor, self._ref, self._template
        targs = [ref(a, index) if isinstance(a, Tensor) else
                 template(a, index) if isinstance(a, (list, tuple)) else a for a in args]
        tkwargs = {k: ref(v, index) if isinstance(v, Tensor) else
                   template(v, index) if isinstance(v, (list, tuple)) else v
                   for k, v in kwargs.items()} if kwargs else {}
        raw.args, raw.kwargs = targs, tkwargs
        writes = []
        for a in spec.tensor_args:
            if a.mode is None:
                continue
            if a.position < n:
                value, tvalue = args[a.position], targs[a.position]
            elif a.name in kwargs:
                value, tvalue = kwargs[a.name], tkwargs[a.name]
            else:
                continue
            if a.holds == TENSOR:
                if not isinstance(value, torch.Tensor):
                    continue  # None, or a Python number where the schema allows one
                items = ((a.name, value, tvalue),)
            elif isinstance(value, (list, tuple)):
                items = tuple((f"{a.name}[{k}]", v, tv) for k, (v, tv) in
                              enumerate(zip(value, tvalue)) if isinstance(v, torch.Tensor))
            else:
                continue
            for label, v, tv in items:
                if "R" in a.mode:
                    raw.accesses.append((label, "R", tv, False))
                if "W" in a.mode:
                    writes.append((label, v, tv, a.is_out))
        exact = None
        if spec.data_dependent and writes:
            exact = datadep.written_elements(spec, args, kwargs, writes[0][1], writes[0][2])
            if exact is not None:
                # the target is not read wholesale: only what the op's kind says it reads
                raw.accesses = [acc for acc in raw.accesses if acc[0] != writes[0][0]]
        if spec.random:
            gen = kwargs.get("generator") if spec.takes_generator else None
            raw.rng = (gen or torch.default_generator).get_state()
        return writes, exact

    def _after(self, raw, index, state, out):
        writes, exact = state
        # writes after the call: out= arguments may have been resized onto new memory
        values = [] if self.values else None
        for label, v, tv, is_out in writes:
            # only an out= argument can be resized or moved by the op itself
            ref = self._ref(v, index, creating=True) if is_out else tv
            if ref.gen is not tv.gen:
                raw.resized.add(label)
            if exact is not None and label == writes[0][0]:
                datadep.record(raw, label, ref, exact)
            else:
                raw.accesses.append((label, "W", ref, False))
            if values is not None:
                values.append((ref, v.clone()))
        raw.results = self._results(out, index, raw, values)
        raw.values = values
        if not raw.accesses:   # nothing to replay: keep no arguments (they may hold memory)
            raw.args = raw.kwargs = raw.results = None


    def _results(self, out, index, raw, values):
        if isinstance(out, torch.Tensor):
            st = out.untyped_storage()
            gen = self._by_cdata.get(st._cdata)
            fresh = gen is None or gen.address != st.data_ptr() or gen.nbytes != st.nbytes()
            ref = self._ref(out, index, creating=fresh)
            if fresh:
                raw.accesses.append(("result", "W", ref, False))
                if values is not None:
                    values.append((ref, out.clone()))
            return ref
        if isinstance(out, (list, tuple)):
            return type(out)(self._results(o, index, raw, values) for o in out)
        return out

    # ---- end of trace -------------------------------------------------------------------
    def _finish(self):
        for gen in self.storages:
            latest = self._by_cdata.get(gen.weak) is gen
            gen.alive_at_end = latest and not _expired(gen.weak)
            if gen.alive_at_end and self.values:
                st = torch.UntypedStorage._new_with_weak_ptr(gen.weak)
                if st is not None and st.data_ptr() == gen.address:
                    gen.final = st.clone()
                else:
                    gen.alive_at_end = False

    # ---- results ------------------------------------------------------------------------
    @property
    def ops(self):
        """The op records (:class:`~.records.TraceOp`), in program order, ready for
        ``af.analyze``, ``af.value_flow``, ``af.find_races``."""
        if self._ops is None:
            from .records import build_ops
            self._ops = build_ops(self)
        return self._ops

    def __len__(self) -> int:
        return len(self.raw)

    def findings(self):
        """Findings, most serious first (see :mod:`.findings`)."""
        from .findings import find
        return find(self)

    def reuse(self):
        """Conflicts across memory reuse (a freed storage's address given to a new one)."""
        from .findings import reuse
        return reuse(self)

    def races(self):
        """Race findings: conflicting accesses the streams leave unordered (see
        :mod:`.races`)."""
        from .races import races
        return races(self)

    def replay(self, workers: int = 1):
        """Re-execute the trace in dependency order on copies; see :mod:`.replay`."""
        from .replay import replay
        return replay(self, workers)

    def to_json(self, elements: bool = False) -> dict:
        from .report import to_json
        return to_json(self, elements)

    def source_line(self, where) -> str:
        if where is None:
            return ""
        return linecache.getline(where[0], where[1]).strip()

    def __repr__(self) -> str:
        return f"Trace({len(self.raw)} aten calls, {len(self.storages)} storages)"

    def _repr_html_(self) -> str:
        """Jupyter shows a trace as a table of its findings."""
        from ...reporting.html import trace_html
        return trace_html(self)


def trace(values: bool = True, pause_gc: bool = True) -> Trace:
    """Trace the PyTorch program run inside ``with af.trace() as t:`` (see :class:`Trace`)."""
    return Trace(values=values, pause_gc=pause_gc)
