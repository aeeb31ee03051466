"""The compiled solver core (``aliasflow.solver._native``): built, safe at its boundary, and
answering exactly as the pure-Python reference (``api._pair`` / ``api._internal``) does.

The oracle tests in test_solver.py and test_solver_oracles.py run on both backends too.
"""

import os

import pytest
from repo import ROOT
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from aliasflow.solver import api

PURE = os.environ.get("AF_PURE", "") not in ("", "0")


def test_extension_built():
    """Fails when the extension did not build (unless AF_PURE=1 asks for pure Python)."""
    if PURE:
        assert api._native is None
        return
    from aliasflow.solver import _native  # the import error, if any, is the message

    assert api._native is _native


def test_walker_built():
    """The compiled dependency walk too (unless AF_PURE=1)."""
    from aliasflow.analysis import compiled
    if PURE:
        assert compiled.walker is None
        return
    from aliasflow.analysis import _walker  # the import error, if any, is the message

    assert compiled.walker is _walker


def test_ready_queue_extension_built():
    """Fails when the parallel runner's compiled ready queue did not build (unless
    AF_PURE=1); its tests are in test_ready.py."""
    from aliasflow.execution import ready

    if PURE:
        assert ready.NativeReadyQueue is None and ready.backend_name() == "pure"
        return
    from aliasflow.execution._ready import ReadyQueue  # the import error, if any, is the message

    assert ready.NativeReadyQueue is ReadyQueue and ready.backend_name() == "compiled"


native = api._native
needs_native = pytest.mark.skipif(native is None, reason="compiled backend not in use "
                                  "(AF_PURE=1, or not built: test_extension_built fails then)")


def pure_intersects(a, b):
    return api._pair(api._nf(a), api._nf(b), False) is not None


def pure_internal(a):
    return api._internal(*a) is not None


# ---------------------------------------------------------------- boundary

A = (0, (2, 2), (4, 1))


class MyInt(int):
    pass


@needs_native
@pytest.mark.parametrize("bad", [
    [0, (2,), (1,)], (0, [2], (1,)), (0, (2,), [1]), (0, (2,), (1,), 0), (0, (2,)), None, 3,
    (0.0, (2,), (1,)), (0, (2.0,), (1,)), (True, (2,), (1,)), (0, (2,), (False,)),
    (MyInt(0), (2,), (1,)), (0, (MyInt(2),), (1,)), (0, (2, 3), (1,)), ("0", (2,), (1,)),
    (0, (1,) * 65, (1,) * 65), (0, (2,), (None,)),
])
def test_boundary_rejects_anything_but_exact_tuples_of_ints(bad):
    with pytest.raises(TypeError):
        native.intersects(bad, A)
    with pytest.raises(TypeError):
        native.intersects(A, bad)
    with pytest.raises(TypeError):
        native.has_internal_overlap(bad)


@needs_native
def test_boundary_argument_counts_and_budget():
    for args in [(), (A,), (A, A, 1, 2)]:
        with pytest.raises(TypeError):
            native.intersects(*args)
    for args in [(), (A, 1, 2)]:
        with pytest.raises(TypeError):
            native.has_internal_overlap(*args)
    for budget in [-1, 1.5, "x", 2**70]:
        with pytest.raises(TypeError):
            native.intersects(A, A, budget)
    assert native.intersects(A, A, 0) is True


@needs_native
def test_64_dims_accepted():
    lay = (0, (2,) * 64, tuple(2**k for k in range(64)))
    assert native.intersects(lay, (2**62, (1,), (1,))) is None  # beyond the checked range
    lay = (0, (2,) * 64, (1,) * 64)
    assert native.intersects(lay, (64, (1,), (1,))) is True
    assert native.intersects(lay, (65, (1,), (1,))) is False
    assert native.has_internal_overlap(lay) is True


@needs_native
@pytest.mark.parametrize("lay", [
    (2**62 + 1, (2,), (1,)), (0, (2**63,), (1,)), (0, (2,), (-2**62 - 1,)), (-2**100, (1,), (1,)),
    (0, (-1,), (1,)), (0, (2**62, 2**62), (2**62, 1)),
])
def test_undecided_values_go_back_to_python(lay):
    assert native.intersects(lay, A) is None
    assert native.intersects(A, lay) is None
    assert native.has_internal_overlap(lay) is None


@needs_native
def test_budget_exhaustion_is_undecided():
    hard = ((0, (1049,) * 3, (36674, 61119, 85569)),
            (64023025, (1049, 1049, 1), (12223, 12224, 1)))
    assert native.intersects(*hard, 10) is NotImplemented
    assert native.has_internal_overlap((0, (1000, 1000, 1000), (999, 1001, 1000)), 1) \
        is NotImplemented
    # the API then asks isl: same answers as the pure reference
    assert api.intersects(*hard) == pure_intersects(*hard)


@needs_native
def test_api_falls_back_on_undecided_and_on_non_exact_input():
    big = 2**80
    assert native.intersects((big, (3,), (big,)), (3 * big, (2,), (1,))) is None
    assert api.intersects((big, (3,), (big,)), (3 * big, (2,), (1,))) is True
    assert api.intersects((big, (3,), (big,)), (3 * big + 1, (2,), (1,))) is False
    assert api.intersects((0, [2, 2], [4, 1]), (5, (1,), (1,))) is True  # lists: Python path
    assert api.has_internal_overlap((0, [3, 3], [1, 1])) is True


# ---------------------------------------------------------------- differential

def _edge_ints(lo, hi):
    """Integers in [lo, hi], biased to edges: small, powers of two and their neighbours."""
    small = st.integers(max(lo, -20), min(hi, 20))
    top = max(abs(lo), abs(hi)).bit_length()
    powers = st.builds(lambda k, d, sgn: min(hi, max(lo, sgn * (2**k) + d)), st.integers(0, top),
                       st.integers(-2, 2), st.sampled_from([1, -1] if lo < 0 else [1]))
    return st.one_of(small, powers, st.integers(lo, hi))


@st.composite
def layouts(draw, max_dims=10, huge=True):
    nd = draw(st.integers(0, max_dims))
    size_hi = 2**64 if huge else 40
    shape = tuple(draw(st.one_of(st.integers(0, 5), _edge_ints(0, size_hi))) for _ in range(nd))
    lim = 2**64 if huge else 2**20
    stride = tuple(draw(st.one_of(st.integers(-12, 12), _edge_ints(-lim, lim)))
                   for _ in range(nd))
    off = draw(_edge_ints(-lim, lim))
    return off, shape, stride


@st.composite
def related_pair(draw):
    """Two layouts sharing strides (like views of one parent), values of any size."""
    a = draw(layouts())
    nd = draw(st.integers(0, 10))
    pool = list(a[2]) + [1, 2**62, 2**63, -(2**31)]
    stride = tuple(draw(st.sampled_from(pool)) * draw(st.sampled_from([1, -1, 2, 3]))
                   for _ in range(nd))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(nd))
    off = a[0] + draw(_edge_ints(-2**64, 2**64))
    return a, (off, shape, stride)


DIFF = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


def _cheap_enough(*lays):
    """Keep the pure reference (and isl behind it) fast: bounded index counts."""
    for off, shape, stride in lays:
        n = 1
        for x in shape:
            n *= x
        if n > 2**90:
            return False
    return True


@needs_native
@DIFF
@given(st.one_of(st.tuples(layouts(), layouts()), related_pair()))
def test_intersects_native_equals_pure(pair):
    a, b = pair
    assume(_cheap_enough(a, b))
    got = native.intersects(a, b)
    assert got is None or got is NotImplemented or isinstance(got, bool)
    if isinstance(got, bool):
        assert got == pure_intersects(a, b)
        swapped = native.intersects(b, a)  # the search budget may run out in one order only
        assert swapped is NotImplemented or swapped == got


@needs_native
@DIFF
@given(layouts())
def test_internal_native_equals_pure(a):
    assume(_cheap_enough(a))
    got = native.has_internal_overlap(a)
    assert got is None or got is NotImplemented or isinstance(got, bool)
    if isinstance(got, bool):
        assert got == pure_internal(a)


@needs_native
@DIFF
@given(layouts(max_dims=6, huge=False), layouts(max_dims=6, huge=False))
def test_native_decides_small_values(a, b):
    """Within the checked range the compiled core must decide, not hand everything back."""
    nb = 10**9
    ri = native.intersects(a, b, nb)
    assert isinstance(ri, bool) and ri == pure_intersects(a, b)
    ro = native.has_internal_overlap(a, nb)
    assert isinstance(ro, bool) and ro == pure_internal(a)


@needs_native
def test_short_fuzz_run():
    """A few thousand inputs of fuzz/fuzz_native.py (garbage and differential), fixed seed."""
    import random
    import sys
    from pathlib import Path

    sys.path.insert(0, str(ROOT / "fuzz"))
    try:
        import fuzz_native
    finally:
        sys.path.pop(0)
    rng = random.Random(20261122)
    for _ in range(3000):
        fuzz_native.one_input(rng.randbytes(rng.randint(0, 200)))


@needs_native
def test_data_address_is_the_arrays_own_and_refuses_garbage_calmly():
    """``data_address``: the first element's address as NumPy reports it, for any strides,
    dtype, read-only flag; None for objects without a strided buffer; wrong argument counts
    raise."""
    import numpy as np
    base = np.arange(60.0).reshape(6, 10)
    ro = base.copy()
    ro.flags.writeable = False
    for arr in [base, base[2:, 3:9:2], base[::-1, ::-3], base.T, base[1:1], ro[1:],
                np.zeros(4, "M8[s]"), np.zeros(3, [("a", "i1"), ("b", "f8")]),
                np.zeros(5, ">f4")[1:], np.broadcast_to(base[0], (4, 10))]:
        assert native.data_address(arr) == arr.__array_interface__["data"][0]
    raw = bytearray(b"abcdef")
    assert native.data_address(memoryview(raw)[2:]) == native.data_address(raw) + 2
    for garbage in [None, 3, 1.5, "text", object(), [1, 2], np.float64(1.0).item()]:
        assert native.data_address(garbage) is None
    for args in [(), (base, base)]:
        with pytest.raises(TypeError):
            native.data_address(*args)


@needs_native
@pytest.mark.parametrize("huge", [(0, (2**62, 3), (2**62, 1)), (2**62, (4, 2**40), (-2**61, 2**22))])
def test_an_empty_layout_meets_nothing_in_either_order(huge):
    """Emptiness is decided before any arithmetic on the other side (which may overflow):
    the answer does not depend on the order of the two layouts."""
    empty = (0, (0, 5), (1, 1))
    assert pure_intersects(empty, huge) is False
    assert native.intersects(empty, huge) is False
    assert native.intersects(huge, empty) is False
