"""Runners: program order on one thread, or the dependency graph on a thread pool.

Both leave every storage and every op result exactly as program order does: the parallel
runner only starts an op once every op it conflicts with (through the ordering edges'
transitive closure) has finished.

What a run promises when it fails (workers=1 and parallel alike):

- Every op is checked before any runs (:mod:`aliasflow.execution.checks`); a program with an
  op that cannot run is refused with :class:`~aliasflow.execution.checks.OpRefused` naming the
  first such op in program order, and nothing is modified.
- When an op fails while running, the :class:`ExecutionError` names the **first op in program
  order that fails**; every op before it in program order has run (so its effects are there,
  as in program order), and ``error.ran_after`` lists, in program order, the later ops that a
  parallel run had already finished (always empty with one worker). No other op starts.
- An exception raised by the ``progress`` callback stops the run the same way (no new op
  starts, running ops finish) and is re-raised unchanged; so is Ctrl-C.
"""
from __future__ import annotations

import heapq
import threading

from ..analysis.dependencies import analyze
from ..analysis.schedule import DependencyGraph
from ..core.errors import AliasflowError, ExecutionError
from ..core.operations import Operation
from ..core.program import check_ops
from .checks import check_all

MAX_WORKERS = 256  # threads beyond this only contend for the GIL and the scheduler's lock
POLL_SECONDS = 0.05  # the calling thread wakes at least this often (Ctrl-C, progress)


def _failure(op: Operation, exc: BaseException, ran_after=()) -> ExecutionError:
    if isinstance(exc, ExecutionError) and exc.op_name == op.name:
        error = exc  # already names the op (and the kernel); keeps its own cause
    else:
        error = ExecutionError(op.name, f"{type(exc).__name__}: {exc}")
    error.ran_after = list(ran_after)
    if ran_after:
        shown = ", ".join(ran_after[:10]) + (f" and {len(ran_after) - 10} more"
                                              if len(ran_after) > 10 else "")
        error.args = (f"{error.args[0]} (later ops that had already run: {shown})",)
    return error


def run_sequential(ops: list[Operation], progress=None) -> None:
    for op in ops:
        try:
            op.execute()
        except Exception as exc:
            error = _failure(op, exc)
            raise error from (exc.__cause__ if error is exc else exc)
        if progress is not None:
            progress(1)


class _Scheduler:
    """Shared state of a parallel run, under one lock: ready ops (lowest program position
    first), unmet predecessor counts, and the position of the first failure so far.

    Ops after the first failing op never start; ops before it always run (they can only
    depend on ops before them, none of which failed).
    """

    def __init__(self, ops: list[Operation], graph: DependencyGraph):
        self.ops = ops
        n = len(ops)
        self.waiting = [0] * n
        self.successors: list[list[int]] = [[] for _ in range(n)]
        for k in range(n):
            preds = graph.predecessor_indices(k)
            self.waiting[k] = len(preds)
            for p in preds:
                self.successors[p].append(k)
        self.ready = [k for k in range(n) if not self.waiting[k]]
        heapq.heapify(self.ready)
        self.lock = threading.Condition()
        self.failures: dict[int, BaseException] = {}
        self.limit = n  # ops at or past this position never start
        self.done: list[int] = []  # finished ops, in finishing order
        self.running = 0
        self.go = False  # workers wait for every thread to have started
        self.stopped = False
        self.internal: BaseException | None = None

    def _next(self):
        """Position of an op to start, or None; True when the run is over."""
        if self.stopped:
            return True
        if self.ready and self.ready[0] < self.limit:
            return heapq.heappop(self.ready)
        if self.running == 0:
            return True  # nothing runs, nothing startable: nothing can become ready
        return None

    def work(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # a bug here must not leave the caller waiting
            with self.lock:
                self.internal = exc
                self.stopped = True
                self.lock.notify_all()

    def _work(self) -> None:
        k, exc = None, None
        while True:
            with self.lock:
                if k is not None:  # report the op this worker just ran
                    self.running -= 1
                    if exc is None:
                        self.done.append(k)
                        for t in self.successors[k]:
                            self.waiting[t] -= 1
                            if not self.waiting[t]:
                                heapq.heappush(self.ready, t)
                    else:
                        self.failures[k] = exc
                        self.limit = min(self.limit, k)
                    self.lock.notify_all()
                while True:
                    nxt = self._next() if self.go else (True if self.stopped else None)
                    if nxt is not None:
                        break
                    self.lock.wait(POLL_SECONDS)
                if nxt is True:
                    return
                k = nxt
                self.running += 1
            exc = None
            try:
                self.ops[k].execute()
            except BaseException as error:  # handed to the caller's thread, which raises it
                exc = error

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self.lock.notify_all()


def _start_threads(scheduler: _Scheduler, workers: int) -> list[threading.Thread]:
    threads = []
    try:
        for i in range(workers):
            t = threading.Thread(target=scheduler.work, name=f"aliasflow-{i}", daemon=True)
            t.start()
            threads.append(t)
    except RuntimeError as exc:  # "can't start new thread": refuse before any op runs
        scheduler.stop()
        for t in threads:
            t.join()
        raise AliasflowError(f"workers={workers}: could only start {len(threads)} threads "
                             f"({exc}); no op has run") from None
    with scheduler.lock:
        scheduler.go = True
        scheduler.lock.notify_all()
    return threads


def run_parallel(ops: list[Operation], workers: int, graph: DependencyGraph | None = None,
                 progress=None) -> None:
    """Run ``ops`` on ``workers`` threads in any order the dependency graph allows (see the
    module docstring for what a failed run leaves)."""
    scheduler = _Scheduler(ops, graph if graph is not None else analyze(ops))
    threads = _start_threads(scheduler, workers)
    reported = 0
    try:
        while True:
            with scheduler.lock:
                over = all(not t.is_alive() for t in threads) or (
                    scheduler.stopped and scheduler.running == 0)
                if not over and len(scheduler.done) == reported:
                    scheduler.lock.wait(POLL_SECONDS)
                fresh = len(scheduler.done) - reported
            if progress is not None:
                for _ in range(fresh):
                    progress(1)  # in the caller's thread: its exceptions reach the caller
            reported += fresh
            if over and fresh == 0:
                break
    except BaseException:  # Ctrl-C or the progress callback: start no more, let ops finish
        scheduler.stop()
        for t in threads:
            while t.is_alive():
                t.join(POLL_SECONDS)
        raise
    for t in threads:
        t.join()
    if scheduler.internal is not None:
        raise scheduler.internal
    if scheduler.failures:
        k = min(scheduler.failures)
        exc = scheduler.failures[k]
        ran_after = [ops[j].name for j in sorted(j for j in scheduler.done if j > k)]
        error = _failure(ops[k], exc, ran_after)
        raise error from (exc.__cause__ if error is exc else exc)


def run(ops, workers: int = 1, graph: DependencyGraph | None = None, progress=None, *,
        backend=None, block_bytes=None) -> None:
    """Execute ``ops`` with results identical to program order.

    Parameters
    ----------
    ops : iterable of Operation
    workers : int, default 1
        1 runs in program order; more runs the dependency graph on a thread pool (NumPy
        releases the GIL inside its kernels, so large ops overlap). At most
        ``min(workers, len(ops), MAX_WORKERS)`` threads are started.
    graph : DependencyGraph, optional
        A graph from :func:`aliasflow.analyze` for these very ops, to skip analysing again;
        a graph of another op list (or of ops whose views changed since) is refused.
    progress : callable, optional
        Called with 1 after each op finishes, always from the calling thread.
    backend, block_bytes : optional
        Either one runs the program as pure tasks on storage blocks of ``block_bytes``
        (default ``"16MiB"``) on ``backend`` (a ``DaskBackend``, ``RayBackend`` or, by default,
        in this process): see :mod:`aliasflow.execution.distributed`.

    Raises
    ------
    OpRefused
        (an :class:`AliasflowError` and an :class:`ExecutionError`) naming the first op that
        cannot run, found before any op ran.
    ExecutionError
        Naming the first op in program order that failed, with the original exception
        chained; every op before it has run, ``ran_after`` lists later ops that had run.
    """
    ops = check_ops(ops)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise AliasflowError(f"workers must be a positive int, got {workers!r}")
    if progress is not None and not callable(progress):
        raise AliasflowError(f"progress must be callable, got {progress!r}")
    if graph is not None:
        if not isinstance(graph, DependencyGraph):
            raise AliasflowError(f"graph must be a DependencyGraph from analyze(), got "
                                 f"{type(graph).__name__}")
        graph.check_matches(ops)
    check_all(ops)
    workers = min(workers, len(ops), MAX_WORKERS)
    if backend is not None or block_bytes is not None:
        from .distributed.engine import run as run_blocks
        run_blocks(ops, backend, "16MiB" if block_bytes is None else block_bytes, progress)
    elif workers <= 1:
        run_sequential(ops, progress)
    else:
        run_parallel(ops, workers, graph, progress)
