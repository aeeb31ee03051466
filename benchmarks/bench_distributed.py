"""Benchmark of the distributed plan and its backends (Dask, Ray) against aliasflow's runner.

1. Per-task overhead: ``n`` independent tiny ops (a 4-element negate each), one block read and
   one written per task, run from the same plan by each backend; aliasflow's thread runner
   runs the same ops from the same dependency graph. Each engine's own cost for ``n`` trivial
   tasks is measured next to it (here a Dask run has 4 tasks per op: a loader, the op, its
   result and its new block). Time per task, and the ratio to the
   thread runner with 1 worker. Clusters are started and warmed (one small run, so workers
   have imported aliasflow) outside the timer; every timed run is a first run of its plan.
2. Big blocks: tasks that each copy one 8 MiB block into another storage.
3. A CPU-heavy program whose kernels hold the GIL (a pure-Python loop): two independent chains,
   run on 1 and on 2 worker processes (Dask ``LocalCluster``, Ray ``num_cpus``), and on 1 and
   2 threads of aliasflow's runner; speedup = time(1) / time(2).
4. Plan construction time per op on the non-dense trace of ``trace.py`` (per-head column
   blocks, stepped ``as_strided`` windows, transposed tiles) and on its transformer trace
   (reused arena memory), next to ``aliasflow.analyze`` on the same trace; the plans' figures.

Prints markdown tables. Everything runs on loopback. The machine's other load is printed with
the tables: on a shared 2-core machine, the speedups are bounded by what is left over.

    python benchmarks/bench_distributed.py            # about 3-4 minutes
    python benchmarks/bench_distributed.py --quick    # smaller sizes, no Ray
    python benchmarks/bench_distributed.py --trace-ops 1000000   # the plan of a 1M-op trace
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before Ray is imported

import numpy as np

import aliasflow as af
from aliasflow.execution.distributed import LocalBackend, plan, run_plan

HERE = Path(__file__).resolve().parent


def load_trace_module():
    spec = importlib.util.spec_from_file_location("aliasflow_bench_trace", HERE / "trace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def table(title, header, rows) -> str:
    out = [f"### {title}", "", "| " + " | ".join(header) + " |",
           "| " + " | ".join("---" if i == 0 else "---:" for i in range(len(header))) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


# ---- engines ----------------------------------------------------------------------------------
class Dask:
    def __init__(self, workers: int):
        from distributed import Client, LocalCluster
        from aliasflow.execution.distributed import DaskBackend
        self.cluster = LocalCluster(host="127.0.0.1", dashboard_address=None,
                                    n_workers=workers, threads_per_worker=1, processes=True)
        self.client = Client(self.cluster)
        self.backend = DaskBackend(self.client, timeout=600)

    def raw(self, n):
        """The engine's own cost: ``n`` independent trivial tasks in one graph."""
        dsk = {("raw", i): (abs, -i) for i in range(n)}
        return timed(lambda: self.client.get(dsk, list(dsk)))

    def close(self):
        self.client.close()
        self.cluster.close()


class Ray:
    def __init__(self, workers: int):
        from aliasflow.execution.distributed import RayBackend
        self.backend = RayBackend(num_cpus=workers, timeout=600)

    def raw(self, n):
        """The engine's own cost: ``n`` independent trivial remote calls."""
        import ray
        f = ray.remote(trivial)
        ray.get(f.remote(0))      # registered on the workers before the timer
        return timed(lambda: ray.get([f.remote(-i) for i in range(n)]))

    def close(self):
        self.backend.close()


def trivial(x):
    return abs(x)


def warm(backend):
    """One small run so the workers have imported aliasflow and NumPy."""
    ops = tiny_ops(8)
    run_plan(plan(ops, 16), backend)


def tiny_ops(n):
    src = af.Tensor("src", (n * 4,), data=np.arange(n * 4, dtype=np.float32))
    dst = af.Tensor("dst", (n * 4,))
    return [af.TransformOperation(f"neg{k}", "negative").set_inputs(src[4 * k:4 * k + 4])
            .set_outputs(dst[4 * k:4 * k + 4]) for k in range(n)]


def big_block_ops(n, block):
    elems = block // 4
    src = af.Tensor("src", (n * elems,), data=np.ones(n * elems, dtype=np.float32))
    dst = af.Tensor("dst", (n * elems,))
    return [af.TransformOperation(f"copy{k}").set_inputs(src[k * elems:(k + 1) * elems])
            .set_outputs(dst[k * elems:(k + 1) * elems]) for k in range(n)]


LOG_DIR = tempfile.mkdtemp(prefix="af-bench-")


def gil_kernel(x):
    """Pure Python: holds the GIL the whole time. Logs its wall and CPU time (in LOG_DIR, which
    travels with the function to the workers) so the table can say how much the kernels
    overlapped and how much CPU they got."""
    wall, cpu = time.perf_counter(), time.thread_time()
    acc = 0.0
    for i in range(1_500_000):
        acc += (i % 7) * 0.5
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    with open(os.path.join(LOG_DIR, f"{os.getpid()}-{time.time_ns()}"), "w") as f:
        f.write(f"{wall} {cpu}")
    return x + acc


def kernel_log():
    """(kernel wall seconds, kernel CPU seconds) summed over the calls since the last look."""
    wall = cpu = 0.0
    for name in os.listdir(LOG_DIR):
        path = os.path.join(LOG_DIR, name)
        with open(path) as f:
            w, c = map(float, f.read().split())
        os.unlink(path)
        wall, cpu = wall + w, cpu + c
    return wall, cpu


def gil_ops(chains=2, length=3):
    bufs = [af.Tensor(f"c{c}", (2, 16)) for c in range(chains)]
    ops = []
    for step in range(length):
        for c, t in enumerate(bufs):
            src, dst = (t[0], t[1]) if step % 2 == 0 else (t[1], t[0])
            ops.append(af.TransformOperation(f"c{c}.op{step}", gil_kernel)
                       .set_inputs(src).set_outputs(dst))
    return ops


# ---- sections ---------------------------------------------------------------------------------
def overhead(n_local, n_cluster, engines):
    rows = []

    def threads(ops, workers):
        graph = af.analyze(ops)
        return timed(lambda: af.run(ops, workers=workers, graph=graph))

    base = threads(tiny_ops(n_local), 1) / n_local
    rows.append(("aliasflow threads, 1 worker", n_local, f"{base * 1e6:.1f}", "1.0"))
    t = threads(tiny_ops(n_local), 2) / n_local
    rows.append(("aliasflow threads, 2 workers", n_local, f"{t * 1e6:.1f}", f"{t / base:.1f}"))
    p = plan(tiny_ops(n_local), 16)
    t = timed(lambda: run_plan(p, LocalBackend())) / n_local
    rows.append(("plan in process (LocalBackend)", n_local, f"{t * 1e6:.1f}", f"{t / base:.1f}"))
    from aliasflow.execution.distributed import DaskBackend
    p = plan(tiny_ops(n_local), 16)
    t = timed(lambda: run_plan(p, DaskBackend())) / n_local
    rows.append(("Dask synchronous scheduler", n_local, f"{t * 1e6:.1f}", f"{t / base:.1f}"))
    for name, make in engines:
        engine = make(2)
        try:
            warm(engine.backend)
            p = plan(tiny_ops(n_cluster), 16)
            t = timed(lambda: run_plan(p, engine.backend)) / n_cluster
            rows.append((f"{name}, 2 worker processes (warm cluster)", n_cluster,
                         f"{t * 1e6:.1f}", f"{t / base:.1f}"))
            t = engine.raw(n_cluster) / n_cluster
            rows.append((f"{name} alone: trivial tasks, no aliasflow (baseline)", n_cluster,
                         f"{t * 1e6:.1f}", f"{t / base:.1f}"))
        finally:
            engine.close()
    return table("Per-task overhead: independent tiny ops, one block in and one out",
                 ["runner", "tasks", "µs per task", "× threads (1 worker)"], rows)


def big_blocks(n, engines):
    block = 8 << 20
    rows = []
    ops = big_block_ops(n, block)
    graph = af.analyze(ops)
    base = timed(lambda: af.run(ops, graph=graph)) / n
    rows.append(("aliasflow threads, 1 worker", f"{base * 1e3:.1f}", "1.0"))
    p = plan(big_block_ops(n, block), block)
    t = timed(lambda: run_plan(p, LocalBackend())) / n
    rows.append(("plan in process (LocalBackend)", f"{t * 1e3:.1f}", f"{t / base:.1f}"))
    for name, make in engines:
        engine = make(2)
        try:
            warm(engine.backend)
            p = plan(big_block_ops(n, block), block)
            t = timed(lambda: run_plan(p, engine.backend)) / n
            rows.append((f"{name}, 2 worker processes", f"{t * 1e3:.1f}", f"{t / base:.1f}"))
        finally:
            engine.close()
    return table(f"8 MiB blocks: {n} tasks, each copying one block into another storage "
                 f"(loading and writing back included)",
                 ["runner", "ms per task", "× threads"], rows)


def gil_speedup(engines):
    rows = []
    ops = gil_ops()
    kernel = timed(lambda: gil_kernel(0.0))
    kernel_log()

    def add(name, cells):
        (t1, _, c1), (t2, o2, c2) = cells
        rows.append((name, f"{t1:.2f}", f"{t2:.2f}", f"{t1 / t2:.2f}", f"{o2:.2f}",
                     f"{c1:.2f} / {c2:.2f}"))

    cells = []
    for workers in (1, 2):
        p = gil_ops()
        t = timed(lambda: af.run(p, workers=workers))
        wall, cpu = kernel_log()
        cells.append((t, wall / t, cpu / wall))
    add("aliasflow threads", cells)
    for name, make in engines:
        cells = []
        for workers in (1, 2):      # one cluster at a time (one Ray per process)
            engine = make(workers)
            try:
                warm(engine.backend)
                kernel_log()
                p = plan(gil_ops(), 64)
                t = timed(lambda: run_plan(p, engine.backend))
                wall, cpu = kernel_log()
                cells.append((t, wall / t, cpu / wall))
            finally:
                engine.close()
        add(f"{name} (worker processes)", cells)
    return table(f"GIL-holding kernels: 2 independent chains of {len(ops) // 2} ops, "
                 f"one kernel call {kernel:.2f} s alone. Overlap: kernel seconds per wall "
                 f"second with 2 workers (2.0 = both always busy); CPU share: kernel CPU "
                 f"seconds per kernel wall second (1.0 = a core to itself)",
                 ["runner", "1 worker (s)", "2 workers (s)", "speedup", "overlap (2)",
                  "CPU share (1 / 2)"], rows)


def plan_speed(sizes, blocks):
    trace = load_trace_module()
    rows = []
    for label, make in (("non-dense", trace.make_nondense_trace),
                        ("transformer", trace.make_trace)):
        for n in sizes:
            ops = make(n)
            a = timed(lambda: af.analyze(ops)) / n
            for b in blocks:
                result = {}
                t = timed(lambda: result.setdefault("p", plan(ops, b))) / n
                f = result.pop("p").figures
                rows.append((label, n, b, f"{t * 1e6:.1f}", f"{a * 1e6:.1f}", f.blocks,
                             f"{f.reads_per_task:.2f}", f"{f.writes_per_task:.2f}",
                             f.rmw_writes, f"{f.bytes_read / 2**20:.1f}",
                             f"{f.read_amplification:.1f}", f.critical_path))
    return table("Plan construction on the traces of trace.py: the non-dense one (per-head "
                 "column blocks, stepped as_strided windows, transposed tiles) and the "
                 "transformer loop (reused arena memory); analyze on the same trace for scale",
                 ["trace", "ops", "block", "plan µs/op", "analyze µs/op", "blocks",
                  "reads/task", "writes/task", "RMW writes", "MiB read", "read ampl.",
                  "critical path"], rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, no Ray")
    parser.add_argument("--trace-ops", type=int, nargs="*", default=None,
                        help="trace sizes for the plan table (default 20000)")
    parser.add_argument("--only", choices=["overhead", "big", "gil", "plan"], nargs="*")
    args = parser.parse_args(argv)
    engines = [("Dask LocalCluster", Dask)]
    if not args.quick:
        engines.append(("Ray", Ray))
    only = set(args.only or ["overhead", "big", "gil", "plan"])
    import dask
    versions = f"dask {dask.__version__}"
    if not args.quick:
        import ray
        versions += f", ray {ray.__version__}"
    print(f"aliasflow {af.__version__}, Python {platform.python_version()}, NumPy "
          f"{np.__version__}, {versions}; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at start\n")
    start = time.perf_counter()
    if "overhead" in only:
        print(overhead(2000 if not args.quick else 500, 300 if not args.quick else 100,
                       engines))
    if "big" in only:
        print(big_blocks(4 if args.quick else 8, engines))
    if "gil" in only:
        print(gil_speedup(engines))
    if "plan" in only:
        sizes = args.trace_ops or ([5000] if args.quick else [20000])
        print(plan_speed(sizes, ["256B", "4KiB", "64KiB", "16MiB"]))
    print(f"load average {os.getloadavg()[0]:.1f} at the end; "
          f"{time.perf_counter() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
