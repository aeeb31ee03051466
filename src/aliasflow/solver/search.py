"""Exact bounded linear Diophantine search.

Problem: find integers ``z`` with ``0 <= z[i] <= u[i]`` and ``sum(c[i] * z[i]) == d``
where every ``c[i] > 0`` (optionally excluding one given solution).

Strategy: depth-first search over the terms in decreasing coefficient order
(like NumPy's ``mem_overlap.c``), with

* range bounding: the rest can contribute only ``0 .. sum(c[j] * u[j])``;
* congruence pruning: ``c[i] * z[i] = d (mod gcd of the remaining coefficients)``,
  so candidates for ``z[i]`` form one arithmetic progression;
* memoisation of failed ``(level, remaining target)`` states, which makes the
  search polynomial when the coefficients form (or nearly form) a divisibility
  chain, as for views sliced from one parent (a couple of states per level);
* a work budget; when it runs out the problem is handed to isl (``islpy``),
  whose lattice methods decide adversarial instances in milliseconds.

The answer is always exact.
"""

from __future__ import annotations

from math import gcd

__all__ = ["solve", "DEFAULT_BUDGET"]

DEFAULT_BUDGET = 4000


class _Exhausted(Exception):
    pass


def _prepare(terms):
    """Levels ``(c, u, rest_max, mod, r_mul, h)`` for terms sorted by decreasing c."""
    k = len(terms)
    levels = [None] * k
    rest_max = 0
    g = 0
    for i in range(k - 1, -1, -1):
        c, u = terms[i]
        h = gcd(c, g)
        mod = g // h if g else 0
        inv = pow(c // h, -1, mod) if mod > 1 else 0
        levels[i] = (c, u, rest_max, mod, inv, h)
        rest_max += c * u
        g = gcd(g, c)
    return levels, rest_max, g


def _dfs(levels, d, exclude, budget):
    """Search; returns a list of z or None.  Raises _Exhausted past the budget."""
    k = len(levels)
    failed = set()
    work = [0]

    def rec(i, d, dev):
        c, u, rest_max, mod, inv, h = levels[i]
        if i == k - 1:
            if d % c:
                return None
            z = d // c
            if z > u or (not dev and exclude is not None and z == exclude[i]):
                return None
            return [z]
        key = (i, d, dev)
        if key in failed:
            return None
        lo = d - rest_max
        lo = 0 if lo <= 0 else -(-lo // c)
        hi = d // c
        if hi > u:
            hi = u
        if lo > hi:
            failed.add(key)
            return None
        if mod > 1:
            if d % h:
                failed.add(key)
                return None
            r = (d // h) * inv % mod
            start = lo + (r - lo) % mod
            step = mod
        else:
            start = lo
            step = 1
        ex = exclude[i] if (exclude is not None and not dev) else None
        for z in range(start, hi + 1, step):
            work[0] += 1
            if work[0] > budget:
                raise _Exhausted
            sub = rec(i + 1, d - c * z, dev or (ex is not None and z != ex))
            if sub is not None:
                sub.insert(0, z)
                return sub
        failed.add(key)
        return None

    return rec(0, d, exclude is None)


def _isl_solve(terms, d, exclude):
    import islpy as isl

    k = len(terms)
    names = [f"z{i}" for i in range(k)]
    box = " and ".join(f"0 <= {n} <= {u}" for n, (_, u) in zip(names, terms))
    eq = " + ".join(f"{c} {n}" for n, (c, _) in zip(names, terms))
    head = "{ [" + ", ".join(names) + "] : "
    if exclude is None:
        pieces = [f"{eq} = {d} and {box}"]
    else:
        # z != exclude: lexicographically first differing coordinate is above or below
        pieces = []
        for j in range(k):
            same = "".join(f"{names[i]} = {exclude[i]} and " for i in range(j))
            for rel in (">", "<"):
                pieces.append(f"{same}{names[j]} {rel} {exclude[j]} and {eq} = {d} and {box}")
    for piece in pieces:
        bset = isl.BasicSet(head + piece + " }")
        if bset.is_empty():
            continue
        pt = bset.sample_point()
        return [pt.get_coordinate_val(isl.dim_type.set, i).to_python() for i in range(k)]
    return None


def solve(terms, d, exclude=None, budget=DEFAULT_BUDGET):
    """Exact solution of ``sum(c*z) == d``, ``0 <= z <= u`` for ``terms = [(c, u), ...]``.

    ``c > 0`` for all terms, ``u >= 0``.  Returns the list ``z`` (in the order of
    ``terms``) or ``None``.  With ``exclude`` (a list like ``z``), that one solution
    does not count.
    """
    if not terms:
        return [] if d == 0 and exclude is None else None
    if d < 0:
        return None
    order = sorted(range(len(terms)), key=lambda i: -terms[i][0])
    sterms = []
    sexcl = None if exclude is None else []
    for i in order:
        c, u = terms[i]
        cap = d // c
        if u > cap:
            # clamping keeps the excluded point only if it still fits
            if exclude is not None and exclude[i] > cap:
                sexcl = None
                exclude = None
            u = cap
        sterms.append((c, u))
        if sexcl is not None:
            sexcl.append(exclude[i])
    levels, total, g = _prepare(sterms)
    if d > total or d % g:
        return None
    try:
        z = _dfs(levels, d, sexcl, budget)
    except _Exhausted:
        z = _isl_solve(sterms, d, sexcl)
    if z is None:
        return None
    out = [0] * len(terms)
    for pos, i in enumerate(order):
        out[i] = z[pos]
    return out
