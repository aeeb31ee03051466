"""The tracer: a ``TorchDispatchMode`` that records every aten call.

At each call it notes, for every tensor argument, its storage generation, data pointer, sizes,
strides and dtype, taken *before* the call for reads and *after* it for writes (an ``out=``
argument may be resized by the op), the user's source line, and the autograd sequence number
that links a backward op to the forward op that made its node. Everything else (byte views,
op records, names, findings) is worked out from these notes when asked for. Nothing here keeps
a traced tensor's memory alive.

The tracer never changes what the program does: anything that goes wrong inside it makes the
op *untracked* (recorded with the reason, one warning per overload) and the op runs exactly as
it would without the tracer; the op's own exceptions reach the program unchanged.
"""
from __future__ import annotations

import ctypes
import gc
import warnings
import weakref
import zlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode, \
    _get_current_dispatch_mode as _current_mode

from ...core.errors import AliasflowError
from ...core.gcpause import resume as resume_gc
from ...solver.native import load
from . import datadep
from .confirm import rerun
from .frames import USER_CODE as _USER, is_user_code as _is_user_code, user_frame as _user_frame, \
    user_site as _user_site, user_stacklevel
from .memory import FINAL_COPY_LIMIT, NO_ALIASES, StorageGen, may_overlap_internally, \
    same_layout as _same_layout
from .schema import TENSOR, spec_of
from .streams import StreamLog
from .threads import unwatch_threads as _unwatch_threads, watch_threads as _watch_threads

_hot = load(__package__ + "._hot")   # the compiled per-call path, or None (AF_PURE=1)


def _install_reader():
    """The compiled path reads plain tensors through the PyTorch reader where it was built
    (PyTorch installed before aliasflow) against this very PyTorch; else through their
    Python accessors (the same values, each a Python call)."""
    reader = load(__package__ + "._reader") if _hot is not None else None
    if reader is not None and reader.TORCH_VERSION == torch.__version__:
        _hot.use_reader(reader.API)


_install_reader()

_PAGE = 20   # generations are indexed by the 1 MiB pages they touch
_PRUNE_AT = 64   # a page's list longer than this is cleared of dead generations when read

_storage_address = torch._C._storage_address
_sequence_nr = torch._C._autograd._get_sequence_nr
_current_node = torch._C._current_autograd_node
_expired = torch.UntypedStorage._expired
_revive = torch.UntypedStorage._new_with_weak_ptr   # the storage of a weak reference, or None
# what TorchDynamo's disable calls to turn frame evaluation off (None where torch has none)
_SET_EVAL_FRAME = getattr(getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None),
                          "set_eval_frame", None)
_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_BIT_VIEWS = frozenset({"_neg_view", "imag", "_conj", "conj", "view_as_real", "real"})
_COMPLEX = frozenset({torch.complex32, torch.complex64, torch.complex128})
_QUANTIZED = frozenset({torch.qint8, torch.quint8, torch.qint32, torch.quint4x2,
                        torch.quint2x4})
_ODD_DTYPES = _QUANTIZED | _COMPLEX   # dtypes the hot path leaves to _capture


class AliasflowTraceWarning(UserWarning):
    """The tracer could not record an op (it ran as usual, untraced)."""


class Untracked(Exception):
    """A tensor the tracer cannot place in memory (sparse, nested, opaque layouts)."""


def _free_weak_refs(cdatas, free=torch.UntypedStorage._free_weak_ref):
    for cdata in cdatas:
        free(cdata)


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".split("\n")[0]


def _field(k: int, doc: str):
    def get(self):
        return self[k]

    def put(self, value):
        self[k] = value
    return property(get, put, doc=doc)


class Call(list):
    """What the tracer notes about one aten call (op records are built from these later): a
    list, as making one costs a fifth of a slotted object, with its fields named.

    ``accesses``: ``(mode, argument position, list index or -1, generation or None, data
    pointer, sizes, strides, dtype, born, bits)`` per tensor argument, ``mode`` None for a
    tensor whose data the op does not touch; results follow with position -1. ``born``: index
    of the call that made that tensor object (-1: before the trace), for reads of memory
    written since it was made (-2: not needed); ``bits``: conj (2) and neg (1) bits.
    """

    __slots__ = ()
    index = _field(0, "position among the trace's calls")
    spec = _field(1, "the overload's OpSpec (None: its schema could not be read)")
    func = _field(2, "the OpOverload")
    where = _field(3, "(code object, line) of the user's frame, or None")
    stream = _field(4, "the CPU stream region it was issued in (None: default)")
    seq = _field(5, "autograd's sequence number when it was called (None when a backward node "
                    "runs it)")
    node = _field(6, "sequence number of the backward node running it, or None")
    accesses = _field(7, "the access tuples")
    template = _field(8, "(args, kwargs) with tensors as access numbers, for replay")
    results = _field(9, "the returned value with tensors as access numbers")
    error = _field(10, "the exception text when PyTorch refused the call")
    untracked = _field(11, "why the tracer could not record this call's tensors")
    rng = _field(12, "(explicit generator?, its state) before a random op")
    extra = _field(13, "rare facts: exact writes, duplicates, outcomes, locals")


class _Slot:
    """A tensor's place in the call template: access number ``k`` (shared, immutable)."""
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __repr__(self):
        return f"<access {self.k}>"


_SLOTS = [_Slot(k) for k in range(256)]


def _slot(k: int) -> _Slot:
    return _SLOTS[k] if k < 256 else _Slot(k)


# id(OpOverload) -> (OpOverload, OpSpec or None: unreadable schema, what runs it), for every
# trace (see _spec); keyed by address, as an OpOverload's hash is a Python method; the entry
# keeps the overload alive
_SPECS: dict = {}
_SPEC_ERRORS: dict = {}

class _Mode(TorchDispatchMode):
    """The dispatch mode of a trace: every aten call goes to :meth:`Trace._call`."""

    def __init__(self, trace):
        super().__init__()
        self.trace = trace

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.trace._call(func, args, kwargs or {})


if _hot is not None:
    class _CompiledMode(_hot.HotPath, TorchDispatchMode):
        """The dispatch mode with the compiled per-call path (``_native_src/hot.cpp``), which
        records what :meth:`Trace._call` would and hands it every call it has no fast form for.

        The mode is a ``HotPath``, and its ``__torch_dispatch__`` is HotPath's, compiled: no
        Python frame per call. (TorchDispatchMode wraps a ``__torch_dispatch__`` written in
        the subclass in TorchDynamo's ``disable``, Python frames that turn frame evaluation
        off around each call; HotPath's turns it off itself, with the ``set_eval_frame`` those
        frames call.)"""

        def __init__(self, trace):
            TorchDispatchMode.__init__(self)
            _hot.HotPath.__init__(
                self, trace, trace.calls, trace._by_sid, trace._born, _SPECS, _SLOTS,
                trace._weak, trace._pages, trace.storages, trace._streams, _storage_address,
                _sequence_nr, _current_node, _user_site, _USER, _is_user_code, Call,
                StorageGen, _text, _ODD_DTYPES, _PLAIN, _Tensor, _same_layout, _slot,
                _Parameter, _expired, NO_ALIASES, _copy, torch.default_generator,
                _SET_EVAL_FRAME, trace.values, _PAGE)


class Trace:
    """A recorded PyTorch program. Use as ``with af.trace() as t: ...``.

    ``values=False`` keeps no bytes: tracing is cheaper, and :meth:`replay` is then
    unavailable. ``pause_gc`` (default True) turns Python's cyclic garbage collector off while
    tracing (the trace makes many small objects, and repeated full collections over them
    dominate the cost); memory freed by reference counting, which is how tensors are freed,
    is unaffected, and cyclic garbage is collected after the trace. ``names`` (default True)
    names parameters, buffers, gradients and optimizer state in findings by their qualified
    names, read from the modules and optimizers alive when a finding first needs one.
    """

    def __init__(self, values: bool = True, pause_gc: bool = True, names: bool = True):
        self.values = values
        self.pause_gc = pause_gc
        self.learn_names = names
        self._gc_was_enabled = False
        self.calls: list[Call] = []
        self.storages: list[StorageGen] = []
        self._by_sid: dict[int, StorageGen] = {}
        self._weak: list = []   # StorageImpl addresses we hold weak references to
        weakref.finalize(self, _free_weak_refs, self._weak)
        self._pages: dict[int, list] = {}     # address >> _PAGE -> generations there
        self._born: dict[int, int] = {}       # TensorImpl address -> call that returned it
        self._warned: set = set()
        self._streams = StreamLog(self.calls)  # streams, events, synchronisation (streams.py)
        self._mode = None
        self._derived = None
        self.seq_at_start = None  # autograd's sequence number when tracing began
        self.threads_started = 0  # threads the program started while tracing (not traced)
        self.calls_on_other_threads = 0   # aten calls those threads made while tracing
        self._bits_seen = False   # a neg view of a real tensor was made: read every one's bits
        self.names = None
        self.running = False
        self._ended = False   # a run of this trace has ended (its storages' ends are noted)

    # ---- context manager ----------------------------------------------------------------
    def __enter__(self):
        if self.running:
            raise AliasflowError("this trace is already running")
        if self.learn_names:
            from .names import ModuleNames
            self.names = ModuleNames()   # (read when a finding first needs a name)
        self.seq_at_start = _sequence_nr()
        _watch_threads(self)
        self._streams.start()
        self._mode = _CompiledMode(self) if _hot is not None else _Mode(self)
        self._mode.__enter__()
        self.running = True
        if self.pause_gc:
            self._gc_was_enabled = gc.isenabled()
            gc.disable()
        return self

    def __exit__(self, *exc):
        mode = self._mode
        mode.__exit__(*exc)
        self._mode = None   # the mode refers to the trace: no cycle left for the GC to find
        self.running = False
        _unwatch_threads(self)
        self._streams.stop()
        try:
            self._finish(mode)
        except Exception as err:  # noqa: BLE001 - never turn the program's exit into ours
            self._warn("end of trace", _text(err))
        if self.pause_gc and self._gc_was_enabled:
            # what the trace made lives as long as the trace: straight to the oldest
            # generation, not scanned as young all at once by the first collection after
            resume_gc(promote=True)
        if self.calls_on_other_threads:
            self._warn("calls on other threads",
                       f"{self.calls_on_other_threads} aten call(s) were made on the "
                       f"{self.threads_started} thread(s) the program started while tracing; "
                       f"a dispatch mode sees only its own thread, so they are not in the "
                       f"trace")
        self._derived = None
        return False

    def _forked(self):
        """In a child process forked while tracing (a DataLoader worker): stop there. The
        child inherited the forking thread's dispatch mode and the paused GC; its calls are
        another process's, which this trace (the parent's) never sees."""
        if self._mode is not None and _current_mode() is self._mode:
            self._mode.__exit__(None, None, None)
        self._mode = None
        self.running = False
        self._streams.stop()
        if self.pause_gc and self._gc_was_enabled:
            gc.enable()

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

    def _warn(self, key, reason):
        if key in self._warned:
            return
        self._warned.add(key)
        text = reason if key == "calls on other threads" else \
            f"aliasflow could not record {key} ({reason}); it ran untraced"
        try:
            warnings.warn(text, AliasflowTraceWarning, stacklevel=user_stacklevel())
        except Exception:  # noqa: BLE001 - warnings turned into errors: stay silent
            pass

    # ---- storages -----------------------------------------------------------------------
    def _gen(self, t, sid, index, creating):
        """A new generation for ``t``'s storage (first sight, or its memory moved); None for
        a storage without memory (meta, fake)."""
        st = t.untyped_storage()
        ptr, nbytes = st.data_ptr(), st.nbytes()
        if not ptr and (nbytes or self._unusual(t) is None):
            return None
        return self._new_gen(t, st, sid, ptr, nbytes, index, creating)

    def _new_gen(self, t, st, sid, ptr, nbytes, index, creating):
        """The generation of storage ``st`` (StorageImpl address ``sid``) at ``ptr``,
        ``nbytes`` long, first seen by call ``index`` (``creating``: the call made it)."""
        by_sid = self._by_sid
        if sid not in by_sid:
            st._weak_ref()   # pins the StorageImpl object, not its bytes; freed with the trace
            self._weak.append(sid)
        storages = self.storages
        gen = StorageGen(len(storages), ptr, nbytes, index if creating else None, sid,
                         "cpu" if t.is_cpu else t.device.type, index)
        if not creating:
            # memory the allocator did not just hand out may be shared with live storages
            gen.aliases = self._live_overlapping(gen)
            if gen.aliases:
                gen.group = min(storages[i].group for i in gen.aliases)
            if self.values:
                gen.snapshot = _copy(st, gen)
        storages.append(gen)
        if nbytes:
            pages = self._pages
            first, last = ptr >> _PAGE, (ptr + nbytes - 1) >> _PAGE
            for page in (first,) if first == last else range(first, last + 1):
                bucket = pages.get(page)
                if bucket is None:
                    pages[page] = [gen]
                else:
                    bucket.append(gen)
        by_sid[sid] = gen
        return gen

    def _live_overlapping(self, gen):
        """Ids of the generations still alive (their storage not freed, and still its latest
        generation) whose address ranges meet ``gen``'s. A long page list is first cleared
        of dead generations (a dead one never comes back), so lists stay as long as what
        lives there."""
        start, end = gen.address, gen.end
        by_sid, pages = self._by_sid, self._pages
        found = set()
        for page in range(start >> _PAGE, ((max(end, start + 1) - 1) >> _PAGE) + 1):
            bucket = pages.get(page)
            if not bucket:
                continue
            if len(bucket) > _PRUNE_AT:
                bucket[:] = [g for g in bucket
                             if not _expired(g.weak) and by_sid.get(g.weak) is g]
            for g in bucket:
                if g.address < end and start < g.end and not _expired(g.weak) \
                        and by_sid.get(g.weak) is g:
                    found.add(g.id)
        return frozenset(found) if found else NO_ALIASES

    def _unusual(self, t):
        """``(None, 0)`` for a tensor without memory (meta, fake, functional wrappers), whose
        accesses overlap nothing; raises :class:`Untracked` for layouts without plain
        strided memory (sparse, nested, mkldnn, quantized)."""
        if t.is_nested:
            raise Untracked("a nested tensor")
        layout = t.layout
        if layout != torch.strided:
            raise Untracked(f"a {str(layout).replace('torch.', '')} tensor")
        if t.dtype in _QUANTIZED:
            raise Untracked(f"a quantized tensor ({str(t.dtype).replace('torch.', '')})")
        if t.device.type == "meta" or type(t) is not _Tensor and \
                not isinstance(t, _Parameter):
            try:
                if t.device.type == "meta":
                    return None
                st = t.untyped_storage()   # (a fake tensor's is on meta: no pointer asked)
                if st.device.type == "meta" or not st.data_ptr():
                    return None
            except Exception:  # noqa: BLE001 - a wrapper without storage
                return None
        return False

    def _capture(self, t, mode, pos, k, index, out, creating=False):
        """Append ``t``'s access tuple to ``out``."""
        if type(t) is not _Tensor and type(t) is not _Parameter and self._unusual(t) is None:
            # a wrapper without memory (fake, functional): not asked for a data pointer
            out.append((mode, pos, k, None, 0, tuple(t.shape), t.stride(), t.dtype, -1, 0))
            return
        try:
            sid = _storage_address(t)
            ptr = t.data_ptr()
            shape = t.shape
            stride = t.stride()
        except Exception as exc:  # noqa: BLE001
            if self._unusual(t) is None:
                out.append((mode, pos, k, None, 0, tuple(t.shape), t.stride(), t.dtype, -1, 0))
                return
            raise Untracked(f"cannot read the memory of a {type(t).__name__} "
                            f"({_text(exc)})") from None
        dtype = t.dtype
        if dtype in _QUANTIZED:
            self._unusual(t)
        gen = self._by_sid.get(sid)
        if gen is None or creating or not (gen.address <= ptr <= gen.end):
            gen = self._gen(t, sid, index, creating)
            if gen is None:   # no memory: meta, fake
                out.append((mode, pos, k, None, 0, tuple(shape), stride, dtype, -1, 0))
                return
        born = -2
        if gen.dirty and mode is not None:
            born = self._born.get(t._cdata, -1)
        if mode is not None and mode != "R" and gen.creator != index:
            gen.dirty = True
        bits = 0
        if self._bits_seen or dtype in _COMPLEX:
            bits = t.is_conj() << 1 | t.is_neg()
        out.append((mode, pos, k, gen, ptr, shape, stride, dtype, born, bits))

    # ---- the hot path -------------------------------------------------------------------
    def _call(self, func, args, kwargs):
        known = _SPECS.get(id(func))
        if known is None or known[0] is not func:
            known = _spec(func)
        spec, run = known[1], known[2]
        calls = self.calls
        index = len(calls)
        # the user's line: in the first frame past this one outside torch, aliasflow and
        # installed packages (the mode's, when it has one, is aliasflow's)
        where = _user_site(1, _USER, _is_user_code)
        node = _current_node()
        streams = self._streams
        # (a call a backward node runs has its node's number; only a forward call's sequence
        # number says which node it made)
        call = Call((index, spec, func, where,
                     streams.region, _sequence_nr() if node is None else None,
                     None if node is None else node._sequence_nr(), (), None, None, None,
                     None, None, None))
        calls.append(call)
        if spec is None:
            return self._untracked(call, func, args, kwargs, _SPEC_ERRORS.get(func))
        # a view, or a stream command (record_stream): no data touched, nothing to replay
        if spec.view_only or (streams.active and streams.issued(call, func, args, kwargs)):
            try:
                out = run(*args, **kwargs)
            except Exception as exc:
                call[10] = _text(exc)
                raise
            try:
                self._views_made(spec, out, index)
            except Exception as exc:  # noqa: BLE001
                call[11] = _text(exc)
            return out
        try:
            accesses = self._before(call, spec, index, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - never break the user's program
            return self._untracked(call, func, args, kwargs, _text(exc))
        call[7] = accesses   # kept if PyTorch refuses the call
        finish = None
        if spec.writes:
            try:
                finish = self._suspect(call, spec, func, args, kwargs, accesses)
            except Exception:  # noqa: BLE001 - no confirmation, the finding stays a hazard
                finish = None
        try:
            out = run(*args, **kwargs)
        except Exception as exc:
            call[10] = _text(exc)
            if spec.resizing:   # out= resized onto its inputs, then refused: keep the layout
                self._refused_resize(call, spec, index, args, kwargs, accesses)
            raise
        try:
            self._after(call, spec, index, args, kwargs, accesses, out, finish)
        except Exception as exc:  # noqa: BLE001
            call[11] = _text(exc)
            call[7], call[8], call[9] = (), None, None
            self._warn(spec.name, call.untracked)
        return out

    def _refused_resize(self, call, spec, index, args, kwargs, accesses):
        """An op that resized a written argument within its memory and then refused: the
        new layout is what it would have written (one moved onto new memory wrote nothing
        the program had: the old layout stays)."""
        try:
            n = len(args)
            for acc in accesses:
                if acc[0] not in ("W", "RW") or acc[3] is None or acc[1] < 0:
                    continue
                a = spec.args[acc[1]]
                v = args[a.position] if a.position < n else kwargs.get(a.name)
                st = (v[acc[2]] if acc[2] >= 0 else v).untyped_storage()
                if acc[3].address != st.data_ptr() or acc[3].nbytes != st.nbytes():
                    return
            self._moved(call, spec, index, args, kwargs, accesses)
        except Exception:  # noqa: BLE001 - the refusal is the program's, not ours
            pass

    def _views_made(self, spec, out, index):
        """Note when the tensor objects a view op returns were made (for stale views)."""
        if spec.base in _BIT_VIEWS:
            self._bits_seen = True
        if type(out) is _Tensor:
            self._born[out._cdata] = index
        elif isinstance(out, (list, tuple)):
            born = self._born
            for o in out:
                if isinstance(o, _Tensor):
                    born[o._cdata] = index

    def _untracked(self, call, func, args, kwargs, reason):
        """The tracer could not record this call's tensors: run it exactly as untraced, and
        say so (replay refuses a trace with such calls)."""
        call.untracked = reason or "unknown"
        call.accesses = ()
        self._warn(call.spec.name if call.spec is not None else str(func), call.untracked)
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            call.error = _text(exc)
            raise

    def _before(self, call, spec, index, args, kwargs):
        """The access tuples of the call's tensor arguments (and, for replay, the call with
        each tensor replaced by its access number)."""
        accesses: list = []
        append = accesses.append
        n = len(args)
        by_sid, born_map = self._by_sid, self._born
        plain_bits = not self._bits_seen
        values = self.values
        targs = list(args) if values else None
        tkw = dict(kwargs) if values and kwargs else kwargs
        for pos, name, is_list, mode in spec.tensors:
            if pos < n:
                v = args[pos]
                holder, key = targs, pos
            else:
                v = kwargs.get(name)
                if v is None:
                    continue
                holder, key = tkw, name
            if is_list:
                if not isinstance(v, (list, tuple)):
                    continue
                marks = []
                for j, t in enumerate(v):
                    if isinstance(t, _Tensor):
                        marks.append(_slot(len(accesses)))
                        self._capture(t, mode, pos, j, index, accesses)
                    else:
                        marks.append(t)
                if values:
                    holder[key] = type(v)(marks)
                continue
            if not isinstance(v, _Tensor):
                continue   # None, or a Python number where the schema allows one
            if values:
                holder[key] = _slot(len(accesses))
            # the common case inline (a plain tensor of a storage already seen); the rest
            # goes through _capture
            if type(v) is not _Tensor and type(v) is not _Parameter:
                self._capture(v, mode, pos, -1, index, accesses)
                continue
            try:
                sid = _storage_address(v)
                ptr = v.data_ptr()
                shape = v.shape
                stride = v.stride()
                dtype = v.dtype
                gen = by_sid.get(sid)
            except Exception:  # noqa: BLE001
                gen = None
            if gen is None or dtype in _ODD_DTYPES or not gen.address <= ptr <= gen.end:
                self._capture(v, mode, pos, -1, index, accesses)
                continue
            born = -2
            if mode is not None:
                if gen.dirty:
                    born = born_map.get(v._cdata, -1)
                if mode != "R" and gen.creator != index:
                    gen.dirty = True
            append((mode, pos, -1, gen, ptr, shape, stride, dtype, born,
                    0 if plain_bits else v.is_conj() << 1 | v.is_neg()))
        if values:
            call[8] = (targs, tkw)
        if spec.switch is not None:   # unannotated writes that a flag turns on
            flag = args[spec.switch] if spec.switch < n else \
                kwargs.get(spec.args[spec.switch].name)
            if not flag:
                accesses[:] = [("R",) + acc[1:] if acc[0] == "RW" else acc
                               for acc in accesses]
        if spec.data_dependent and spec.writes:
            self._exact(call, spec, args, kwargs, accesses)
        if spec.random:
            gen = kwargs.get("generator") if spec.takes_generator else None
            if gen is None and spec.takes_generator:
                pos = next((a.position for a in spec.args if a.name == "generator"), None)
                if pos is not None and pos < n:
                    gen = args[pos]
            call[12] = (gen is not None, (gen or torch.default_generator).get_state())
        return accesses

    def _exact(self, call, spec, args, kwargs, accesses):
        """For an in-place data-dependent write: which elements it writes, exactly."""
        target_pos = next(a.position for a in spec.args if a.mode in ("W", "RW"))
        k = next((j for j, acc in enumerate(accesses) if acc[1] == target_pos), None)
        if k is None:
            return
        b = datadep.bound(spec, args, kwargs)
        target = b.get(spec.args[target_pos].name)
        acc = accesses[k]
        if acc[3] is None or not isinstance(target, _Tensor):
            return
        got = datadep.written_elements(spec, b, target,
                                       datadep.starts(acc[4], acc[5], acc[6],
                                                      target.element_size()))
        if got is None:
            return
        extra = call.extra = call.extra or {}
        extra["exact"] = (k,) + got

    def _suspect(self, call, spec, func, args, kwargs, accesses):
        """Does a written argument share memory with another argument (outside the
        elementwise exemption) or overlap itself? Then copy the arguments to confirm."""
        written = {}
        groups: dict = {}
        for j, acc in enumerate(accesses):
            if acc[0] in ("W", "RW") and acc[3] is not None:
                groups.setdefault(acc[3].group, []).append(j)
        if not groups:
            return None
        suspect = False
        for j, acc in enumerate(accesses):
            gen = acc[3]
            if gen is None or acc[0] is None:
                continue
            for w in groups.get(gen.group, ()):
                if w == j:
                    continue
                if acc[0] == "R" and (spec.elementwise or spec.foreach or
                                      spec.args[acc[1]].name in spec.elementwise_args) and \
                        _same_layout(accesses[w], acc) and (not spec.foreach or
                                                            accesses[w][2] == acc[2]):
                    continue
                suspect = True
        for ws in groups.values():
            for w in ws:
                acc = accesses[w]
                if may_overlap_internally(acc[5], acc[6]):   # (a Size keys as its tuple)
                    suspect = True
        if not suspect:
            return None
        names = {a.position: a for a in spec.args}
        call.extra = call.extra or {}
        call.extra["suspect"] = True
        # the user's frame: their variables, while they are there to see
        frame = _user_frame(1, _USER, _is_user_code)   # past this one
        if frame is not None:
            from .names import frame_locals
            tensors = {}
            for j, acc in enumerate(accesses):
                a = names[acc[1]]
                v = args[a.position] if a.position < len(args) else kwargs.get(a.name)
                tensors[j] = v[acc[2]] if acc[2] >= 0 else v
            call.extra["locals"] = frame_locals(frame, tensors)
        if spec.random:
            return None
        for ws in groups.values():
            for w in ws:
                acc = accesses[w]
                a = names[acc[1]]
                place = a.position if a.position < len(args) else a.name
                label = a.name if acc[2] < 0 else f"{a.name}[{acc[2]}]"
                written[(place, acc[2])] = label
        return rerun(func, args, kwargs, written)

    def _after(self, call, spec, index, args, kwargs, accesses, out, finish):
        if finish is not None:
            outcomes = finish(out, _fresh_results(spec, out))
            call.extra["outcomes"] = outcomes
        if spec.writes and (spec.resizing or not (spec.elementwise or spec.foreach)):
            # a written argument may have been resized, even moved (out=); an in-place
            # pointwise op keeps its arguments' shapes
            self._moved(call, spec, index, args, kwargs, accesses)
        if spec.returns:   # (a fresh result is one of the returns)
            call.results = self._results(spec, out, index, accesses)
        if spec.data_dependent:
            self._duplicates(call, spec, args, kwargs, accesses, out)
        call.accesses = accesses

    def _moved(self, call, spec, index, args, kwargs, accesses):
        """Re-read written arguments the op resized: on new memory, a new generation."""
        n = len(args)
        for j, acc in enumerate(list(accesses)):
            if acc[0] not in ("W", "RW") or acc[3] is None or acc[1] < 0:
                continue
            a = spec.args[acc[1]]
            v = args[a.position] if a.position < n else kwargs.get(a.name)
            t = v[acc[2]] if acc[2] >= 0 else v
            if t.data_ptr() == acc[4] and t.shape == acc[5] and t.stride() == acc[6]:
                continue
            st = t.untyped_storage()
            moved = acc[3].address != st.data_ptr() or acc[3].nbytes != st.nbytes()
            again: list = []
            self._capture(t, acc[0] if not moved else "W", acc[1], acc[2], index, again,
                          creating=moved)
            if moved and acc[0] == "RW":   # it read the old memory and wrote the new
                accesses[j] = ("R",) + acc[1:]
                j = len(accesses)
                accesses.append(again[0])
            else:
                accesses[j] = again[0]
            if moved:
                call.extra = call.extra or {}
                call.extra.setdefault("resized", set()).add(j)

    def _results(self, spec, out, index, accesses):
        born = self._born
        if isinstance(out, _Tensor):
            born[out._cdata] = index
            if spec.fresh and spec.fresh[0]:
                return self._fresh(spec, out, -1, index, accesses)
            return None
        if isinstance(out, (list, tuple)):
            res = []
            for j, o in enumerate(out):
                if isinstance(o, _Tensor):
                    born[o._cdata] = index
                    if _fresh_at(spec, j):
                        res.append(self._fresh(spec, o, j, index, accesses))
                        continue
                    res.append(None)
                elif isinstance(o, (list, tuple)):   # a list return inside a tuple
                    sub = []
                    for q, p in enumerate(o):
                        if isinstance(p, _Tensor) and j < len(spec.fresh) and spec.fresh[j]:
                            k = len(accesses)
                            self._capture(p, "W", -1, 1000 * (j + 1) + q, index, accesses,
                                          creating=True)
                            sub.append(_slot(k))
                        else:
                            sub.append(None)
                    res.append(type(o)(sub))
                else:
                    res.append(o if _plain(o) else None)
            return type(out)(res) if isinstance(out, tuple) else res
        return out if _plain(out) else None

    def _fresh(self, spec, t, j, index, accesses):
        """Append the access (a write, at result position ``j``, -1 for the only one) of a
        tensor the call returned new; its slot. A plain tensor with memory is read here,
        as :meth:`_capture` would with ``creating=True``; anything else goes through
        :meth:`_capture`."""
        k = len(accesses)
        base = 0
        if type(t) is _Tensor or type(t) is _Parameter:   # (else _capture says what it is)
            try:
                sid = _storage_address(t)
                st = t.untyped_storage()
                base, nbytes = st.data_ptr(), st.nbytes()
                ptr = t.data_ptr()
                shape = t.shape
                stride = t.stride()
                dtype = t.dtype
            except Exception:  # noqa: BLE001 - _capture says what it is
                base = 0
        if base and self._argument_memory(sid, base, nbytes, accesses):
            # the op returned an argument's own memory although its schema says the result
            # is new (an alias the schema does not annotate): no new generation, no write
            return None
        if not base or dtype in _ODD_DTYPES:
            self._capture(t, "W", -1, j, index, accesses, creating=True)
            gen = accesses[k][3]
        else:
            gen = self._new_gen(t, st, sid, base, nbytes, index, True)
            # a generation made by this call: not dirty, so no birth needed (born -2)
            accesses.append(("W", -1, j, gen, ptr, shape, stride, dtype, -2,
                             t.is_conj() << 1 | t.is_neg() if self._bits_seen else 0))
        if spec.uninitialized and self.values and gen is not None and gen.snapshot is None:
            gen.snapshot = _copy(t.untyped_storage(), gen)   # replay needs its unspecified bytes
        return _slot(k)

    def _argument_memory(self, sid, base, nbytes, accesses) -> bool:
        """Is the storage ``sid`` (at ``base``, ``nbytes`` long) one an argument of this
        call is in?"""
        gen = self._by_sid.get(sid)
        return gen is not None and gen.address == base and gen.nbytes == nbytes and \
            any(acc[3] is gen for acc in accesses if acc[1] >= 0)

    def _duplicates(self, call, spec, args, kwargs, accesses, out):
        """Repeated indices written with different values (order-dependent results)."""
        b = datadep.bound(spec, args, kwargs)
        target = out if not spec.base.endswith("_") else b.get(spec.args[0].name)
        if not isinstance(target, _Tensor):
            return
        got = datadep.duplicates(spec, b, tuple(target.shape))
        if got is None:
            return
        flat, examples = got
        shape = tuple(target.shape)
        first = int(flat[0])
        index = _unravel(first, shape)
        value = target[index].item() if target.dim() else target.item()
        call.extra = call.extra or {}
        label = "result" if not spec.base.endswith("_") else spec.args[0].name
        call.extra["duplicates"] = (label, int(flat.size), (index, value, examples[first]),
                                    tuple(_unravel(int(e), shape) for e in flat[:4096]))

    # ---- end of trace -------------------------------------------------------------------
    def _finish(self, mode=None):
        """Each storage's end: alive or not, and with values a CPU storage's final bytes (its
        CRC-32 past ``FINAL_COPY_LIMIT``), read where they are. ``mode``: the dispatch mode
        that ran, whose compiled walk (a HotPath's) does the same as the loop here."""
        by_sid, values = self._by_sid, self.values
        if self._ended:   # set by an earlier run of this trace, then superseded
            for gen in self.storages:
                if gen.alive_at_end and by_sid.get(gen.weak) is not gen:
                    gen.alive_at_end = False
        self._ended = True
        if _hot is not None and isinstance(mode, _hot.HotPath):
            for gen, st in mode.finish(list(by_sid.values()), _revive, FINAL_COPY_LIMIT):
                _take_crc(gen, st)
            return
        for gen in by_sid.values():   # each storage's latest generation
            gen.alive_at_end = not _expired(gen.weak)
            if gen.alive_at_end and values and gen.device == "cpu":
                st = _revive(gen.weak)
                if st is not None and st.data_ptr() == gen.address and st.nbytes() == gen.nbytes:
                    # its bytes read where they are (st holds them alive meanwhile); a small
                    # storage's kept, to say which bytes differ (and its CRC-32 taken from
                    # them when asked)
                    if gen.nbytes <= FINAL_COPY_LIMIT:
                        gen.final_bytes = ctypes.string_at(gen.address, gen.nbytes)
                    else:
                        _take_crc(gen, st)
                else:
                    gen.alive_at_end = False

    # ---- results ------------------------------------------------------------------------
    def _build(self):
        if self._derived is None or self._derived[0] != len(self.calls):
            from .records import build_ops as build
            self._derived = (len(self.calls), build(self))
        return self._derived[1]

    @property
    def ops(self):
        """The op records (``af.OpRecord``), in program order, ready for ``af.analyze``,
        ``af.value_flow``, ``af.find_races``; ``t.info(op)`` says what the tracer knows of
        each (aten overload, source line, arguments)."""
        return self._build().ops

    def info(self, op):
        """The tracer's facts about op record ``op`` (or its index): ``op.info``."""
        return self._build().infos[op] if isinstance(op, int) else op.info

    @property
    def raw(self):
        return self.calls

    def __len__(self) -> int:
        return len(self.calls)

    def findings(self, all: bool = False):  # noqa: A002 - the issue's name for the switch
        """Findings, most serious first (``wrong``, ``hazard``, ``stale-view``; with
        ``all=True`` also ``order``): see :mod:`aliasflow.interop.findings`."""
        from .report import findings
        return findings(self, all)

    def reuse(self):
        """Conflicts across memory reuse (a freed storage's address given to a new one)."""
        from .report import reuse
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

    def to_json(self, all: bool = False, elements: bool = False,  # noqa: A002
                timings: bool = False) -> dict:
        from .report import to_json
        return to_json(self, all=all, elements=elements, timings=timings)

    def html_model(self, all: bool = False) -> dict:  # noqa: A002
        """The data of the HTML report (``aliasflow.viz.report.write_html`` renders it)."""
        from .report import html_model
        return html_model(self, all)

    def __repr__(self) -> str:
        return f"Trace({len(self.calls)} aten calls, {len(self.storages)} storages)"

    def _repr_html_(self) -> str:
        """Jupyter shows a trace as a table of its findings."""
        from ...reporting.html import trace_html
        return trace_html(self)


def _take_crc(gen, st):
    """The CRC-32 of a long storage's final bytes (``st`` holds them alive meanwhile)."""
    gen.final_crc = zlib.crc32((ctypes.c_ubyte * gen.nbytes).from_address(gen.address))


def _copy(st, gen):
    """The bytes of storage ``st`` (generation ``gen``) now: ``bytes`` read where they are for
    memory on the CPU (a storage copy costs an allocation and a kernel launch), else a storage
    copy."""
    if gen.device == "cpu" and st.data_ptr() == gen.address and st.nbytes() == gen.nbytes:
        return ctypes.string_at(gen.address, gen.nbytes) if gen.nbytes else b""
    return st.clone()


def _spec(func):
    """``(func, spec, run, fast)`` for the overload, made once per process: its spec (None, with the
    reason kept, when its schema cannot be read) and what runs it: the compiled operator an
    ``OpOverload`` calls (its ``__call__`` only forwards to it, a Python frame per op), else
    ``func`` itself."""
    try:
        spec = spec_of(func)
    except Exception as exc:  # noqa: BLE001 - the op is then untracked, not broken
        _SPEC_ERRORS[func] = f"cannot read its schema: {_text(exc)}"
        spec = None
    run = func
    if type(func).__call__ is _FORWARDING_CALL:
        op = getattr(func, "_op", None)
        run = op if callable(op) else func
    known = _SPECS[id(func)] = (func, spec, run, _fast(spec))
    return known


def _fast(spec):
    """What the compiled per-call path needs of ``spec``: ``(flags, tensors, fresh, number of
    returns, name, generator position)``, ``tensors`` as ``spec.tensors`` with each mode's code and whether the
    argument is read elementwise with the written one (``spec.elementwise_args``); None where
    the op needs :meth:`Trace._call` whole (an unreadable schema, writes a flag turns on,
    data-dependent writes, arguments it may move). ``generator position``, for a random op:
    where its ``generator`` argument may be passed by position (-1: by keyword only; -2: it
    takes none)."""
    if spec is None or spec.switch is not None or spec.data_dependent or spec.resizing:
        return None
    flags = (1 * spec.view_only | 2 * spec.writes | 4 * spec.elementwise | 8 * spec.foreach
             | 16 * (spec.base in _BIT_VIEWS) | 32 * spec.uninitialized | 64 * bool(spec.returns)
             | 128 * spec.random)
    generator = -2
    if spec.takes_generator:
        generator = next((a.position for a in spec.args if a.name == "generator"), -1)
    codes = {None: 0, "R": 1, "W": 2, "RW": 3}
    tensors = tuple((pos, name, bool(is_list), mode, codes[mode],
                     name in spec.elementwise_args) for pos, name, is_list, mode in spec.tensors)
    return (flags, tensors, tuple(bool(f) for f in spec.fresh), len(spec.returns), spec.name,
            generator)


_FORWARDING_CALL = torch._ops.OpOverload.__call__   # ``return self._op(*args, **kwargs)``


_PLAIN = (bool, int, float, complex, str, torch.dtype, torch.device, torch.Size)


def _fresh_results(spec, out) -> tuple:
    """``(position, label)`` of the new tensors a call returned (position -1 for the only
    one), as its records label them; none for an op whose new results start unspecified."""
    if not spec.fresh or spec.uninitialized:
        return ()
    if isinstance(out, _Tensor):
        return ((-1, "result"),) if spec.fresh[0] else ()
    if isinstance(out, (list, tuple)):
        return tuple((j, f"result[{j}]") for j, o in enumerate(out)
                     if isinstance(o, _Tensor) and _fresh_at(spec, j))
    return ()


def _fresh_at(spec, j: int) -> bool:
    """Is the tensor at position ``j`` of a list or tuple result new? (its own return is
    fresh, or the op returns one list, which is)"""
    return bool(j < len(spec.fresh) and spec.fresh[j] or
                len(spec.returns) == 1 and spec.fresh and spec.fresh[0])


def _plain(x) -> bool:
    return x is None or isinstance(x, _PLAIN)


def _unravel(flat: int, shape) -> tuple:
    out = []
    for n in reversed(shape):
        out.append(int(flat % n) if n else 0)
        flat //= max(n, 1)
    return tuple(reversed(out))


def trace(values: bool = True, pause_gc: bool = True, names: bool = True) -> Trace:
    """Trace the PyTorch program run inside ``with af.trace() as t:`` (see :class:`Trace`)."""
    return Trace(values=values, pause_gc=pause_gc, names=names)
