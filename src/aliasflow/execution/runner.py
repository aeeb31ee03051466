"""Runners: program order on one thread, or the dependency graph on a thread pool.

Both leave every storage and every op result exactly as program order does: the parallel
runner only starts an op once every op it conflicts with (through the ordering edges'
transitive closure) has finished.
"""
from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor
from graphlib import TopologicalSorter

from ..analysis.dependencies import analyze
from ..analysis.schedule import DependencyGraph
from ..core.errors import AliasflowError, ExecutionError
from ..core.operations import Operation
from ..core.program import check_ops


def _failure(op: Operation, exc: BaseException) -> ExecutionError:
    err = ExecutionError(op.name, f"{type(exc).__name__}: {exc}")
    err.__cause__ = exc
    return err


def run_sequential(ops: list[Operation], progress=None) -> None:
    for op in ops:
        try:
            op.execute()
        except Exception as exc:
            raise _failure(op, exc) from exc
        if progress is not None:
            progress(1)


def run_parallel(ops: list[Operation], workers: int, graph: DependencyGraph | None = None,
                 progress=None) -> None:
    """Run ``ops`` on ``workers`` threads in any order the dependency graph allows.

    On a failure no new op starts, running ops finish, and the failure of the earliest op in
    program order among those that failed is raised. Ctrl-C does the same and re-raises.
    """
    graph = graph if graph is not None else analyze(ops)
    order = TopologicalSorter()
    for k in range(len(ops)):
        order.add(k, *graph.predecessor_indices(k))
    order.prepare()
    finished: queue.SimpleQueue = queue.SimpleQueue()

    def work(k: int) -> None:
        try:
            ops[k].execute()
        except BaseException as exc:  # reported to the main thread, which raises it
            finished.put((k, exc))
        else:
            finished.put((k, None))

    failures: dict[int, BaseException] = {}
    running = 0
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aliasflow")
    try:
        while True:
            if not failures:
                for k in order.get_ready():
                    pool.submit(work, k)
                    running += 1
            if running == 0:
                break
            k, exc = finished.get()
            running -= 1
            if exc is None:
                order.done(k)
                if progress is not None:
                    progress(1)
            else:
                failures[k] = exc
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    if failures:
        k = min(failures)
        raise _failure(ops[k], failures[k]) from failures[k]


def run(ops, workers: int = 1, graph: DependencyGraph | None = None, progress=None) -> None:
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

    Raises
    ------
    ExecutionError
        Naming the op that failed, with the original exception chained. Ops that finished
        before it keep their effects.
    """
    ops = check_ops(ops)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise AliasflowError(f"workers must be a positive int, got {workers!r}")
    if workers == 1:
        run_sequential(ops, progress)
    else:
        run_parallel(ops, workers, graph, progress)
