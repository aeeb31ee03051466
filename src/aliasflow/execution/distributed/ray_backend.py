"""Running a plan on Ray: one remote call per task, block versions as object refs.

Version 0 of each block comes from a loader task whose argument is the block (so Ray can run it
again if the object is lost with a node); op ``k``'s task returns ``1 + len(writes)`` objects:
the op's result, then the new block versions. Tasks are retried (``max_retries``) when their
worker or node dies, and lost objects are rebuilt from their lineage, so results stay
byte-identical. Every run's objects are new (Ray object refs are never reused), so two programs
back to back cannot see each other's values.

With several nodes alive each block gets a home node (each memory's blocks spread evenly, see
:meth:`Plan.home`)
and a task prefers the home of the first block it writes (soft affinity: it runs elsewhere if
that node is gone).
"""
from __future__ import annotations

import os
import time

from .execute import OpFailed, payload, run_task
from .engine import initial_blocks
from .plan import Plan


def _load(data):
    return data


def _task(load, nreturns, *blocks):
    out = run_task(load, *blocks)
    return out if nreturns > 1 else out[0]


class RayBackend:
    """Run plans on Ray.

    Parameters
    ----------
    address : str, optional
        A running cluster (``"ray://..."`` or ``"host:port"``); None starts a local one on
        loopback (``num_cpus`` worker slots, no dashboard) unless Ray is already initialised.
    num_cpus : int, optional
        Worker slots of the local cluster started when ``address`` is None.
    max_retries : int, default 3
        Retries of a task whose worker or node died (op failures are not retried).
    timeout : float, optional
        Seconds a run may take.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 max_retries: int = 3, timeout: float | None = None, poison=None,
                 **init_kwargs):
        # On one machine Ray must stay on loopback: without this (read when ray is first
        # imported) and _node_ip_address it switches to the machine's routable address.
        if address is None:
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray

        self.ray = ray
        self.max_retries, self.timeout, self.poison = max_retries, timeout, poison
        self.started = False
        if not ray.is_initialized():
            # op failures are reported by run(); Ray's own log of them is noise
            os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
            kwargs = dict(log_to_driver=False)
            if address is None:
                kwargs.update(_node_ip_address="127.0.0.1", num_cpus=num_cpus,
                              include_dashboard=False)
            kwargs.update(init_kwargs)
            ray.init(address=address, **kwargs)
            self.started = True
        self._load = ray.remote(_load)
        self._task = ray.remote(_task)

    def close(self) -> None:
        """Shut Ray down if this backend started it."""
        if self.started:
            self.ray.shutdown()
            self.started = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _homes(self, p: Plan):
        nodes = sorted(n["NodeID"] for n in self.ray.nodes() if n.get("Alive"))
        if len(nodes) < 2:
            return {}
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        blocks = {(s, b) for t in p.tasks for s, b, _ in t.reads + t.writes}
        return {sb: NodeAffinitySchedulingStrategy(nodes[p.home(*sb, len(nodes))], soft=True)
                for sb in blocks}

    def execute(self, p: Plan, progress=None):
        ray = self.ray
        homes = self._homes(p)

        def opts(sb, n):
            o = dict(num_returns=n, max_retries=self.max_retries)
            if sb in homes:
                o["scheduling_strategy"] = homes[sb]
            return o

        refs = {(s, b, 0): self._load.options(**opts((s, b), 1)).remote(data)
                for (s, b), data in initial_blocks(p).items()}
        results = []
        for t in p.tasks:
            n = 1 + len(t.writes)
            at = (t.writes or t.reads or ((None, None, None),))[0][:2]
            out = self._task.options(**opts(at, n)).remote(
                payload(p, t, self.poison), n, *[refs[r] for r in t.reads])
            out = out if n > 1 else [out]
            results.append(out[0])
            refs.update(zip(t.writes, out[1:]))
        finals = [refs[w] for w in p.final]
        del refs                       # superseded versions are freed as their readers finish
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        failed, pending, index = [], list(results), {r: k for k, r in enumerate(results)}
        try:
            while pending:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"Ray run did not finish within {self.timeout} s")
                done, pending = ray.wait(pending, num_returns=len(pending), timeout=min(
                    left if left is not None else 1.0, 1.0), fetch_local=False)
                for r in done:
                    try:
                        ray.get(r)
                    except Exception as exc:  # RayTaskError: the op's OpFailed is its cause
                        cause = exc if isinstance(exc, OpFailed) else getattr(exc, "cause", None)
                        k = index[r]
                        failed.append(cause if isinstance(cause, OpFailed) else
                                      OpFailed(k, p.tasks[k].op_name,
                                               f"{type(exc).__name__}: {exc}"))
                    else:
                        if progress is not None:
                            progress(1)
            if failed:
                raise min(failed, key=lambda e: e.index)
            left = None if deadline is None else max(0.1, deadline - time.monotonic())
            values = ray.get(finals + results, timeout=left)
        except BaseException:
            for r in results:
                ray.cancel(r, force=False)
            raise
        n = len(finals)
        return dict(zip(p.final, values[:n])), \
            {t.index: _copy(r) for t, r in zip(p.tasks, values[n:])}


def _copy(value):
    """Arrays from Ray's object store are read-only views of it; results are the caller's."""
    import numpy as np
    return None if value is None else np.array(value, copy=True)
