"""Common mixed-radix decomposition of two layouts ("sliced from one parent").

If the strides of two normalised layouts can be assigned to the levels of one
divisibility chain ``1 = t_0 | t_1 | ... | t_L`` such that each dim of a layout
is ``m * t_k`` on its own level ``k`` and never carries into the next digit,
then each footprint is a *product* over levels of arithmetic progressions of
digits.  Intersections, counts, inclusion and the shared cells then follow
level by level, without enumerating anything.  This covers sub-boxes of one
row-major parent that are stepped, flipped, permuted or broadcast.
"""

from __future__ import annotations

from math import gcd

__all__ = ["product_form", "ap_intersect", "ap_subset"]


def _digits(o, chain):
    out = []
    for k in range(len(chain) - 1):
        out.append((o // chain[k]) % (chain[k + 1] // chain[k]))
    out.append(o // chain[-1])
    return out


def _try(chain, views):
    """Per-view per-level APs ``(start, step, count)``, or ``(None, level to drop)``."""
    L = len(chain)
    result = []
    for off, strides, sizes in views:
        digits = _digits(off, chain)
        aps = [(dg, 1, 1) for dg in digits]
        dims = list(zip(strides, sizes))
        while dims:
            s, n = dims.pop(0)
            lev = 0
            for kk in range(L - 1, -1, -1):
                t = chain[kk]
                if t <= s and s % t == 0:
                    lev = kk
                    break
            m = s // chain[lev]
            if aps[lev][2] != 1:
                return None, None  # two dims on one level: not a product of APs
            start = aps[lev][0]
            if lev < L - 1:
                radix = chain[lev + 1] // chain[lev]
                if start + m * (n - 1) >= radix:
                    q = radix // m
                    if radix % m == 0 and start < m and n % q == 0:
                        # whole blocks of the next level: split the dim over it
                        dims.insert(0, (chain[lev + 1], n // q))
                        n = q
                    else:
                        return None, lev + 1  # carry: coarsen by dropping the next level
            aps[lev] = (start, m, n)
        result.append(aps)
    return result, None


def _chain_up(cands):
    fixed = [1]
    for t in sorted(cands):
        if t <= fixed[-1]:
            continue
        if t % fixed[-1] == 0:
            fixed.append(t)
        elif len(fixed) > 1 and t % fixed[-2] == 0:
            fixed[-1] = t  # prefer the larger: the smaller one was probably a stepped stride
    return fixed


def _chain_down(cands, start=None):
    """Chain of divisors going down from ``start`` (default: the largest candidate),
    extended upwards by the larger candidates that are multiples of it."""
    start = max(cands) if start is None else start
    top = [start]
    for t in sorted(cands, reverse=True):
        if t < top[-1] and top[-1] % t == 0:
            top.append(t)
    if top[-1] != 1:
        top.append(1)
    chain = top[::-1]
    for t in sorted(cands):
        if t > chain[-1] and t % chain[-1] == 0:
            chain.append(t)
    return chain


def product_form(a, b):
    """Common product decomposition of normal forms ``a`` and ``b`` (``(off, strides, sizes)``).

    Returns ``(chain, (aps_a, aps_b))`` or ``None``; ``aps[k]`` is the progression
    ``(start, step, count)`` of the digits of level ``k`` (unit ``chain[k]``).
    Candidate chains are built from the strides and the dims' extents
    (``stride * size``), top-down and bottom-up; levels are dropped on carries.
    """
    strides = {1, *a[1], *b[1]}
    both = strides | {s * n for v in (a, b) for s, n in zip(v[1], v[2])}
    # parent strides hidden by merging or stepping show up as gcds
    # (offsets rounded down to each stride reveal parent strides too)
    vals = sorted(both | {abs(o - o % s) for o in (a[0], b[0]) for s in strides})
    both |= {gcd(x, y) for i, x in enumerate(vals) for y in vals[i + 1:]} - {0}
    tried = []
    top = max(strides)
    for chain in (_chain_down(both, top), _chain_down(both), _chain_down(strides),
                  _chain_up(both), _chain_up(strides)):
        if chain in tried:
            continue
        tried.append(chain)
        for _ in range(len(chain) + 1):
            res, drop = _try(chain, (a, b))
            if res is not None:
                return chain, res
            if drop is None or drop >= len(chain):
                break
            chain = chain[:drop] + chain[drop + 1:]
    return None


def ap_intersect(p, q):
    """Intersection of progressions ``(start, step, count)``: another one (count may be 0)."""
    a1, m1, n1 = p
    a2, m2, n2 = q
    if n1 == 1:
        m1 = 1
    if n2 == 1:
        m2 = 1
    lo = a1 if a1 > a2 else a2
    h1 = a1 + m1 * (n1 - 1)
    h2 = a2 + m2 * (n2 - 1)
    hi = h1 if h1 < h2 else h2
    if lo > hi:
        return (lo, 1, 0)
    g = gcd(m1, m2)
    diff = a2 - a1
    if diff % g:
        return (lo, 1, 0)
    mg = m2 // g
    lcm = m1 * mg
    t = (diff // g) * pow(m1 // g, -1, mg) % mg if mg > 1 else 0
    v0 = a1 + m1 * t
    v = lo + (v0 - lo) % lcm
    if v > hi:
        return (v, lcm, 0)
    return (v, lcm, (hi - v) // lcm + 1)


def ap_subset(q, p):
    """Is progression ``q`` contained in progression ``p``?"""
    a2, m2, n2 = q
    a1, m1, n1 = p
    if n2 == 0:
        return True
    if n1 == 1:
        m1 = 1
    if n2 == 1:
        m2 = 0
    last2 = a2 + m2 * (n2 - 1)
    if a2 < a1 or last2 > a1 + m1 * (n1 - 1):
        return False
    if (a2 - a1) % m1:
        return False
    return m2 % m1 == 0
