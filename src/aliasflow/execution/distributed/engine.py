"""``run``: a plan on a backend, its final blocks written back, the ops' values returned.

A backend has one method, ``execute(plan, progress=None) -> (values, results)``: ``values``
maps each of ``plan.final``'s block versions to its bytes, ``results`` maps task index to the
values the op returned (a tuple); an op's failure raises :class:`OpFailed` for the
earliest failed op in program order. ``run`` then writes the blocks back; on a failure it asks
the backend for the plan truncated just before the failed op, writes that state back, and
raises :class:`~aliasflow.ExecutionError` naming the op.
"""
from __future__ import annotations

from ...core.errors import AliasflowError, ExecutionError
from ...core.builders import show_results
from ...core.record import Results, Value
from ..interpreter import check_all
from .execute import OpFailed, load_block, payload, run_task, write_back
from .plan import Plan, plan as make_plan


def check_memory(p: Plan) -> None:
    """Refuse, before anything runs, memory aliasflow cannot read or write."""
    used = {s for t in p.tasks for s, _, _ in t.reads + t.writes}
    for s in sorted(used):
        for st in p.memory[s]:
            if not st.has_memory:
                why = "virtual (analysis only)" if st.virtual else \
                    "a description of memory aliasflow does not own (analysis only)"
                raise AliasflowError(f"storage {st.name!r} is {why}; it has no memory to "
                                     f"run on")


def initial_blocks(p: Plan):
    """Every version-0 block some task reads: ``(s, b) -> bytes`` copied from the storages."""
    check_memory(p)
    out = {}
    for t in p.tasks:
        for s, b, v in t.reads:
            if v == 0 and (s, b) not in out:
                out[s, b] = load_block(p, s, b)
    return out


class LocalBackend:
    """The plan task by task in this process: the reference the engines are tested against.

    ``poison`` (a byte value) fills written-but-not-read blocks before each op, so a block
    wrongly taken as covered whole shows up in the result.
    """

    def __init__(self, poison=None):
        self.poison = poison

    def execute(self, p: Plan, progress=None):
        values = {(s, b, 0): data for (s, b), data in initial_blocks(p).items()}
        readers = {}                                   # drop versions nobody reads any more
        for t in p.tasks:
            for r in t.reads:
                readers[r] = t.index
        keep = set(p.final)
        results = {}
        for t in p.tasks:
            out = run_task(payload(p, t, self.poison), *[values[r] for r in t.reads])
            results[t.index] = out[0]
            for r in t.reads:
                if readers[r] == t.index and r not in keep:
                    del values[r]
            values.update(zip(t.writes, out[1:]))
            if progress is not None:
                progress(1)
        return {w: values[w] for w in p.final}, results


def run_plan(p: Plan, backend, progress=None, returned: dict | None = None) -> None:
    """Execute plan ``p`` on ``backend``; see the module doc. The values the ops return go
    into ``returned`` (``Value(op, index) -> array``)."""
    check_all(p.ops)  # every op checked before any task runs, as af.run does
    check_memory(p)
    returned = {} if returned is None else returned
    try:
        values, results = backend.execute(p, progress)
    except OpFailed as exc:
        before = p.truncated(exc.index)
        values, results = backend.execute(before) if before.tasks else ({}, {})
        write_back(p, values)
        _returned(before, results, returned)  # ops before the failed one returned theirs
        raise ExecutionError(exc.op_name, exc.message) from exc
    write_back(p, values)
    _returned(p, results, returned)


def _returned(p: Plan, results: dict, returned: dict) -> None:
    for t in p.tasks:
        for k, value in enumerate(results.get(t.index, ())):
            returned[Value(t.op_name, k)] = value


def run_local(p: Plan, poison=None) -> None:
    """Run plan ``p`` in this process (see :class:`LocalBackend`)."""
    run_plan(p, LocalBackend(poison))


def run(ops, backend=None, block_bytes="16MiB", progress=None, returned=None) -> Results:
    """Functionalize ``ops`` into blocks and run them on ``backend`` (default: in-process);
    return what they returned (as :func:`aliasflow.run` does).

    Storages and returned values end exactly as program order leaves them (values also go
    into ``returned``, when given). On an op's failure the storages hold the state just before
    that op and :class:`~aliasflow.ExecutionError` names it.
    """
    if backend is None:
        backend = LocalBackend()
    if not callable(getattr(backend, "execute", None)):
        raise AliasflowError(f"backend must have an execute(plan, progress) method "
                             f"(DaskBackend, RayBackend, LocalBackend), got {backend!r}")
    ops = list(ops)
    returned = {} if returned is None else returned
    try:
        run_plan(make_plan(ops, block_bytes), backend, progress, returned)
    finally:
        results = Results(returned)
        show_results(ops, results)
    return results
