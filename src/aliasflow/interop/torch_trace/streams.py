"""Streams in a trace: the CPU vocabulary (mirroring ``torch.cuda``) and CUDA's own streams.

**On CPU** a trace offers streams and events so that programs written for streams can be
checked without a GPU (every op really runs at once, in program order; the streams say what
would be allowed to run concurrently)::

    side = t.stream("side")            # a stream of the trace (the same object per name)
    with side:                         # ops issued inside run on `side`
        y = x * 2
    t.default_stream.wait_stream(side) # without this, reading y below races the write above
    z = y + 1                          # outside every `with`: on t.default_stream

``s.record_event()`` (or ``e = t.event(); e.record(s)``), ``s.wait_event(e)`` (or
``e.wait(s)``), ``s.wait_stream(other)``, ``s.synchronize()``, ``e.synchronize()`` and
``t.synchronize()`` (every stream) mean what they mean in CUDA
(:mod:`aliasflow.analysis.streams`). ``with s:`` regions nest and restore the stream that was
current, like ``torch.cuda.stream``; a region's end orders nothing (no implicit join).

**On CUDA** (when PyTorch has CUDA) each op with a CUDA tensor is on the CUDA stream current
when it was issued (``cuda:default`` for the legacy default stream, ``cuda:0x...`` for
others), and PyTorch's GPU trace callbacks (``torch.cuda._gpu_trace``, the hooks its CUDA
sanitizer uses) give the events created, recorded, waited and synchronised, the stream and
device synchronisations, and the frees of device memory; ``Tensor.record_stream`` is
recorded too (it touches no data). An op with only CPU tensors issued outside every CPU
region is on the host (``host``) unless the program uses the CPU vocabulary, in which case it
is on ``t.default_stream`` as above. Streams are known by their handle, as CSAN knows them:
the legacy default streams of two devices are one stream to the trace.

Once streams are in use (a CPU stream or event made, or CUDA present), every op also keeps the
stack of user frames that issued it, for race findings.
"""
from __future__ import annotations

import os
import sys
import warnings
import weakref

import torch

from ...analysis.streams import HOST
from ...core.errors import AliasflowError
from .frames import user_stacklevel

DEFAULT = "default"
CUDA_DEFAULT = "cuda:default"
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_AF_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_MAX_FRAMES = 32
_record_stream = torch.ops.aten.record_stream.default


class Stream:
    """A stream of a trace (``t.stream(name)``, ``t.default_stream``)."""

    __slots__ = ("name", "_log", "__weakref__")

    def __init__(self, name: str, log: "StreamLog"):
        self.name = name
        self._log = log

    def __enter__(self) -> "Stream":
        self._log.enter(self)
        return self

    def __exit__(self, *exc) -> bool:
        self._log.exit(self)
        return False

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record ``event`` (a new one if None) on this stream; returns it."""
        event = self._log.event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: "Event") -> None:
        """Ops issued here from now on follow what ``event`` stood for when last recorded."""
        self._log.check(event, Event, "wait_event")
        self._log.add("wait", self.name, event.id)

    def wait_stream(self, other: "Stream") -> None:
        """Ops issued here from now on follow everything issued to ``other`` so far."""
        self._log.check(other, Stream, "wait_stream")
        self._log.add("wait_stream", self.name, other.name)

    def synchronize(self) -> None:
        """The host waits for everything issued to this stream so far."""
        self._log.add("sync_stream", self.name)

    def __repr__(self) -> str:
        return f"Stream({self.name!r})"


class Event:
    """An event of a trace (``t.event()``, ``stream.record_event()``)."""

    __slots__ = ("id", "_log")

    def __init__(self, id_, log: "StreamLog"):
        self.id = id_
        self._log = log

    def record(self, stream: Stream | None = None) -> None:
        """Stand for everything issued to ``stream`` (the current one if None) so far."""
        stream = self._log.current if stream is None else stream
        self._log.check(stream, Stream, "record")
        self._log.add("record", self.id, stream.name)

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream`` (the current one if None) wait for this event."""
        stream = self._log.current if stream is None else stream
        self._log.check(stream, Stream, "wait")
        stream.wait_event(self)

    def synchronize(self) -> None:
        """The host waits for this event (nothing, if it was never recorded)."""
        self._log.add("sync_event", self.id)

    def __repr__(self) -> str:
        return f"Event({self.id[1]})"


class StreamLog:
    """Per trace: the CPU streams and events, the synchronisation log (``entries``: ``(ops
    issued before it, action, *args)``), the issuing stacks, and CUDA recording."""

    def __init__(self, raw: list):
        self._raw = raw                    # the trace's op list (its length: ops issued)
        self.region: str | None = None     # the innermost region's stream (None: default)
        self.entries: list[tuple] = []
        # held weakly (a stream holds its log): a stream nobody holds is made again on demand,
        # and a dropped trace is freed at once, with the values it copied
        self._by_name = weakref.WeakValueDictionary()
        self._regions: list[Stream] = []   # the `with` regions entered, innermost last
        self._events = 0
        self.vocabulary = False            # the program made CPU streams or events
        self.active = False                # stacks (and CUDA streams) are recorded per op
        self.cuda = None                   # the CudaRecorder while tracing with CUDA
        self.stacks: dict[int, tuple] = {}  # op index -> issuing stack (outermost first)

    # ---- the vocabulary -----------------------------------------------------------------
    def use(self) -> None:
        self.vocabulary = self.active = True

    def stream(self, name: str) -> Stream:
        if not isinstance(name, str) or not name or name in (DEFAULT, HOST) or \
                name.startswith("cuda:"):
            raise AliasflowError(f"stream name must be a non-empty string other than "
                                 f"'default' and 'host', not starting with 'cuda:' (the "
                                 f"default stream is trace.default_stream), got {name!r}")
        self.use()
        return self._stream(name)

    def _stream(self, name: str) -> Stream:
        s = self._by_name.get(name)
        if s is None:
            s = self._by_name[name] = Stream(name, self)
        return s

    @property
    def default(self) -> Stream:
        return self._stream(DEFAULT)

    def event(self) -> Event:
        self.use()
        self._events += 1
        e = Event(("cpu", self._events), self)
        self.add("create_event", e.id)
        return e

    @property
    def current(self) -> Stream:
        return self._regions[-1] if self._regions else self.default

    def check(self, obj, kind, where: str) -> None:
        if not isinstance(obj, kind):
            raise AliasflowError(f"{where}: expected a {kind.__name__} of this trace, got "
                                 f"{obj!r}")
        if obj._log is not self:
            raise AliasflowError(f"{where}: {obj!r} belongs to another trace")

    def add(self, action: str, *args) -> None:
        self.use()
        self.entries.append((len(self._raw), action, *args))

    def enter(self, stream: Stream) -> None:
        self.use()
        self._regions.append(stream)
        self.region = None if stream.name == DEFAULT else stream.name

    def exit(self, stream: Stream) -> None:
        if not self._regions or self._regions[-1] is not stream:
            raise AliasflowError(f"leaving {stream!r}, which is not the innermost stream "
                                 f"region")
        self._regions.pop()
        current = self.current
        self.region = None if current.name == DEFAULT else current.name

    # ---- per op -------------------------------------------------------------------------
    def issued(self, raw, func, args, kwargs) -> bool:
        """Note an op's stack and (CUDA) stream. True for a stream command that touches no
        data (``record_stream``), which the tracer then runs without recording accesses."""
        self.stacks[raw.index] = _user_stack(sys._getframe(1))
        cuda = self.cuda
        if cuda is None:
            return False
        try:
            if func is _record_stream:
                self._record_stream(args, kwargs)
                return True
            device = cuda.device_of(args, kwargs)
            if device is not None:
                raw.stream = cuda_stream_name(cuda.current_stream(device))
            elif raw.stream is None and not self.vocabulary:
                raw.stream = HOST
        except Exception as exc:  # noqa: BLE001 - never break the user's program
            _warn_once(f"aliasflow could not tell the CUDA stream of {func}: "
                       f"{type(exc).__name__}: {exc}; it is left on the default stream")
        return False

    def _record_stream(self, args, kwargs) -> None:
        tensor = args[0] if args else kwargs.get("self")
        stream = args[1] if len(args) > 1 else kwargs.get("s")
        handle = getattr(stream, "cuda_stream", None)
        if handle is None:
            handle = getattr(stream, "native_handle", None)
        if isinstance(tensor, torch.Tensor) and isinstance(handle, int):
            self.add("record_stream", tensor.untyped_storage().data_ptr(),
                     cuda_stream_name(handle))

    # ---- CUDA ---------------------------------------------------------------------------
    def start(self) -> None:
        """At the trace's start: record CUDA if PyTorch has it."""
        try:
            if not _cuda_available():
                return
            _install()
        except Exception as exc:  # noqa: BLE001 - never break the user's program
            _warn_once(f"aliasflow cannot record CUDA streams here: {type(exc).__name__}: "
                       f"{exc}; races on the device are not checked")
            return
        self.cuda = CudaRecorder()
        self.active = True
        _ACTIVE.append(self)

    def stop(self) -> None:
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        self.cuda = None

    def gpu(self, action: str, *args) -> None:
        """A GPU trace callback (ids as PyTorch gives them)."""
        self.entries.append((len(self._raw), action, *args))


_WARNED: set = set()


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=user_stacklevel())


def cuda_stream_name(handle: int) -> str:
    return CUDA_DEFAULT if handle == 0 else f"cuda:{handle:#x}"


def _user_stack(frame) -> tuple:
    """``(file, line, function)`` of the user's frames from ``frame`` outwards (frames of
    torch and aliasflow skipped), outermost first."""
    out = []
    while frame is not None and len(out) < _MAX_FRAMES:
        code = frame.f_code
        if not code.co_filename.startswith((_TORCH_DIR, _AF_DIR, "<frozen")):
            out.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    out.reverse()
    return tuple(out)


class CudaRecorder:
    """Which CUDA device an op runs on and which stream is current there. (Tests replace
    it to drive CUDA recording without a GPU.)"""

    def device_of(self, args, kwargs):
        for x in args:
            if isinstance(x, torch.Tensor):
                if x.is_cuda:
                    return x.device
            elif isinstance(x, (list, tuple)):
                for y in x:
                    if isinstance(y, torch.Tensor) and y.is_cuda:
                        return y.device
        for x in kwargs.values():
            if isinstance(x, torch.Tensor) and x.is_cuda:
                return x.device
        device = kwargs.get("device")
        if device is not None:
            device = torch.device(device)
            if device.type == "cuda":
                return device
        return None

    def current_stream(self, device) -> int:
        return torch.cuda.current_stream(device).cuda_stream


_CUDA_BUILT = torch.backends.cuda.is_built()   # (a build without CUDA never gains it)


def _cuda_available() -> bool:
    return _CUDA_BUILT and torch.cuda.is_available()


_ACTIVE: list[StreamLog] = []   # logs of the traces running now
_INSTALLED = []


def _forward(action, convert):
    def callback(*args):
        for log in list(_ACTIVE):
            log.gpu(action, *convert(*args))
    return callback


def _install() -> None:
    """Register the forwarding callbacks with PyTorch's GPU trace, once per process (its
    registries cannot remove a callback; with no trace running they do nothing)."""
    if _INSTALLED:
        return
    import torch.cuda._gpu_trace as gpu_trace
    torch._C._activate_gpu_trace()
    ev = lambda e: (("cuda", e),)                                    # noqa: E731
    st = lambda s: (cuda_stream_name(s),)                            # noqa: E731
    for register, action, convert in [
            (gpu_trace.register_callback_for_event_creation, "create_event", ev),
            (gpu_trace.register_callback_for_event_deletion, "delete_event", ev),
            (gpu_trace.register_callback_for_event_record, "record",
             lambda e, s: (("cuda", e), cuda_stream_name(s))),
            (gpu_trace.register_callback_for_event_wait, "wait",
             lambda e, s: (cuda_stream_name(s), ("cuda", e))),
            (gpu_trace.register_callback_for_event_synchronization, "sync_event", ev),
            (gpu_trace.register_callback_for_stream_synchronization, "sync_stream", st),
            (gpu_trace.register_callback_for_device_synchronization, "sync", lambda: ()),
            (gpu_trace.register_callback_for_stream_creation, "create_stream", st),
            (gpu_trace.register_callback_for_memory_allocation, "alloc_ptr", lambda p: (p,)),
            (gpu_trace.register_callback_for_memory_deallocation, "free_ptr",
             lambda p: (p,))]:
        register(_forward(action, convert))
    _INSTALLED.append(True)
