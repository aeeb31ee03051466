"""Exact bounded linear Diophantine search.

Problem: find integers ``z`` with ``0 <= z[i] <= u[i]`` and ``sum(c[i] * z[i]) == d``
where every ``c[i] > 0`` (optionally excluding one given solution).

Strategy (without an exclusion): depth-first search over subsets of the terms, sorted by
decreasing coefficient (NumPy's ``mem_overlap.c`` sorts the same way), with

* simplification as NumPy's ``diophantine_simplify``: bounds clamped to ``d // c``, terms
  that can then only be 0 left out (equal coefficients are merged by the caller);
* range bounding: the rest can contribute only ``0 .. sum(c[j] * u[j])``;
* congruence pruning: ``c[i] * z[i] = d (mod gcd of the other coefficients)``,
  so candidates for ``z[i]`` form one arithmetic progression;
* splitting a subset where its largest coefficients share a gcd the rest cannot bridge
  (the divisibility chains of views sliced from one parent);
* branching on the term that leaves the densest rest (fewest candidates times the rest's
  range), from the value that leaves the rest a target in the middle of its range outwards; two terms solved exactly by the extended
  Euclidean algorithm, three by counting their solutions (:func:`_count3`);
* memoisation of failed ``(subset, remaining target)`` states of four terms or more,
  which makes the search polynomial when the coefficients form (or nearly form) a
  divisibility chain, as for views sliced from one parent (a couple of states per level);
* a work budget; when it runs out the problem is handed to isl (``islpy``),
  whose lattice methods decide adversarial instances in milliseconds.

With an exclusion (internal overlap), a plain depth-first search over the terms in
decreasing coefficient order with the same bounds, congruences and memo.

The answer is always exact, unless the caller bounds the work with :func:`work_budget`: then
isl gets at most that many operations, and a problem it cannot decide within them raises
:class:`UndecidedError` (the public functions in :mod:`.api` treat such a pair as overlapping
and record it in the budget's ``undecided`` list).
"""

from __future__ import annotations

import contextvars
import warnings
from contextlib import contextmanager
from math import gcd

__all__ = ["solve", "DEFAULT_BUDGET", "Exhausted", "UndecidedError", "WorkBudget",
           "work_budget", "UndecidedOverlapWarning"]

DEFAULT_BUDGET = 4000


class _Exhausted(Exception):
    pass


Exhausted = _Exhausted  # the cheap search gave up (raised by solve(..., use_isl=False))


class UndecidedError(ValueError):
    """The active :func:`work_budget` ran out before the problem was decided."""


class UndecidedOverlapWarning(UserWarning):
    """Some overlap questions were not decided within a work budget (treated as overlaps)."""


class WorkBudget:
    """A bound on the exact solver's hardest step, and what it left undecided.

    ``max_work`` is a number of isl operations per problem (isl's own ``max_operations``
    counter; 10**5 is a fraction of a second to a few seconds). ``undecided`` lists
    ``(question, layouts)`` for every question answered conservatively: two layouts treated
    as overlapping, or a layout treated as overlapping itself.
    """

    def __init__(self, max_work: int):
        if isinstance(max_work, bool) or not isinstance(max_work, int) or max_work < 1:
            raise ValueError(f"max_work must be a positive int, got {max_work!r}")
        self.max_work = max_work
        self.undecided: list[tuple] = []

    def __repr__(self) -> str:
        return f"WorkBudget(max_work={self.max_work}, {len(self.undecided)} undecided)"


_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("aliasflow_work_budget", default=None)


def active_budget() -> WorkBudget | None:
    return _ACTIVE.get()


@contextmanager
def work_budget(max_work: int, *, warn: bool = True):
    """Bound the work of every exact overlap question asked inside the ``with`` block.

    Exact answers stay exact; a question the solver cannot settle within ``max_work`` is
    answered conservatively (overlapping: extra dependency edges, never missing ones) and
    listed in the yielded budget's ``undecided``; with ``warn`` an
    :class:`UndecidedOverlapWarning` says how many at the end of the block.
    Applies to the current thread (and asyncio task).
    """
    budget = WorkBudget(max_work)
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)
    if warn and budget.undecided:
        warnings.warn(f"{len(budget.undecided)} overlap question(s) were not decided within "
                      f"max_work={max_work} and were treated as overlapping",
                      UndecidedOverlapWarning, stacklevel=3)


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


def _z_range(d, c, u, rest_max):
    """``(lo, hi)``: the z with ``0 <= z <= u``, ``c*z <= d`` and ``d - c*z <= rest_max``."""
    lo = d - rest_max
    lo = 0 if lo <= 0 else -(-lo // c)
    hi = d // c
    return lo, (u if hi > u else hi)


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
        lo, hi = _z_range(d, c, u, rest_max)
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


def _two_terms(c1, u1, c2, u2, d):
    """``(z1, z2)`` with ``c1*z1 + c2*z2 == d``, ``0 <= z <= u``, or None.

    Decided in O(log) by the extended Euclidean algorithm, as NumPy's ``mem_overlap.c``
    does for its last two variables: the ``z1`` that solve it form one progression with
    step ``c2 / g``; intersect it with ``z1``'s bounds and take the lowest.
    """
    g = gcd(c1, c2)
    if d % g:
        return None
    a1, a2, dg = c1 // g, c2 // g, d // g
    lo = dg - a2 * u2  # z2 <= u2  <=>  a1*z1 >= dg - a2*u2
    lo = 0 if lo <= 0 else -(-lo // a1)
    hi = min(dg // a1, u1)  # z2 >= 0
    if lo > hi:
        return None
    r = (dg % a2) * pow(a1, -1, a2) % a2 if a2 > 1 else 0  # z1 = r (mod a2)
    z1 = lo + (r - lo) % a2 if a2 > 1 else lo
    if z1 > hi:
        return None
    return z1, (d - c1 * z1) // c2


def _floor_sum(n, m, a, b):
    """``sum((a*i + b) // m for i in range(n))`` for ``m > 0`` in O(log), by the Euclid-like
    reduction of the AtCoder library's ``floor_sum``."""
    if n <= 0:
        return 0
    q = a // m
    ans = n * (n - 1) // 2 * q
    a -= q * m
    q = b // m
    ans += n * q
    b -= q * m
    while True:
        if a >= m:
            ans += n * (n - 1) // 2 * (a // m)
            a %= m
        if b >= m:
            ans += n * (b // m)
            b %= m
        y = a * n + b
        if y < m:
            return ans
        n, b = divmod(y, m)
        m, a = a, m


def _count3(c1, u1, c2, u2, c3, s, step, count, d):
    """Number of solutions of ``c1*z1 + c2*z2 + c3*z3 == d``, ``0 <= z1 <= u1``,
    ``0 <= z2 <= u2``, ``z3 = s + step*j`` for ``0 <= j < count``.

    Every such ``z3`` must leave the pair a target divisible by ``g = gcd(c1, c2)`` in
    ``[0, c1*u1 + c2*u2]`` (the branch's congruence and range give that).  With
    ``a1, a2 = c1/g, c2/g``, ``T = (d - c3*z3)/g`` and ``v = a1^-1 mod a2`` the pair has
    ``floor((H - v*T)/a2) - floor((L - 1 - v*T)/a2)`` solutions, ``H = min(u1, T // a1)``,
    ``L = max(0, ceil((T - a2*u2)/a1))``.  T falls linearly with j, so on the (at most two)
    pieces of j where H (L) is one expression each term is the floor of a linear function
    of j, and its sum over j a :func:`_floor_sum`.
    """
    g = gcd(c1, c2)
    a1, a2 = c1 // g, c2 // g
    t0 = (d - c3 * s) // g
    e = c3 * step // g
    v = pow(a1, -1, a2) if a2 > 1 else 0
    w = 1 - a1 * v  # a multiple of a2

    def clamp(j):
        return min(max(j, 0), count)

    def t_at(j):
        return t0 - e * j

    # H = u1 while T >= a1*u1, i.e. for j <= (t0 - a1*u1) // e
    cut = clamp((t0 - a1 * u1) // e + 1)
    total = (_floor_sum(cut, a2, v * e, u1 - v * t0)
             + _floor_sum(count - cut, a1 * a2, -w * e, w * t_at(cut)))
    # L = ceil((T - a2*u2)/a1) > 0 while T > a2*u2, i.e. for j < ceil((t0 - a2*u2) / e)
    cut = clamp(-(-(t0 - a2 * u2) // e))
    total -= (_floor_sum(cut, a1 * a2, -w * e, w * t0 - a2 * u2 - 1)
              + _floor_sum(count - cut, a2, v * e, -1 - v * t_at(cut)))
    return total


def _three_terms(c1, u1, c2, u2, c3, s, step, count, d):
    """A solution ``(z1, z2, z3)`` of the problem of :func:`_count3`, or None: the first j
    with a solution is found by bisection on the counts."""
    if _count3(c1, u1, c2, u2, c3, s, step, count, d) <= 0:
        return None
    lo, hi = 0, count  # the count over j < hi is positive, over j < lo it is not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _count3(c1, u1, c2, u2, c3, s, step, mid, d) > 0:
            hi = mid
        else:
            lo = mid
    z3 = s + step * lo
    z1, z2 = _two_terms(c1, u1, c2, u2, d - c3 * z3)
    return z1, z2, z3


# Three terms with more branches than this are decided by counting their solutions (a count
# costs about as much as this many two-term checks, and is charged so to the work budget).
THREE_TERMS_COUNT = 8
# ... after this many of their branches failed (solutions are often dense: the first finds one).
THREE_TERMS_TRIES = 2


def _split_search(terms, d, budget):
    """Exact search on ``terms`` (sorted by decreasing c, clamped, every u >= 1).

    A sub-problem is a subset of the terms (bit ``i`` of ``mask``: term ``i``) and a
    target.  ``rec(mask, d)`` checks the target's range and its congruence modulo the
    subset's gcd, then either

    * splits the subset: the first ``p`` terms (largest c) have gcd ``G``, so the others
      contribute ``d mod G`` plus a multiple of ``G``, at most their maximum ``M``; when
      that leaves fewer candidate targets than the best branch, it tries each (for views
      sliced from one parent, a divisibility chain, usually one, and the parts are then
      independent), or
    * branches on a term (``z`` is fixed modulo the others' gcd over the subset's gcd, and
      bounded by the others' range): the one whose number of candidates times the others'
      range is least, which leaves the densest rest (few branches, each likely to hold a
      solution), trying them from the value that leaves the others a target in the middle
      of their range outwards: solutions are densest there (from one end, the rest starts
      in a corner of its box where they are rare; NumPy's random test problems showed the
      difference).

    Two terms are solved exactly (:func:`_two_terms`), three with many branches by counting
    (:func:`_three_terms`), failed states of four terms or more are memoised and the work is
    bounded.  Returns ``{term index: z}`` or None.
    """
    k = len(terms)
    cs = [c for c, _ in terms]
    us = [u for _, u in terms]
    failed = set()
    work = [0]

    def tick():
        work[0] += 1
        if work[0] > budget:
            raise _Exhausted

    def fail(key):
        if key is not None:
            failed.add(key)

    def split_at(mask, d, idx, split):
        """The first p members against the rest, whose target is ``r + g*t`` for t < n."""
        n, p, g, r = split
        upper = 0
        for j in idx[:p]:
            upper |= 1 << j
        lower = mask & ~upper
        for low in range(r, r + n * g, g):
            tick()
            zl = rec(lower, low)
            if zl is None:
                continue
            zu = rec(upper, d - low)
            if zu is not None:
                zu.update(zl)
                return zu
        fail((mask, d) if len(idx) > 3 else None)
        return None

    def rec(mask, d):
        if d < 0:
            return None
        idx = [i for i in range(k) if mask >> i & 1]
        m = len(idx)
        tot = sum(cs[i] * us[i] for i in idx)
        if d > tot:
            return None
        if m == 0:
            return {}
        if m == 1:
            i = idx[0]
            return {i: d // cs[i]} if d % cs[i] == 0 and d // cs[i] <= us[i] else None
        if m == 2:
            i, j = idx
            z = _two_terms(cs[i], us[i], cs[j], us[j], d)
            return None if z is None else {i: z[0], j: z[1]}
        # failed states are memoised from four terms up (three are counted again quickly,
        # and their targets rarely repeat)
        key = (mask, d) if m > 3 else None
        if key in failed:
            return None
        tick()
        # split points p: the first p terms against the rest
        split = None
        pre = [0] * (m + 1)
        g = 0
        low = tot
        for p in range(1, m):
            i = idx[p - 1]
            g = pre[p] = gcd(g, cs[i])
            low -= cs[i] * us[i]
            r = d % g
            if r > low:
                fail(key)
                return None
            n = (low - r) // g + 1
            if split is None or n < split[0]:
                split = (n, p, g, r)
        every = gcd(g, cs[idx[-1]])
        if d % every:
            fail(key)
            return None
        if split[1] > 1 and split[0] == 1:  # one target for the lower part: split at once
            return split_at(mask, d, idx, split)
        suf = [0] * (m + 1)
        for t in range(m - 1, 0, -1):
            suf[t] = gcd(suf[t + 1], cs[idx[t]])
        # the term whose branches leave the densest rest: fewest candidates times the rest's
        # range (as floats, rounded as the compiled core's doubles are; ties: the largest c)
        best = None
        for t, i in enumerate(idx):
            mod = gcd(pre[t], suf[t + 1]) // every
            lo, hi = _z_range(d, cs[i], us[i], tot - cs[i] * us[i])
            if lo > hi:
                fail(key)
                return None
            score = float((hi - lo) // mod + 1) * float(tot - cs[i] * us[i])
            if best is None or score < best[0]:
                best = (score, i, lo, hi, mod)
        _, i, lo, hi, mod = best
        c = cs[i]
        start = lo
        if mod > 1:
            r = (d // every) % mod * pow(c // every, -1, mod) % mod
            start = lo + (r - lo) % mod
        if start > hi:
            fail(key)
            return None
        nbranch = (hi - start) // mod + 1
        if split[1] > 1 and split[0] < nbranch:
            return split_at(mask, d, idx, split)
        sub = mask & ~(1 << i)
        top = start + (nbranch - 1) * mod
        want = (d - (tot - c * us[i]) // 2) // c  # the rest's target mid-range
        z = start if want <= start else top if want >= top else start + (want - start) // mod * mod
        # three terms: after a couple of branches (solutions are often dense), count the
        # solutions of all the branches at once
        count = m == 3 and nbranch > THREE_TERMS_COUNT
        tries = 0
        up, down = z, z - mod
        while up <= top or down >= start:
            if count and tries >= THREE_TERMS_TRIES:
                p, q = [j for j in idx if j != i]
                work[0] += THREE_TERMS_COUNT - 1  # a count costs about as much as that many leaves
                tick()
                z3 = _three_terms(cs[p], us[p], cs[q], us[q], c, start, mod, nbranch, d)
                if z3 is None:
                    fail(key)
                    return None
                return {p: z3[0], q: z3[1], i: z3[2]}
            for zi in ((up,) if up <= top else ()) + ((down,) if down >= start else ()):
                tick()
                tries += 1
                rest = rec(sub, d - c * zi)
                if rest is not None:
                    rest[i] = zi
                    return rest
            up += mod
            down -= mod
        fail(key)
        return None

    return rec((1 << k) - 1, d)


def _isl_solve(terms, d, exclude):
    import islpy as isl

    budget = _ACTIVE.get()
    if budget is None:
        return _isl_solve_in(isl, None, terms, d, exclude)
    ctx = isl.Context()
    ctx.set_max_operations(budget.max_work)
    try:
        return _isl_solve_in(isl, ctx, terms, d, exclude)
    except isl.Error:  # isl stops with an error once max_operations is spent
        raise UndecidedError(f"not decided within max_work={budget.max_work}") from None


def _isl_solve_in(isl, ctx, terms, d, exclude):

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
        text = head + piece + " }"
        bset = isl.BasicSet(text) if ctx is None else isl.BasicSet.read_from_str(ctx, text)
        if bset.is_empty():
            continue
        pt = bset.sample_point()
        return [pt.get_coordinate_val(isl.dim_type.set, i).to_python() for i in range(k)]
    return None


def solve(terms, d, exclude=None, budget=DEFAULT_BUDGET, use_isl=True):
    """Exact solution of ``sum(c*z) == d``, ``0 <= z <= u`` for ``terms = [(c, u), ...]``.

    ``c > 0`` for all terms, ``u >= 0``.  Returns the list ``z`` (in the order of
    ``terms``) or ``None``.  With ``exclude`` (a list like ``z``), that one solution
    does not count. With ``use_isl=False``, :class:`Exhausted` is raised where isl would
    be called.
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
        if sexcl is None:
            # terms that can only be 0 are left out (as NumPy's diophantine_simplify does)
            live = [pos for pos, (_, u) in enumerate(sterms) if u > 0]
            found = _split_search([sterms[pos] for pos in live], d, budget)
            z = None
            if found is not None:
                z = [0] * len(sterms)
                for t, zt in found.items():
                    z[live[t]] = zt
        else:
            z = _dfs(levels, d, sexcl, budget)
    except _Exhausted:
        if not use_isl:
            raise
        z = _isl_solve(sterms, d, sexcl)
    if z is None:
        return None
    out = [0] * len(terms)
    for pos, i in enumerate(order):
        out[i] = z[pos]
    return out
