"""Benchmark of the NumPy tracer (``aliasflow trace`` on NumPy programs).

1. Overhead on a loop of small NumPy operations: four operations on arrays of 100 elements
   (a one-dimensional store, a ufunc with ``out=``, an in-place operator, an augmented
   strided store), 20,000 iterations, with the exact overlap tests on. The loop is run
   plain (compiled by Python) and rewritten with a trace recording, and rewritten with no
   trace recording; target: traced <= 3x plain. A second loop of the same size has
   overlapping operands in every operation (NumPy handles them all; nothing to confirm).
2. Overhead on a script of large-array operations (the same kinds of operations on arrays of
   2**21 doubles and a 1024x1024 transpose store); target <= 1.1x plain.
3. What the trace costs afterwards on the small loop's 80,000 operations: ``findings()``,
   ``trace.ops`` (the op records) and ``af.analyze`` of them.

Each row times whole runs of the loop (``exec`` of the module code), rounds interleaved
(plain, rewritten, traced, ...), the median of the rounds reported.

    python benchmarks/bench_numpy_trace.py [--quick]

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

import numpy as np  # noqa: E402

import aliasflow as af  # noqa: E402
from aliasflow.interop.numpy_trace import fastpath, runtime  # noqa: E402
from aliasflow.interop.numpy_trace.rewrite import rewrite  # noqa: E402
from aliasflow.interop.numpy_trace.trace import NumpyTrace  # noqa: E402

SMALL = """
import numpy as np
a = np.zeros(100); b = np.ones(100); c = np.empty(100)
for i in range(ITERATIONS):
    a[1:] = b[:-1]
    np.add(a, b, out=c)
    c *= 0.5
    b[::2] -= c[1::2]
"""

SMALL_OVERLAP = """
import numpy as np
a = np.ones(100); b = np.ones((10, 10))
for i in range(ITERATIONS):
    a[1:] = a[:-1]
    np.multiply(a[:-1], a[1:], out=a[1:])
    a[1:] -= a[:-1]
    b[...] = b.T
"""

LARGE = """
import numpy as np
n = 1 << 21
a = np.zeros(n); b = np.ones(n); c = np.empty(n); m = np.arange(1 << 20, dtype=float).reshape(1024, 1024)
for i in range(ITERATIONS):
    a[1:] = b[:-1]
    np.add(a, b, out=c)
    c *= 0.5
    b[::2] -= c[1::2]
    m[...] = m.T
"""


def compiled(source, iterations):
    src = source.replace("ITERATIONS", str(iterations))
    return (compile(src, "<plain>", "exec"),
            rewrite(src, "<traced>", runtime.register_site)[0])


def run(code, traced):
    ns = {"__name__": "__main__"}
    t0 = time.perf_counter()
    if traced:
        with NumpyTrace() as t:
            exec(code, ns)
    else:
        t = None
        exec(code, ns)
    return time.perf_counter() - t0, t


def rounds(source, iterations, n):
    plain, rewritten = compiled(source, iterations)
    times = {"plain": [], "idle": [], "traced": []}
    for k in range(n):
        order = [("plain", plain, False), ("idle", rewritten, False),
                 ("traced", rewritten, True)]
        for name, code, traced in order[k % 3:] + order[:k % 3]:
            times[name].append(run(code, traced)[0])
    return {k: statistics.median(v) for k, v in times.items()}


def overhead_rows(label, part, source, iterations, n, target):
    t = rounds(source, iterations, n)
    ratio = t["traced"] / t["plain"]
    return [
        (part, f"{label}: plain", f"{t['plain'] * 1e3:.0f} ms", "", ""),
        (part, f"{label}: rewritten, no trace recording",
         f"{t['idle'] * 1e3:.0f} ms = {t['idle'] / t['plain']:.2f}x plain", "", ""),
        (part, f"{label}: rewritten, traced", f"{t['traced'] * 1e3:.0f} ms = {ratio:.2f}x plain",
         f"<= {target}x", "PASS" if ratio <= target else "FAIL"),
    ]


def analysis_rows(iterations):
    _, rewritten = compiled(SMALL, iterations)
    _, t = run(rewritten, True)
    rows = []
    t0 = time.perf_counter()
    found = t.findings()
    rows.append(("3 afterwards", f"{len(t):,} operations: findings()",
                 f"{(time.perf_counter() - t0) * 1e3:.0f} ms; {len(found)} findings", "", ""))
    t0 = time.perf_counter()
    records = t.ops
    rows.append(("3 afterwards", "trace.ops (op records, exact byte views)",
                 f"{(time.perf_counter() - t0) * 1e3:.0f} ms", "", ""))
    t0 = time.perf_counter()
    graph = af.analyze(records)
    rows.append(("3 afterwards", "af.analyze(trace.ops)",
                 f"{(time.perf_counter() - t0) * 1e3:.0f} ms; {len(graph.dependencies):,} "
                 f"edges", "", ""))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args(argv)
    runtime.install()
    n = 3 if args.quick else 7
    rows = []
    rows += overhead_rows("4 ops x 100 elements x 20,000", "1 small", SMALL, 20_000, n, 3)
    rows += overhead_rows("overlapping operands, 4 ops x 100 elements x 20,000", "1 small",
                          SMALL_OVERLAP, 20_000, n, 3)
    rows += overhead_rows("2**21 doubles and a 1024x1024 transpose, 5 ops x 40", "2 large",
                          LARGE, 40, max(3, n // 2), 1.1)
    rows += analysis_rows(20_000)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_numpy_trace: NumPy {np.__version__}, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores, load {load:.1f}, runtime "
          f"{'compiled' if fastpath.COMPILED else 'pure Python'}, median of {n} rounds")
    print("| part | case | measured | target | result |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
