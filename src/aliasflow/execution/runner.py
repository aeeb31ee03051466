"""Runners: program order on one thread, or the dependency graph on a thread pool.

Both run the interpreter's steps (:mod:`.interpreter`: every record checked once per
signature before any runs, then prepared kernels), and both leave every storage and every
returned value exactly as program order does: the parallel
runner only starts an op once every op it conflicts with (through the ordering edges'
transitive closure) has finished. The bookkeeping between ops (which op is ready, lowest
program position first) is the ready queue of :mod:`aliasflow.execution.ready`, in compiled
code when it is built; the kernels run in the worker threads, the calling thread being one of
them unless it serves a ``progress`` callback (NumPy releases the GIL inside its kernels, so
big ops overlap).

What a run promises when it fails (workers=1 and parallel alike):

- Every op is checked before any runs (:mod:`aliasflow.execution.interpreter`); a program with an
  op that cannot run is refused with :class:`~aliasflow.execution.interpreter.OpRefused` naming the
  first such op in program order, and nothing is modified.
- When an op fails while running, the :class:`ExecutionError` names the **first op in program
  order that fails**; every op before it in program order has run (so its effects are there,
  as in program order), and ``error.ran_after`` lists, in program order, the later ops that a
  parallel run had already finished (always empty with one worker). No other op starts.
- An exception raised by the ``progress`` callback stops the run the same way (no new op
  starts, running ops finish) and is re-raised unchanged; so is Ctrl-C (while the calling
  thread runs ops, only under Python's default SIGINT handler: under another, the op in the
  calling thread's hands is interrupted, as in program order).
"""
from __future__ import annotations

import contextlib
import signal
import threading

from ..analysis.dependencies import analyze
from ..analysis.schedule import DependencyGraph
from ..core.builders import show_results
from ..core.errors import AliasflowError, ExecutionError
from ..core.gcpause import paused_gc
from ..core.program import as_records, op_list
from ..core.record import Results
from .interpreter import Steps, check_all
from .ready import make_queue

# A run of light ops only goes in program order on the calling thread (see run()); the test
# suite turns this off to drive the thread pool with small ops.
LIGHT_IN_ORDER = True
MAX_WORKERS = 256  # threads beyond this only contend for the GIL and the queue's lock
POLL_SECONDS = 0.05  # the calling thread wakes at least this often (Ctrl-C, progress)


def _failure(op, exc: BaseException, ran_after=()) -> ExecutionError:
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


def run_sequential(records: list, run_steps: Steps, progress=None) -> None:
    if run_steps.plan is not None:  # fills in runs (no progress to report between them)
        for step in run_steps.plan:
            k = step if step.__class__ is int else step.first
            try:
                run_steps(k) if step.__class__ is int else step()
            except Exception as exc:
                error = _failure(records[k], exc)
                raise error from (exc.__cause__ if error is exc else exc)
        return
    for k, rec in enumerate(records):
        try:
            run_steps(k)
        except Exception as exc:
            error = _failure(rec, exc)
            raise error from (exc.__cause__ if error is exc else exc)
        if progress is not None:
            progress(1)


class _ParallelRun:
    """Worker threads of one parallel run around a ready queue (:mod:`.ready`: compiled
    when built). The queue hands out ready ops lowest program position first and, once an
    op failed, never one at or past that position: ops after the first failing op never
    start; ops before it always run (they can only depend on ops before them, none of
    which failed).

    A worker keeps the GIL from one op to the next (the queue releases it only while it
    must wait for an op to become ready), so tiny ops do not hand the GIL back and forth.
    """

    def __init__(self, run_steps: Steps, graph: DependencyGraph, light: bytes):
        self.steps = run_steps
        self.queue = make_queue(graph, len(run_steps), light)
        self.failures: dict[int, BaseException] = {}
        self.internal: BaseException | None = None
        self.go = threading.Event()  # workers wait for every thread to have started
        self.interrupted = False  # Ctrl-C while the calling thread works (see _ctrl_c_deferred)

    def work(self) -> None:
        try:
            self.go.wait()
            self.work_here()
        except BaseException as exc:  # a bug here must not leave the caller waiting
            self.internal = exc
            self.queue.stop()

    def work_here(self, caller: bool = False) -> None:
        """Run ready ops until the run is over or stopped. In the caller's thread
        (``caller``), Ctrl-C is not an op's failure: it propagates, as in program order."""
        run_steps, failures = self.steps, self.failures
        take, done, fail = self.queue.next, self.queue.done, self.queue.fail
        while True:
            if self.interrupted:
                raise KeyboardInterrupt
            k = take(POLL_SECONDS)
            if k < 0:
                if k == -1:
                    return  # over, or stopped
                continue  # nothing ready yet: look again (a bounded wait)
            try:
                run_steps(k)
            except BaseException as error:  # handed to the caller's thread, which raises it
                if caller and isinstance(error, KeyboardInterrupt):
                    raise
                failures[k] = error
                fail(k)
            else:
                done(k)

    def stop(self) -> None:
        self.queue.stop()
        self.go.set()


@contextlib.contextmanager
def _ctrl_c_deferred(run: _ParallelRun):
    """While the calling thread runs ops, Ctrl-C only marks the run as interrupted: the op
    in hand finishes, as the other workers' do, and then no op starts and the run raises
    KeyboardInterrupt. Only Python's own SIGINT handler, in the main thread, is replaced
    (and restored after); under any other handler Ctrl-C acts as it does in program order."""
    def mark(signum, frame):
        run.interrupted = True  # no lock here: the handler may run while the queue's is held

    swapped = False
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        try:
            signal.signal(signal.SIGINT, mark)
            swapped = True
        except ValueError:  # not the main interpreter's main thread
            pass
    try:
        yield
    finally:
        if swapped:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _start_threads(run: _ParallelRun, workers: int) -> list[threading.Thread]:
    threads = []
    try:
        for i in range(workers):
            t = threading.Thread(target=run.work, name=f"aliasflow-{i}", daemon=True)
            t.start()
            threads.append(t)
    except RuntimeError as exc:  # "can't start new thread": refuse before any op runs
        run.stop()
        for t in threads:
            t.join()
        raise AliasflowError(f"workers={workers}: could only start {len(threads)} threads "
                             f"({exc}); no op has run") from None
    run.go.set()
    return threads


def run_parallel(records: list, run_steps: Steps, workers: int, graph: DependencyGraph,
                 progress, light: bytes) -> None:
    """Run the steps of ``records`` on ``workers`` threads in any order the dependency graph
    allows (see the module docstring for what a failed run leaves); ``light`` as
    :func:`~.interpreter.check_all` gives."""
    ops = records
    run = _ParallelRun(run_steps, graph, light)
    queue = run.queue
    # Without a progress callback to serve, the calling thread is one of the workers: one
    # thread fewer to start, and the first op starts without waiting for a thread to wake.
    threads = _start_threads(run, workers - (progress is None))
    reported = 0
    try:
        if progress is None:
            with _ctrl_c_deferred(run):
                run.work_here(caller=True)
            if run.interrupted:  # came after the last op was taken
                raise KeyboardInterrupt
        else:
            while True:
                # looked at before the wait, so that wait counts every op the workers finished
                alive = any(t.is_alive() for t in threads)
                # sleeps without the GIL; wakes per finished op
                finished, over = queue.wait(reported, POLL_SECONDS)
                for _ in range(finished - reported):
                    progress(1)  # in the caller's thread: its exceptions reach the caller
                reported = finished
                if over or not alive:
                    break
    except BaseException:  # Ctrl-C or the progress callback: start no more, let ops finish
        run.stop()
        for t in threads:
            while t.is_alive():
                t.join(POLL_SECONDS)
        raise
    for t in threads:
        t.join()
    if run.internal is not None:
        raise run.internal
    if run.failures:
        k = min(run.failures)
        exc = run.failures[k]
        ran_after = [ops[j].name for j in queue.finished_ops() if j > k]
        error = _failure(ops[k], exc, ran_after)
        raise error from (exc.__cause__ if error is exc else exc)


def run(ops, workers: int = 1, graph: DependencyGraph | None = None, progress=None, *,
        backend=None, block_bytes=None) -> Results:
    """Execute ``ops`` with results identical to program order; return what they returned.

    Parameters
    ----------
    ops : iterable of OpRecord or Operation (builders give their records)
    workers : int, default 1
        1 runs in program order; more runs the dependency graph on a thread pool (NumPy
        releases the GIL inside its kernels, so large ops overlap). Ops run on at most
        ``min(workers, len(ops), MAX_WORKERS)`` threads, the calling thread among them
        unless it serves ``progress``. When every op is light (a small NumPy kernel that
        holds the GIL throughout: :func:`~aliasflow.execution.ready.is_light`), threads could
        only take turns, and the run is in program order on the calling thread (no analysis).
    graph : DependencyGraph, optional
        A graph from :func:`aliasflow.analyze` for these very ops, to skip analysing again;
        a graph of other records (or of builders changed since) is refused.
    progress : callable, optional
        Called with 1 after each op finishes, always from the calling thread.
    backend, block_bytes : optional
        Either one runs the program as pure tasks on storage blocks of ``block_bytes``
        (default ``"16MiB"``) on ``backend`` (a ``DaskBackend``, ``RayBackend`` or, by default,
        in this process): see :mod:`aliasflow.execution.distributed`.

    Returns
    -------
    Results
        ``Value(op, index) -> array`` for each value an op returned without writing memory
        (an op without outputs returns one: ``results["op"]``). Builders show theirs as
        ``op.result`` too.

    Raises
    ------
    OpRefused
        (an :class:`AliasflowError` and an :class:`ExecutionError`) naming the first op that
        cannot run, found before any op ran.
    ExecutionError
        Naming the first op in program order that failed, with the original exception
        chained; every op before it has run, ``ran_after`` lists later ops that had run.
    """
    given = ops = op_list(ops)
    with paused_gc():  # records, checks and steps make many objects and free none
        records = as_records(ops)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise AliasflowError(f"workers must be a positive int, got {workers!r}")
    if progress is not None and not callable(progress):
        raise AliasflowError(f"progress must be callable, got {progress!r}")
    if graph is not None:
        if not isinstance(graph, DependencyGraph):
            raise AliasflowError(f"graph must be a DependencyGraph from analyze(), got "
                                 f"{type(graph).__name__}")
        graph.check_matches(records)
    with paused_gc():
        prims, light = check_all(records)
    workers = min(workers, len(records), MAX_WORKERS)
    values: dict = {}
    try:
        if backend is not None or block_bytes is not None:
            from .distributed.engine import run as run_blocks
            run_blocks(records, backend, "16MiB" if block_bytes is None else block_bytes,
                       progress, values)
        else:
            if workers > 1 and LIGHT_IN_ORDER and all(light):
                # every op holds the GIL for its whole (small) kernel: threads could only
                # take turns, so program order on this thread is the quickest schedule
                workers = 1
            with paused_gc():
                run_steps = Steps(records, prims, values, runs=workers <= 1 and progress is None)
            if workers <= 1:
                run_sequential(records, run_steps, progress)
            else:
                if graph is None:
                    graph = analyze(records)
                run_parallel(records, run_steps, workers, graph, progress, light)
    finally:
        results = Results(values)
        show_results(given, results)  # the seed's op.result, even after a failure
    return results
