"""Benchmark of race checking on streams (``t.races()``, ``find_stream_races``).

The program: a pipelined loop on four CPU streams of a trace, as a CUDA program would run it:
``h2d`` copies the next batch into a ring of staging buffers, the default stream computes on
it (a matmul, an in-place activation, a slice update of a running state), ``d2h`` copies the
result out (and the default stream waits for that copy before the result's memory is handed
out again), ``aux`` keeps a running mean of the weights; events order each hand-over, and
every 40th iteration forgets the wait for the staging copy (so the check has races to find).
Run until the trace holds at least 10,000 aten calls.

Timed, cold (each on a fresh trace of the same program, built outside the timer; the minimum
of ``--reps``):

1. ``t.races()`` after ``t.ops`` (the op records, timed on their own): the trace's clocks,
   the race search, the findings; target <= 0.5 s.
2. the race search alone over the same ops (``find_stream_races`` with the trace's clocks and
   lifetimes).
3. baselines in the same run, on the same ops and happens-before: ``af.find_races`` (the
   general checker: reachability bitsets over explicit edges, which are derived here from the
   clocks; it knows no lifetimes, so on this trace it also reports pairs across memory reuse
   that the allocator orders) and, on the first 2,000 ops, the all-pairs check (every pair
   of ops the clocks leave unordered, every access pair tested exactly), against which the
   race search's answer is compared.

    python benchmarks/bench_streams.py [--reps N]

Prints a table; nothing is written.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

import aliasflow as af  # noqa: E402
from aliasflow import solver  # noqa: E402
from aliasflow.analysis.lower import READ, lower  # noqa: E402
from aliasflow.analysis.stream_races import find_stream_races  # noqa: E402
from aliasflow.interop.torch_trace.races import clocks_of  # noqa: E402

TARGET_OPS = 10_000
TARGET_S = 0.5


def program(t, min_ops=TARGET_OPS, forget_every=40):
    torch.manual_seed(0)
    w = torch.randn(32, 32)
    state = torch.zeros(64, 32)
    ring = [torch.zeros(16, 32) for _ in range(4)]
    out = torch.zeros(16, 32)
    mean_w = torch.zeros(32, 32)
    src = torch.randn(16, 32)
    h2d, d2h, aux = t.stream("h2d"), t.stream("d2h"), t.stream("aux")
    main = t.default_stream
    for s in (h2d, d2h, aux):       # the buffers were made on the default stream
        s.wait_stream(main)
    i = 0
    while len(t) < min_ops:
        slot = ring[i % 4]
        with h2d:
            slot.copy_(src)
            loaded = h2d.record_event()
        if i % forget_every != forget_every - 1:
            main.wait_event(loaded)
        y = slot @ w
        y.relu_()
        state[(i % 4) * 16:(i % 4) * 16 + 16].add_(y)
        done = main.record_event()
        with d2h:
            d2h.wait_event(done)
            out.copy_(y)
            copied = d2h.record_event()
        with aux:
            mean_w.mul_(0.9).add_(w, alpha=0.1)
        h2d.wait_stream(main)        # the ring slot is free again once compute is done
        main.wait_event(copied)      # y's memory is handed out again next iteration
        i += 1
    return i


def traced(min_ops=TARGET_OPS):
    with af.trace(values=False) as t:
        iterations = program(t, min_ops)
    return t, iterations


def all_pairs(ops, clocks, lifetime, limit):
    """Every pair of ops (i < j < limit) the clocks leave unordered, every access pair with a
    write tested exactly; the allocator's ordering across lifetimes applied."""
    table = lower(ops[:limit])
    rows = table.rows
    by_op = [rows[table.op_starts[j]:table.op_starts[j + 1]] for j in range(limit)]
    found = set()
    for j in range(limit):
        for i in range(j):
            if clocks.happens_before(i, j):
                continue
            for _, mi, gi, lo_i, hi_i, _, lay_i, vi in by_op[i]:
                for _, mj, gj, lo_j, hi_j, _, lay_j, vj in by_op[j]:
                    if gi != gj or (mi == READ and mj == READ) or hi_i < lo_j or hi_j < lo_i:
                        continue
                    if not solver.intersects(lay_i, lay_j):
                        continue
                    ki, kj = lifetime(vi), lifetime(vj)
                    if ki != kj and clocks.reuse_ordered(i, ki, j, kj):
                        continue
                    found.add((i, j, id(vi), id(vj)))
    return found


def edges_from(clocks):
    """Explicit happens-before edges equivalent to the clocks: for each op, the latest op of
    each other stream it follows, where that moved since the previous op on its stream."""
    n = len(clocks)
    last_seen: dict = {}
    on_stream: dict = {}
    for j in range(n):
        s = clocks.op_stream[j]
        on_stream.setdefault(s, []).append(j)
    edges = []
    for j in range(n):
        sj = clocks.op_stream[j]
        clock = clocks.op_clock[j]
        for s, n_ops in enumerate(clock):
            if s == sj or n_ops == 0:
                continue
            if last_seen.get((sj, s), 0) < n_ops:
                last_seen[(sj, s)] = n_ops
                edges.append((on_stream[s][n_ops - 1], j))
    return edges


def timed(fn, reps, prepare):
    """Best wall time of ``reps`` cold calls (and that call's CPU time), and the result."""
    best, cpu, result = float("inf"), 0.0, None
    for _ in range(reps):
        args = prepare()
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn(*args)
        wall = time.perf_counter() - t0
        if wall < best:
            best, cpu = wall, time.process_time() - c0
    return best, cpu, result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    reps = args.reps

    t, iterations = traced()
    n = len(t)
    t0 = time.perf_counter()
    ops = t.ops
    t_ops = time.perf_counter() - t0
    data_ops = sum(1 for op in ops if op.accesses)
    streams = sorted({op.stream for op in ops if op.accesses})

    def fresh_trace():
        tr, _ = traced()
        tr.ops   # built outside the timer
        return (tr,)

    t_races, c_races, races = timed(lambda tr: tr.races(), reps, fresh_trace)
    t_both, c_both, _ = timed(lambda tr: (tr.ops, tr.races()), reps, lambda: (traced()[0],))

    def search_args():
        tr, _ = traced()
        clocks = clocks_of(tr)
        gen = {id(a.view): a.ref.gen.id for op in tr.ops for a in op.accesses
               if a.view is not None}
        return tr.ops, clocks, lambda v: gen[id(v)]
    t_search, c_search, pairs = timed(lambda o, c, life: find_stream_races(o, c, lifetime=life), reps,
                            search_args)

    def baseline_args():
        tr, _ = traced()
        clocks = clocks_of(tr)
        names = {op.name: clocks.op_stream[k] for k, op in enumerate(tr.ops)}
        edges = [(tr.ops[i].name, tr.ops[j].name) for i, j in edges_from(clocks)]
        return tr.ops, names, edges
    t_base, c_base, base = timed(lambda o, s, e: af.find_races(o, streams=s, edges=e), 1,
                                 baseline_args)

    limit = 2000
    o, c, life = search_args()
    t0 = time.perf_counter()
    brute = all_pairs(o, c, life, limit)
    t_brute = time.perf_counter() - t0
    small = {(r.first, r.second, id(r.first_view), id(r.second_view))
             for r in find_stream_races(o[:limit], _prefix(c, limit), lifetime=life)}
    o2, c2, life2 = search_args()
    t0 = time.perf_counter()
    find_stream_races(o2[:limit], _prefix(c2, limit), lifetime=life2)
    t_small = time.perf_counter() - t0

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_streams: torch {torch.__version__}, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores, load {load:.1f} at the end, torch threads 1; best wall time "
          f"of {reps} cold runs (the baseline: one run), with that run's CPU time")
    print(f"trace: {iterations} iterations, {n:,} aten calls ({data_ops:,} touch data), "
          f"{len(t.storages):,} storages, streams {', '.join(streams)}; "
          f"trace.ops (build records) {t_ops * 1e3:.0f} ms")
    print()
    print("| case | wall (CPU) | found | ratio (wall) | target | result |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(f"| `t.races()` on {n:,} aten calls, 4 streams (after `t.ops`) | "
          f"{t_races * 1e3:.0f} ms ({c_races * 1e3:.0f} ms) | {len(races)} races | 1 | "
          f"<= {TARGET_S} s | {'PASS' if t_races <= TARGET_S else 'FAIL'} |")
    print(f"| `t.ops` and `t.races()` on a fresh trace | {t_both * 1e3:.0f} ms "
          f"({c_both * 1e3:.0f} ms) | | {t_both / t_races:.2f} |  |  |")
    print(f"| race search alone (`find_stream_races`) | {t_search * 1e3:.0f} ms "
          f"({c_search * 1e3:.0f} ms) | {len(pairs)} racing access pairs | "
          f"{t_search / t_races:.2f} |  |  |")
    print(f"| baseline: `af.find_races`, equivalent edges | {t_base * 1e3:.0f} ms "
          f"({c_base * 1e3:.0f} ms) | {len(base)} conflicts | {t_base / t_races:.1f} |  |  |")
    print(f"| first {limit:,} ops: race search | {t_small * 1e3:.0f} ms | {len(small)} pairs "
          f"| 1 |  |  |")
    print(f"| first {limit:,} ops: baseline all-pairs check | {t_brute * 1e3:.0f} ms | "
          f"{len(brute)} pairs | {t_brute / t_small:.1f} | the same pairs | "
          f"{'PASS' if brute == small else 'FAIL'} |")


def _prefix(clocks, limit):
    """The clocks of the first ``limit`` ops (a view for the race search)."""
    from copy import copy
    c = copy(clocks)
    c.op_stream, c.op_seq, c.op_clock = (clocks.op_stream[:limit], clocks.op_seq[:limit],
                                         clocks.op_clock[:limit])
    return c


if __name__ == "__main__":
    main()
