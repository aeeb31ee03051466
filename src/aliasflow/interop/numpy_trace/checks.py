"""Confirmation: re-run one operation on copies of its operands and compare.

A :class:`Check` is prepared before a suspected operation runs (its operands copied), and
:meth:`Check.run` after it: the same NumPy operation on the copies (fresh contiguous memory,
so neither overlap nor an odd layout is involved) gives the copy-semantics result, and the
elements where the real result differs are the wrong ones. When they agree although the
operation's reads and writes overlap, a second run tells luck from safety: the operation
again on a scratch buffer with the same layouts (same relative offsets, same alignment) but
distinct values; if copy semantics and NumPy disagree there, the result depends on NumPy's
loop order and this run agreed by chance (a *hazard*).

Outcomes are :class:`Verdict` values (a severity and a kind: what the confirmation
concluded, unlike the per-argument :class:`aliasflow.interop.findings.Outcome` of a PyTorch
re-run); nothing here keeps the program's arrays after ``run``.
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import numpy as np

from ...core.storage import array_address

_SHADOW_SEED = 20250105   # fixed: two runs of one script give the same report


@dataclass(frozen=True)
class Verdict:
    """What a confirmation found: ``severity`` ("wrong" or "hazard"), ``kind`` (the
    mechanism), ``differs`` (elements that differ from copy semantics), ``example``
    (index in the written operand, got, expected), ``written`` (which operand: a path into
    the arguments), ``overlap`` (whether the operation's own reads and writes overlap)."""
    severity: str
    kind: str
    differs: int
    example: tuple | None
    written: tuple = (0,)
    overlap: bool = True


@contextlib.contextmanager
def quiet():
    """No warnings and no floating-point reports from our re-runs. The filter is put in front
    of ``warnings.filters`` directly: ``catch_warnings`` would reset the registries of
    warnings already shown once, and the program might then show them again."""
    entry = ("ignore", None, Warning, None, 0)
    filters = warnings.filters
    filters.insert(0, entry)
    try:
        with np.errstate(all="ignore"):
            yield
    finally:
        try:
            filters.remove(entry)
        except ValueError:  # the program replaced the list meanwhile
            pass


def copy_tree(obj):
    """Arrays copied (fresh C-ordered memory), one level into lists, tuples and dicts: what a
    re-run may write is never the program's memory."""
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if type(obj) in (list, tuple):
        return type(obj)(copy_tree(x) for x in obj)
    if type(obj) is dict:
        return {k: copy_tree(v) for k, v in obj.items()}
    return obj


def at_path(tree, path):
    for p in path:
        tree = tree[p]
    return tree


def array_paths(args, kwargs):
    """Paths (position or keyword, then index in a list) of every array operand."""
    out = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            out.append((0, i))
        elif type(a) in (list, tuple):
            out.extend((0, i, j) for j, x in enumerate(a) if isinstance(x, np.ndarray))
    for k, a in kwargs.items():
        if isinstance(a, np.ndarray):
            out.append((1, k))
        elif type(a) in (list, tuple):
            out.extend((1, k, j) for j, x in enumerate(a) if isinstance(x, np.ndarray))
    return out


class Check:
    """``perform(*args, **kwargs)`` is the operation; ``written`` lists the paths (into
    ``args``, or ``("kw", name, ...)`` into ``kwargs``) of the arrays it writes; ``indices``
    the paths of index or mask operands (their values keep their meaning in the scratch
    run). ``exact``: compare bit for bit (copies, gathers, scatters) rather than within a few
    units in the last place (arithmetic, whose loops may round differently)."""

    __slots__ = ("perform", "args", "kwargs", "copies", "written", "indices", "exact",
                 "overlapping", "self_overlap", "shadow", "guards")

    def __init__(self, perform, args, kwargs, written, overlapping=False, indices=(),
                 exact=True, self_overlap=False, shadow=True, guard=()):
        self.perform = perform
        self.args, self.kwargs = tuple(args), dict(kwargs)
        self.copies = (copy_tree(self.args), copy_tree(self.kwargs))
        self.written = [self._path(w) for w in written]
        self.indices = [self._path(w) for w in indices]
        self.exact = exact
        self.overlapping = overlapping
        self.self_overlap = self_overlap
        self.shadow = shadow   # False: NumPy guards the overlap; only its result is in doubt
        # bytes past a written view that a kernel taking it for contiguous would write
        self.guards = [g for g in (_guard(x) for x in guard) if g is not None]

    @staticmethod
    def _path(w):
        return (1,) + tuple(w[1:]) if w and w[0] == "kw" else (0,) + tuple(w)

    def run(self):
        try:
            return self._run()
        finally:
            self.args = self.kwargs = self.copies = None
            self.guards = []

    def _run(self):
        cargs, ckw = self.copies
        try:
            with quiet():
                self.perform(*cargs, **ckw)
        except Exception:  # noqa: BLE001 - copy semantics refuse what NumPy accepted
            return None
        trees = ((self.args, self.kwargs), (cargs, ckw))
        for memory, start, before, mine in self.guards:
            changed = (memory[start:start + before.size] != before) & ~mine
            if changed.any():
                where = int(np.flatnonzero(changed)[0])
                return Verdict("wrong", "in-op-overlap" if self.overlapping else "kernel",
                               int(changed.sum()),
                               (None, int(memory[start + where]), int(before[where])),
                               self.written[0][1:], self.overlapping)
        for path in self.written:
            got, expected = at_path(trees[0], path), at_path(trees[1], path)
            found = differences(got, expected, self.exact)
            if found is not None:
                count, index, g, e = found
                kind = "self-overlap-write" if self.self_overlap else \
                    "in-op-overlap" if self.overlapping else "kernel"
                return Verdict("wrong", kind, count, (index, g, e), path[1:],
                               self.overlapping or self.self_overlap)
        if (self.overlapping or self.self_overlap) and self.shadow:
            try:
                order_dependent = self._shadow_differs()
            except Exception:  # noqa: BLE001 - inconclusive: no claim
                order_dependent = False
            if order_dependent:
                kind = "self-overlap-write" if self.self_overlap else "in-op-overlap"
                return Verdict("hazard", kind, 0, None, self.written[0][1:], True)
        return None

    def _shadow_differs(self) -> bool:
        """The same operation over a scratch buffer laid out like the real operands, with
        distinct values: do NumPy and copy semantics disagree there?"""
        trees = (self.args, self.kwargs)
        cargs, ckw = self.copies
        ctrees = (cargs, ckw)
        spans = {p: _span(at_path(trees, p)) for p in array_paths(*trees)}
        written = [spans[p] for p in self.written if p in spans]
        # the operands whose memory meets what is written share the scratch buffer; the
        # others stay the copies they are
        spans = {p: s for p, s in spans.items()
                 if any(s[0] < w[1] and w[0] < s[1] for w in written)}
        arrays = {p: at_path(trees, p) for p in spans}
        lo = min(s[0] for s in spans.values())
        hi = max(s[1] for s in spans.values())
        if hi - lo > 1 << 26:
            return False
        scratch = _aligned(hi - lo, lo % 64)
        rng = np.random.default_rng(_SHADOW_SEED)
        scratch[:] = rng.integers(1, 64, scratch.size, dtype=np.uint8)
        shadow = {p: np.ndarray(a.shape, a.dtype, buffer=scratch,
                                offset=array_address(a) - lo, strides=a.strides)
                  for p, a in arrays.items()}
        for p in self.indices:   # index values as they were (their meaning is the operation)
            if p in shadow:
                shadow[p][...] = at_path(ctrees, p)
        sargs = _replace(cargs, 0, shadow)
        skw = _replace(ckw, 1, shadow)
        before = (copy_tree(sargs), copy_tree(skw))
        with quiet():
            self.perform(*sargs, **skw)
            self.perform(*before[0], **before[1])
        for path in self.written:
            if differences(at_path((sargs, skw), path), at_path(before, path), self.exact):
                return True
        return False


def _guard(x):
    """``(the owner's bytes, start, their values now, which are x's own)`` for the
    ``x.size * itemsize`` bytes from ``x``'s first element, within its owner's memory; None
    for an owner that is not one contiguous block."""
    owner = x
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if not owner.flags.c_contiguous or x.size == 0:
        return None
    memory = owner.reshape(-1).view(np.uint8)
    start = array_address(x) - array_address(owner)
    stop = min(start + x.size * x.itemsize, owner.nbytes)
    start = max(start, 0)
    if stop <= start:
        return None
    mine = np.zeros(stop - start, bool)
    offsets = np.zeros((), np.int64) + array_address(x) - array_address(owner) - start
    for n, st in zip(x.shape, x.strides):
        offsets = np.add.outer(offsets, np.arange(n, dtype=np.int64) * st)
    cells = np.add.outer(offsets.ravel(), np.arange(x.itemsize)).ravel()
    mine[cells[(cells >= 0) & (cells < mine.size)]] = True
    return memory, start, memory[start:stop].copy(), mine


def _replace(tree, side, shadow):
    """``tree`` (args or kwargs copies) with each array at a shadowed path replaced."""
    if isinstance(tree, dict):
        out = {}
        for k, v in tree.items():
            if (side, k) in shadow:
                out[k] = shadow[(side, k)]
            elif type(v) in (list, tuple):
                out[k] = type(v)(shadow.get((side, k, j), x) for j, x in enumerate(v))
            else:
                out[k] = v
        return out
    out = []
    for i, v in enumerate(tree):
        if (side, i) in shadow:
            out.append(shadow[(side, i)])
        elif type(v) in (list, tuple):
            out.append(type(v)(shadow.get((side, i, j), x) for j, x in enumerate(v)))
        else:
            out.append(v)
    return tuple(out)


def _span(a):
    lo = hi = array_address(a)
    for n, s in zip(a.shape, a.strides):
        if n == 0:
            return lo, lo
        if s > 0:
            hi += s * (n - 1)
        else:
            lo += s * (n - 1)
    return lo, hi + a.itemsize


def _aligned(nbytes, phase):
    raw = np.empty(nbytes + 128, np.uint8)
    start = (phase - array_address(raw)) % 64
    return raw[start:start + nbytes]


def differences(got, expected, exact=True):
    """``(count, first index, got value, expected value)`` of the elements where ``got``
    and ``expected`` differ, or None."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return (int(got.size), (), "shape " + str(got.shape), "shape " + str(expected.shape))
    kind = got.dtype.kind
    if kind in "fc":
        g = got.astype(got.dtype.newbyteorder("="))
        e = expected.astype(expected.dtype.newbyteorder("="))
        parts = [(g.real, e.real), (g.imag, e.imag)] if kind == "c" else [(g, e)]
        bad = np.zeros(got.shape, bool)
        for gp, ep in parts:
            ok = (gp == ep) | (np.isnan(gp) & np.isnan(ep))
            if not exact:
                eps = np.finfo(gp.dtype).eps
                finite = np.isfinite(ep) & np.isfinite(gp)
                scale = max(float(np.max(np.abs(ep[finite]), initial=0)),
                            float(np.max(np.abs(gp[finite]), initial=0)))
                with np.errstate(all="ignore"):
                    ok |= finite & (np.abs(gp - ep) <= 64 * eps * scale)
            bad |= ~ok
    elif kind in "biuSUmM":
        bad = np.asarray(got != expected)
    else:   # structured and void: bytes
        gb = np.ascontiguousarray(got).view(np.uint8).reshape(got.shape + (-1,))
        eb = np.ascontiguousarray(expected).view(np.uint8).reshape(got.shape + (-1,))
        bad = (gb != eb).any(axis=-1)
    count = int(np.count_nonzero(bad))
    if not count:
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if got.ndim else ()
    return count, index, _plain(got[index]), _plain(expected[index])


def _plain(x):
    return x.item() if hasattr(x, "item") and np.ndim(x) == 0 else np.asarray(x).tolist()


class DuplicateCheck:
    """Repeated indices in one scattered write: which value lands where depends on NumPy's
    order (NumPy documents none). Found before the operation; after it, the value that
    landed is read back for the example."""

    __slots__ = ("outcome", "target", "address")

    def __init__(self, outcome, target, address):
        self.outcome, self.target, self.address = outcome, target, address

    def run(self):
        outcome, target, self.target = self.outcome, self.target, None
        if outcome.example is None:
            return outcome
        index = index_of_address(target, self.address)
        if index is None:
            return outcome
        got = _plain(target[index])
        return Verdict(outcome.severity, outcome.kind, outcome.differs,
                       (index, got, outcome.example[2]), outcome.written, False)


def index_of_address(a, address):
    """The index of ``a``'s element starting at ``address`` (by enumeration), or None."""
    from .memory import element_addresses
    if a.size > 1 << 22:
        return None
    hits = np.argwhere(element_addresses(a, Ellipsis) == address)
    return tuple(int(i) for i in hits[0]) if hits.size else None


def duplicate_values(target, addresses, values, accumulate=False):
    """A :class:`DuplicateCheck` when ``addresses`` (start address per written element, in
    the order of ``values()``) repeat: ``wrong`` where the repeats write different values,
    and for an augmented assignment (``accumulate``) a ``hazard`` where they write the same
    (``a[i] += 1`` with ``i`` repeated adds once, not once per repeat); None when nothing
    repeats."""
    flat = np.ravel(addresses)
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    repeat = ordered[1:] == ordered[:-1]
    if not repeat.any():
        return None
    with quiet():   # the values as they land: cast to the target's dtype
        vals = np.ravel(np.asarray(values()).astype(target.dtype, casting="unsafe")) \
            if target is not None else np.ravel(np.asarray(values()))
    if vals.size != flat.size:
        return None
    vals = vals[order]
    starts = np.flatnonzero(np.r_[True, ~repeat])
    ends = np.r_[starts[1:], ordered.size]
    differing, first = 0, None
    for s, e in zip(starts, ends):
        if e - s < 2:
            continue
        group = vals[s:e]
        if (group != group[0]).any():
            differing += 1
            if first is None:
                first = (int(ordered[s]), [_plain(x) for x in group])
    if differing:
        return DuplicateCheck(Verdict("wrong", "duplicate-index", differing,
                                      (None, None, first[1]), (0,), False), target, first[0])
    if accumulate:
        return DuplicateCheck(Verdict("hazard", "duplicate-index", 0, None, (0,), False),
                              None, None)
    return None


def assign(d, v):
    d[...] = v


def flat_assign(a, k, v):
    a.flat[k] = v
