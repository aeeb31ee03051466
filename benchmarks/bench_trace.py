"""Benchmark of the PyTorch tracer (``af.trace``).

1. Tracing overhead per aten op on a small transformer training step (a
   ``TransformerEncoderLayer``, forward + backward + Adam step): the step run plain, under an
   empty ``TorchDispatchMode`` (the floor any Python dispatch mode pays), under
   ``af.trace(values=False)`` and under ``af.trace()`` (which also copies what every op writes,
   for replay). Each is timed the same way: the median of repeated steps, after warm-up
   steps, model and data made outside the timer. Overhead per op = (mode - plain) / ops per
   step; target: the tracer's overhead at most 1.5x the empty mode's.
2. ``trace.findings()`` and ``af.analyze(trace.ops)`` on a trace of >= 10,000 aten calls
   (training steps of the same layer), each timed cold on a fresh trace (``trace.ops``,
   building the op records, is timed on its own first); target <= 1 s each. ``replay`` too.

    python benchmarks/bench_trace.py [--quick]

Prints a table; nothing is written.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import aliasflow as af  # noqa: E402


class EmptyMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def make(seed=0):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.1,
                                             batch_first=True)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-3)
    x = torch.randn(8, 16, 32)
    return layer, opt, x


def step(layer, opt, x):
    loss = layer(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def timed_steps(ctx_factory, reps, warm=3):
    layer, opt, x = make()
    for _ in range(warm):
        with ctx_factory():
            step(layer, opt, x)
    times = []
    for _ in range(reps):
        ctx = ctx_factory()
        t0 = time.perf_counter()
        with ctx:
            step(layer, opt, x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Plain:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    reps = 10 if args.quick else 30
    torch.set_num_threads(1)
    layer, opt, x = make()
    with af.trace(values=False) as t:
        step(layer, opt, x)
    ops_per_step = len(t)

    rows = []
    plain = timed_steps(Plain, reps)
    empty = timed_steps(EmptyMode, reps)
    bare = timed_steps(lambda: af.trace(values=False), reps)
    full = timed_steps(af.trace, reps)
    per = lambda s: (s - plain) / ops_per_step * 1e6  # noqa: E731
    rows.append(("1 overhead", f"step: {ops_per_step} aten calls", "plain "
                 f"{plain * 1e3:.2f} ms ({plain / ops_per_step * 1e6:.1f} us/op)", "", ""))
    rows.append(("1 overhead", "empty TorchDispatchMode", f"+{per(empty):.1f} us/op", "(floor)", ""))
    for label, s in (("af.trace(values=False), a new trace per step", bare),
                     ("af.trace() (values, for replay), a new trace per step", full)):
        ratio = per(s) / per(empty)
        rows.append(("1 overhead", label, f"+{per(s):.1f} us/op = {ratio:.2f}x the empty "
                     f"mode's", "<= 1.5x", "PASS" if ratio <= 1.5 else "FAIL"))
    # steady state: one trace over many steps, each step timed inside it
    for values in (False, True):
        layer, opt, x = make()
        for _ in range(3):
            step(layer, opt, x)
        with af.trace(values=values):
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                step(layer, opt, x)
                times.append(time.perf_counter() - t0)
        s = statistics.median(times)
        ratio = per(s) / per(empty)
        rows.append(("1 overhead", f"af.trace(values={values}), steps inside one trace",
                     f"+{per(s):.1f} us/op = {ratio:.2f}x the empty mode's", "<= 1.5x",
                     "PASS" if ratio <= 1.5 else "FAIL"))

    layer, opt, x = make()
    steps = 0
    with af.trace() as big:
        while len(big) < 10_000:
            step(layer, opt, x)
            steps += 1
    n = len(big)
    t0 = time.perf_counter()
    ops = big.ops
    t_ops = time.perf_counter() - t0
    t0 = time.perf_counter()
    found = big.findings()
    t_find = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = af.analyze(ops)
    t_an = time.perf_counter() - t0
    data_ops = sum(1 for op in ops if op.input_views or op.output_views)
    rows.append(("2 analysis", f"{steps} steps: {n:,} aten calls ({data_ops:,} touch data), "
                 f"{len(big.storages):,} storages", f"trace.ops (build records) "
                 f"{t_ops * 1e3:.0f} ms", "", ""))
    rows.append(("2 analysis", "trace.findings() (cold, after trace.ops)",
                 f"{t_find * 1e3:.0f} ms; {len(found)} findings, {len(big.reuse())} reuse",
                 "<= 1 s", "PASS" if t_find <= 1 else "FAIL"))
    rows.append(("2 analysis", "af.analyze(trace.ops)",
                 f"{t_an * 1e3:.0f} ms; {len(graph.dependencies):,} edges",
                 "<= 1 s", "PASS" if t_an <= 1 else "FAIL"))
    if not args.quick:
        for w in (1, 2):
            t0 = time.perf_counter()
            rep = big.replay(workers=w)
            t_rep = time.perf_counter() - t0
            rows.append(("2 analysis", f"replay(workers={w})",
                         f"{t_rep:.2f} s; {'identical' if rep.identical else 'DIFFERENT'} "
                         f"({rep.compared_results:,} results, {rep.compared_storages} storages)",
                         "identical", "PASS" if rep.identical else "FAIL"))

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_trace: torch {torch.__version__}, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores, load {load:.1f}, torch threads 1, median of {reps} steps")
    print("| part | case | measured | target | result |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
