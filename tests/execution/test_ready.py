"""The parallel runner's ready queue (``aliasflow.execution.ready``): both backends (the
compiled ``_ready.ReadyQueue`` and the pure-Python ``PyReadyQueue``) against a brute-force
model of what the queue must answer, against each other, and parallel runs on both against
program order and NumPy.

The runner tests in test_execution.py and test_hardening_runner.py run on the default
backend; a few of them are imported at the bottom to run on the other one too.
"""
import copy
import os
import random
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aliasflow as af
from aliasflow.execution import interpreter, ready, runner

from strategies import programs
from test_execution import numpy_reference, snapshot

PURE = os.environ.get("AF_PURE", "") not in ("", "0")
NATIVE = ready.NativeReadyQueue
needs_native = pytest.mark.skipif(NATIVE is None, reason="compiled queue not in use (AF_PURE=1, "
                                  "or not built: test_native.py::test_extension_built fails then)")
BACKENDS = ["compiled", "pure"]


def queue_class(name):
    if name == "compiled":
        if NATIVE is None:
            pytest.skip("compiled queue not in use")
        return NATIVE
    return ready.PyReadyQueue


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    """Make the runner build its queues with one backend."""
    cls = queue_class(request.param)
    monkeypatch.setattr(ready, "NativeReadyQueue", cls if cls is NATIVE else None)
    return request.param


# ---------------------------------------------------------------- a model of the queue

class Model:
    """What the queue must answer, by brute force over every op's state (no heap)."""

    def __init__(self, n, edges, light):
        self.n, self.light = n, light
        self.preds = [set() for _ in range(n)]
        for p, t in edges:
            self.preds[t].add(p)
        self.state = ["waiting"] * n
        self.limit, self.stopped = n, False

    def ready(self, k):
        return self.state[k] == "waiting" and all(self.state[p] == "done" for p in self.preds[k])

    def running(self):
        return [k for k in range(self.n) if self.state[k] == "running"]

    def next(self):
        if self.stopped:
            return -1
        light_busy = any(self.light[k] for k in self.running())
        for k in range(self.limit):  # lowest position first, a light op not beside another
            if self.ready(k) and not (self.light[k] and light_busy):
                self.state[k] = "running"
                return k
        return -2 if self.running() else -1

    def finish(self, k, ok):
        assert self.state[k] == "running"
        self.state[k] = "done" if ok else "failed"
        if not ok:
            self.limit = min(self.limit, k)

    def over(self):
        return not self.running() and (self.stopped or not any(
            self.ready(k) for k in range(self.limit)))


def csr(n, edges):
    succ = [sorted({t for p, t in edges if p == k}) for k in range(n)]
    offsets = [0]
    for s in succ:
        offsets.append(offsets[-1] + len(s))
    return tuple(offsets), tuple(t for s in succ for t in s)


@st.composite
def dags(draw, max_n=14):
    n = draw(st.integers(0, max_n))
    pairs = [(p, t) for t in range(n) for p in range(t)]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=3 * n, unique=True)) if pairs else []
    light = bytes(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    return n, edges, light


@pytest.mark.parametrize("name", BACKENDS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.randoms(use_true_random=False))
def test_queue_answers_as_the_model(name, dag, rnd):
    """Random graphs, random interleavings of next/done/fail/stop from one thread: every
    answer and the final state equal the brute-force model's."""
    n, edges, light = dag
    offsets, targets = csr(n, edges)
    q = queue_class(name)(offsets, targets, light)
    m = Model(n, edges, light)
    for _ in range(4 * n + 4):
        running = m.running()
        action = rnd.choice(["next", "next", "done", "done", "fail"]
                            + (["stop"] if rnd.random() < 0.05 else []))
        if action == "next" or not running and action != "stop":
            assert q.next(0.0) == m.next()
        elif action == "stop":
            q.stop()
            m.stopped = True
        else:
            k = rnd.choice(running)
            ok = action == "done" or rnd.random() < 0.7
            (q.done if ok else q.fail)(k)
            m.finish(k, ok)
        status = q.status()
        assert status["running"] == len(m.running())
        assert status["over"] == m.over()
        assert q.wait(-1, 0.0) == (sum(s == "done" for s in m.state), m.over())
    assert q.finished_ops() == [k for k in range(n) if m.state[k] == "done"]


@needs_native
@settings(max_examples=200, deadline=None)
@given(dags(max_n=30), st.randoms(use_true_random=False))
def test_both_backends_answer_alike(dag, rnd):
    n, edges, light = dag
    offsets, targets = csr(n, edges)
    queues = [NATIVE(offsets, targets, light),
              ready.PyReadyQueue(np.array(offsets, np.int64), np.array(targets, np.int64), light)]
    running = []
    for _ in range(3 * n + 3):
        if running and rnd.random() < 0.5:
            k = running.pop(rnd.randrange(len(running)))
            ok = rnd.random() < 0.9
            for q in queues:
                (q.done if ok else q.fail)(k)
        else:
            got = [q.next(0.0) for q in queues]
            assert got[0] == got[1]
            if got[0] >= 0:
                running.append(got[0])
        assert queues[0].status() == queues[1].status()
    assert queues[0].finished_ops() == queues[1].finished_ops()


# ---------------------------------------------------------------- boundary (both backends)

@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("args, error", [
    ((), TypeError), (((0,),), TypeError), (((0,), (), b"", 1), TypeError),
    (([0], ()), TypeError), (((0,), []), TypeError), (("0", ()), TypeError),
    (((0.0,), ()), TypeError), (((True,), ()), TypeError), (((0, 1), (1.0,)), TypeError),
    ((np.zeros(2, np.int32), ()), TypeError), ((np.zeros(2, np.float64), ()), TypeError),
    ((np.zeros((2, 1), np.int64), ()), TypeError), ((np.zeros(4, np.int64)[::2], ()), TypeError),
    ((np.zeros(2, ">i8"), ()), TypeError), ((None, ()), TypeError),
    (((), ()), ValueError), (((1,), ()), ValueError), (((0, 2, 1), (1, 2)), ValueError),
    (((0, 1), ()), ValueError), (((0, 1, 1), (0,)), ValueError), (((0, 1, 1), (2,)), ValueError),
    (((0, 1, 1), (-1,)), ValueError), (((0, 0, 1), (1,)), ValueError),
    (((0, 2**63), ()), ValueError), (((0, 0), (), "1"), TypeError), (((0, 0), (), b"\x02"), ValueError),
    (((0, 0), (), b"\x00\x00"), ValueError), (((0, 0), (), bytearray(1)), TypeError),
])
def test_bad_edge_arrays_are_refused(name, args, error):
    with pytest.raises(error):
        queue_class(name)(*args)


@pytest.mark.parametrize("name", BACKENDS)
def test_bad_calls_are_refused_and_leave_the_queue_working(name):
    q = queue_class(name)((0, 1, 1), (1,))
    for bad in [-1, 2, 2**70, 1.0, "0", None, True]:
        with pytest.raises((TypeError, ValueError)):
            q.done(bad)
        with pytest.raises((TypeError, ValueError)):
            q.fail(bad)
    with pytest.raises(ValueError, match="waiting, not running"):
        q.done(1)
    with pytest.raises(ValueError, match="ready, not running"):
        q.done(0)
    for bad in [-0.5, float("nan"), float("inf"), 1e9, "1", None, True]:
        with pytest.raises((TypeError, ValueError)):
            q.next(bad)
        with pytest.raises((TypeError, ValueError)):
            q.wait(0, bad)
    for bad in [-2, 3, 1.0, None]:
        with pytest.raises((TypeError, ValueError)):
            q.wait(bad, 0.0)
    for args in [(), (0.0, 0.0)]:
        with pytest.raises(TypeError):
            q.next(*args)
    with pytest.raises(TypeError):
        q.stop(1)
    assert q.next(0.0) == 0
    with pytest.raises(ValueError, match="done, not running"):
        q.done(0) or q.done(0)
    assert q.next(0) == 1
    q.done(1)
    assert q.next(0.0) == -1 and q.finished_ops() == [0, 1]


@pytest.mark.parametrize("name", BACKENDS)
def test_edge_arrays_are_copied(name):
    offsets, targets = np.array([0, 1, 1], np.int64), np.array([1], np.int64)
    q = queue_class(name)(offsets, targets)
    targets[0] = 0  # changing the caller's array afterwards changes nothing
    offsets[:] = 0
    assert q.next(0.0) == 0 and q.next(0.0) == -2
    q.done(0)
    assert q.next(0.0) == 1


@pytest.mark.parametrize("name", BACKENDS)
def test_waits_are_bounded_and_wake_up(name):
    q = queue_class(name)((0, 1, 1), (1,))
    assert q.next(0.0) == 0
    assert q.next(0.05) == -2  # op 1 waits for op 0: the wait ends after the timeout
    assert q.wait(0, 0.05) == (0, False)
    got = []
    waiter = threading.Thread(target=lambda: got.append(q.next(30.0)))
    waiter.start()
    q.done(0)
    waiter.join(10)
    assert got == [1]
    main = threading.Thread(target=lambda: got.append(q.wait(-1, 30.0)))
    main.start()
    q.done(1)
    main.join(10)
    assert got == [1, (2, True)]
    stopper = queue_class(name)((0, 1, 1), (1,))
    assert stopper.next(0.0) == 0
    waiter = threading.Thread(target=lambda: got.append(stopper.next(30.0)))
    waiter.start()
    stopper.stop()
    waiter.join(10)
    assert got[-1] == -1 and stopper.wait(-1, 0.0) == (0, False)  # op 0 still runs
    stopper.done(0)
    assert stopper.wait(-1, 0.0) == (1, True)


@pytest.mark.parametrize("name", BACKENDS)
def test_light_ops_run_one_at_a_time_and_heavy_ops_beside_them(name):
    # ops 0..3 light, 4 heavy, all independent
    q = queue_class(name)((0,) * 6, (), b"\x01\x01\x01\x01\x00")
    assert q.next(0.0) == 0
    assert q.next(0.0) == 4  # a second worker gets the heavy op, not a second light one
    assert q.next(0.0) == -2
    q.done(0)
    assert q.next(0.0) == 1


def test_successor_arrays_of_a_graph():
    t = af.Tensor("T", (8,))
    ops = [af.FillOperation("a", 1.0).set_outputs(t[:4]),
           af.FillOperation("b", 2.0).set_outputs(t[4:]),
           af.TransformOperation("c").set_inputs(t[:4]).set_outputs(t[4:]),
           af.TransformOperation("d").set_inputs(t[4:]).set_outputs(t[:4])]
    g = af.analyze(ops)
    offsets, targets = ready.successor_arrays(g, len(ops))
    got = {(k, int(t)) for k in range(len(ops)) for t in targets[offsets[k]:offsets[k + 1]]}
    assert got == {(g.ops.index(d.src), g.ops.index(d.dst)) for d in g.dependencies}
    assert offsets.dtype == targets.dtype == np.int64


# ---------------------------------------------------------------- runs on both backends

def random_light(seed):
    rnd = random.Random(seed)
    return lambda rec, prim: rnd.randint(0, 1)


def yielding(fn):
    """``fn`` after giving the GIL away (so threads really interleave between ops' reads
    and writes); a callable kernel, so judged when it runs, with the same values."""
    def kernel(*args, **kwargs):
        time.sleep(0)
        return fn(*args, **kwargs)
    return kernel


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(programs(max_ops=12, executable=True, max_tensors=2), st.integers(0, 2**32),
       st.booleans())
def test_parallel_runs_equal_program_order_and_numpy(backend, monkeypatch, ops, seed, switch):
    """Storages and results after run(workers=1..4), on either queue, with random ops
    marked light (and, if ``switch``, kernels that give the GIL away first), are byte for
    byte those of a sequential NumPy execution."""
    monkeypatch.setattr(ready, "is_light", random_light(seed))
    if switch:
        for op in ops:
            if hasattr(op, "fn") and not isinstance(op, af.FillOperation):
                op._params = dict(op._params, fn=yielding(op.fn))  # a callable kernel
    twin = copy.deepcopy(ops)
    numpy_reference(twin)
    expect = snapshot(twin)
    for workers in (1, 2, 3, 4):
        run = copy.deepcopy(ops)
        af.run(run, workers=workers)
        assert snapshot(run) == expect


@pytest.mark.parametrize("light", [0, 1])
def test_a_long_chain_and_a_wide_fan_out(backend, monkeypatch, light):
    monkeypatch.setattr(ready, "is_light", lambda rec, prim: light)
    n = 300
    t = af.Tensor("T", (n + 1,), "float64", data=np.arange(n + 1.0))
    chain = [af.BinaryOperation(f"c{k}", "add").set_inputs(t[k:k + 1], t[k + 1:k + 2])
             .set_outputs(t[k + 1:k + 2]) for k in range(n)]
    ref = np.cumsum(np.arange(n + 1.0))
    af.run(chain, workers=3)
    assert t.data.tolist() == ref.tolist()
    u = af.Tensor("U", (n + 1,), "float64", data=np.ones(n + 1))
    fan = [af.TransformOperation(f"f{k}", "negative").set_inputs(u[:1]).set_outputs(u[k:k + 1])
           for k in range(1, n + 1)]
    af.run(fan, workers=4)
    assert u.data.tolist() == [1.0] + [-1.0] * n


# ------------------------------------------- runner tests on the queue not used by default

from test_execution import (test_parallel_failure_stops_new_ops_and_names_the_op,  # noqa: E402
                            test_many_failures_report_the_earliest_and_never_hang,
                            test_ctrl_c_stops_a_parallel_run_cleanly)
from test_hardening_runner import (  # noqa: E402
    test_a_progress_callback_that_raises_stops_the_run_and_is_raised,
    test_progress_is_called_once_per_op_from_the_calling_thread,
    test_the_error_names_the_first_op_in_program_order_and_earlier_ops_ran,
    test_failure_injection_matches_program_order,
    test_a_later_op_failing_first_in_time_is_not_the_one_named,
    test_a_thread_that_cannot_start_refuses_before_any_op_runs)

IMPORTED = {f.__name__ for f in (
    test_parallel_failure_stops_new_ops_and_names_the_op,
    test_many_failures_report_the_earliest_and_never_hang,
    test_ctrl_c_stops_a_parallel_run_cleanly,
    test_a_progress_callback_that_raises_stops_the_run_and_is_raised,
    test_progress_is_called_once_per_op_from_the_calling_thread,
    test_the_error_names_the_first_op_in_program_order_and_earlier_ops_ran,
    test_failure_injection_matches_program_order,
    test_a_later_op_failing_first_in_time_is_not_the_one_named,
    test_a_thread_that_cannot_start_refuses_before_any_op_runs)}


@pytest.fixture(autouse=True)
def other_backend(request, monkeypatch):
    """The runner tests imported above run here on the queue the suite does not use by
    default: the pure one when the compiled one is loaded (AF_PURE=1 for a subprocess)."""
    if request.node.originalname in IMPORTED:
        if NATIVE is None:
            pytest.skip("only the pure queue is available: the default runs cover it")
        monkeypatch.setattr(ready, "NativeReadyQueue", None)
        monkeypatch.setenv("AF_PURE", "1")
    yield


def test_check_all_does_not_trust_a_kernels_equality():
    """Kernels are told apart by identity: one that claims to equal every other does not
    let an op skip its check."""
    class Liar:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *args, **kwargs):
            return self.fn(*args, **kwargs)

        def __eq__(self, other):
            return True

        def __hash__(self):
            return 0

    # a kind whose result rule asks the kernel (so a check predicts each op's result dtype)
    prim = af.Primitive("liar_map", lambda p, ins: p["fn"](ins[0]), arity=1,
                        params={"fn": "any"},
                        result=lambda p, ins: (ins[0][0], p["fn"](np.zeros(1, ins[0][1])).dtype))
    t = af.Tensor("T", (4,), "float64")
    ops = [af.OpRecord(name, "liar_map", [af.Access(0, "R", t[:2]), af.Access(1, "W", t[2:])],
                       {"fn": Liar(fn)})
           for name, fn in (("ok", np.negative), ("bad", lambda x: x.astype(np.complex128)))]
    af.PRIMITIVES.register(prim)
    try:
        with pytest.raises(interpreter.OpRefused, match="'bad'.*complex128"):
            interpreter.check_all(ops)
    finally:
        del af.PRIMITIVES["liar_map"]


def test_light_none_means_no_light_ops_in_both_queues():
    """``light=None`` is accepted by both queues alike (the sanitizer fuzzer found the
    compiled one refusing it where the reference took it)."""
    for cls in [c for c in (NATIVE, ready.PyReadyQueue) if c is not None]:
        q = cls((0, 0, 0), (), None)
        assert q.next(0.0) == 0 and q.next(0.0) == 1  # two heavy ops run side by side
