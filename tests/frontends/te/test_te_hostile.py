"""Issue 28: hostile shapes, indices, constants and loop bounds in aliasflow.te. Literals that
do not fit their dtype are refused as TVM refuses them (a Python int widens to int64 as in
TVM), loop domains must be integers, every size is checked before anything is allocated, and
whatever is accepted computes what NumPy computes."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow import te

HUGE = [2**31, 2**32, 2**40, 2**62, 2**63 - 1, 2**63, 2**64, 2**70, -2**63, -2**63 - 1]


@pytest.mark.parametrize("make, match", [
    (lambda: te.const(300, "int8"), "300 does not fit int8"),
    (lambda: te.const(2**70), "does not fit int64"),
    (lambda: te.const(2**40, "int32"), "does not fit int32"),
    (lambda: te.const(1e39, "float32"), "does not fit dtype float32"),
    (lambda: te.const(70000.0, "float16"), "does not fit dtype float16"),
    (lambda: te.const(float("nan"), "int32"), "not an integer"),
    (lambda: te.placeholder((2**70,)), "shape"),
    (lambda: te.placeholder((4,))[2**70], "does not fit int64"),
    (lambda: te.reduce_axis((0, 1.5)), "a loop domain is made of integers"),
    (lambda: te.var("i") * 1e39, "does not fit dtype float32"),
])
def test_literals_that_do_not_fit_are_refused(make, match):
    with pytest.raises(af.AliasflowError, match=match):
        make()


def test_a_python_int_beyond_int32_widens_to_int64_as_in_tvm():
    i = te.var("i")
    e = i + 2**32
    assert e.dtype == "int64" and isinstance(e.a, te.Cast)
    assert te.const(2**40).dtype == "int64" and te.const(5).dtype == "int32"
    assert (te.var("k", "int8") + 300).dtype == "int32"    # TVM: Cast("int32", k) + 300
    n = 3
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[(i + 2**32) % n], name="C")
    x = np.arange(n, dtype=np.float32) + 1
    out = np.zeros(n, np.float32)
    te.build([C], [A, C])(x, out)                          # used to wrap 2**32 to 0
    np.testing.assert_array_equal(out, x[(np.arange(n) + 2**32) % n])


def test_tvm_widens_and_refuses_the_same_literals():
    tvm = pytest.importorskip("tvm")
    from tvm import te as tte
    tir = pytest.importorskip("tvm.tirx")
    for var, value in [(("i", "int32"), 2**32), (("k", "int8"), 300), (("j", "int32"), 7)]:
        theirs = tte.var(*var) + value
        assert str(theirs.ty) == (te.var(*var) + value).dtype
    for value, dtype in [(300, "int8"), (2**40, "int32"), (2**70, None), (1e39, "float32"),
                         (70000.0, "float16")]:
        with pytest.raises(Exception):
            tir.const(value, dtype) if dtype else tir.const(value)
        with pytest.raises(af.AliasflowError):
            te.const(value, dtype)
    del tvm


def test_sizes_are_checked_before_anything_is_allocated():
    A = te.placeholder((4,), name="A")
    C = te.compute((2**40, 2**40), lambda i, j: A[0], name="C")
    with pytest.raises(af.AliasflowError, match="bytes"):
        te.lower([C])
    k = te.reduce_axis((0, 2**62), name="k")
    D = te.compute((1,), lambda i: te.sum(A[0] * 0 + 1, axis=k), name="D")
    with pytest.raises(af.AliasflowError, match="loop nest"):
        te.build([D], [A, D])(np.zeros(4, np.float32), np.zeros(1, np.float32))
    m = te.var("m")
    B = te.placeholder((m,), name="B")
    E = te.compute((m,), lambda i: B[i] * 2, name="E")
    with pytest.raises(af.AliasflowError, match="does not fit its dtype int32"):
        te.lower([E], binds={"m": 2**40})


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 4), bad=st.sampled_from(HUGE + [0, 1, 2, 3, 4, 5, -1, -4]),
       pick=st.integers(0, 2))
def test_reductions_and_offsets_compute_what_numpy_computes_or_are_refused(n, bad, pick):
    A = te.placeholder((n,), name="A")
    x = np.arange(n, dtype=np.float32) + 1
    try:
        if pick == 0:       # a reduction over 0..bad of A[k]
            k = te.reduce_axis((0, bad), name="k")
            C = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="C")
            out = np.zeros(1, np.float32)
            te.build([C], [A, C])(x, out)
            expect = np.array([x[:bad].sum()], np.float32)
        elif pick == 1:     # an offset index, wrapped back into A
            C = te.compute((n,), lambda i: A[(i + bad) % n], name="C")
            out = np.zeros(n, np.float32)
            te.build([C], [A, C])(x, out)
            expect = x[(np.arange(n) + bad) % n]
        else:               # a lowered program of a hostile shape, run by aliasflow
            if 64 < bad < 2**63:
                return      # a real allocation of that size: not for a unit test
            C = te.compute((bad,), lambda i: A[0] * 2, name="C")
            program = te.lower([C], arrays={A: x})
            af.run(program)
            out = program.views[C].numpy()
            expect = np.full(bad, x[0] * 2, np.float32)
    except af.AliasflowError:
        assert not (0 <= bad <= n if pick == 0 else -2**63 <= bad < 2**63 if pick == 1
                    else 0 <= bad <= 64), (pick, bad)
        return
    np.testing.assert_array_equal(out, expect)
