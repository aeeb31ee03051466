"""Benchmark of aliasflow's dependency analysis and parallel execution.

One run measures, on the transformer-like traces of :mod:`trace`:

1. ``analyze`` throughput at 10k / 100k / 1M ops, edges by kind, and the growth ratio
   ``time(1M) / (10 * time(100k))`` (target <= 1.3). Each size runs in its own subprocess,
   watched for time and resident memory, so a blow-up is reported instead of hanging the
   machine; a control trace (no KV cache, fixed token count) shows the same at 100k.
2. Baselines on small traces: the seed article's ``analyze_dependencies`` (footprints as Python
   sets, built recursively, for every pair of ops; RAW only) and pairwise
   ``np.shares_memory(a, b, max_work=-1)`` between every access of every earlier op, as time
   ratios against ``aliasflow.analyze`` on the same trace. A quadratic baseline whose predicted
   time exceeds its budget is extrapolated (marked ``~``) instead of run.
3. Peak memory (max RSS of the subprocess) at 1M ops, and at a fixed op count with
   ``tensor_scale`` 1 vs large (logical storage of gigabytes, never touched).
4. Parallel overhead per op on independent tiny ops: ``run(ops, workers=2, graph=graph)`` time
   (graph analysed beforehand) minus the sequential kernel time, divided by the op count
   (target <= 2 us/op), with the part spent checking the ops before running and the ready
   queue's backend named; ``workers=1`` and ``workers=2`` with analysis too.
5. Speedup of ``workers=2`` over ``workers=1`` on independent chains of big GIL-releasing ops
   (target >= 1.8x on 2 cores), next to what bare NumPy threads reach on the same kernels.
6. Soundness at 2k ops: every edge of ``analyze`` is a real conflict (checked with
   ``np.shares_memory``), the edges' transitive closure covers every pair of ``all_conflicts``,
   ``all_conflicts`` agrees with the ``np.shares_memory`` baseline, and a parallel run of the
   trace leaves every storage bit-for-bit equal to program order.

Prints one table (rich when installed) and writes it into ``benchmarks/RESULTS.md`` between
``<!-- analysis:start -->`` and ``<!-- analysis:end -->``, leaving the rest of the file alone.

    python benchmarks/bench_analysis.py            # full run (about 10 minutes on 2 cores)
    python benchmarks/bench_analysis.py --quick    # skips 1M ops
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import aliasflow as af  # noqa: E402
from aliasflow.analysis.dependencies import all_conflicts  # noqa: E402
from aliasflow.core.program import as_records  # noqa: E402
from aliasflow.execution import ready, runner  # noqa: E402
from aliasflow.execution.interpreter import check_all  # noqa: E402
from trace import (make_gil_trace, make_nondense_trace, make_parallel_trace, make_trace,  # noqa: E402
                   trace_tensors)

START, END = "<!-- analysis:start -->", "<!-- analysis:end -->"
GB = 2 ** 30
MB = 2 ** 20


# ---- helpers ---------------------------------------------------------------------------------
def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def fmt_s(t: float) -> str:
    if t < 1e-3:
        return f"{t * 1e6:.0f} us"
    if t < 1:
        return f"{t * 1e3:.1f} ms"
    return f"{t:.2f} s"


def fmt_n(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def status(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


# ---- 1 and 3: analysis in a watched subprocess -----------------------------------------------
def reset_peak() -> bool:
    """Start the process's peak RSS (VmHWM) again from now (Linux); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmHWM in /proc/self/status")


def trim_heap() -> None:
    """Hand the C heap's free memory back to the system (glibc), where there is a way."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def worker_analyze(args) -> None:
    """Child process: build a trace, analyse it, print one JSON line."""
    t = time.perf_counter()
    if args.trace == "nondense":
        ops = make_nondense_trace(args.n, seed=args.seed)
    else:
        plain = args.trace == "control"
        ops = make_trace(args.n, seed=args.seed, tensor_scale=args.scale,
                         kv_cache=not plain, variable_tokens=not plain)
    gen = time.perf_counter() - t
    storage = sum(t.data.nbytes for t in trace_tensors(ops))
    gc.collect()
    trim_heap()  # both RSS readings with freed memory handed back, so they compare
    rss_trace = rss_bytes()
    # the first analyze builds the builders' records (the public API, inside the timer);
    # later ones find them built (records outside the timer), and analyse cold again
    gc.collect()
    t = time.perf_counter()
    graph = af.analyze(ops)
    with_records = time.perf_counter() - t
    # the records stay cached on their builders (they are the program, as a list of records
    # would be): the graph's memory is measured from here, its peak from a reset high-water mark
    graph = None
    gc.collect()
    trim_heap()
    rss_records = rss_bytes()
    hwm = reset_peak()
    best = float("inf")
    for _ in range(max(args.repeats - 1, 1)):
        graph = None
        gc.collect()
        t = time.perf_counter()
        graph = af.analyze(ops)
        best = min(best, time.perf_counter() - t)
    # what the graph keeps (edges as arrays, the views it was analysed from): RSS with the
    # walk's freed memory handed back to the system
    maxrss = peak_rss() if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    trim_heap()
    kept = rss_bytes() - rss_records
    deps = graph.dependencies
    out = {
        "n": len(ops), "gen": gen, "time": best, "time_records": with_records,
        "edges": len(deps), "kinds": graph.kinds(),
        "implicit": sum(d.implicit for d in deps), "pairs": sum(len(graph.predecessor_indices(k)) for k in range(len(ops))),
        "rss_trace": rss_trace, "rss_records": rss_records, "maxrss": maxrss, "kept": kept,
        "storage": storage,
    }
    print("RESULT " + json.dumps(out), flush=True)


def run_watched(argv: list[str], timeout: float, mem_limit: float) -> dict:
    """Run a child, killing it past ``timeout`` seconds or ``mem_limit`` bytes of RSS."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve())] + argv,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, start, why = 0, time.perf_counter(), None
    status_path = f"/proc/{proc.pid}/status"
    while proc.poll() is None:
        try:
            with open(status_path) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        peak = max(peak, int(line.split()[1]) * 1024)
                        break
        except OSError:
            pass
        elapsed = time.perf_counter() - start
        if peak > mem_limit:
            why = f"killed at {peak / GB:.1f} GB RSS (limit {mem_limit / GB:.0f} GB) after {elapsed:.0f} s"
        elif elapsed > timeout:
            why = f"killed after {timeout:.0f} s (timeout), {peak / GB:.2f} GB RSS"
        if why:
            proc.kill()
            proc.wait()
            return {"error": why, "peak": peak, "elapsed": elapsed}
        time.sleep(0.2)
    out, err = proc.communicate()
    for line in out.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
            res["peak"] = max(peak, res["maxrss"])
            return res
    tail = (err.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {proc.returncode}: {tail}", "peak": peak,
            "elapsed": time.perf_counter() - start}


def analysis_runs(args, log) -> dict:
    runs = {}
    plan = [(n, 1, "transformer") for n in args.sizes]
    plan += [(n, 1, "control") for n in args.control_sizes]
    plan += [(args.mem_ops, 1, "transformer"), (args.mem_ops, args.big_scale, "transformer")]
    plan += [(n, 1, "nondense") for n in args.nondense_mem_sizes]
    for n, scale, trace in plan:
        key = (n, scale, trace)
        if key in runs:
            continue
        repeats = args.repeats if n <= 20_000 else 1
        argv = ["--worker-analyze", "--n", str(n), "--scale", str(scale),
                "--repeats", str(repeats), "--seed", str(args.seed), "--trace", trace]
        log(f"analyze n={n} scale={scale} {trace} ...")
        runs[key] = res = run_watched(argv, args.timeout, args.mem_limit_gb * GB)
        log("   " + (res["error"] if "error" in res else
                     f"{fmt_s(res['time'])}, {res['edges']} edges, peak {res['peak'] / MB:.0f} MB"))
    return runs


# ---- 2: baselines ------------------------------------------------------------------------------
def seed_compute_view_footprint(view):
    """The seed article's footprint: every physical index, by recursion, in a Python set."""
    footprint = set()

    def recursive_traverse(dim, current_idx):
        if dim == len(view.shape):
            footprint.add(current_idx)
            return
        for i in range(view.shape[dim]):
            recursive_traverse(dim + 1, current_idx + i * view.stride[dim])

    recursive_traverse(0, view.offset)
    return sorted(list(footprint))


def seed_check_memory_overlap(view1, view2):
    if view1.tensor != view2.tensor:
        return False
    footprint1 = set(seed_compute_view_footprint(view1))
    footprint2 = set(seed_compute_view_footprint(view2))
    return len(footprint1.intersection(footprint2)) > 0


def seed_analyze_dependencies(operations):
    """The seed article's algorithm (section 5), verbatim apart from names."""
    dependencies = {}
    for i, op in enumerate(operations):
        deps = []
        for prev_op in operations[:i]:
            for input_view in op.input_views:
                for output_view in prev_op.output_views:
                    if seed_check_memory_overlap(input_view, output_view):
                        deps.append(prev_op.name)
                        break
        dependencies[op.name] = deps
    return dependencies


def accesses_numpy(ops):
    return [[("R", v.numpy()) for v in op.input_views] + [("W", v.numpy()) for v in op.output_views]
            for op in ops]


def shares_memory_conflicts(ops, arrays=None):
    """Every conflicting access pair of every pair of ops, by ``np.shares_memory`` (exact)."""
    arrays = accesses_numpy(ops) if arrays is None else arrays
    pairs = set()
    count = 0
    for j in range(len(ops)):
        acc_j = arrays[j]
        for i in range(j):
            for mi, a in arrays[i]:
                for mj, b in acc_j:
                    if (mi == "W" or mj == "W") and np.shares_memory(a, b, max_work=-1):
                        pairs.add((i, j))
                        count += 1
    return count, pairs


def baselines(args, log) -> tuple[list[dict], dict]:
    rows, memo = [], {}
    prev = {"seed": None, "shares": None}
    for n in args.baseline_sizes:
        ops = make_trace(n, seed=args.seed)
        row = {"n": n, "analyze": best_of(lambda: af.analyze(ops), args.repeats)}
        for name, budget in (("seed", args.seed_budget), ("shares", args.shares_budget)):
            p = prev[name]
            predicted = None if p is None else p[1] * (n / p[0]) ** 2
            if predicted is not None and predicted > budget:
                row[name], row[name + "_extrapolated"] = predicted, True
                continue
            log(f"baseline {name} n={n} ...")
            if name == "seed":
                t = time.perf_counter()
                seed_analyze_dependencies(ops)
                row[name] = time.perf_counter() - t
            else:
                arrays = accesses_numpy(ops)
                t = time.perf_counter()
                count, pairs = shares_memory_conflicts(ops, arrays)
                row[name] = time.perf_counter() - t
                memo[n] = (count, pairs)
            row[name + "_extrapolated"] = False
            prev[name] = (n, row[name])
            log(f"   {fmt_s(row[name])}")
        rows.append(row)
    return rows, memo


# ---- 1b: a non-dense trace -------------------------------------------------------------------
def nondense(args, log) -> list[dict]:
    """``analyze`` on :func:`make_nondense_trace` (head column blocks, stepped windows,
    transposed tiles: the exact solver decides most pairs), cold (fresh ops each repeat,
    so no view caches), against pairwise ``np.shares_memory`` on the smallest size; then
    the same accesses on one flat arena (``arena=True``: the same edges), and on a model of
    realistic size (512 tokens, 12 heads of 64: head blocks of 32k cells, so writes past
    the walk's cell limit go through its cover rules)."""
    rows = []
    variants = [("", {}), ("arena", {"arena": True}),
                ("large", {"tokens": 512, "heads": 12, "head_dim": 64})]
    for variant, shape in variants:
        for n in args.nondense_sizes:
            if variant == "large" and n < 10_000:
                continue
            log(f"non-dense n={n}{f' ({variant})' if variant else ''} ...")
            best, graph = float("inf"), None
            # best of at least three at every size: a single second-long run on the shared
            # cores moved by +-30% between identical runs (RESULTS.md, analysis table notes)
            for _ in range(max(args.repeats, 3)):
                ops = make_nondense_trace(n, seed=args.seed, **shape)  # fresh views
                gc.collect()
                t = time.perf_counter()
                graph = af.analyze(ops)
                best = min(best, time.perf_counter() - t)
            dense = sum(v.is_dense for op in ops for v in op.input_views + op.output_views)
            total = sum(len(op.input_views) + len(op.output_views) for op in ops)
            row = {"n": n, "time": best, "edges": len(graph), "variant": variant,
                   "nondense": 1 - dense / total}
            if not variant and n == min(args.nondense_sizes) and n <= 2000:
                arrays = accesses_numpy(ops)
                t = time.perf_counter()
                shares_memory_conflicts(ops, arrays)
                row["shares"] = time.perf_counter() - t
            log(f"   {fmt_s(best)}")
            rows.append(row)
    if args.nondense_steady:
        # best of two cold runs (building a million ops takes half a minute; the sizes
        # above take the best of three): past the trace's warm-up (its edges per op settle
        # after about 30k ops), growth shows the walk's own scaling
        n = args.nondense_steady
        log(f"non-dense n={n} (best of 2) ...")
        took = float("inf")
        for _ in range(2):
            ops = make_nondense_trace(n, seed=args.seed)  # fresh views
            gc.collect()
            t = time.perf_counter()
            graph = af.analyze(ops)
            took = min(took, time.perf_counter() - t)
            edges = len(graph)
            del ops, graph
        rows.append({"n": n, "time": took, "edges": edges, "variant": "steady",
                     "nondense": rows[0]["nondense"] if rows else float("nan")})
        log(f"   {fmt_s(took)}")
    return rows


# ---- 4 and 5: execution ------------------------------------------------------------------------
def interleaved_best(fns: dict, repeats: int) -> dict:
    """Best time of each function over ``repeats`` rounds, the functions taking turns in each
    round, so background load on the shared cores hits them alike. Each round starts one
    function further on: a run's time can depend on what ran just before it (here, a
    two-thread run right after a one-thread run was sometimes 30% slower, bare threads
    too), so no function always follows the same one."""
    best = {k: float("inf") for k in fns}
    items = list(fns.items())
    for i in range(repeats):
        for k, fn in items[i % len(items):] + items[:i % len(items)]:
            gc.collect()
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best


def parallel_overhead(args, log) -> dict:
    n = args.par_ops
    log(f"parallel overhead, {n} tiny ops ...")
    ops = make_parallel_trace(n, args.par_size)
    graph = af.analyze(ops)

    # the kernels alone: each op's NumPy call on arrays made before the timer
    pairs = [(op.input_views[0].numpy(), op.output_views[0]._ndarray()) for op in ops]

    def kernels():
        for x, out in pairs:
            np.negative(x, out=out)

    def pooled(**kw):  # the thread pool even for these light ops (the queue's own cost)
        runner.LIGHT_IN_ORDER = False
        try:
            af.run(ops, workers=2, **kw)
        finally:
            runner.LIGHT_IN_ORDER = True

    def checks():  # what run() checks before any op runs (graph given)
        checked = as_records(ops)
        graph.check_matches(checked)
        check_all(checked)

    res = interleaved_best({
        "kernel": kernels,
        "checks": checks,
        "analyze": lambda: af.analyze(ops),
        "w1": lambda: af.run(ops, workers=1),
        "w2": lambda: af.run(ops, workers=2),
        "w2_pool": pooled,
        "w2_graph": lambda: pooled(graph=graph),
    }, args.exec_repeats)
    res.update(n=n, edges=len(graph.dependencies), queue=ready.backend_name())
    res.update(fill_rows(args))
    return res


def fill_rows(args) -> dict:
    """20,000 one-element Fill ops, run by af.run (records, checks, analysis, steps and
    queue all inside the timer; the builders made outside, fresh for every run), against
    the same writes as a NumPy loop ``a[i:i+1] = 1.0``."""
    n = args.fill_ops
    arr = np.zeros(n, np.float32)

    def np_loop():
        for i in range(n):
            arr[i:i + 1] = 1.0

    def fresh():
        t = af.Tensor("F", (n,), "float32")
        return t, [af.FillOperation(f"f{i}", 1.0).set_outputs(t[i:i + 1]) for i in range(n)]

    best = {"np": float("inf"), "w1": float("inf"), "w2": float("inf")}
    for _ in range(args.exec_repeats):
        for key in best:
            if key == "np":
                gc.collect()
                t = time.perf_counter()
                np_loop()
            else:
                tensor, ops = fresh()
                gc.collect()
                t = time.perf_counter()
                af.run(ops, workers=int(key[1]))
            best[key] = min(best[key], time.perf_counter() - t)
            if key != "np" and not tensor.data.all():
                raise AssertionError("a fill did not write")
    return {"fill_n": n, **{f"fill_{k}": v for k, v in best.items()}}


def gil_speedup(args, log) -> dict:
    log(f"GIL-releasing chains, {args.gil_chains} x {args.gil_length} ops "
        f"on {args.gil_size:,}-element slices ...")
    chains, length = args.gil_chains, args.gil_length
    ops = make_gil_trace(chains, length, args.gil_size)
    by_chain = [ops[c::chains] for c in range(chains)]  # ops are interleaved across chains

    # references on this machine right now: the same NumPy kernels in bare threads, and
    # aliasflow's op.execute in bare threads (one per chain, no scheduler)
    src = [np.linspace(0, 1, args.gil_size, dtype=np.float32) for _ in range(chains)]
    dst = [np.empty_like(a) for a in src]

    def np_chain(c):
        for _ in range(length):
            np.sin(src[c], out=dst[c])

    def op_chain(c):
        for op in by_chain[c]:
            op.execute()

    def threads(fn):
        with ThreadPoolExecutor(chains) as ex:
            list(ex.map(fn, range(chains)))

    res = interleaved_best({
        "w1": lambda: af.run(ops, workers=1),
        "w2": lambda: af.run(ops, workers=2),
        "np1": lambda: [np_chain(c) for c in range(chains)],
        "np2": lambda: threads(np_chain),
        "op2": lambda: threads(op_chain),
    }, args.gil_repeats)
    after = []
    for workers in (1, 2):  # fresh buffers: one run each, then compare bit for bit
        fresh = make_gil_trace(chains, length, args.gil_size)
        af.run(fresh, workers=workers)
        after.append([t.data.tobytes() for t in trace_tensors(fresh)])
        del fresh
    res["same"] = after[0] == after[1]
    res["ops"] = len(ops)
    return res


# ---- 6: soundness ------------------------------------------------------------------------------
def soundness(args, memo, log) -> dict:
    n = args.sound_ops
    log(f"soundness at {n} ops ...")
    ops = make_trace(n, seed=args.seed)
    pos = {op.name: k for k, op in enumerate(ops)}
    graph = af.analyze(ops)
    res = {"n": n, "edges": len(graph.dependencies)}

    # every edge is a real conflict (independent oracle: np.shares_memory, exact)
    bad = 0
    for d in graph.dependencies:
        i, j = pos[d.src], pos[d.dst]
        vi, vj = d.views
        mode_i = "W" if d.kind in ("RAW", "WAW") else "R"
        mode_j = "R" if d.kind == "RAW" else "W"
        has = lambda op, mode, v: any(v is w for w in (op.output_views if mode == "W"
                                                       else op.input_views))
        if not (i < j and has(ops[i], mode_i, vi) and has(ops[j], mode_j, vj)
                and np.shares_memory(vi.numpy(), vj.numpy(), max_work=-1)):
            bad += 1
    res["bad_edges"] = bad

    # closure covers every conflict; and how many op-pair edges are implied by others
    anc = [0] * n
    redundant = 0
    for j in range(n):
        preds = graph.predecessor_indices(j)
        strict = 0
        for p in preds:
            strict |= anc[p]
        redundant += sum(1 for p in preds if strict >> p & 1)
        anc[j] = strict
        for p in preds:
            anc[j] |= 1 << p
    res["pairs"] = sum(len(graph.predecessor_indices(j)) for j in range(n))
    res["redundant"] = redundant
    t = time.perf_counter()
    conflicts = all_conflicts(ops)
    res["all_conflicts_time"] = time.perf_counter() - t
    res["conflicts"] = len(conflicts)
    conflict_pairs = {(pos[c.src], pos[c.dst]) for c in conflicts}
    res["uncovered"] = sum(1 for i, j in conflict_pairs if not anc[j] >> i & 1)
    if n in memo:  # all_conflicts against the np.shares_memory baseline on the same trace
        count, pairs = memo[n]
        res["oracle_agrees"] = count == len(conflicts) and pairs == conflict_pairs
    else:
        res["oracle_agrees"] = None

    # a parallel run leaves every storage bit-for-bit as program order does
    with np.errstate(all="ignore"):
        seq = make_trace(n, seed=args.seed)
        af.run(seq, workers=1)
        par = make_trace(n, seed=args.seed)
        af.run(par, workers=2)
    res["parallel_same"] = all(
        a.data.tobytes() == b.data.tobytes()
        for a, b in zip(trace_tensors(seq), trace_tensors(par)))
    return res


# ---- the table ---------------------------------------------------------------------------------
def build_rows(args, runs, base, par, gil, snd, nd=()) -> list[tuple]:
    rows: list[tuple] = []  # (section, measure, value, target, status)
    for r in nd:
        value = (f"{fmt_s(r['time'])}, {r['n'] / r['time']:,.0f} ops/s; {r['edges']:,} edges; "
                 f"{r['nondense']:.0%} of accesses non-dense")
        if "shares" in r:
            value += (f"; pairwise np.shares_memory {fmt_s(r['shares'])} = "
                      f"{r['shares'] / r['time']:,.1f}x analyze")
        where = {"": "", "arena": ", on one flat arena", "steady": ", best of 2",
                 "large": ", 512 tokens x 12 heads of 64"}[r["variant"]]
        rows.append(("1b non-dense", f"{fmt_n(r['n'])} ops (cold){where}", value,
                     ">= 100,000 ops/s", "PASS" if r['n'] / r['time'] >= 100_000 else "FAIL"))
    steady = [r for r in nd if r["variant"] == "steady"]
    nd = [r for r in nd if not r["variant"]]
    if len(nd) >= 2:
        a, b = nd[0], nd[-1]
        g = (b["time"] / b["n"]) / (a["time"] / a["n"])
        rows.append(("1b non-dense", f"growth per op, {fmt_n(b['n'])} vs {fmt_n(a['n'])} ops "
                     f"(the trace's warm-up included)", f"{g:.2f}", "<= 1.2", status(g <= 1.2)))
        # the trace's edges per op grow while its memory fills with written cells (until
        # about 30k ops): cost per op plus edge shows whether the walk does
        ge = (b["time"] / (b["n"] + b["edges"])) / (a["time"] / (a["n"] + a["edges"]))
        rows.append(("1b non-dense", f"growth per (op + edge), {fmt_n(b['n'])} vs "
                     f"{fmt_n(a['n'])} ops",
                     f"{ge:.2f} (edges per op {a['edges'] / a['n']:.1f} -> "
                     f"{b['edges'] / b['n']:.1f})", "(context)", status(None)))

    if steady and nd:
        a, b = nd[-1], steady[0]
        g = (b["time"] / b["n"]) / (a["time"] / a["n"])
        rows.append(("1b non-dense", f"growth per op, {fmt_n(b['n'])} vs {fmt_n(a['n'])} ops "
                     f"(past the trace's warm-up: edges per op {a['edges'] / a['n']:.2f} -> "
                     f"{b['edges'] / b['n']:.2f})", f"{g:.2f}", "<= 1.2", status(g <= 1.2)))

    def ok_run(key):
        r = runs.get(key)
        return r if r and "error" not in r else None

    # 1. throughput
    for n in args.sizes:
        r = runs[(n, 1, "transformer")]
        if "error" in r:
            rows.append(("1 analyze", f"{fmt_n(n)} ops", f"did not finish: {r['error']}", "", "FAIL"))
            continue
        k = r["kinds"]
        rows.append(("1 analyze", f"{fmt_n(n)} ops",
                     f"{fmt_s(r['time'])}, {r['n'] / r['time']:,.0f} ops/s; {r['edges']:,} edges "
                     f"(RAW {k['RAW']:,} / WAR {k['WAR']:,} / WAW {k['WAW']:,}; "
                     f"{r['implicit'] / max(r['edges'], 1):.0%} implicit; "
                     f"{r['edges'] / r['n']:.1f}/op); records built before", ">= 250,000 ops/s",
                     "PASS" if r['n'] / r['time'] >= 250_000 else "FAIL"))
        tr = r.get("time_records")
        if tr:
            rows.append(("1 analyze", f"{fmt_n(n)} ops, records built by the public API inside "
                         f"the timer (the builders' first analyze)",
                         f"{fmt_s(tr)}, {r['n'] / tr:,.0f} ops/s", ">= 250,000 ops/s",
                         "PASS" if r['n'] / tr >= 250_000 else "FAIL"))
    for n in args.control_sizes:
        c, label = runs[(n, 1, "control")], f"control {fmt_n(n)} ops (no KV cache, fixed tokens)"
        if "error" in c:
            rows.append(("1 analyze", label, f"did not finish: {c['error']}", "", ""))
        else:
            rows.append(("1 analyze", label,
                         f"{fmt_s(c['time'])}, {c['n'] / c['time']:,.0f} ops/s; {c['edges']:,} "
                         f"edges ({c['edges'] / c['n']:.1f}/op); peak RSS {c['peak'] / MB:,.0f} MB",
                         "", ""))
    if 100_000 in args.control_sizes and 1_000_000 in args.control_sizes:
        a, b = ok_run((100_000, 1, "control")), ok_run((1_000_000, 1, "control"))
        if a and b:
            rows.append(("1 analyze", "control growth time(1M)/(10 time(100k))",
                         f"{b['time'] / (10 * a['time']):.2f}", "(info)", ""))
    big = [n for n in args.sizes if n >= 1_000_000]
    if 100_000 in args.sizes and 1_000_000 in args.sizes:
        a, b = ok_run((100_000, 1, "transformer")), runs[(1_000_000, 1, "transformer")]
        if a and "error" not in b:
            g = b["time"] / (10 * a["time"])
            rows.append(("1 analyze", "growth time(1M)/(10 time(100k))", f"{g:.2f}", "<= 1.2",
                         status(g <= 1.2)))
        elif a:
            lower = b["elapsed"] / (10 * a["time"])
            rows.append(("1 analyze", "growth time(1M)/(10 time(100k))",
                         f"> {lower:.2f} (1M did not finish)", "<= 1.2", "FAIL"))
    if 10_000 in args.sizes and 100_000 in args.sizes:
        a, b = ok_run((10_000, 1, "transformer")), ok_run((100_000, 1, "transformer"))
        if a and b:
            rows.append(("1 analyze", "growth time(100k)/(10 time(10k))",
                         f"{b['time'] / (10 * a['time']):.2f}", "(info)", ""))

    # 2. baselines
    for r in base:
        for name, label in (("seed", "seed algorithm (RAW, all pairs)"),
                            ("shares", "pairwise np.shares_memory")):
            approx = "~" if r[name + "_extrapolated"] else ""
            rows.append(("2 baselines", f"{fmt_n(r['n'])} ops: {label}",
                         f"{approx}{fmt_s(r[name])} = {approx}{r[name] / r['analyze']:,.0f}x "
                         f"analyze ({fmt_s(r['analyze'])})"
                         + (" [extrapolated, quadratic]" if approx else ""), "", ""))

    # 3. memory
    limit = args.max_gb * GB
    if big:
        r = runs[(big[-1], 1, "transformer")]
        if "error" in r:
            rows.append(("3 memory", f"peak RSS at {fmt_n(big[-1])} ops",
                         f"> {r['peak'] / GB:.2f} GB ({r['error']})", f"<= {args.max_gb:g} GB", "FAIL"))
        else:
            rows.append(("3 memory", f"peak RSS at {fmt_n(big[-1])} ops",
                         f"{r['peak'] / GB:.2f} GB (trace alone {r['rss_trace'] / GB:.2f} GB)",
                         f"<= {args.max_gb:g} GB", status(r["peak"] <= limit)))
    else:
        rows.append(("3 memory", "peak RSS at 1M ops", "skipped (--quick)", f"<= {args.max_gb:g} GB",
                     "n/a"))
    def kept_row(label, r):
        n = r["n"]
        return ("3 memory", label,
                f"graph keeps {r['kept'] / n:,.0f} B/op (edges as arrays and the views "
                f"analysed; {r['edges'] / n:.1f} edges/op); peak during analyze "
                f"{(r['maxrss'] - r['rss_records']) / n:,.0f} B/op; the records themselves "
                f"(cached on the builders by the first analyze) "
                f"{(r['rss_records'] - r['rss_trace']) / n:,.0f} B/op",
                "<= 200 B/op", status(r["kept"] / n <= 200))

    for n in args.sizes:
        r = runs[(n, 1, "transformer")]
        if "error" not in r:
            rows.append(kept_row(f"per op at {fmt_n(n)} ops", r))
        if n not in big and "error" not in r:
            rows.append(("3 memory", f"peak RSS at {fmt_n(n)} ops",
                         f"{r['peak'] / MB:,.0f} MB (trace alone {r['rss_trace'] / MB:,.0f} MB; "
                         f"{(r['peak'] - r['rss_trace']) / max(r['edges'], 1):.0f} B/edge)", "(info)", ""))
    for n in args.nondense_mem_sizes:
        r = runs[(n, 1, "nondense")]
        label = f"per op at {fmt_n(n)} ops, non-dense trace"
        if "error" in r:
            rows.append(("3 memory", label, f"did not finish: {r['error']}", "<= 200 B/op", "FAIL"))
            continue
        rows.append(kept_row(label, r))
    small = ok_run((args.mem_ops, 1, "transformer"))
    large = ok_run((args.mem_ops, args.big_scale, "transformer"))
    if small and large:
        same = large["peak"] <= small["peak"] * 1.10 + 20 * MB
        rows.append(("3 memory", f"{fmt_n(args.mem_ops)} ops, tensor_scale 1 vs {args.big_scale}",
                     f"{small['peak'] / MB:,.0f} MB vs {large['peak'] / MB:,.0f} MB "
                     f"(logical storage {small['storage'] / MB:,.1f} MB vs {large['storage'] / GB:,.1f} GB;"
                     f" analyze {fmt_s(small['time'])} vs {fmt_s(large['time'])})",
                     "independent of sizes (within 10%)", status(same)))
    else:
        rows.append(("3 memory", "tensor_scale 1 vs large", "did not finish", "", "FAIL"))

    # 4. parallel overhead
    n = par["n"]
    per = lambda t: (t - par["kernel"]) / n * 1e6
    rows.append(("4 overhead", f"{fmt_n(n)} independent tiny ops (4 floats each): the "
                 f"kernels alone (np.negative on prepared arrays)",
                 f"{fmt_s(par['kernel'])} ({par['kernel'] / n * 1e6:.1f} us/op); "
                 f"analyze {fmt_s(par['analyze'])} ({par['analyze'] / n * 1e6:.1f} us/op)", "", ""))
    rows.append(("4 overhead", "run(workers=1) - kernels, per op (records, checks included)",
                 f"{per(par['w1']):.1f} us/op", "(info)", ""))
    rows.append(("4 overhead", "run(workers=2) - kernels, per op: light ops only, so in "
                 "program order on the calling thread", f"{per(par['w2']):.1f} us/op", "(info)",
                 ""))
    rows.append(("4 overhead", "run(workers=2) on the thread pool (LIGHT_IN_ORDER off) - "
                 "kernels, per op",
                 f"{per(par['w2_pool']):.1f} us/op (of which analyze "
                 f"{par['analyze'] / n * 1e6:.1f})", "(info)", ""))
    fill_np = par["fill_np"]
    for w in (1, 2):
        extra = (par[f"fill_w{w}"] - fill_np) / par["fill_n"] * 1e6
        rows.append(("4 overhead", f"{fmt_n(par['fill_n'])} one-element Fill ops: "
                     f"run(workers={w}) - the NumPy loop a[i:i+1] = 1.0, per op (records, "
                     f"checks{', analysis' if w > 1 else ''} included)",
                     f"{extra:.2f} us/op ({fmt_s(par[f'fill_w{w}'])} vs NumPy "
                     f"{fmt_s(fill_np)}, {fill_np / par['fill_n'] * 1e6:.2f} us/op)",
                     "<= 2 us/op", status(extra <= 2)))
    rows.append(("4 overhead", f"run(workers=2, graph=precomputed) on the thread pool - "
                 f"kernels, per op ({par['queue']} ready queue)",
                 f"{per(par['w2_graph']):.1f} us/op (of which checks before running "
                 f"{par['checks'] / n * 1e6:.1f})",
                 "<= 2 us/op", status(per(par["w2_graph"]) <= 2)))

    # 5. speedup
    sp, ceiling = gil["w1"] / gil["w2"], gil["np1"] / gil["np2"]
    rows.append(("5 speedup", f"workers=2 vs 1, {args.gil_chains} chains x {args.gil_length} sin ops "
                 f"on {args.gil_size / 1e6:g}M floats",
                 f"{sp:.2f}x ({fmt_s(gil['w1'])} -> {fmt_s(gil['w2'])}; results "
                 f"{'identical' if gil['same'] else 'DIFFER'}); bare NumPy threads: {ceiling:.2f}x "
                 f"({fmt_s(gil['np1'])} -> {fmt_s(gil['np2'])}); op.execute in bare threads: "
                 f"{gil['w1'] / gil['op2']:.2f}x",
                 ">= 1.8x", status(sp >= 1.8 and gil["same"])))

    # 6. soundness
    s = snd
    sound = s["bad_edges"] == 0 and s["uncovered"] == 0
    rows.append(("6 soundness", f"{fmt_n(s['n'])} ops: edges are real conflicts, closure covers "
                 "all_conflicts",
                 f"{'OK' if sound else 'FAIL'}: {s['edges']:,} edges, {s['bad_edges']} not real; "
                 f"{s['conflicts']:,} conflicts, {s['uncovered']} op pairs uncovered",
                 "OK", status(sound)))
    rows.append(("6 soundness", "all_conflicts == pairwise np.shares_memory",
                 {True: "OK", False: "FAIL", None: "not checked"}[s["oracle_agrees"]]
                 + f" (all_conflicts took {fmt_s(s['all_conflicts_time'])})", "OK",
                 status(s["oracle_agrees"])))
    rows.append(("6 soundness", "op-pair edges implied by other edges (redundant)",
                 f"{s['redundant']:,} of {s['pairs']:,} ({s['redundant'] / max(s['pairs'], 1):.0%})",
                 "(info)", ""))
    rows.append(("6 soundness", "run(workers=2) == program order, bit for bit",
                 "OK" if s["parallel_same"] else "FAIL", "OK", status(s["parallel_same"])))
    return rows


def render(rows, header: str) -> str:
    cols = ("Section", "Measure", "Value", "Target", "Status")
    try:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=header, show_lines=False)
        for c in cols:
            table.add_column(c, overflow="fold")
        for r in rows:
            style = {"PASS": "green", "FAIL": "bold red"}.get(r[4])
            table.add_row(*r[:4], f"[{style}]{r[4]}[/]" if style else r[4])
        Console(width=200).print(table)
    except ImportError:
        print(header)
        for r in rows:
            print(" | ".join(r))
    md = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    md += ["| " + " | ".join(x.replace("|", "\\|") for x in r) + " |" for r in rows]
    return "\n".join(md)


def write_results(path: Path, body: str) -> None:
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    block = f"{START}\n{body}\n{END}"
    if START in text and END in text:
        text = re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text,
                      count=1, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    tmp = path.with_suffix(".md.analysis-tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def git_state() -> str:
    """Commit of the tree measured, and whether src/ had uncommitted changes."""
    try:
        run = lambda *a: subprocess.run(["git", *a], cwd=HERE.parent, capture_output=True,
                                        text=True, timeout=10).stdout.strip()
        head = run("rev-parse", "--short", "HEAD")
        dirty = run("status", "--porcelain", "--", "src")
        return f"commit {head}" + (" + uncommitted changes in src/" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "commit unknown"


# ---- main --------------------------------------------------------------------------------------
def parse_args(argv=None):
    ints = lambda s: [int(float(x)) for x in s.split(",") if x]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="skip the 1M-op run")
    p.add_argument("--sizes", type=ints, default=[10_000, 100_000, 1_000_000],
                   help="trace sizes for analyze throughput (comma separated)")
    p.add_argument("--control-sizes", type=ints, default=[100_000, 1_000_000],
                   help="sizes of the control trace (no KV cache, fixed token count)")
    p.add_argument("--baseline-sizes", type=ints, default=[500, 1000, 2000])
    p.add_argument("--nondense-sizes", type=ints, default=[1000, 10_000, 100_000])
    p.add_argument("--nondense-mem-sizes", type=ints, default=[100_000, 1_000_000],
                   help="non-dense trace sizes whose memory is measured (in a subprocess)")
    p.add_argument("--nondense-steady", type=int, default=1_000_000,
                   help="non-dense runs at this size (best of 2) for the steady-state "
                        "growth row (0: none)")
    p.add_argument("--seed-budget", type=float, default=100,
                   help="seconds; a seed-baseline size predicted to take longer is extrapolated")
    p.add_argument("--shares-budget", type=float, default=100)
    p.add_argument("--mem-ops", type=int, default=20_000, help="op count for tensor_scale test")
    p.add_argument("--big-scale", type=int, default=256,
                   help="large tensor_scale (256: about 7 GB of never-touched storage)")
    p.add_argument("--max-gb", type=float, default=2.0, help="memory target at the largest size")
    p.add_argument("--par-ops", type=int, default=20_000)
    p.add_argument("--par-size", type=int, default=4, help="elements per tiny op")
    p.add_argument("--fill-ops", type=int, default=20_000,
                   help="one-element Fill ops run against the NumPy loop")
    p.add_argument("--gil-chains", type=int, default=2)
    p.add_argument("--gil-length", type=int, default=8)
    p.add_argument("--gil-size", type=int, default=4_000_000)
    p.add_argument("--gil-repeats", type=int, default=15,
                   help="rounds for the speedup measurement (best of N, interleaved)")
    p.add_argument("--sound-ops", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3, help="best of N for small sizes")
    p.add_argument("--exec-repeats", type=int, default=15,
                   help="rounds for the execution measurements (best of N, interleaved)")
    p.add_argument("--timeout", type=float, default=240, help="seconds per analysis subprocess")
    p.add_argument("--mem-limit-gb", type=float, default=6,
                   help="kill an analysis subprocess past this RSS")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    p.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    # child mode
    p.add_argument("--worker-analyze", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--scale", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--trace", choices=("transformer", "control", "nondense"),
                   default="transformer", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.sizes = [n for n in args.sizes if n < 1_000_000]
        args.control_sizes = [n for n in args.control_sizes if n < 1_000_000]
        args.nondense_mem_sizes = [n for n in args.nondense_mem_sizes if n < 1_000_000]
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker_analyze:
        worker_analyze(args)
        return 0
    t0 = time.perf_counter()
    load0 = os.getloadavg()
    src0 = git_state()
    log = lambda msg: print(f"[{time.perf_counter() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)
    runs = analysis_runs(args, log)
    nd = nondense(args, log)
    base, memo = baselines(args, log)
    snd = soundness(args, memo, log)
    par = parallel_overhead(args, log)
    gil = gil_speedup(args, log)
    rows = build_rows(args, runs, base, par, gil, snd, nd)
    load1 = os.getloadavg()
    header = (f"aliasflow {af.__version__}: analysis and execution benchmark "
              f"({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, Python "
              f"{platform.python_version()}, NumPy {np.__version__}; load average "
              f"{load0[0]:.1f} -> {load1[0]:.1f}; {time.perf_counter() - t0:.0f} s)")
    src1 = git_state()
    header += f"; source {src0}" if src0 == src1 else f"; source {src0} at start, {src1} at end"
    from aliasflow.analysis import compiled
    header += "; dependency walk: " + ("compiled" if compiled.walker is not None else "pure Python")
    md = render(rows, header)
    if not args.no_write:
        cmd = "python benchmarks/bench_analysis.py " + " ".join(sys.argv[1:] if argv is None else argv)
        body = (f"## Analysis and execution\n\n{header}\n\n`{cmd.strip()}`\n\n{md}\n\n"
                "Trace: `benchmarks/trace.py` (`make_trace`: transformer training steps over a "
                "caching-allocator arena, flat param/grad buffers, a ring KV cache; "
                "`make_nondense_trace` for section 1b: per-head column blocks, stepped windows, "
                "transposed tiles, strided score columns; with `arena=True` the same accesses on "
                "regions of one flat buffer; the 512-token rows use 12 heads of 64, whose "
                "head-block writes of 32k cells are past the walk's cell limit). Times are "
                "best of a few repeats below 20k ops, single runs above (section 1b: best of "
                "three at every size, each on a freshly made trace); each analysis size runs "
                "in its own process, killed past the timeout or RSS limit. `~` marks a quadratic "
                "baseline extrapolated from the largest size it ran at. Other jobs share the 2 "
                "cores (see the load average), so times and speedups are noisy.")
        write_results(args.results, body)
        log(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
