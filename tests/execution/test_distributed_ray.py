"""The plan on Ray, on loopback: a 2-process local instance (two programs back to back, a failure,
a killed worker process), then a 2-node cluster on this machine with one node killed mid-run."""
import os

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before Ray is imported

import signal  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

ray = pytest.importorskip("ray")

import aliasflow as af  # noqa: E402
from aliasflow.execution.distributed import RayBackend, run  # noqa: E402

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from strategies import programs  # noqa: E402
from test_distributed_dask import check_against_program_order, random_program  # noqa: E402
from test_distributed_plan import outcome, snapshot  # noqa: E402

TIMEOUT = 120  # seconds any one run may take


@pytest.fixture(scope="module")
def backend():
    if ray.is_initialized():
        ray.shutdown()
    b = RayBackend(num_cpus=2, timeout=TIMEOUT)
    try:
        yield b
    finally:
        b.close()


def test_runs_on_loopback_only(backend):
    assert {n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]} == {"127.0.0.1"}


def test_two_programs_back_to_back(backend):
    for seed in (1, 2):
        check_against_program_order(lambda: random_program(seed), backend, 1000)
    check_against_program_order(lambda: random_program(3, n_ops=10), backend, 7)


def test_failure_names_the_op_and_keeps_the_state_before(backend):
    A = af.Tensor("A", (16,), "float64")
    ops = [af.FillOperation("one", 1.0).set_outputs(A[:8]),
           af.BinaryOperation("bad", lambda a, b: a @ b).set_inputs(A[:3], A[:2])
           .set_outputs(A[10:13]),
           af.FillOperation("two", 2.0).set_outputs(A[4:])]
    with pytest.raises(af.ExecutionError, match="'bad'") as info:
        run(ops, backend, block_bytes=16)
    assert info.value.op_name == "bad"
    assert A.data.tolist() == [1.0] * 8 + [0.0] * 8


@settings(max_examples=15, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs(max_ops=8, executable=True, max_tensors=2), st.integers(1, 300))
def test_cluster_equals_program_order(backend, ops, B):
    import copy
    twin = copy.deepcopy(ops)
    want = outcome(af.run, twin)
    backend.poison = 0xA5
    try:
        got = outcome(lambda o: run(o, backend, block_bytes=B), ops)
    finally:
        backend.poison = None
    assert got == want


def test_cli_run_on_ray(backend, tmp_path):
    """``run --backend ray`` uses the Ray this process already runs (and leaves it running)."""
    from typer.testing import CliRunner
    from aliasflow.cli import app
    from test_distributed_plan import cli_program
    path, _ = cli_program(tmp_path)
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(path), "--save", str(a)]).exit_code == 0
    res = runner.invoke(app, ["run", str(path), "--backend", "ray", "--block-bytes", "40",
                              "--save", str(b)])
    assert res.exit_code == 0 and "on ray in blocks" in res.output, res.output
    x, y = np.load(a), np.load(b)
    assert x.files == y.files and all(x[k].tobytes() == y[k].tobytes() for k in x.files)
    assert ray.is_initialized()


def pid_logging_add(directory):
    def add(a, b):
        with open(os.path.join(directory, f"{os.getpid()}"), "w"):
            pass
        time.sleep(0.03)    # keeps the run going long enough to kill a worker in it
        return np.add(a, b)
    return add


@pytest.mark.slow
def test_killed_worker_process_still_gives_program_order(backend, tmp_path):
    """SIGKILL a worker process that runs our tasks: Ray retries what it was running."""
    make = lambda: random_program(7, n_ops=60, kernel=pid_logging_add(str(tmp_path)))  # noqa
    ops, twin = make(), make()
    af.run(twin)
    for f in tmp_path.iterdir():
        f.unlink()
    done, killed = [0], []

    def progress(n):
        done[0] += n
        if done[0] == 20 and not killed:
            victim = max(tmp_path.iterdir(), key=lambda f: f.stat().st_mtime_ns)
            os.kill(int(victim.name), signal.SIGKILL)
            killed.append(int(victim.name))
    run(ops, backend, block_bytes=2048, progress=progress)
    assert len(killed) == 1 and done[0] == 60
    assert snapshot(ops) == snapshot(twin)
    assert dead(killed[0])


def dead(pid, wait=10.0):
    """The process is gone or a zombie (its parent has not reaped it yet)."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in "ZX":
                    return True
        except (FileNotFoundError, ProcessLookupError):  # gone before or while reading
            return True
        time.sleep(0.1)
    return False


def big_program(kernel, n_ops=24):
    """Blocks of 128 KiB: above Ray's inline limit, so they live in the nodes' object stores."""
    rng = np.random.default_rng(11)
    n = 1 << 17
    A = af.Tensor("A", (n,), "float64", data=rng.standard_normal(n))
    ops = []
    for k in range(n_ops):
        a, b, c = (int(rng.integers(0, n - 40_000)) for _ in range(3))
        ops.append(af.BinaryOperation(f"op{k}", kernel).set_inputs(
            A[a:a + 20_000], A[b + 39_999:b:-2]).set_outputs(A[c:c + 20_000]))
    ops.append(af.ReduceOperation("total").set_inputs(A[::7]))
    return ops


def node_logging_add(directory):
    def add(a, b):
        with open(os.path.join(directory, ray.get_runtime_context().get_node_id()), "w"):
            pass
        time.sleep(0.05)
        return np.add(a, b)
    return add


@pytest.mark.slow
def test_killed_node_still_gives_program_order(backend, tmp_path):
    """Two worker nodes (separate raylets and object stores on this machine); one is killed
    a third of the way through; lost blocks are rebuilt from their lineage."""
    from ray.cluster_utils import Cluster

    backend.close()                      # one Ray per process: this test brings its own
    cluster = Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=0, include_dashboard=False, node_ip_address="127.0.0.1"))
    try:
        nodes = [cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1") for _ in range(2)]
        cluster.wait_for_nodes(timeout=60)
        b = RayBackend(address=cluster.address, timeout=TIMEOUT)
        kernel = node_logging_add(str(tmp_path))
        ops, twin = big_program(kernel), big_program(kernel)
        af.run(twin)
        for f in tmp_path.iterdir():
            f.unlink()
        done, killed = [0], []

        def progress(n):
            done[0] += n
            if done[0] == 8 and not killed:
                worked = {f.name for f in tmp_path.iterdir()}
                cluster.remove_node(nodes[1], allow_graceful=False)
                killed.append(nodes[1].node_id in worked)   # the victim had run our tasks
        run(ops, b, block_bytes="128KiB", progress=progress)
        assert killed == [True] and done[0] == len(ops)
        assert snapshot(ops) == snapshot(twin)
        victim = nodes[1].node_id              # the cluster sees it dead (after its health
        end = time.monotonic() + 60            # checks time out)
        while time.monotonic() < end and any(
                n["NodeID"] == victim and n["Alive"] for n in ray.nodes()):
            time.sleep(0.5)
        assert not any(n["NodeID"] == victim and n["Alive"] for n in ray.nodes())
    finally:
        ray.shutdown()
        cluster.shutdown()
