"""View-level overlap API against brute force."""

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import aliasflow as af
from aliasflow.analysis.overlap import (Overlap, check_memory_overlap, has_internal_overlap,
                                        memory_meets, overlap)


def mk(name, tensor, offset, shape, stride):
    return af.TensorView(name, tensor, offset, tuple(shape), tuple(stride))


def tensor(name, shape, dtype=np.float32):
    return af.Tensor(name, shape, dtype)


def elements(v):
    return {v.offset + sum(s * i for s, i in zip(v.stride, idx))
            for idx in itertools.product(*[range(n) for n in v.shape])}


def test_seed_complex_example():
    A = tensor("A", (4, 4))
    B = tensor("B", (3, 3))
    a1 = mk("viewA1", A, 0, (3, 3), (4, 1))
    a2 = mk("viewA2", A, 5, (2, 2), (4, 1))
    a3 = mk("viewA3", A, 10, (2, 2), (4, 1))
    b1 = mk("viewB1", B, 0, (2, 2), (3, 1))
    ov = overlap(a1, a2)
    assert ov and ov.count == 4 and ov.elements().tolist() == [5, 6, 9, 10]
    assert overlap(a1, a3).elements().tolist() == [10]
    assert overlap(a2, a3).elements().tolist() == [10]
    a4 = mk("viewA4", A, 0, (2, 2), (4, 1))
    assert not overlap(a4, a3) and overlap(a4, a3).count == 0
    assert overlap(a4, a3).witness is None and overlap(a4, a3).elements().size == 0
    assert not overlap(a1, b1) and not check_memory_overlap(a1, b1)
    assert not memory_meets(a1, b1) and memory_meets(a1, a2)
    assert check_memory_overlap(a1, a3)
    assert ov.views == (a1, a2)
    assert "viewA1" in repr(ov) and "viewA2" in repr(ov)
    with pytest.raises(AttributeError):
        ov.count = 3
    assert isinstance(ov, Overlap)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_views_against_brute_force(data):
    dtype = data.draw(st.sampled_from([np.int8, np.float32, np.float64]))
    T = tensor("T", (100,), dtype)

    def view(name):
        nd = data.draw(st.integers(0, 3))
        shape = [data.draw(st.integers(0, 4)) for _ in range(nd)]
        stride = [data.draw(st.integers(-9, 9)) for _ in range(nd)]
        try:
            return mk(name, T, data.draw(st.integers(0, 60)), shape, stride)
        except af.AliasflowError:  # outside the storage
            assume(False)

    v1, v2 = view("v1"), view("v2")
    e1, e2 = elements(v1), elements(v2)
    shared = e1 & e2
    ov = overlap(v1, v2)
    assert bool(ov) == bool(shared) == check_memory_overlap(v1, v2)
    assert ov.count == len(shared)
    assert ov.elements().tolist() == sorted(shared)
    if shared:
        x, y = ov.witness
        assert len(x) == len(v1.shape) and len(y) == len(v2.shape)
        c1 = v1.offset + sum(s * i for s, i in zip(v1.stride, x))
        c2 = v2.offset + sum(s * i for s, i in zip(v2.stride, y))
        assert c1 == c2
    n = int(np.prod(v1.shape)) if v1.shape else 1
    assert has_internal_overlap(v1) == (len(e1) < n)


def test_huge_views_do_not_allocate():
    # a (2**20, 2**20) float64 tensor with no memory behind it
    T = af.Tensor.virtual("big", (2**40,), np.float64)
    W = 2**20
    top = mk("top", T, 0, (W // 2, W), (W, 1))
    bottom = mk("bottom", T, W * W // 2, (W // 2, W), (W, 1))
    cols = mk("evens", T, 0, (W, W // 2), (W, 2))
    assert not overlap(top, bottom)
    ov = overlap(top, cols)
    assert ov.count == (W // 2) * (W // 2)
    assert has_internal_overlap(mk("win", T, 0, (W - 7, 8), (1, 1)))
    assert not has_internal_overlap(top)
