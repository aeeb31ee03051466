"""The compiled ``covers`` rules (``solver/_native_src/radix.hpp``) against the readable
reference (``api._covers_by_rules`` over ``radix.product_form``) and brute-force footprints.

The analysis retires a record exactly when ``covers`` says so, and its compiled walk asks
the compiled rules: they must answer as the reference's rules do (the same product form
found, or none), except that a corner cell of ``b`` outside ``a`` may answer False where
the reference finds no rule (that False is the reference's answer too, from enumeration
or from giving up).
"""
import sys
from pathlib import Path

import pytest
from repo import ROOT
from hypothesis import HealthCheck, given, settings, strategies as st

from aliasflow.solver import api
from aliasflow.solver.radix import product_form

from test_solver import brute_fp, small_layout
from test_solver_oracles import layout_of, realistic_pair, sliced_view, transformed, parents, whole

nat = api._native
pytestmark = pytest.mark.skipif(nat is None, reason="compiled solver not loaded")
CFG = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))

sys.path.insert(0, str(ROOT / "fuzz"))
try:  # its differential checks against the reference, shared with the fuzzer
    from fuzz_native import check_covers, check_product_form as same_product_form
finally:
    sys.path.pop(0)


def check(a, b, brute=True):
    """The fuzzer's check against the reference's rules, then brute-force footprints for
    every answer the compiled rules give."""
    check_covers(a, b)
    if not brute:
        return
    got = nat.covers(a, b)
    if got is True:
        assert brute_fp(b) <= brute_fp(a), (a, b)
    elif got is False:
        assert not brute_fp(b) <= brute_fp(a), (a, b)


@CFG
@given(small_layout(), small_layout())
def test_random_small_layouts(a, b):
    check(a, b)
    check(b, a)


@CFG
@given(realistic_pair(max_log2=10))
def test_views_of_one_parent(pair):
    a, b = (layout_of(v) for v in pair)
    check(a, b)
    check(b, a)


@st.composite
def nested_pair(draw):
    """b cut further out of a (a sub-box, stepped, flipped), or a window over a's dims:
    the product form's chains and level drops, with answers both ways."""
    shape, stride = draw(parents(12, 6))
    a = draw(transformed(draw(sliced_view(whole(shape, stride)))))
    b = draw(sliced_view(a))
    if draw(st.booleans()):
        b = draw(sliced_view(b))
    return a, b


@CFG
@given(nested_pair())
def test_sub_boxes_and_their_parents(pair):
    a, b = (layout_of(v) for v in pair)
    check(a, b)
    check(b, a)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(realistic_pair(max_log2=60, max_dim_log2=30))
def test_large_parents(pair):
    """Values near the compiled range (no brute force: the reference's rules decide)."""
    a, b = (layout_of(v) for v in pair)
    check(a, b, brute=False)
    check(b, a, brute=False)


def test_answers_that_need_a_product_form():
    W = 2304
    block = (64 * 2, (512, 64), (W, 1))  # a head's column block
    rows = (64 * 2 + 128 * W, (64, 64), (W, 1))  # 64 of its rows
    assert nat.covers(block, rows) is True
    assert nat.covers(rows, block) is False
    other = (64 * 3, (64, 64), (W, 1))  # the next head's rows
    assert nat.covers(block, other) is False


@CFG
@given(st.data())
def test_product_forms_of_stepped_and_merged_views(data):
    """Parents whose strides hide in merged or stepped dims, where the later candidate
    chains (from gcds, from the strides alone, bottom-up) are the ones that decompose."""
    shape, stride = data.draw(parents(14, 5))
    views = []
    for _ in range(2):
        v = data.draw(sliced_view(whole(shape, stride)))
        if data.draw(st.booleans()):
            v = data.draw(transformed(v))
        views.append(layout_of(v))
    a, b = views
    for x, y in ((a, b), (b, a), (a, a)):
        same_product_form(x, y)


# Pairs the reference decomposes only with its second, third or fourth candidate chain
# (found by a random search: the first chain serves almost every pair)
LATER_CHAINS = [
    ((54, (2, 4, 5), (16, 24, -8)), (54, (2, 6, 6), (-6, -24, -48))),
    ((81, (5, 2), (-6, 2)), (100, (5, 1, 6), (-24, 3, 24))),
    ((54, (5, 3, 1), (42, 1, -48)), (19, (2, 1, 5), (-12, 2, 12))),
]


@pytest.mark.parametrize("a, b", LATER_CHAINS)
def test_pairs_that_need_a_later_chain(a, b):
    assert product_form(api._nf(a)[:3], api._nf(b)[:3]) is not None
    same_product_form(a, b)
    check(a, b)


def test_boundary():
    for bad in [None, 1, (1, 2), (0, [1], (1,)), (0, (1,), (1.0,)), (0, (1, 2), (1,))]:
        with pytest.raises(TypeError):
            nat.covers(bad, (0, (1,), (1,)))
        with pytest.raises(TypeError):
            nat.covers((0, (1,), (1,)), bad)
    with pytest.raises(TypeError):
        nat.covers((0, (1,), (1,)))
    with pytest.raises(TypeError):
        nat._product_form((0, (1,), (1,)))
    with pytest.raises(OverflowError):
        nat._product_form((2 ** 70, (1,), (1,)), (0, (1,), (1,)))
    assert nat.covers((2 ** 70, (1,), (1,)), (0, (1,), (1,))) is None
    # a normal form past the checked range (its highest cell near 2^122)
    assert nat.covers((0, (2 ** 61, 2 ** 61), (2 ** 61, 1)), (0, (3,), (1,))) is None
