"""The plan on Dask: the synchronous scheduler against program order (no cluster), then a real
2-process loopback cluster: two programs back to back and at once, a failure, a killed worker."""
import copy
import os
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import aliasflow as af  # noqa: E402
from aliasflow.execution.distributed import DaskBackend, run  # noqa: E402

from strategies import programs  # noqa: E402
from test_distributed_plan import outcome, snapshot, with_dtypes  # noqa: E402

TIMEOUT = 120  # seconds any one cluster run may take


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_ops=8, executable=True, max_tensors=2),
       st.one_of(st.integers(1, 16), st.integers(17, 300)),
       st.sampled_from(["float64", "float32", "int16"]))
def test_sync_scheduler_equals_program_order(ops, B, dtype):
    ops = with_dtypes(ops, dtype)
    twin = copy.deepcopy(ops)
    want = outcome(af.run, twin)
    got = outcome(lambda o: af.run(o, backend=DaskBackend(poison=0xA5), block_bytes=B), ops)
    assert got == want


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(host="127.0.0.1", dashboard_address=None, n_workers=2,
                                       threads_per_worker=1, processes=True)
    client = distributed.Client(cluster, timeout=60)
    try:
        yield client
    finally:
        client.close(timeout=30)
        cluster.close(timeout=30)


def test_cluster_is_on_loopback_only(client):
    addresses = [client.scheduler.address] + list(client.scheduler_info()["workers"])
    assert len(addresses) == 3 and all(a.startswith("tcp://127.0.0.1:") for a in addresses)


def random_program(seed, n_ops=30, size=4096, kernel=None):
    """Overlapping, strided, flipped, transposed views over two storages."""
    rng = np.random.default_rng(seed)
    A = af.Tensor("A", (size,), "float64", data=rng.standard_normal(size))
    M = af.Tensor("M", (64, 64), "float32", data=rng.standard_normal((64, 64)))
    ops = []
    for k in range(n_ops):
        n = int(rng.integers(8, 64))
        a, b, c = (int(rng.integers(0, size - 2 * n)) for _ in range(3))
        choice = k % 4
        if choice == 0:
            op = af.BinaryOperation(f"add{k}", kernel or "add").set_inputs(
                A[a:a + n], A[b + 2 * n - 1:b:-2][:n]).set_outputs(A[c:c + n])
        elif choice == 1:
            op = af.TransformOperation(f"neg{k}", "negative").set_inputs(
                M[int(rng.integers(0, 60)), :]).set_outputs(M[:, int(rng.integers(0, 64))])
        elif choice == 2:
            op = af.ReduceOperation(f"sum{k}", axis=0).set_inputs(M.T[::3, ::-1])
        else:
            op = af.FillOperation(f"fill{k}", float(k)).set_outputs(A[a:a + 2 * n:2])
        ops.append(op)
    return ops


def check_against_program_order(make, backend, block_bytes):
    ops, twin = make(), make()
    af.run(twin)
    run(ops, backend, block_bytes=block_bytes)
    assert snapshot(ops) == snapshot(twin)


def test_two_programs_back_to_back_and_at_once(client):
    backend = DaskBackend(client, timeout=TIMEOUT)
    for seed in (1, 2):   # same op names and shapes, other data: keys must not be reused
        check_against_program_order(lambda: random_program(seed), backend, 1000)
    errors = []

    def one(seed):
        try:
            check_against_program_order(lambda: random_program(seed, n_ops=12), backend, 777)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
    threads = [threading.Thread(target=one, args=(s,)) for s in (3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not errors and not any(t.is_alive() for t in threads)


def test_failure_on_cluster_names_the_op_and_keeps_the_state_before(client):
    A = af.Tensor("A", (16,), "float64")
    ops = [af.FillOperation("one", 1.0).set_outputs(A[:8]),
           af.TransformOperation("bad", lambda x: x / 0 if x.size else 1 // 0)
           .set_inputs(A[:0]).set_outputs(A[:0]),
           af.FillOperation("two", 2.0).set_outputs(A[4:])]
    with pytest.raises(af.ExecutionError, match="'bad'") as info:
        run(ops, DaskBackend(client, timeout=TIMEOUT), block_bytes=16)
    assert info.value.op_name == "bad"
    assert A.data.tolist() == [1.0] * 8 + [0.0] * 8


def slow_add(a, b):
    time.sleep(0.03)          # keeps the run going long enough to kill a worker in it
    return np.add(a, b)


@pytest.mark.slow
def test_killed_worker_still_gives_program_order(client):
    """SIGKILL the worker process holding most of the run's data, a third of the way
    through: lineage recomputes what it held."""
    make = lambda: random_program(7, n_ops=60, kernel=slow_add)  # noqa: E731
    ops, twin = make(), make()
    af.run(twin)
    pids = client.run(os.getpid)
    done, killed = [0], []

    def progress(n):
        done[0] += n
        if done[0] == 20 and not killed:
            held = {w: [k for k in keys if "af-" in str(k)]
                    for w, keys in client.has_what().items()}
            busiest = max(held, key=lambda w: len(held[w]))
            os.kill(pids[busiest], signal.SIGKILL)
            killed.append((pids[busiest], len(held[busiest])))
    run(ops, DaskBackend(client, timeout=TIMEOUT), block_bytes=2048, progress=progress)
    assert len(killed) == 1 and done[0] == 60
    victim, lost = killed[0]
    assert lost > 0           # it held blocks of this run when it died
    assert snapshot(ops) == snapshot(twin)
    with pytest.raises(ProcessLookupError):
        os.kill(victim, 0)    # the victim really died (the nanny started a new one)
    client.wait_for_workers(2, timeout=60)


@settings(max_examples=15, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs(max_ops=8, executable=True, max_tensors=2), st.integers(1, 300))
def test_cluster_equals_program_order(client, ops, B):
    twin = copy.deepcopy(ops)
    want = outcome(af.run, twin)
    got = outcome(lambda o: run(o, DaskBackend(client, timeout=TIMEOUT, poison=0xA5),
                                block_bytes=B), ops)
    assert got == want


def test_cli_run_on_a_local_dask_cluster(tmp_path):
    from typer.testing import CliRunner
    from aliasflow.cli import app
    from test_distributed_plan import cli_program
    path, _ = cli_program(tmp_path)
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(path), "--save", str(a)]).exit_code == 0
    res = runner.invoke(app, ["run", str(path), "--backend", "dask", "--block-bytes", "40",
                              "--save", str(b)])
    assert res.exit_code == 0 and "on dask in blocks" in res.output, res.output
    x, y = np.load(a), np.load(b)
    assert x.files == y.files and all(x[k].tobytes() == y[k].tobytes() for k in x.files)
