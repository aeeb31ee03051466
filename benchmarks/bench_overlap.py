"""Benchmark: aliasflow's exact overlap test against ``np.shares_memory(max_work=-1)``.

Both answer the same question on the same pairs of layouts; NumPy works on
arrays built over fake addresses with ``__array_interface__`` (nothing is
allocated) in a worker process that is killed when one pair takes over the
per-call timeout.  Prints a table and writes it into ``benchmarks/RESULTS.md``
between ``<!-- overlap:start -->`` and ``<!-- overlap:end -->``.

Usage: ``python benchmarks/bench_overlap.py [--pairs N] [--seed S] [--timeout SEC]``
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from aliasflow.solver import intersects

HARD = ((0, (1049,) * 3, (36674, 61119, 85569)),
        (64023025, (1049, 1049, 1), (12223, 12224, 1)))
BASE = 2**52  # fake base address, far from 0 in both directions


# ---------------------------------------------------------------- workload generators

def parent(rng, max_log2=40):
    nd = rng.randint(2, 8)
    budget = rng.randint(8, max_log2)
    logs = [1] * nd
    for _ in range(budget - nd):
        logs[rng.randrange(nd)] += 1
    shape = [rng.randint(2 ** (lg - 1) + 1, 2 ** lg) if lg > 1 else 2 for lg in logs]
    stride = [1] * nd
    for j in range(nd - 2, -1, -1):
        stride[j] = stride[j + 1] * shape[j + 1]
    return shape, stride


def sliced(rng, shape, stride, step=False, flip=False):
    off = 0
    nshape, nstride = [], []
    wide = rng.random() < 0.5  # wide slices: extents overlap, the search has work to do
    for n, s in zip(shape, stride):
        if wide:
            a = rng.randint(0, n // 2)
            b = rng.randint(max(a + 1, (n + 1) // 2), n)
        else:
            a = rng.randrange(n)
            b = rng.randint(a + 1, n)
        st = rng.choice([1, 2, 3]) if step else 1
        cnt = len(range(a, b, st))
        if flip and rng.random() < 0.5:
            off += s * (a + st * (cnt - 1))
            nshape.append(cnt)
            nstride.append(-st * s)
        else:
            off += s * a
            nshape.append(cnt)
            nstride.append(st * s)
    return off, nshape, nstride


def view(rng, family, shape, stride):
    if family == "sliced":
        return sliced(rng, shape, stride)
    if family == "stepped":
        return sliced(rng, shape, stride, step=True)
    if family == "flipped":
        return sliced(rng, shape, stride, step=True, flip=True)
    if family == "permuted":
        off, sh, st = sliced(rng, shape, stride, step=rng.random() < 0.5)
        perm = list(range(len(sh)))
        rng.shuffle(perm)
        return off, [sh[p] for p in perm], [st[p] for p in perm]
    if family == "broadcast":
        off, sh, st = sliced(rng, shape, stride)
        for _ in range(rng.randint(1, 2)):
            pos = rng.randint(0, len(sh))
            sh.insert(pos, rng.randint(2, 64))
            st.insert(pos, 0)
        return off, sh, st
    if family == "window":
        off, sh, st = sliced(rng, shape, stride)
        for _ in range(rng.randint(1, 2)):
            j = rng.randrange(len(sh))
            if sh[j] < 2:
                continue
            k = rng.randint(1, min(sh[j], 16))
            sh[j] -= k - 1
            sh.append(k)
            st.append(st[j])
        return off, sh, st
    raise ValueError(family)


REALISTIC = ["sliced", "stepped", "flipped", "permuted", "broadcast", "window"]


def realistic_pair(rng, family):
    shape, stride = parent(rng)
    a = view(rng, family, shape, stride)
    b = view(rng, family, shape, stride)
    return tuple(map(_tup, a)), tuple(map(_tup, b))


def adversarial_layout(rng):
    nd = rng.randint(1, 4)
    shape = [rng.randint(1, 2**rng.randint(1, 12)) for _ in range(nd)]
    stride = [rng.choice([-1, 1]) * rng.randint(1, 2**rng.randint(4, 24)) for _ in range(nd)]
    return rng.randint(0, 2**26), tuple(shape), tuple(stride)


def adversarial_pair(rng):
    return adversarial_layout(rng), adversarial_layout(rng)


def _tup(x):
    return tuple(x) if isinstance(x, list) else x


# ---------------------------------------------------------------- NumPy side (worker process)

class _Fake:
    def __init__(self, lay):
        off, shape, stride = lay
        self.__array_interface__ = {"data": (BASE + off, False), "shape": tuple(shape),
                                    "strides": tuple(stride), "typestr": "|i1", "version": 3}


def np_shares(a, b):
    return bool(np.shares_memory(np.asarray(_Fake(a)), np.asarray(_Fake(b)), max_work=-1))


def _worker(conn, pairs, start):
    for i in range(start, len(pairs)):
        a, b = pairs[i]
        t0 = time.perf_counter()
        r = np_shares(a, b)
        conn.send((i, r, time.perf_counter() - t0))
    conn.send(None)


def numpy_times(pairs, timeout):
    """Per pair: (answer, seconds) or (None, None) on timeout."""
    out = [(None, None)] * len(pairs)
    ctx = mp.get_context("fork")
    start = 0
    while start < len(pairs):
        parent_conn, child_conn = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child_conn, pairs, start), daemon=True)
        proc.start()
        nxt = start
        while True:
            if not parent_conn.poll(timeout):
                proc.terminate()
                proc.join()
                start = nxt + 1  # pair nxt timed out
                break
            msg = parent_conn.recv()
            if msg is None:
                proc.join()
                start = len(pairs)
                break
            i, r, dt = msg
            out[i] = (r, dt)
            nxt = i + 1
    return out


# ---------------------------------------------------------------- timing

def af_time(a, b, reps=3):
    intersects(a, b)  # warm (normalisation cache as in real use)
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        r = intersects(a, b)
        dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
    return r, best


def cold_time(a, b):
    from aliasflow.solver.layout import norm
    norm.cache_clear()
    t0 = time.perf_counter()
    r = intersects(a, b)
    return r, time.perf_counter() - t0


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=300, help="pairs per family")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--timeout", type=float, default=2.0, help="per-call NumPy timeout (s)")
    ap.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    intersects(*HARD)  # import islpy etc. once

    families = {f: [realistic_pair(rng, f) for _ in range(args.pairs)] for f in REALISTIC}
    families["adversarial"] = [adversarial_pair(rng) for _ in range(args.pairs)]

    rows = []
    mismatches = 0
    all_real = []
    for fam, pairs in families.items():
        af = [af_time(a, b) for a, b in pairs]
        cold = [cold_time(a, b)[1] for a, b in pairs]
        npr = numpy_times(pairs, args.timeout)
        us = [t * 1e6 for _, t in af]
        np_us = [t * 1e6 for _, t in npr if t is not None]
        timeouts = sum(1 for _, t in npr if t is None)
        for (r1, _), (r2, t2) in zip(af, npr):
            if t2 is not None and r1 != r2:
                mismatches += 1
        if fam != "adversarial":
            all_real += us
        hits = sum(r for r, _ in af)
        rows.append((fam, len(pairs), hits, statistics.median(us), pct(us, 0.99), max(us),
                     max(c * 1e6 for c in cold),
                     statistics.median(np_us) if np_us else float("nan"),
                     pct(np_us, 0.99) if np_us else float("nan"),
                     max(np_us) if np_us else float("nan"), timeouts))

    # NumPy's documented hard example
    hard_af = min(cold_time(*HARD)[1] for _ in range(3))
    hard_ans = intersects(*HARD)
    hard_np = numpy_times([HARD], args.timeout)[0]

    lines = []
    lines.append(f"Exact overlap test, aliasflow `intersects` vs `np.shares_memory(max_work=-1)` "
                 f"(NumPy {np.__version__}, Python {sys.version.split()[0]}, "
                 f"{args.pairs} pairs per family, seed {args.seed}, NumPy timeout "
                 f"{args.timeout:g} s per call). Times in µs per pair; aliasflow with warm "
                 f"normalisation cache (best of 3), `cold max` clears the cache first.")
    lines.append("")
    lines.append("| family | pairs | overlapping | af median | af p99 | af worst | af cold max "
                 "| np median | np p99 | np worst | np timeouts | median ratio np/af |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        fam, n, hits, med, p99, worst, cold, nmed, np99, nworst, to = r
        lines.append(f"| {fam} | {n} | {hits} | {med:.1f} | {p99:.1f} | {worst:.1f} | {cold:.1f} "
                     f"| {nmed:.1f} | {np99:.1f} | {nworst:.1f} | {to} | {nmed / med:.2f} |")
    lines.append("")
    np_hard = ("timeout (> %g s)" % args.timeout if hard_np[1] is None
               else f"{hard_np[1] * 1e3:.0f} ms")
    lines.append(f"NumPy's hard example (answer: {'overlap' if hard_ans else 'no overlap'}): "
                 f"aliasflow {hard_af * 1e3:.1f} ms (target ≤ 50 ms), NumPy {np_hard}.")
    real_med = statistics.median(all_real)
    real_worst = max(all_real)
    adv = [r for r in rows if r[0] == "adversarial"][0]
    lines.append(f"All realistic pairs: median {real_med:.1f} µs (target ≤ 15), worst "
                 f"{real_worst:.1f} µs (target ≤ 5000). Adversarial worst "
                 f"{max(adv[5], adv[6]) / 1e3:.1f} ms (target ≤ 1000 ms).")
    lines.append(f"Answers differing from NumPy (where it finished): {mismatches}.")
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        write_results(table)
    return 1 if mismatches else 0


def write_results(table):
    path = Path(__file__).with_name("RESULTS.md")
    start, end = "<!-- overlap:start -->", "<!-- overlap:end -->"
    block = f"{start}\n## Exact overlap\n\n{table}\n{end}"
    text = path.read_text() if path.exists() else "# Benchmark results\n\n"
    if start in text and end in text:
        pre, rest = text.split(start, 1)
        _, post = rest.split(end, 1)
        text = pre + block + post
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
