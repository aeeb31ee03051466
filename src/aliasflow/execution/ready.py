"""The ready queue of a parallel run: which op a worker thread runs next.

The queue holds each op's unmet predecessor count and successor list (CSR arrays: the
successors of op ``k`` are ``targets[offsets[k]:offsets[k+1]]``, each later than ``k`` in
program order), the ready ops (lowest program position first), and the position of the first
failure, past which no op starts. Worker threads call ``next(timeout)`` for an op to run and
``done(k)`` or ``fail(k)`` when it has run; the calling thread waits with ``wait(seen,
timeout)``. ``next`` answers -1 when the run is over (or stopped) and -2 when no op became
ready within ``timeout`` seconds, so every wait is bounded. Light ops (small NumPy kernels
that hold the GIL throughout, :func:`is_light`) run one at a time, so that two threads do not
hand the GIL back and forth between tiny ops.

Two implementations answer alike: the compiled ``aliasflow.execution._ready.ReadyQueue``
(used when it is built, unless ``AF_PURE=1``) and :class:`PyReadyQueue` below, the readable
reference.

>>> q = PyReadyQueue((0, 1, 1), (1,))  # op 1 must wait for op 0
>>> q.next(0.0), q.next(0.0)
(0, -2)
>>> q.done(0)
>>> q.next(0.0), q.next(0.0)
(1, -2)
>>> q.done(1)
>>> q.next(0.0), q.finished_ops(), q.wait(-1, 0.0)
(-1, [0, 1], (2, True))
"""
from __future__ import annotations

import heapq
import itertools
import threading

import numpy as np

from ..solver.native import load

MAX_TIMEOUT = 3600.0
_STATES = ("waiting", "ready", "running", "done", "failed")
WAITING, READY, RUNNING, DONE, FAILED = range(5)


def _int64_array(values, what: str) -> list[int]:
    """The compiled queue's argument rule: an exact tuple of exact ints, or a contiguous
    1-d int64 buffer (copied)."""
    if type(values) is tuple:
        for j, v in enumerate(values):
            if type(v) is not int:
                raise TypeError(f"{what}[{j}] must be an int, got {type(v).__name__}")
            if not -2**63 <= v < 2**63:
                raise ValueError(f"{what}[{j}] does not fit in 64 bits")
        return list(values)
    try:
        view = memoryview(values)
    except TypeError:
        raise TypeError(f"{what} must be a tuple of ints or a contiguous int64 array, got "
                        f"{type(values).__name__}") from None
    with view:
        fmt = view.format.lstrip("<=@")
        if not (view.itemsize == 8 and view.ndim == 1 and fmt in ("q", "l")
                and view.c_contiguous):
            raise TypeError(f"{what} must be a contiguous 1-d int64 array, got format "
                            f"{view.format!r} with itemsize {view.itemsize} and {view.ndim} "
                            f"dimension(s)")
        return view.cast("B").cast("q").tolist()


def _timeout(t) -> float:
    if type(t) is not float and type(t) is not int:
        raise TypeError(f"timeout must be a float or int, got {type(t).__name__}")
    if not (0 <= t <= MAX_TIMEOUT):  # also refuses NaN
        raise ValueError(f"timeout must be between 0 and {MAX_TIMEOUT:g} seconds, got {t!r}")
    return float(t)


def _flags(light, n: int) -> list[int]:
    if type(light) is not bytes:
        raise TypeError(f"light must be bytes (one 0 or 1 per op), got {type(light).__name__}")
    if len(light) != n:
        raise ValueError(f"light has {len(light)} bytes for {n} ops")
    for j, b in enumerate(light):
        if b > 1:
            raise ValueError(f"light[{j}] = {b}: must be 0 or 1")
    return list(light)


class PyReadyQueue:
    """The reference ready queue (see the module docstring); one lock guards all state.

    ``light`` (bytes, one 0/1 per op) marks ops that hold the GIL throughout (small
    kernels): they run one at a time, since a second thread running them would only wait
    for the GIL, and each hand-over of the GIL between threads costs more than a small op.
    A worker that finds only light ops ready while another light op runs waits (without
    the GIL, in the compiled queue) for a heavy op.
    """

    def __init__(self, offsets, targets, light=None):
        offsets = _int64_array(offsets, "offsets")
        targets = _int64_array(targets, "targets")
        if not offsets or offsets[0] != 0:
            raise ValueError("offsets must start with 0 (and have n+1 entries)")
        n = len(offsets) - 1
        for k in range(n):
            if offsets[k + 1] < offsets[k]:
                raise ValueError(f"offsets must not decrease: offsets[{k + 1}] = "
                                 f"{offsets[k + 1]} < offsets[{k}] = {offsets[k]}")
        if offsets[n] != len(targets):
            raise ValueError(f"offsets[-1] = {offsets[n]} but there are {len(targets)} targets")
        unmet = [0] * n
        for k in range(n):
            for j in range(offsets[k], offsets[k + 1]):
                t = targets[j]
                if not k < t < n:  # later in program order: no cycle, every op gets ready
                    raise ValueError(f"targets[{j}] = {t}: a successor of op {k} must be in "
                                     f"{k + 1}..{n - 1}")
                unmet[t] += 1
        self._light = [0] * n if light is None else _flags(light, n)
        self.n, self._offsets, self._targets, self._unmet = n, offsets, targets, unmet
        self._state = [WAITING] * n
        self._ready_light: list[int] = []  # min-heaps of positions
        self._ready_heavy: list[int] = []
        for k in range(n):
            if not unmet[k]:
                self._make_ready(k)
        self._limit = n
        self._running = self._light_running = self._finished = self._failed = 0
        self._stopped = False
        self._waiters = 0
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._main = threading.Condition(self._lock)

    def _make_ready(self, k: int) -> None:
        self._state[k] = READY
        heapq.heappush(self._ready_light if self._light[k] else self._ready_heavy, k)

    def _light_startable(self) -> bool:
        return bool(self._ready_light) and self._ready_light[0] < self._limit

    def _heavy_startable(self) -> bool:
        return bool(self._ready_heavy) and self._ready_heavy[0] < self._limit

    def _takeable(self) -> bool:
        return self._heavy_startable() or (self._light_startable() and not self._light_running)

    def _over(self) -> bool:
        return self._running == 0 and (self._stopped or not (self._heavy_startable()
                                                              or self._light_startable()))

    def _take(self) -> int:
        """The lowest startable position, except that a light op waits while another light
        op runs; -1 when over (or stopped), -2 when nothing can start now."""
        if self._stopped:
            return -1
        light = self._light_startable() and not self._light_running
        heavy = self._heavy_startable()
        if light and (not heavy or self._ready_light[0] < self._ready_heavy[0]):
            k = heapq.heappop(self._ready_light)
            self._light_running += 1
        elif heavy:
            k = heapq.heappop(self._ready_heavy)
        else:
            return -1 if self._running == 0 else -2
        self._state[k] = RUNNING
        self._running += 1
        if self._waiters and not self._light_running and self._light_startable():
            self._work.notify()  # took a heavy op while a light one can start: a waiter runs it
        return k

    def _finish(self, k: int) -> None:
        self._running -= 1
        if self._light[k]:
            self._light_running -= 1

    def _index(self, k) -> int:
        if type(k) is not int:
            raise TypeError(f"op index must be an int, got {type(k).__name__}")
        if not 0 <= k < self.n:
            raise ValueError(f"op index {k!r} out of range 0..{self.n - 1}")
        return k

    def _running_op(self, k, what: str) -> None:
        if self._state[k] != RUNNING:
            raise ValueError(f"{what}({k}): op {k} is {_STATES[self._state[k]]}, not running")

    def next(self, timeout) -> int:
        """The op to run now (lowest position first; see the class docstring for light ops);
        -1 when the run is over or stopped; -2 when none could start within ``timeout``."""
        timeout = _timeout(timeout)
        with self._lock:
            k = self._take()
            if k == -2 and timeout:
                self._waiters += 1
                try:
                    self._work.wait_for(lambda: self._stopped or self._takeable()
                                        or self._running == 0, timeout)
                finally:
                    self._waiters -= 1
                k = self._take()
            return k

    def done(self, k) -> None:
        """Running op ``k`` finished: successors with every predecessor done become ready."""
        k = self._index(k)
        with self._lock:
            self._running_op(k, "done")
            self._state[k] = DONE
            self._finish(k)
            self._finished += 1
            fresh = 0
            for t in self._targets[self._offsets[k]:self._offsets[k + 1]]:
                self._unmet[t] -= 1
                if not self._unmet[t]:
                    self._make_ready(t)
                    fresh += not self._light[t]
            # wake a worker per new heavy op; for light ops this thread comes back itself
            if self._over():
                self._work.notify_all()
            elif fresh:
                self._work.notify(fresh)
            self._main.notify_all()

    def fail(self, k) -> None:
        """Running op ``k`` failed: no op at or past position ``k`` starts from now on."""
        k = self._index(k)
        with self._lock:
            self._running_op(k, "fail")
            self._state[k] = FAILED
            self._finish(k)
            self._failed += 1
            self._limit = min(self._limit, k)
            self._work.notify_all()
            self._main.notify_all()

    def stop(self) -> None:
        """No op starts from now on."""
        with self._lock:
            self._stopped = True
            self._work.notify_all()
            self._main.notify_all()

    def wait(self, seen, timeout) -> tuple[int, bool]:
        """``(finished count, over)``, once the run is over or (``seen >= 0``) the count
        differs from ``seen``, or after ``timeout`` seconds."""
        if type(seen) is not int:
            raise TypeError(f"seen must be an int, got {type(seen).__name__}")
        if not -1 <= seen <= self.n:
            raise ValueError(f"seen must be -1 or a count in 0..{self.n}, got {seen!r}")
        timeout = _timeout(timeout)
        with self._lock:
            self._main.wait_for(lambda: self._over() or (seen >= 0 and self._finished != seen),
                                timeout)
            return self._finished, self._over()

    def finished_ops(self) -> list[int]:
        """Positions of the ops that finished without failing, ascending."""
        with self._lock:
            return [k for k in range(self.n) if self._state[k] == DONE]

    def status(self) -> dict:
        with self._lock:
            return {"n": self.n, "running": self._running, "finished": self._finished,
                    "failed": self._failed,
                    "ready": len(self._ready_light) + len(self._ready_heavy),
                    "stopped": self._stopped, "over": self._over()}


#: The compiled queue class in use, or None (pure Python). Tests swap it to compare both.
NativeReadyQueue = getattr(load(__package__ + "._ready"), "ReadyQueue", None)


def backend_name() -> str:
    """``"compiled"`` or ``"pure"``: the queue :func:`make_queue` builds."""
    return "compiled" if NativeReadyQueue is not None else "pure"


def successor_arrays(graph, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR successor arrays ``(offsets, targets)`` (int64) of a :class:`DependencyGraph` over
    ``n`` ops, built from its predecessor lists; targets of each op in ascending order."""
    offsets = np.zeros(n + 1, np.int64)
    if hasattr(graph, "predecessor_arrays"):  # CSR already: no Python set per op
        indptr, src = graph.predecessor_arrays()
        counts = np.diff(indptr).astype(np.int64)
        src = np.asarray(src, np.int64)
        total = len(src)
    else:
        preds = [graph.predecessor_indices(k) for k in range(n)]
        counts = np.fromiter(map(len, preds), np.int64, n)
        total = int(counts.sum())
        src = np.fromiter(itertools.chain.from_iterable(preds), np.int64, total)
    if not total:
        return offsets, np.zeros(0, np.int64)
    dst = np.repeat(np.arange(n, dtype=np.int64), counts)
    order = np.lexsort((dst, src))
    np.cumsum(np.bincount(src, minlength=n), out=offsets[1:])
    return offsets, np.ascontiguousarray(dst[order])


#: An op whose every view has at most this many elements and whose kernel is one of
#: aliasflow's named NumPy kernels (or a fill) is *light*: NumPy releases the GIL only for
#: loops over more than 500 elements (``NPY_BEGIN_THREADS_THRESHOLDED``), so such an op holds
#: the GIL from start to end and cannot overlap another thread's Python anyway. Running light
#: ops one at a time loses no parallelism; it only spares the GIL hand-overs. Bigger ops
#: release the GIL for part of their time and may run beside each other.
LIGHT_ELEMENTS = 500


def is_light(rec, prim) -> int:
    """1 for a light op (see :data:`LIGHT_ELEMENTS`): its kind says it is a small NumPy kernel
    for its parameters (a user's callable kernel never is: it may release the GIL for long),
    and every view is small; else 0."""
    if prim.is_light(rec.params) and all(v.size <= LIGHT_ELEMENTS for v in rec.input_views) \
            and all(v.size <= LIGHT_ELEMENTS for v in rec.output_views):
        return 1
    return 0


def make_queue(graph, n: int, light: bytes):
    """A fresh ready queue (compiled when available) for a run of ``n`` ops over ``graph``;
    ``light``: one byte per op (:func:`is_light`)."""
    offsets, targets = successor_arrays(graph, n)
    cls = NativeReadyQueue if NativeReadyQueue is not None else PyReadyQueue
    return cls(offsets, targets, light)


__all__ = ["PyReadyQueue", "NativeReadyQueue", "backend_name", "make_queue",
           "successor_arrays", "is_light", "LIGHT_ELEMENTS", "MAX_TIMEOUT"]
