"""Benchmark: making views and importing arrays, aliasflow against NumPy's own view ops.

Each row makes one new view per call, on both sides, from arguments prepared outside the
timer (parents, index values, arrays to import): aliasflow's view op or import next to the
NumPy call that makes the same view (an ndarray over the same memory). Nothing is reused
between calls on either side except what a parent keeps by design (a tensor's full view).

Two timings per side, both taken the same way on both sides:

- ``1 call``: ``time.perf_counter()`` around a single call, the median over ``--calls``
  calls with different arguments (the timer's own cost, printed in the header, is included
  on both sides);
- ``loop``: ``--calls`` calls on different arguments in one timed loop, divided by the
  number of calls, the minimum over ``--loops`` loops (the machine is shared; this removes
  preemption, not cache effects). The cost of the loop and of calling a ``lambda`` (measured
  with an empty one) is subtracted on both sides.

Targets (issue 8, item 4): a basic slice, transpose or reshape of a view in at most about
3 µs, ``from_numpy`` of a strided slice in at most about 5 µs.

Usage: ``python benchmarks/bench_views.py [--calls N] [--loops L]``. Prints a table;
nothing is written.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import aliasflow as af  # noqa: E402


def one_call_times(fn, args) -> list[float]:
    out = []
    clock = time.perf_counter
    for a in args:
        t0 = clock()
        fn(a)
        out.append(clock() - t0)
    return out


def loop_time(fn, args, loops: int) -> float:
    best = float("inf")
    clock = time.perf_counter
    for _ in range(loops):
        t0 = clock()
        for a in args:
            fn(a)
        best = min(best, clock() - t0)
    return best / len(args)


def rows(n: int):
    """``(name, aliasflow call, NumPy call, aliasflow args, NumPy args)`` for every row."""
    rng = np.random.default_rng(7)
    A = af.Tensor("A", (512, 512))          # aliasflow memory
    a = np.zeros((512, 512), np.float32)    # NumPy's
    i = [int(x) for x in rng.integers(0, 256, n)]
    parents = [A[k:, 3:400] for k in i]     # views to take a transpose of
    nparents = [a[k:, 3:400] for k in i]
    blocks = [A[k:k + 8] for k in i]        # contiguous 8 x 512 views to reshape
    nblocks = [a[k:k + 8] for k in i]
    imported = np.zeros((512, 512), np.float32)
    af.from_numpy(imported)                  # its base was seen before
    strided = [imported[k:, 3:100:2] for k in i]
    out = [
        ("basic slice `X[i:]`", lambda k: A[k:], lambda k: a[k:], i, i),
        ("step slice `X[i:, 3:100:2]`", lambda k: A[k:, 3:100:2], lambda k: a[k:, 3:100:2],
         i, i),
        ("transpose of a view `v.T`", lambda v: v.T, lambda v: v.T, parents, nparents),
        ("reshape of a view `v.reshape(64, 64)`", lambda v: v.reshape(64, 64),
         lambda v: v.reshape(64, 64), blocks, nblocks),
        ("as_strided `(64, 64), (i + 1, 1), offset i` (np: `np.ndarray(...)`)",
         lambda k: A.as_strided((64, 64), (k + 1, 1), k),
         lambda k: np.ndarray((64, 64), np.float32, a, k * 4, ((k + 1) * 4, 4)), i, i),
        ("TensorView(name, tensor, offset, shape, stride) (np: `np.ndarray(...)`)",
         lambda k: af.TensorView("v", A, k, (64, 64), (512, 1)),
         lambda k: np.ndarray((64, 64), np.float32, a, k * 4, (2048, 4)), i, i),
        ("from_numpy of a strided slice (np: `x.view()`)", af.from_numpy,
         lambda x: x.view(), strided, strided),
    ]
    try:
        import torch
    except ImportError:
        return out, None
    t = torch.zeros(512, 512)
    pieces = [t[k:, 3:100:2] for k in i]
    out.append(("from_dlpack of a torch slice (np: `np.from_dlpack`)", af.from_dlpack,
                np.from_dlpack, pieces, pieces))
    return out, torch.__version__


def fmt(x: float) -> str:
    us = x * 1e6
    return f"{us:.2f}" if us < 10 else f"{us:.1f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000, help="calls per row (fresh views)")
    ap.add_argument("--loops", type=int, default=20, help="timed loops per row")
    args = ap.parse_args(argv)
    table, torch_version = rows(args.calls)
    blank = [None] * args.calls
    empty = lambda x: None  # noqa: E731
    timer = statistics.median(one_call_times(empty, blank))
    call = loop_time(empty, blank, args.loops)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = "?"
    print(f"View construction at {commit or '?'}: aliasflow vs NumPy making the same view "
          f"(NumPy {np.__version__}, Python {platform.python_version()}"
          f"{', torch ' + torch_version if torch_version else ''}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at start). One new view per call, "
          f"arguments prepared outside the timer; `1 call`: median of {args.calls} single "
          f"timed calls (timer cost {timer * 1e9:.0f} ns included on both sides); `loop`: "
          f"{args.calls} calls in one timed loop, per call, best of {args.loops}, the loop "
          f"and call cost ({call * 1e9:.0f} ns) subtracted on both sides. Times in µs.\n")
    print("| view op | af 1 call | np 1 call | af loop | np loop | ratio af/np (loop) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, af_fn, np_fn, af_args, np_args in table:
        for fn, xs in ((af_fn, af_args), (np_fn, np_args)):
            fn(xs[0])  # warm up imports and caches of the code (not of the data)
        a1 = statistics.median(one_call_times(af_fn, af_args))
        n1 = statistics.median(one_call_times(np_fn, np_args))
        al = max(loop_time(af_fn, af_args, args.loops) - call, 0.0)
        nl = max(loop_time(np_fn, np_args, args.loops) - call, 0.0)
        ratio = f"{al / nl:.1f}" if nl > 0 else "—"
        print(f"| {name} | {fmt(a1)} | {fmt(n1)} | {fmt(al)} | {fmt(nl)} | {ratio} |")


if __name__ == "__main__":
    main()
