"""Runners: program order on one thread, or the dependency graph on a thread pool.

Both leave every storage and every op result exactly as program order does: the parallel
runner only starts an op once every op it conflicts with (through the ordering edges'
transitive closure) has finished.
"""
from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor, wait
from graphlib import TopologicalSorter

from ..analysis.dependencies import analyze
from ..analysis.schedule import DependencyGraph
from ..core.errors import AliasflowError, ExecutionError
from ..core.operations import Operation
from ..core.program import check_ops


def _failure(op: Operation, exc: BaseException) -> ExecutionError:
    return ExecutionError(op.name, f"{type(exc).__name__}: {exc}")


def run_sequential(ops: list[Operation], progress=None) -> None:
    for op in ops:
        try:
            op.execute()
        except Exception as exc:
            raise _failure(op, exc) from exc
        if progress is not None:
            progress(1)


class _Scheduler:
    """Shared state of a parallel run: ready ops, the graph's bookkeeping, failures.

    Workers take ready ops and report completions themselves, under one lock, so no thread
    sits between them: the cost per op is a lock round trip and graphlib's bookkeeping.
    """

    def __init__(self, ops: list[Operation], graph: DependencyGraph):
        self.ops = ops
        self.order = TopologicalSorter()
        for k in range(len(ops)):
            self.order.add(k, *graph.predecessor_indices(k))
        self.order.prepare()
        self.ready = deque(self.order.get_ready())
        self.lock = threading.Condition()
        self.failures: dict[int, BaseException] = {}
        self.stopped = False
        self.running = 0

    def _finished(self) -> bool:
        return self.stopped or self.failures or not self.order.is_active()

    def work(self, progress) -> None:
        k, exc = None, None
        while True:
            with self.lock:
                if k is not None:  # report the op this worker just ran
                    self.running -= 1
                    if exc is None:
                        self.order.done(k)
                        fresh = self.order.get_ready()
                        if fresh:
                            self.ready.extend(fresh)
                            self.lock.notify(len(fresh))
                    else:
                        self.failures[k] = exc
                    if self._finished() and self.running == 0:
                        self.lock.notify_all()
                while not self.ready and not self._finished():
                    self.lock.wait()
                if self._finished():
                    return
                k = self.ready.popleft()
                self.running += 1
            exc = None
            try:
                self.ops[k].execute()
            except BaseException as error:  # handed to the caller's thread, which raises it
                exc = error
            else:
                if progress is not None:
                    progress(1)

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self.lock.notify_all()


def run_parallel(ops: list[Operation], workers: int, graph: DependencyGraph | None = None,
                 progress=None) -> None:
    """Run ``ops`` on ``workers`` threads in any order the dependency graph allows.

    On a failure no new op starts, running ops finish, and the failure of the earliest op in
    program order among those that failed is raised. Ctrl-C does the same and re-raises.
    """
    scheduler = _Scheduler(ops, graph if graph is not None else analyze(ops))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aliasflow") as pool:
        futures = [pool.submit(scheduler.work, progress) for _ in range(workers)]
        try:
            wait(futures)
        except BaseException:  # Ctrl-C: let running ops finish, start no more
            scheduler.stop()
            raise
    for f in futures:
        f.result()  # a bug in the scheduler itself surfaces here
    if scheduler.failures:
        k = min(scheduler.failures)
        exc = scheduler.failures[k]
        raise _failure(ops[k], exc) from exc


def run(ops, workers: int = 1, graph: DependencyGraph | None = None, progress=None, *,
        backend=None, block_bytes=None) -> None:
    """Execute ``ops`` with results identical to program order.

    Parameters
    ----------
    ops : iterable of Operation
    workers : int, default 1
        1 runs in program order; more runs the dependency graph on a thread pool (NumPy
        releases the GIL inside its kernels, so large ops overlap).
    graph : DependencyGraph, optional
        A graph from :func:`aliasflow.analyze` for these ops, to skip analysing again.
    progress : callable, optional
        Called with 1 after each op finishes.
    backend, block_bytes : optional
        Either one runs the program as pure tasks on storage blocks of ``block_bytes``
        (default ``"16MiB"``) on ``backend`` (a ``DaskBackend``, ``RayBackend`` or, by default,
        in this process): see :mod:`aliasflow.execution.distributed`.

    Raises
    ------
    ExecutionError
        Naming the op that failed, with the original exception chained. Ops that finished
        before it keep their effects.
    """
    ops = check_ops(ops)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise AliasflowError(f"workers must be a positive int, got {workers!r}")
    if backend is not None or block_bytes is not None:
        from .distributed.engine import run as run_blocks
        run_blocks(ops, backend, "16MiB" if block_bytes is None else block_bytes, progress)
    elif workers == 1:
        run_sequential(ops, progress)
    else:
        run_parallel(ops, workers, graph, progress)
