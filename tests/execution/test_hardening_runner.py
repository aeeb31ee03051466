"""Runner hardening (issue 10): no deadlock, checks before running, the failure contract,
graphs that must match their ops, worker counts. Every run here happens in a thread joined
with a timeout, so a deadlock fails the test instead of hanging CI."""
import copy
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aliasflow as af

from strategies import programs

TIMEOUT = 60


def bounded(fn, *args, **kwargs):
    """Run ``fn`` in a thread; fail the test if it does not return within TIMEOUT seconds.
    Returns ``(value, exception)``."""
    box = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive(), f"{fn.__name__} did not return within {TIMEOUT} s (deadlock?)"
    return box.get("value"), box.get("error")


def no_worker_threads_left():
    for t in threading.enumerate():
        if t.name.startswith("aliasflow"):
            t.join(TIMEOUT)
    return not any(t.name.startswith("aliasflow") for t in threading.enumerate())


def independent_ops(n, tensor, kernel=None):
    return [af.TransformOperation(f"op{k}", kernel or "negative")
            .set_inputs(tensor[k:k + 1]).set_outputs(tensor[k:k + 1]) for k in range(n)]


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_a_progress_callback_that_raises_stops_the_run_and_is_raised(workers):
    t = af.Tensor("T", (50,), "float64", data=np.ones(50))
    ops = independent_ops(50, t)
    _, error = bounded(af.run, ops, workers=workers, progress=lambda n: 1 / 0)
    assert isinstance(error, ZeroDivisionError)
    assert no_worker_threads_left()
    ran = int((t.data == -1).sum())
    assert 1 <= ran <= 50  # stopped: at least the op it reported on ran, nothing half-written
    assert set(np.unique(t.data)) <= {1.0, -1.0}


def test_progress_is_called_once_per_op_from_the_calling_thread():
    t = af.Tensor("T", (30,), "float64")
    calls = []
    me = threading.get_ident()
    af.run(independent_ops(30, t), workers=3,
           progress=lambda n: calls.append((n, threading.get_ident())))
    assert calls == [(1, me)] * 30


@pytest.mark.parametrize("workers", [2, 3])
def test_a_slow_progress_callback_still_hears_of_every_op(workers):
    # The workers finish and exit while the caller is still inside the callback; the ops
    # they finished meanwhile must be reported all the same (CI once saw 18 calls of 30).
    import time
    t = af.Tensor("T", (30,), "float64", data=np.ones(30))
    calls = []
    af.run(independent_ops(30, t), workers=workers,
           progress=lambda n: (calls.append(n), time.sleep(0.02)))
    assert calls == [1] * 30
    assert (t.data == -1).all()  # every op ran exactly once


def failing_at(positions):
    def kernel(x):
        raise ZeroDivisionError("injected")
    return kernel


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_the_error_names_the_first_op_in_program_order_and_earlier_ops_ran(workers):
    # op0 is slow and independent; op1 fails at once. Program order stops at op1 with op0
    # done; every parallel run must say op1 and have run op0 too.
    import time
    t = af.Tensor("T", (8,), "float64", data=np.arange(8.0))

    def slow(x):
        time.sleep(0.2)
        return x + 100

    def bad(x):
        raise ValueError("injected")
    ops = [af.TransformOperation("op0", slow).set_inputs(t[0:1]).set_outputs(t[0:1]),
           af.TransformOperation("op1", bad).set_inputs(t[1:2]).set_outputs(t[1:2]),
           af.TransformOperation("op2", "negative").set_inputs(t[2:3]).set_outputs(t[2:3]),
           af.TransformOperation("op3", "negative").set_inputs(t[1:2]).set_outputs(t[3:4])]
    _, error = bounded(af.run, ops, workers=workers)
    assert isinstance(error, af.ExecutionError) and error.op_name == "op1"
    assert isinstance(error.__cause__, ValueError)
    assert t.data[0] == 100.0  # op0 ran although op1 failed first in time
    assert t.data[3] == 3.0  # op3 depends on op1: never ran
    assert set(error.ran_after) <= {"op2"}
    assert (t.data[2] == -2.0) == ("op2" in error.ran_after)
    if error.ran_after:
        assert "later ops that had already run: op2" in str(error)
    assert no_worker_threads_left()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_ops=10, executable=True, max_tensors=2), st.data())
def test_failure_injection_matches_program_order(ops, data):
    """Random programs with random failing ops: the same op is named with any number of
    workers, every op before it ran, and the state is program order's plus ``ran_after``."""
    fail = data.draw(st.sets(st.integers(0, len(ops) - 1), max_size=3), label="fail")
    log = {}

    def wrap(op, k):
        if not hasattr(op, "fn") or isinstance(op, af.FillOperation):
            return
        inner = op.fn

        def fn(*args, **kwargs):
            if k in fail:
                raise ArithmeticError(f"injected at {k}")
            value = inner(*args, **kwargs)
            log.setdefault(id(op_list), []).append(op.name)
            return value
        op.fn = fn  # a callable now: judged when it runs

    twins = [copy.deepcopy(ops) for _ in range(3)]
    results = []
    for workers, op_list in zip((1, 2, 4), twins):
        for k, op in enumerate(op_list):
            wrap(op, k)
        _, error = bounded(af.run, op_list, workers=workers)
        state = {id(v.tensor): v.tensor for op in op_list for v in op.input_views + op.output_views}
        results.append((error, op_list, {t.name: t.data.copy() for t in state.values()}))
    seq_error, seq_ops, seq_state = results[0]
    for error, op_list, state in results[1:]:
        assert type(error) is type(seq_error)
        if seq_error is None:
            assert all(np.array_equal(state[n], seq_state[n], equal_nan=True) for n in state)
            continue
        assert error.op_name == seq_error.op_name
        k = [op.name for op in op_list].index(error.op_name)
        ran = log.get(id(op_list), [])
        before = [op.name for op in op_list[:k] if hasattr(op, "fn")
                  and not isinstance(op, af.FillOperation)]
        assert set(before) <= set(ran)  # every op before the failing one ran
        later = {op.name for op in op_list[k + 1:]}
        assert set(error.ran_after) <= later
        if not error.ran_after:
            assert all(np.array_equal(state[n], seq_state[n], equal_nan=True) for n in state)
    assert no_worker_threads_left()


def test_run_refuses_a_graph_of_other_ops():
    a = af.Tensor("A", (4,))
    ops1 = [af.FillOperation("x", 1.0).set_outputs(a[:2]),
            af.TransformOperation("y").set_inputs(a[:2]).set_outputs(a[2:])]
    ops2 = [af.FillOperation("x", 1.0).set_outputs(a[2:]),
            af.TransformOperation("y").set_inputs(a[:2]).set_outputs(a[2:])]
    g = af.analyze(ops1)
    for other, match in ((ops2, "'x' has other views"), (ops1[:1], "from 2 ops"),
                         (ops1 + [af.FillOperation("z").set_outputs(a[:1])], "from 2 ops"),
                         (ops1[::-1], "different op list")):
        for workers in (1, 2):
            with pytest.raises(af.AliasflowError, match=match):
                af.run(other, workers=workers, graph=g)
    assert not a.data.any()
    ops1[1].set_inputs(a[1:3])
    with pytest.raises(af.AliasflowError, match="'y' has other views"):
        af.run(ops1, graph=g)
    with pytest.raises(af.AliasflowError, match="DependencyGraph"):
        af.run(ops1, graph="g")
    ops3 = [af.FillOperation("x", 1.0).set_outputs(a[:2])]
    af.run(ops3, workers=2, graph=af.analyze(ops3))
    assert a.data[:2].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("workers", [10**20, 100000, 2**31])
def test_absurd_worker_counts_are_capped(workers):
    t = af.Tensor("T", (3,), "float64", data=np.ones(3))
    _, error = bounded(af.run, independent_ops(3, t), workers=workers)
    assert error is None and t.data.tolist() == [-1.0, -1.0, -1.0]
    assert no_worker_threads_left()


def test_a_thread_that_cannot_start_refuses_before_any_op_runs(monkeypatch):
    t = af.Tensor("T", (8,), "float64", data=np.ones(8))
    started = []
    real_start = threading.Thread.start

    def start(self):
        if self.name.startswith("aliasflow"):
            if len(started) >= 1:
                raise RuntimeError("can't start new thread")
            started.append(self)
        real_start(self)
    monkeypatch.setattr(threading.Thread, "start", start)
    _, error = bounded(af.run, independent_ops(8, t), workers=4)
    monkeypatch.undo()
    assert isinstance(error, af.AliasflowError) and "could only start 1" in str(error)
    assert t.data.tolist() == [1.0] * 8
    assert no_worker_threads_left()


@pytest.mark.parametrize("workers", [1, 2])
def test_every_op_is_checked_before_any_runs(workers):
    t = af.Tensor("T", (6,), "float64")
    bad_late = [
        af.TransformOperation("bad").set_inputs(t[:2]).set_outputs(t[:3]),          # shape
        af.BinaryOperation("bad").set_inputs(t[:2]),                                # arity
        af.TransformOperation("bad").set_inputs(t[:2]).set_outputs(
            af.Tensor("I", (2,), "int32")[:]),                                     # dtype
        af.ReduceOperation("bad", axis=3).set_inputs(t[:2]),                        # axis
        af.BinaryOperation("bad").set_inputs(t[:2], t[:3]),                         # broadcast
        af.FillOperation("bad", 1e39).set_outputs(af.Tensor("H", (2,), "float16")[:]),  # value
        af.TransformOperation("bad").set_inputs(af.Tensor.virtual("V", (4,))[:2]),  # virtual
    ]
    for bad in bad_late:
        ops = [af.FillOperation("first", 5.0).set_outputs(t[:]),
               af.TransformOperation("second", "exp").set_inputs(t[:2]).set_outputs(t[2:4]),
               bad]
        with pytest.raises(af.AliasflowError, match="'bad'") as info:
            af.run(ops, workers=workers)
        assert isinstance(info.value, af.ExecutionError) and info.value.op_name == "bad"
        assert not t.data.any(), bad


@pytest.mark.parametrize("workers", [1, 2])
def test_a_second_output_on_read_only_storage_is_refused_before_the_first_is_written(workers):
    t = af.Tensor("T", (4,), "float64")
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    ro = af.Tensor.from_numpy("R", frozen)
    op = af.FillOperation("f", 2.0).set_outputs(t[:], ro.view())
    with pytest.raises(af.AliasflowError, match="'f'.*read-only"):
        af.run([op], workers=workers)
    assert not t.data.any()


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_later_op_failing_first_in_time_is_not_the_one_named(workers):
    # The case: op1 waits for slow op0 and fails; independent op2 fails at once.
    # Program order names op1; so must every parallel run, after running op0 and op1.
    import time
    t = af.Tensor("T", (4,), "float64")
    ran = []

    def slow(x):
        time.sleep(0.2)
        ran.append("op0")
        return x + 1

    def bad(name):
        def kernel(x):
            ran.append(name)
            raise ValueError(name)
        return kernel
    ops = [af.TransformOperation("op0", slow).set_inputs(t[0:1]).set_outputs(t[0:1]),
           af.TransformOperation("op1", bad("op1")).set_inputs(t[0:1]).set_outputs(t[1:2]),
           af.TransformOperation("op2", bad("op2")).set_inputs(t[2:3]).set_outputs(t[2:3])]
    _, error = bounded(af.run, ops, workers=workers)
    assert isinstance(error, af.ExecutionError) and error.op_name == "op1", error
    assert "op0" in ran and "op1" in ran and t.data[0] == 1.0
    assert error.ran_after == []  # op2 failed: it did not "run"
