"""Benchmark of the PyTorch tracer (``af.trace``).

1. Tracing overhead per aten op, cold (a new trace per step), on a transformer training step
   (a ``TransformerEncoderLayer``: forward, backward, AdamW) and on a small MLP (in-place
   ReLUs, Adam): the step run plain, under an empty ``TorchDispatchMode`` (the floor any
   Python dispatch mode pays), under ``af.trace(values=False)`` and under ``af.trace()``
   (which also keeps what replay needs). The four are interleaved step by step on four
   copies of the model (load on the machine hits them alike); each row gives the minimum and
   the median over the steps. Overhead per op = (mode - plain) / aten calls per step; target:
   the tracer's overhead at most 1.5x the empty mode's.
2. ``trace.findings()`` on a trace of >= 10,000 aten calls (training steps of the same
   layer, each with one overlapping shift of a fresh tensor, so every step has a suspected op
   that is re-run on copies while tracing, and a finding to name and group), cold: the
   per-call facts built, classified, named, grouped; target <= 0.2 s.
   ``af.analyze(trace.ops)`` too (building the records first).
3. Peak memory of a trace of 40 in-place updates of a 32 MiB tensor, measured in a child
   process (the peak RSS, ``VmHWM`` reset just before, over the RSS before the updates,
   minus the same for the updates untraced); target <= 2x the tensor (Linux only).

    python benchmarks/bench_trace.py [--quick] [--no-reader]

Prints a table; nothing is written.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import aliasflow as af  # noqa: E402


class EmptyMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class Plain:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def transformer(seed=0):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.1,
                                             batch_first=True)
    opt = torch.optim.AdamW(layer.parameters(), lr=1e-3)
    x = torch.randn(8, 16, 32)

    def step():
        loss = layer(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def mlp(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(inplace=True),
                                torch.nn.Linear(128, 128), torch.nn.ReLU(inplace=True),
                                torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64), torch.randn(32, 10)

    def step():
        loss = (model(x) - y).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


CONTEXTS = {"plain": Plain, "empty TorchDispatchMode": EmptyMode,
            "af.trace(values=False)": lambda: af.trace(values=False),
            "af.trace()": af.trace}


def overhead(make, reps):
    """Per-step times of every context, interleaved (a new context per step: cold)."""
    steps = {k: make() for k in CONTEXTS}
    for k, ctx in CONTEXTS.items():
        for _ in range(3):
            with ctx():
                steps[k]()
    times = {k: [] for k in CONTEXTS}
    for _ in range(reps):
        for k, ctx in CONTEXTS.items():
            c = ctx()
            t0 = time.perf_counter()
            with c:
                steps[k]()
            times[k].append(time.perf_counter() - t0)
    with af.trace(values=False) as t:
        make()()
    return times, len(t)


def overhead_rows(label, make, reps):
    times, n = overhead(make, reps)
    rows = []
    for agg_name, agg in (("min", min), ("median", statistics.median)):
        base = agg(times["plain"])
        per = {k: (agg(v) - base) / n * 1e6 for k, v in times.items()}
        floor = per["empty TorchDispatchMode"]
        rows.append(("1 overhead", f"{label}: {n} aten calls/step ({agg_name} of {reps})",
                     f"plain {base * 1e3:.2f} ms; empty mode +{floor:.1f} us/op", "", ""))
        for k in ("af.trace(values=False)", "af.trace()"):
            ratio = per[k] / floor
            rows.append(("1 overhead", f"{label}, {k} ({agg_name})",
                         f"+{per[k]:.1f} us/op = {ratio:.2f}x the empty mode's", "<= 1.5x",
                         "PASS" if ratio <= 1.5 else "FAIL"))
    return rows


PEAK = """
import sys, torch
sys.path.insert(0, {src!r})
import aliasflow as af


def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024


x = torch.zeros(8 * 1024 * 1024)            # 32 MiB
x.add_(1)                                     # touched once before measuring
with af.trace():                              # the first dispatch mode loads torch._dynamo
    torch.ones(2).add_(1)                     # (~80 MB, for any mode): not the trace's
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                              # the peak (VmHWM) starts again from here
before = status("VmRSS")
if {traced}:
    with af.trace() as t:
        for _ in range(40):
            x.add_(1)
else:
    for _ in range(40):
        x.add_(1)
print(status("VmHWM") - before)
"""


def peak_rows():
    out = []
    for traced in (False, True):
        proc = subprocess.run([sys.executable, "-c", PEAK.format(src=str(SRC), traced=traced)],
                              capture_output=True, text=True, check=True)
        out.append(int(proc.stdout.split()[-1]))
    plain, traced = out
    mib = 32 * 1024 * 1024
    growth = (traced - plain) / mib
    return [("3 memory", "40 in-place updates of a 32 MiB tensor: peak RSS growth over untraced",
             f"{(traced - plain) / 2**20:.1f} MiB = {growth:.2f}x the tensor", "<= 2x",
             "PASS" if growth <= 2 else "FAIL")]


def analysis_rows():
    step = transformer()
    steps = 0
    with af.trace() as big:
        while len(big) < 10_000:
            step()
            h = torch.arange(64.).reshape(8, 8)
            h[:, 1:] = h[:, :-1]          # a bug each step: suspected, confirmed, one finding
            steps += 1
    n = len(big)
    t0 = time.perf_counter()
    found = big.findings()
    t_find = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = af.analyze(big.ops)
    t_an = time.perf_counter() - t0
    suspected = sum(1 for c in big.calls if c.extra and c.extra.get("suspect"))
    return [("2 analysis", f"{steps} steps: {n:,} aten calls, {len(big.storages):,} storages, "
             f"{suspected} suspected (re-run while tracing)", "", "", ""),
            ("2 analysis", "trace.findings() (cold: facts built, classified, named, grouped)",
             f"{t_find * 1e3:.0f} ms; {len(found)} finding(s), "
             f"{sum(f.occurrences for f in found)} occurrences", "<= 200 ms",
             "PASS" if t_find <= 0.2 else "FAIL"),
            ("2 analysis", "af.analyze(trace.ops)",
             f"{t_an * 1e3:.0f} ms; {len(graph.dependencies):,} edges", "(info)", "")]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-reader", action="store_true",
                   help="read tensors through their accessors, as where the PyTorch reader "
                        "was not built (PyTorch installed after aliasflow)")
    args = p.parse_args()
    reps = 10 if args.quick else 100
    torch.set_num_threads(1)
    if args.no_reader:
        from aliasflow.interop.torch_trace import tracer
        if tracer._hot is not None:
            tracer._hot.use_reader(None)
    rows = overhead_rows("transformer step", transformer, reps)
    rows += overhead_rows("small MLP", mlp, reps)
    rows += analysis_rows()
    rows += peak_rows()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    from aliasflow.interop.torch_trace import tracer
    path = "pure Python" if tracer._hot is None else \
        "compiled, with the PyTorch reader" if tracer._hot.reader_in_use() else \
        "compiled, tensors read through their accessors (no PyTorch reader built)"
    print(f"bench_trace: torch {torch.__version__}, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores, load {load:.1f}, torch threads 1; per-call path: {path}")
    print("| part | case | measured | target | result |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
