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


def _split_search(terms, d, budget):
    """Exact search on ``terms`` (sorted by decreasing c, clamped) with splitting.

    ``rec(i, j, d)`` solves the sub-problem on ``terms[i:j]``.  Before branching
    it looks for a split point ``p``: with ``G = gcd(c[i:p])`` the lower part
    ``terms[p:j]`` must contribute ``d mod G`` plus a multiple of ``G`` and at most
    ``M = sum(c*u for terms[p:j])``; when ``M < G`` the lower target is unique and
    the two parts are independent (the divisibility-chain case).  Failed states
    are memoised.
    """
    k = len(terms)
    cs = [c for c, _ in terms]
    suffix = [0] * (k + 1)
    for i in range(k - 1, -1, -1):
        suffix[i] = suffix[i + 1] + terms[i][0] * terms[i][1]
    failed = set()
    work = [0]

    def rec(i, j, d):
        if d < 0 or d > suffix[i] - suffix[j]:
            return None
        c, u = terms[i]
        if j - i == 1:
            if d % c:
                return None
            z = d // c
            return [z] if z <= u else None
        key = (i, j, d)
        if key in failed:
            return None
        work[0] += 1
        if work[0] > budget:
            raise _Exhausted
        # best split point: fewest candidates for the lower part's target
        g = 0
        best = None
        for p in range(i + 1, j):
            g = gcd(g, cs[p - 1])
            low_max = suffix[p] - suffix[j]
            r = d % g
            if r > low_max:
                failed.add(key)
                return None
            ncand = (low_max - r) // g + 1
            if best is None or ncand < best[0]:
                best = (ncand, p, g, r)
        # gcd of the rest, for the congruence on z_i
        g_rest = 0
        for p in range(i + 1, j):
            g_rest = gcd(g_rest, cs[p])
        if d % gcd(c, g_rest):
            failed.add(key)
            return None
        rest_max = suffix[i + 1] - suffix[j]
        lo, hi = _z_range(d, c, u, rest_max)
        if lo > hi:
            failed.add(key)
            return None
        h = gcd(c, g_rest)
        mod = g_rest // h
        if mod > 1:
            r = (d // h) * pow(c // h, -1, mod) % mod
            start = lo + (r - lo) % mod
        else:
            start = lo
            mod = 1
        nbranch = (hi - start) // mod + 1 if start <= hi else 0
        if nbranch == 0:
            failed.add(key)
            return None
        ncand, p, g, r = best
        if p > i + 1 and ncand < nbranch:
            for low in range(r, r + ncand * g, g):
                work[0] += 1
                if work[0] > budget:
                    raise _Exhausted
                lower = rec(p, j, low)
                if lower is None:
                    continue
                upper = rec(i, p, d - low)
                if upper is not None:
                    return upper + lower
            failed.add(key)
            return None
        for z in range(start, hi + 1, mod):
            work[0] += 1
            if work[0] > budget:
                raise _Exhausted
            sub = rec(i + 1, j, d - c * z)
            if sub is not None:
                sub.insert(0, z)
                return sub
        failed.add(key)
        return None

    return rec(0, k, d)


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
            z = _split_search(sterms, d, budget)
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
