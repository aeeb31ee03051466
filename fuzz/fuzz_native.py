"""Fuzz the compiled solver core at its Python boundary, differentially against the reference.

Each input (a byte string) is decoded into one of:

* garbage: arbitrary Python objects (ints of any size, bools, int subclasses, floats, lists,
  tuples of the wrong length or nesting, None, strings) passed to ``_native.intersects`` /
  ``_native.has_internal_overlap`` with any argument count: the only acceptable outcomes
  are True, False, None, NotImplemented or a TypeError;
* differential: valid layouts of up to 10 dims with values near 0, near powers of two up to
  2**66 and negative/zero strides, with a random work budget: whenever the compiled core
  decides (True/False), its answer must equal the pure-Python reference's;
* diophantine: NumPy's random test problems (3-9 terms), as one layout against a cell or
  split between two layouts, compared with the reference in the same way;
* covers: the compiled ``covers`` rules and product form (``_native.covers``,
  ``_native._product_form``) on the differential layouts, against ``api._covers_by_rules``
  and ``radix.product_form``;
* count3: the three-term solution count (``_native._count3``) on garbage ints and, on the
  search's own kind of inputs, against the reference's ``search._count3``.

Run with atheris when it is installed, else with random bytes::

    python fuzz/fuzz_native.py -max_total_time=300        # atheris / libFuzzer flags
    python fuzz/fuzz_native.py --random 300               # no atheris: 300 s of random inputs

To look for memory errors and undefined behaviour, build the extension with
``AF_NATIVE_SANITIZE=1`` and preload the sanitizer runtime (see fuzz/README.md).
"""

from __future__ import annotations

import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from aliasflow.solver import _native, api  # noqa: E402

MAX_PURE_INDICES = 2**90  # keep the reference (and isl behind it) quick


class Bytes:
    """Consumes a byte string as a stream of small decisions (zeros when it runs out)."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        b = self.data[self.pos]
        self.pos += 1
        return b

    def uint(self, nbytes: int) -> int:
        v = 0
        for _ in range(nbytes):
            v = (v << 8) | self.byte()
        return v

    def pick(self, n: int) -> int:
        return self.byte() % n


class MyInt(int):
    pass


def edge_int(src: Bytes, signed=True) -> int:
    kind = src.pick(6)
    if kind == 0:
        v = src.pick(25) - 12
    elif kind == 1:
        v = (1 << src.pick(67)) + src.pick(5) - 2
    elif kind == 2:
        v = src.uint(8) - (1 << 63)
    elif kind == 3:
        v = src.uint(2)
    elif kind == 4:
        v = (1 << 62) + src.pick(5) - 2
    else:
        v = src.uint(src.pick(9))
    if signed and src.pick(2):
        v = -v
    return v


def garbage(src: Bytes, depth=0):
    kind = src.pick(12)
    if kind <= 3:
        return edge_int(src)
    if kind == 4:
        return [True, False, None, 1.5, float("nan"), "3", b"x", MyInt(src.pick(9))][src.pick(8)]
    if kind == 5 and depth < 3:
        return [garbage(src, depth + 1) for _ in range(src.pick(5))]
    if kind <= 9 and depth < 3:
        n = src.pick(6) if src.pick(4) else src.pick(70)
        return tuple(garbage(src, depth + 1) if src.pick(4) == 0 else edge_int(src)
                     for _ in range(n))
    if depth < 3:  # a nearly valid layout with one thing wrong
        off, shape, stride = layout(src)
        parts = [off, shape, stride]
        parts[src.pick(3)] = garbage(src, depth + 1)
        return tuple(parts)
    return None


def layout(src: Bytes):
    nd = src.pick(11)
    shape = tuple(src.pick(6) if src.pick(3) else abs(edge_int(src, signed=False))
                  for _ in range(nd))
    stride = tuple(src.pick(9) - 4 if src.pick(3) == 0 else edge_int(src) for _ in range(nd))
    return edge_int(src), shape, stride


def related(src: Bytes, a):
    pool = list(a[2]) + [1, 2**31, 2**62]
    nd = src.pick(11)
    stride = tuple(pool[src.pick(len(pool))] * (src.pick(5) - 2) for _ in range(nd))
    shape = tuple(1 + src.pick(6) for _ in range(nd))
    return a[0] + edge_int(src), shape, stride


def indices(lay):
    n = 1
    for x in lay[1]:
        n *= x
    return n


def check_garbage(src: Bytes):
    nargs = src.pick(5)
    args = [garbage(src) for _ in range(nargs)]
    fn = [_native.intersects, _native.has_internal_overlap, _native.covers,
          _native._product_form, _native.data_address][src.pick(5)]
    try:
        r = fn(*args)
    except TypeError:
        return
    except OverflowError:  # _product_form's "does not fit"
        assert fn is _native._product_form
        return
    if fn is _native.data_address:  # garbage exports no buffer, except bytes
        assert r is None or (type(args[0]) is bytes and type(r) is int), (args, r)
        return
    if fn is _native._product_form:
        assert r is None or type(r) is tuple, (args, r)
        return
    assert r is True or r is False or r is None or r is NotImplemented, (fn, args, r)


def check_differential(src: Bytes):
    a = layout(src)
    b = related(src, a) if src.pick(2) else layout(src)
    budget = [_native.DEFAULT_BUDGET, 1 + src.pick(50), 400_000][src.pick(3)]
    got = _native.intersects(a, b, budget)
    got_i = _native.has_internal_overlap(a, budget)
    if max(indices(a), indices(b)) > MAX_PURE_INDICES:
        return
    if isinstance(got, bool):
        ref = api._pair(api._nf(a), api._nf(b), False) is not None
        assert got == ref, ("intersects", a, b, got, ref)
    if isinstance(got_i, bool):
        ref = api._internal(*a) is not None
        assert got_i == ref, ("has_internal_overlap", a, got_i, ref)
    check_covers(a, b)


def check_covers(a, b):
    """The compiled covers rules answer as the reference's, or False where the reference
    has no rule and b has a cell outside a (checked with the exact solver, cell by cell for
    small b); the compiled product form is the reference's."""
    check_product_form(a, b)
    got = _native.covers(a, b)
    if got is None:
        return
    ref = api._covers_by_rules(api._nf(a), api._nf(b))
    if ref is None:
        assert got is False or got is NotImplemented, ("covers", a, b, got)
        if got is False and indices(b) <= 4096:
            try:
                cells = api.footprint(b).tolist()
            except OverflowError:  # cells past int64: the footprint is not enumerated
                cells = None
            if cells is not None:
                assert any(not api.intersects(a, (c, (), ())) for c in cells), ("covers", a, b)
    else:
        assert got is ref, ("covers", a, b, got, ref)


def check_product_form(a, b):
    """The compiled product form is radix.product_form's: the same chain and progressions
    (so every candidate chain and level drop is followed alike), or None alike."""
    from aliasflow.solver.radix import product_form

    try:
        got = _native._product_form(a, b)
    except OverflowError:
        return
    na, nb = api._nf(a), api._nf(b)
    want = None if na is None or nb is None else product_form(na[:3], nb[:3])
    if want is not None:
        want = (tuple(want[0]), tuple(want[1][0]), tuple(want[1][1]))
    assert got == want, ("_product_form", a, b, got, want)


def check_diophantine(src: Bytes):
    """NumPy's ``test_diophantine_fuzz`` problems (3-9 terms, coefficients and bounds up to
    ``k**6``) as a layout against one cell, and as two layouts sharing the terms."""
    nd = 3 + src.pick(7)
    a_max = 1 + src.pick(11) ** 6
    u_max = src.pick(11) ** 6
    A = tuple(1 + src.uint(3) % a_max for _ in range(nd))
    U = tuple(src.uint(3) % (u_max + 2) for _ in range(nd))
    top = sum(x * u for x, u in zip(A, U))
    b = src.uint(6) % (top + 3) - 1
    lay = (0, tuple(u + 1 for u in U), A)
    if src.pick(2):
        other = (b, (), ())
    else:  # split the terms between two layouts (the second one flipped)
        cut = src.pick(nd + 1)
        lay = (0, lay[1][:cut], A[:cut])
        rest = tuple(-x for x in A[cut:])
        other = (b + sum(x * u for x, u in zip(A[cut:], U[cut:])), tuple(u + 1 for u in U[cut:]),
                 rest)
    got = _native.intersects(lay, other)
    if isinstance(got, bool):
        ref = api._pair(api._nf(lay), api._nf(other), False) is not None
        assert got == ref, ("intersects", lay, other, got, ref)


def check_count3(src: Bytes):
    """The three-term solution count (a test hook of the compiled module): any ints give an
    int, None or a TypeError; on the search's own inputs it equals the reference's count."""
    from math import gcd

    from aliasflow.solver.search import _count3

    if src.pick(2):
        args = [edge_int(src) for _ in range(9)]
        try:
            r = _native._count3(*args)
        except TypeError:
            return
        assert r is None or type(r) is int, (args, r)
        return
    c = [1 + src.uint(src.pick(4)) for _ in range(3)]
    u = [src.uint(src.pick(4)) for _ in range(2)]
    g12, g = gcd(c[0], c[1]), gcd(gcd(c[0], c[1]), c[2])
    step = g12 // g
    d = src.uint(src.pick(9))
    # z3 = s + step*j: the search's branch values (congruent, leaving the pair in range)
    lo = max(0, -(-(d - c[0] * u[0] - c[1] * u[1]) // c[2]))
    hi = d // c[2]
    if d % g or lo > hi:
        return
    r = (d // g) % step * pow(c[2] // g, -1, step) % step if step > 1 else 0
    s = lo + (r - lo) % step
    count = min((hi - s) // step + 1, src.uint(3)) if s <= hi else 0
    args = (c[0], u[0], c[1], u[1], c[2], s, step, count, d)
    got = _native._count3(*args)
    if got is not None:
        assert got == _count3(*args), ("_count3", args, got)


def one_input(data: bytes):
    src = Bytes(data)
    kind = src.pick(5)
    if kind == 0:
        check_garbage(src)
    elif kind == 3:
        check_diophantine(src)
    elif kind == 4:
        check_count3(src)
    else:
        check_differential(src)


def main(argv):
    if len(argv) >= 3 and argv[1] == "--random":
        seconds = float(argv[2])
        rng = random.Random(int(argv[3]) if len(argv) > 3 else None)
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            one_input(rng.randbytes(rng.randint(0, 256)))
            n += 1
        print(f"fuzz_native: {n} random inputs in {seconds:g} s, no failure")
        return 0
    import atheris

    # Neither the C++ code (GCC builds it) nor the Python here is coverage-instrumented, so
    # atheris/libFuzzer mutates inputs without coverage feedback: a driver, like --random.
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
