"""``run``: a plan on a backend, its final blocks written back, the ops' values returned.

A backend has one method, ``execute(plan, progress=None) -> (values, results)``: ``values``
maps each of ``plan.final``'s block versions to its bytes, ``results`` maps task index to the
values the op returned (a tuple); an op's failure raises :class:`OpFailed` for the
earliest failed op in program order. ``run`` then writes the blocks back; on a failure it asks
the backend for the plan truncated just before the failed op, writes that state back, and
raises :class:`~aliasflow.ExecutionError` naming the op.

What a backend answers is checked before anything is written back (a pair of dicts, every
final block version there with exactly its block's bytes, a result for every task): a
backend answering anything else is refused with :class:`~aliasflow.AliasflowError` and the
storages are as they were. ``progress`` is called with 1 per finished task, in the calling
thread, as :func:`aliasflow.run` calls it; if it raises, the run stops and the storages and
results are left as a one-worker run leaves them when its callback raises at the same count:
the ops reported so far, in program order, have run, no other (their blocks are computed
again from the plan truncated there), and the callback's exception is re-raised.
"""
from __future__ import annotations

import numpy as np

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


class _Progress:
    """The user's callback behind the one a backend calls: counts finished tasks, hands
    them on one at a time, and keeps the callback's exception (the run stops with it)."""

    def __init__(self, callback):
        self.callback, self.count, self.raised = callback, 0, None

    def __call__(self, n=1) -> None:
        if self.raised is not None:
            raise self.raised
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise AliasflowError(f"a backend reported progress {n!r}; expected a count of "
                                 f"finished tasks")
        for _ in range(n):
            self.count += 1
            try:
                self.callback(1)
            except BaseException as exc:  # the run stops with the callback's exception
                self.raised = exc
                raise


def _answer(p: Plan, answer, backend):
    """``(values, results)`` of ``backend.execute(p)`` after checking them against the plan:
    :class:`AliasflowError` (nothing written back) for anything else."""
    who = f"backend {type(backend).__name__}"
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AliasflowError(f"{who} answered {_show(answer)}; expected (block values, op "
                             f"results); nothing was written back")
    values, results = answer
    if not isinstance(values, dict) or not isinstance(results, dict):
        raise AliasflowError(f"{who} answered a {type(values).__name__} and a "
                             f"{type(results).__name__}; expected two dicts; nothing was "
                             f"written back")
    final = set(p.final)
    if set(values) != final:
        missing, extra = sorted(final - set(values)), sorted(set(values) - final, key=repr)
        raise AliasflowError(f"{who} answered block versions that are not the plan's final "
                             f"ones (missing {_show(missing)}, unexpected {_show(extra)}); "
                             f"nothing was written back")
    checked = {}
    for key in p.final:
        lo, hi = p.block_range(key[0], key[1])
        data = values[key]
        if isinstance(data, (bytes, bytearray)):
            data = np.frombuffer(data, np.uint8)
        if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 1 or \
                data.size != hi - lo:
            raise AliasflowError(f"{who} answered {_show(data)} for block {key[1]} (version "
                                 f"{key[2]}) of storage {p.storages[key[0]].name!r}; expected "
                                 f"its {hi - lo} bytes as a uint8 array; nothing was written "
                                 f"back")
        checked[key] = data
    indices = {t.index for t in p.tasks}
    if set(results) != indices:
        raise AliasflowError(f"{who} answered results for tasks {_show(sorted(results, key=repr))}"
                             f", expected one for each of {len(indices)} tasks; nothing was "
                             f"written back")
    return checked, results


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def run_plan(p: Plan, backend, progress=None, returned: dict | None = None) -> None:
    """Execute plan ``p`` on ``backend``; see the module doc. The values the ops return go
    into ``returned`` (``Value(op, index) -> array``)."""
    check_all(p.ops)  # every op checked before any task runs, as af.run does
    check_memory(p)
    returned = {} if returned is None else returned
    reporter = None if progress is None else _Progress(progress)
    try:
        values, results = _answer(p, backend.execute(p, reporter), backend)
    except OpFailed as exc:
        if reporter is not None and reporter.raised is not None:
            _stop_after(p, backend, reporter, returned)
        before = p.truncated(exc.index)
        values, results = _answer(before, backend.execute(before), backend) \
            if before.tasks else ({}, {})
        write_back(p, values)
        _returned(before, results, returned)  # ops before the failed one returned theirs
        raise ExecutionError(exc.op_name, exc.message) from exc
    except BaseException:
        if reporter is not None and reporter.raised is not None:
            _stop_after(p, backend, reporter, returned)
        raise
    write_back(p, values)
    _returned(p, results, returned)


def _returned(p: Plan, results: dict, returned: dict) -> None:
    for t in p.tasks:
        for k, value in enumerate(results.get(t.index, ())):
            returned[Value(t.op_name, k)] = value


def _stop_after(p: Plan, backend, reporter: _Progress, returned: dict) -> None:
    """The progress callback raised: leave the state after the ops it was told about (the
    first ``count`` in program order), then re-raise its exception."""
    before = p.truncated(min(reporter.count, len(p.tasks)))
    values, results = _answer(before, backend.execute(before), backend) \
        if before.tasks else ({}, {})
    write_back(p, values)
    _returned(before, results, returned)
    raise reporter.raised


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
