"""Execution: program order versus NumPy, parallel versus program order, failures."""
import copy
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af

from strategies import programs


def snapshot(ops):
    tensors = {id(v.tensor): v.tensor for op in ops for v in op.input_views + op.output_views}
    state = {t.name: t.data.tobytes() for t in tensors.values()}
    results = {op.name: None if op.result is None else (op.result.dtype.str, op.result.shape,
                                                        np.asarray(op.result).tobytes())
               for op in ops}
    return state, results


def run_or_error(ops, workers):
    try:
        af.run(ops, workers=workers)
        return None
    except af.ExecutionError as exc:
        return exc.op_name


def numpy_reference(ops):
    """Program order, written directly with NumPy arrays over the same memory."""
    for op in ops:
        arrays = [np.array(v.numpy()) for v in op.input_views]  # inputs read first
        if isinstance(op, af.FillOperation):
            value = op.fill_value
        elif isinstance(op, af.ReduceOperation):
            value = op.fn(arrays[0], axis=op.axis)
        else:
            value = op.fn(*arrays)
        for v in op.output_views:
            v._ndarray()[...] = value  # Fill may write through overlapping views
        if not op.output_views:
            op.result = np.asarray(value)


@settings(max_examples=500, deadline=None)
@given(programs(max_ops=10, executable=True, max_tensors=3))
def test_program_order_matches_numpy(ops):
    twin = copy.deepcopy(ops)
    af.run(ops)
    numpy_reference(twin)
    assert snapshot(ops) == snapshot(twin)


@settings(max_examples=500, deadline=None)
@given(programs(max_ops=12, executable=True, max_tensors=2))
def test_parallel_equals_program_order_byte_for_byte(ops):
    twins = [copy.deepcopy(ops) for _ in range(3)]
    af.run(ops, workers=1)
    expect = snapshot(ops)
    for workers, twin in zip((2, 3, 4), twins):
        af.run(twin, workers=workers)
        assert snapshot(twin) == expect


def slow_then(kernel, seconds):
    def fn(x):
        time.sleep(seconds)
        return kernel(x)
    return fn


def test_parallel_failure_stops_new_ops_and_names_the_op():
    t = af.Tensor("T", (64,), "float64", data=np.arange(64.0))
    started = []

    def boom(x):
        raise ZeroDivisionError("injected")

    def record(name):
        def fn(x):
            started.append(name)
            time.sleep(0.05)
            return x + 1
        return fn

    ops = [af.TransformOperation("slow", record("slow")).set_inputs(t[0:8]).set_outputs(t[0:8]),
           af.TransformOperation("bad", boom).set_inputs(t[8:16]).set_outputs(t[8:16]),
           af.TransformOperation("after_bad", record("after_bad")).set_inputs(t[8:16])
           .set_outputs(t[16:24]),
           af.TransformOperation("after_slow", record("after_slow")).set_inputs(t[0:8])
           .set_outputs(t[24:32])]
    with pytest.raises(af.ExecutionError, match="'bad'.*ZeroDivisionError: injected") as info:
        af.run(ops, workers=2)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "after_bad" not in started and "after_slow" not in started
    assert "slow" in started and t.data[0] == 1.0  # the running op finished
    assert not any(th.name.startswith("aliasflow") for th in threading.enumerate())


@pytest.mark.parametrize("workers", [1, 2])
def test_an_op_that_cannot_run_is_refused_before_any_runs(workers):
    # Issue 10: checked before running, so the earlier fill has not written either.
    t = af.Tensor("T", (4,), "float64")
    ops = [af.FillOperation("ok", 3.0).set_outputs(t[:2]),
           af.TransformOperation("bad").set_inputs(t[:2]).set_outputs(t[:2].broadcast_to((3, 2)))]
    with pytest.raises(af.ExecutionError, match="'bad'.*ambiguous") as info:
        af.run(ops, workers=workers)
    assert isinstance(info.value, af.AliasflowError)
    assert t.data.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_many_failures_report_the_earliest_and_never_hang():
    t = af.Tensor("T", (200,), "float64")

    def boom(x):
        raise RuntimeError("x")
    ops = [af.TransformOperation(f"b{k}", boom).set_inputs(t[k:k + 1]) for k in range(200)]
    done = []
    worker = threading.Thread(target=lambda: done.append(run_or_error(ops, 2)))
    worker.start()
    worker.join(timeout=60)
    assert done and done[0] is not None


def test_run_refuses_bad_arguments():
    with pytest.raises(af.AliasflowError, match="workers must be a positive int, got 0"):
        af.run([], workers=0)
    with pytest.raises(af.AliasflowError, match="workers must be a positive int"):
        af.run([], workers=2.5)


def test_implicit_dependency_changes_the_result():
    """An in-place update through a transposed view, then a read through another view."""
    a = af.Tensor("A", (3, 3), "float64", data=np.arange(9.0).reshape(3, 3))
    scale = af.BinaryOperation("scale_col0", "multiply").set_inputs(a.T[0], a.T[0]) \
        .set_outputs(a.T[0])
    read = af.ReduceOperation("row_sums", axis=1).set_inputs(a.view())
    g = af.analyze([scale, read])
    assert [(d.src, d.dst, d.kind, d.implicit) for d in g.dependencies] == \
        [("scale_col0", "row_sums", "RAW", True)]
    af.run([scale, read], workers=2)
    ref = np.arange(9.0).reshape(3, 3)
    ref[:, 0] **= 2
    np.testing.assert_array_equal(read.result, ref.sum(axis=1))


def test_ctrl_c_stops_a_parallel_run_cleanly(tmp_path):
    import signal
    import subprocess
    import sys
    script = tmp_path / "slow.py"
    script.write_text(
        "import signal, sys, time, aliasflow as af\n"
        # a suite started in the background of a shell without job control ignores SIGINT,
        # and so would this child: Python's own handler, as in a terminal
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "t = af.Tensor('T', (400,), 'float64')\n"
        "started, finished = [], []\n"
        "def slow(x):\n"
        "    started.append(1)\n"
        "    time.sleep(0.05)\n"
        "    finished.append(1)\n"
        "    return x + 1\n"
        "ops = [af.TransformOperation(f'o{k}', slow).set_inputs(t[k:k+1]).set_outputs(t[k:k+1])\n"
        "       for k in range(400)]\n"
        "print('start', flush=True)\n"
        "try:\n"
        "    af.run(ops, workers=2)\n"
        "except KeyboardInterrupt:\n"
        "    done = int((t.data == 1).sum())\n"
        "    print('interrupted', done, len(started), len(finished), flush=True)\n"
        "    sys.exit(3)\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "start"
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 3
    done, started, finished = map(int, out.split()[-3:])
    assert 0 < done < 400  # stopped early
    # every op that started also finished, the one in the calling thread's hands included
    assert started == finished == done


def test_parallel_run_from_another_thread():
    """run(workers=2) outside the main thread (where SIGINT's handler cannot be swapped):
    the calling thread still works beside the pool, and the result is program order's."""
    import threading
    a = af.Tensor("A", (64, 64), "float64", data=np.arange(64.0 * 64).reshape(64, 64))
    ops = [af.TransformOperation(f"t{k}", "negative").set_inputs(a[k % 8]).set_outputs(a.T[k % 8])
           for k in range(32)]
    ref = np.arange(64.0 * 64).reshape(64, 64)
    for k in range(32):
        ref.T[k % 8] = -ref[k % 8]
    errors = []

    def go():
        try:
            af.run(ops, workers=2)
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    t = threading.Thread(target=go)
    t.start()
    t.join(60)
    assert not t.is_alive() and not errors
    np.testing.assert_array_equal(a.data, ref)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_runs_of_fills_of_one_value_match_numpy_in_program_order(data):
    """Program order batches consecutive fills of one value into one tensor; the oracle is
    a NumPy loop over views of a copy of the same bytes. Values repeat (shared parameters),
    -0.0 and 0.0 differ by bits, a second tensor of another dtype shares the storage, and
    transforms read between fills."""
    draw = data.draw
    base = af.Tensor("T", (24,), "float64", data=np.arange(24.0))
    other = af.Tensor.on(base.storage, "float32", (48,), name="U")  # the same bytes
    values = [1.0, 2.0, 0.0, -0.0]
    ops, plan = [], []
    for j in range(draw(st.integers(1, 30))):
        t = draw(st.sampled_from([base, base, other]))
        n = t.shape[0]
        count = draw(st.integers(1, 4))
        stride = draw(st.sampled_from([1, 1, 2, -1, -3]))
        span = (count - 1) * abs(stride)
        start = draw(st.integers(0, n - 1 - span)) + (span if stride < 0 else 0)
        view = af.TensorView(f"v{j}", t, start, (count,), (stride,))
        if draw(st.integers(0, 5)) == 0:  # a reader in between: negate into the view
            src = af.TensorView(f"s{j}", t, draw(st.integers(0, n - count)), (count,))
            ops.append(af.TransformOperation(f"op{j}", np.negative).set_inputs(src)
                       .set_outputs(view))
            plan.append(("neg", t, src, view))
        else:
            value = draw(st.sampled_from(values))
            ops.append(af.FillOperation(f"op{j}", value).set_outputs(view))
            plan.append(("fill", t, value, view))
    raw = base.storage.bytes.copy()
    oracle = {base.name: np.frombuffer(raw, np.float64), other.name: np.frombuffer(raw, np.float32)}

    def window(t, v):
        flat = oracle[t.name]
        return np.lib.stride_tricks.as_strided(
            flat[v.offset:], (v.shape[0],), (v.stride[0] * flat.itemsize,)) if v.stride[0] >= 0 \
            else flat[v.offset::v.stride[0]][:v.shape[0]]

    for kind, t, what, view in plan:
        if kind == "fill":
            window(t, view)[...] = what
        else:
            window(t, view)[...] = -np.array(window(t, what))
    af.run(ops, workers=1)
    assert base.storage.bytes.tobytes() == raw.tobytes()


@pytest.mark.light_in_order
@pytest.mark.parametrize("user_kernel", [False, True])
def test_a_run_of_light_ops_only_goes_in_program_order_on_the_calling_thread(
        monkeypatch, user_kernel):
    """Light ops (small NumPy kernels holding the GIL) gain nothing from threads: a run of
    them only starts none. One op with a user's kernel (never light) brings the pool back."""
    started = []
    real_start = threading.Thread.start

    def start(self):
        started.append(self.name)
        real_start(self)
    monkeypatch.setattr(threading.Thread, "start", start)
    t = af.Tensor("T", (6,), "float64", data=np.arange(6.0))
    ops = [af.FillOperation("f", 2.0).set_outputs(t[0:3]),
           af.TransformOperation("n", "negative").set_inputs(t[0:3]).set_outputs(t[3:6])]
    if user_kernel:
        ops.append(af.TransformOperation("u", lambda x: x * 10).set_inputs(t[3:6])
                   .set_outputs(t[0:3]))
    af.run(ops, workers=4)
    expect = [-20.0] * 3 + [-2.0] * 3 if user_kernel else [2.0] * 3 + [-2.0] * 3
    assert t.data.tolist() == expect
    assert bool([n for n in started if n.startswith("aliasflow")]) == user_kernel
