"""Random te graphs built through any module with TVM's ``te`` API (aliasflow.te or tvm.te).

Every random choice comes from ``random.Random(seed)`` and none depends on what the module
returns, so the same seed builds the same graph in both modules. Every load is in bounds.
"""
from __future__ import annotations

import random

FLOAT, INT = "float32", "int32"


class _Gen:
    def __init__(self, te, seed, affine_only, allow_int, use_where, use_calls):
        self.te, self.rng = te, random.Random(seed)
        self.use_where, self.use_calls = use_where, use_calls
        self.affine_only, self.allow_int = affine_only, allow_int
        self.tensors = []  # (tensor, shape, dtype, is_placeholder)

    # ---- indices ---------------------------------------------------------------------------
    def index(self, size, loops):
        """An in-bounds index into a dim of ``size``; ``loops`` are (var, min, extent)."""
        rng = self.rng
        choice = rng.random()
        fits = [(v, m, e) for v, m, e in loops if m + e <= size]
        if fits and choice < 0.45:
            v, m, e = rng.choice(fits)
            return v + rng.randint(-m, size - (m + e))           # v + c (c may be 0: folded)
        if fits and choice < 0.55:
            v, m, e = rng.choice(fits)
            return rng.randint(m + e - 1, size - 1 + m) - v      # reversed
        if choice < 0.65:
            two = [(v, m, e) for v, m, e in loops if 2 * (m + e - 1) < size]
            if two:
                v, m, e = rng.choice(two)
                return 2 * v + rng.randint(-2 * m, size - 1 - 2 * (m + e - 1))
        if choice < 0.72 and len(fits) >= 2:
            (v, m, e), (w, n, f) = rng.sample(fits, 2)
            if m + e - 1 + n + f - 1 < size:
                return v + w + rng.randint(-(m + n), size - 1 - (m + e - 1 + n + f - 1))
        if not self.affine_only and loops and choice < 0.85:
            v, m, e = rng.choice(loops)
            if rng.random() < 0.5:
                return (v * v + 1) % size                          # non-affine, in bounds
            return (v + rng.randint(0, 3)) // 2 % size
        return rng.randint(0, size - 1)

    def load(self, loops):
        t, shape, dtype, _ = self.rng.choice(self.tensors)
        return t[tuple(self.index(s, loops) for s in shape)], dtype

    def padded_load(self, loops):
        """``if_then_else(index in bounds, T[index], 0)``: out of bounds where not taken."""
        rng, te = self.rng, self.te
        t, shape, dtype, _ = rng.choice(self.tensors)
        idx, conds = [], []
        for s in shape:
            v = rng.choice(loops)[0]
            e = v + rng.randint(-2, 2)
            idx.append(e)
            conds += [e >= 0, e < s]
        zero = 0.0 if dtype == FLOAT else 0
        return te.if_then_else(te.all(*conds), t[tuple(idx)], zero), dtype

    # ---- expressions -----------------------------------------------------------------------
    def leaf(self, loops):
        rng = self.rng
        c = rng.random()
        if self.use_calls and loops and c < 0.12:
            return self.padded_load(loops)
        if c < 0.6:
            return self.load(loops)
        if c < 0.75:
            return rng.choice([0.0, 1.0, 0.5, 2.0, 3.0]), FLOAT
        if c < 0.85 and self.allow_int:
            return rng.choice([0, 1, 2, 3]), INT
        if loops and self.allow_int:
            return rng.choice(loops)[0], INT
        return rng.choice([0.5, 2.0]), FLOAT

    def expr(self, loops, depth):
        rng = self.rng
        if depth == 0 or rng.random() < 0.3:
            e, dt = self.leaf(loops)
            if isinstance(e, (int, float)):  # a bare number: pair it with a load
                a, adt = self.load(loops)
                return self.combine(a, adt, e, dt)
            return e, dt
        a, adt = self.expr(loops, depth - 1)
        c = rng.random()
        if self.use_calls and c < 0.2:
            return self.call(a, adt, loops, depth)
        if c < 0.1 and self.allow_int:
            return a.astype(INT if adt == FLOAT else FLOAT), (INT if adt == FLOAT else FLOAT)
        b, bdt = self.expr(loops, depth - 1)
        return self.combine(a, adt, b, bdt)

    def call(self, a, adt, loops, depth):
        rng, te = self.rng, self.te
        c = rng.random()
        if c < 0.35 and loops:
            v, m, e = rng.choice(loops)
            k = rng.randint(m, m + e)
            cond = rng.choice([v >= k, v < k, v == k, v != k])
            if rng.random() < 0.3:
                w = rng.choice(loops)[0]
                cond = (te.all if rng.random() < 0.5 else te.any)(cond, w > k - 1)
            b, bdt = self.expr(loops, depth - 1)
            dt = FLOAT if FLOAT in (adt, bdt) else INT
            if rng.random() < 0.6 or adt != bdt:
                return te.if_then_else(cond, a, b), dt
            return self._select(cond, a, b), dt
        if adt == INT or c < 0.45:
            return te.abs(a), adt
        # log/sqrt get a positive argument and pow a square, so values stay finite and the
        # comparisons meaningful (NaN semantics have their own test against TVM)
        if c < 0.55:
            return te.power(a, 2.0), adt
        name = rng.choice(["exp", "log", "sqrt", "tanh", "sigmoid"])
        if name in ("log", "sqrt"):
            a = te.abs(a) + 0.5
        return getattr(te, name)(a), adt

    def _select(self, cond, a, b):
        te = self.te
        if hasattr(te, "select"):
            return te.select(cond, a, b)
        import tvm  # real TVM's te has no select: the Select node's constructor
        return tvm.tirx.Select(cond, a, b)

    def combine(self, a, adt, b, bdt):
        rng, te = self.rng, self.te
        dt = FLOAT if FLOAT in (adt, bdt) else INT
        c = rng.random()
        if c < 0.25:
            return a + b, dt
        if c < 0.45:
            return a - b, dt
        if c < 0.65:
            return a * b, dt
        if c < 0.75:
            return te.max(a, b), dt
        if c < 0.82:
            return te.min(a, b), dt
        if dt == FLOAT:  # a safe denominator: a positive constant or a placeholder load
            phs = [x for x in self.tensors if x[3] and x[2] == FLOAT]
            if phs and rng.random() < 0.6:
                t, shape, _, _ = rng.choice(phs)
                return a / t[tuple(rng.randint(0, s - 1) for s in shape)], dt
            return a / rng.choice([0.5, 1.0, 2.0]), dt
        return (a // rng.choice([1, 2, 3]) if rng.random() < 0.5
                else a % rng.choice([1, 2, 3])), INT

    # ---- the graph -------------------------------------------------------------------------
    def graph(self, n_placeholders, n_computes):
        rng, te = self.rng, self.te
        for p in range(n_placeholders):
            shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))
            dt = INT if self.allow_int and rng.random() < 0.2 else FLOAT
            t = te.placeholder(shape, dtype=dt, name=f"P{p}") if rng.random() < 0.8 \
                else te.placeholder(shape, dtype=dt)
            self.tensors.append((t, shape, dt, True))
        for c in range(n_computes):
            shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 2)))
            kind = rng.choice(["plain", "plain", "multi", "reduce", "reduce"])
            raxes = []
            if kind == "reduce":
                for r in range(rng.randint(1, 2)):
                    lo, ext = rng.randint(0, 1), rng.randint(1, 3)
                    raxes.append((te.reduce_axis((lo, lo + ext), name=f"k{c}{r}"), lo, ext))
            dts = []

            def fcompute(*idx):
                loops = [(v, 0, s) for v, s in zip(idx, shape)]
                loops += [(k.var, lo, ext) for k, lo, ext in raxes]
                if kind == "multi":
                    outs = [self.expr(loops, 2) for _ in range(2)]
                    dts.extend(dt for _, dt in outs)
                    return tuple(e for e, _ in outs)
                e, dt = self.expr(loops, 3)
                dts.append(dt)
                if kind == "reduce":
                    red = rng.choice([te.sum, te.max, te.min])
                    axes = [k for k, _, _ in raxes]
                    where = None
                    if rng.random() < 0.25 and self.use_where:
                        where = raxes[0][0].var > raxes[0][1]
                    return red(e, axis=axes if len(axes) > 1 or rng.random() < 0.5 else axes[0],
                               where=where)
                return e
            name = f"C{c}" if rng.random() < 0.8 else None
            out = te.compute(shape, fcompute, name=name) if name else te.compute(shape, fcompute)
            outs = out if isinstance(out, (list, tuple)) else [out]
            for t, dt in zip(outs, dts):
                self.tensors.append((t, shape, dt, False))


def random_graph(te, seed: int, affine_only: bool = False, allow_int: bool = True,
                 n_placeholders: int | None = None, n_computes: int | None = None,
                 use_where: bool = True, use_calls: bool = True):
    """``(placeholders, computes)``: lists of tensors built through ``te``."""
    g = _Gen(te, seed, affine_only, allow_int, use_where, use_calls)
    rng = g.rng
    n_placeholders = n_placeholders or rng.randint(1, 3)
    n_computes = n_computes or rng.randint(1, 4)
    g.graph(n_placeholders, n_computes)
    return ([t for t, _, _, ph in g.tensors if ph], [t for t, _, _, ph in g.tensors if not ph])
