"""Running a plan on Dask: one low-level graph per run.

Keys (every one carries a fresh per-run token, because Dask keys are identities: a rerun whose
keys a cluster still holds would get the old values):

- ``("af-load-<token>", s, b)``: a loader task holding version 0 of block ``b`` of storage
  ``s`` as its argument, so the scheduler can run it again after the worker holding its
  output dies (data scattered up front could not be recomputed);
- ``("af-task-<token>", k)``: op ``k``'s task, returning ``(result, new blocks...)``;
- ``("af-v-<token>", s, b, v)`` and ``("af-result-<token>", k)``: the pieces of that tuple.

On a cluster every block gets a home worker (each memory's blocks spread evenly over the
workers, see :meth:`Plan.home`) and each task is placed, loosely, at the home of the first
block it writes; without homes the scheduler piles work onto one worker. A worker that dies loses what it held; the
scheduler recomputes it from the graph (the lineage), so results stay byte-identical.
"""
from __future__ import annotations

import operator
import time
import uuid
import warnings
from contextlib import nullcontext
from functools import partial

import dask

from .execute import OpFailed, payload, run_task
from .engine import initial_blocks
from .plan import Plan


def _loaded(data):
    return data


def build_graph(p: Plan, token: str, poison=None):
    """``(graph, version key, result key, home block of each key)`` for plan ``p``."""
    L, T, V, R = (f"af-{kind}-{token}" for kind in ("load", "task", "v", "result"))
    dsk, home = {}, {}
    for (s, b), data in initial_blocks(p).items():
        dsk[L, s, b] = (_loaded, data)
        home[L, s, b] = (s, b)

    def vkey(s, b, v):
        return (L, s, b) if v == 0 else (V, s, b, v)

    for t in p.tasks:
        at = (t.writes or t.reads or ((None, None, None),))[0][:2]
        dsk[T, t.index] = (partial(run_task, payload(p, t, poison)),
                           *[vkey(*r) for r in t.reads])
        dsk[R, t.index] = (operator.getitem, (T, t.index), 0)
        home[T, t.index] = home[R, t.index] = at
        for i, w in enumerate(t.writes, 1):
            dsk[vkey(*w)] = (operator.getitem, (T, t.index), i)
            home[vkey(*w)] = w[:2]
    return dsk, vkey, (lambda k: (R, k)), home


class DaskBackend:
    """Run plans on a ``distributed.Client``, or on Dask's synchronous scheduler (``client=None``,
    in this process: for tests and debugging).

    ``timeout`` (seconds) bounds a run on a cluster; ``poison`` is for tests (see
    :class:`~aliasflow.execution.distributed.LocalBackend`).
    """

    def __init__(self, client=None, timeout: float | None = None, poison=None):
        self.client, self.timeout, self.poison = client, timeout, poison

    def execute(self, p: Plan, progress=None):
        token = uuid.uuid4().hex[:16]
        dsk, vkey, rkey, home = build_graph(p, token, self.poison)
        finals = [vkey(*w) for w in p.final]
        results = [rkey(t.index) for t in p.tasks]
        if self.client is None:
            return self._sync(p, dsk, finals, results, progress)
        return self._cluster(p, dsk, finals, results, home, progress)

    def _sync(self, p, dsk, finals, results, progress):
        values = dask.local.get_sync(dsk, finals + results)
        if progress is not None:
            progress(len(p.tasks))
        n = len(finals)
        return dict(zip(p.final, values[:n])), \
            {t.index: r for t, r in zip(p.tasks, values[n:])}

    def _cluster(self, p, dsk, finals, results, home, progress):
        from distributed import as_completed, wait

        client = self.client
        workers = sorted(client.scheduler_info()["workers"])
        placement = {key: workers[p.home(*sb, len(workers))]
                     for key, sb in home.items() if sb[0] is not None} if workers else {}
        with warnings.catch_warnings():
            # The initial blocks are in the graph on purpose (loader tasks the scheduler can
            # rerun after a worker dies), so a big graph is expected, not a mistake.
            warnings.filterwarnings("ignore", message="Sending large graph")
            with dask.annotate(workers=partial(_home, placement), allow_other_workers=True) \
                    if placement else nullcontext():
                futures = client.get(dsk, finals + results, sync=False)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        n = len(finals)
        by_future = {f: k for k, f in enumerate(futures)}
        failed = []
        try:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            for f in as_completed(futures[n:], timeout=left):
                if f.status == "error":
                    exc = f.exception()
                    failed.append(exc if isinstance(exc, OpFailed) else
                                  OpFailed(by_future[f] - n, p.tasks[by_future[f] - n].op_name,
                                           f"{type(exc).__name__}: {exc}"))
                elif progress is not None:
                    progress(1)
            if failed:
                raise min(failed, key=lambda e: e.index)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            wait(futures, timeout=left)
            values = client.gather(futures)
        except BaseException:
            client.cancel(futures)      # a failed or timed-out run leaves nothing running
            raise
        del futures, by_future          # release the run's keys
        return dict(zip(p.final, values[:n])), \
            {t.index: r for t, r in zip(p.tasks, values[n:])}


def _home(placement, key):
    return placement.get(key, ())      # () : no restriction (a task touching no block)
