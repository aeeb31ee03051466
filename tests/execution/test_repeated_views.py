"""Issue 28: views that reach a few elements through enormous numbers of indices (zero
strides, overlapping windows). Filling them and tracking value flow through them costs the
elements they span, not their indices; running a kernel over more than
``MAX_REPEATED_INDICES`` repeated indices is refused before anything runs. Oracles: NumPy's
own writes through ``as_strided`` arrays (small cases) and brute-force element sets."""
import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.core.view import MAX_REPEATED_INDICES
from aliasflow.io import loads_program


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 12), data=st.data(), dtype=st.sampled_from(["float32", "int8"]))
def test_fill_writes_what_numpy_writes_through_the_same_window(n, data, dtype):
    ndim = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.integers(1, 4)) for _ in range(ndim))
    stride = tuple(data.draw(st.integers(0, 3)) for _ in range(ndim))
    offset = data.draw(st.integers(0, n - 1))
    if offset + sum(s * (k - 1) for s, k in zip(stride, shape)) >= n:
        return
    t = af.Tensor("T", (n,), dtype, data=np.arange(n) % 7)
    expect = t.data.copy()
    isz = expect.itemsize
    np.lib.stride_tricks.as_strided(expect[offset:], shape, [s * isz for s in stride])[...] = 5
    af.run([af.FillOperation("f", 5).set_outputs(t.as_strided(shape, stride, offset))])
    np.testing.assert_array_equal(t.data, expect)


def test_filling_2_to_the_62_indices_of_63_elements_writes_them_once():
    t = af.Tensor("T", (64,))
    windows = t.as_strided((2,) * 62, (1,) * 62)               # 2**62 indices, 63 elements
    assert windows.repeats and windows.size == 2**62
    everywhere = t.as_strided((2**40, 3), (0, 1), 10)          # 2**40 copies of 3 elements
    af.run([af.FillOperation("w", 2.0).set_outputs(windows),
            af.FillOperation("e", 3.0).set_outputs(everywhere)])
    expect = np.zeros(64, np.float32)
    expect[:63] = 2.0
    expect[10:13] = 3.0
    np.testing.assert_array_equal(t.data, expect)


def test_value_flow_through_repeating_writes_is_bounded_and_exact():
    t = af.Tensor("T", (16,))
    ops = [af.FillOperation("w", 1.0).set_outputs(t.as_strided((2**40, 2), (0, 3), 1)),
           af.FillOperation("v", 2.0).set_outputs(t.as_strided((2,) * 10, (1,) * 10, 5)),
           af.TransformOperation("r").set_inputs(t.view())]
    flows = {f.writer: f.elements.tolist() for f in af.value_flow(ops, "r")}
    w = {1 + 3 * j for j in range(2)}                           # brute force, small forms
    v = {5 + sum(bits) for bits in itertools.product((0, 1), repeat=10)}
    assert flows == {None: sorted(set(range(16)) - w - v), "w": sorted(w - v),
                     "v": sorted(v)}


def test_reading_more_than_the_limit_of_repeated_indices_is_refused_before_running():
    t = af.Tensor("T", (4,), data=[1, 2, 3, 4])
    u = af.Tensor("U", (4,))
    huge = t.as_strided((2**40,), (0,), 1)
    ops = [af.FillOperation("first", 9.0).set_outputs(u[:]),
           af.ReduceOperation("total").set_inputs(huge)]
    graph = af.analyze(ops)                                    # analysis takes any size
    assert [d.kind for d in graph.dependencies] == []
    with pytest.raises(af.OpRefused, match=r"'total'.*repeats its elements over "
                                           r"1099511627776 indices"):
        af.run(ops)
    assert not u.data.any()                                    # nothing ran
    fine = t.as_strided((1000,), (0,), 1)
    af.run([af.ReduceOperation("sum").set_inputs(fine)])
    assert MAX_REPEATED_INDICES >= 2**20


def test_a_program_file_of_repeating_views_loads_analyses_and_runs():
    doc = {"format": "aliasflow-program", "version": 1,
           "tensors": [{"name": "T", "shape": [4], "init": {"data": [1, 2, 3, 4]}}],
           "views": [{"name": "B", "of": "T", "as_strided": {"shape": [2**31, 2**31, 1],
                                                              "stride": [0, 0, 1]}},
                     {"name": "W", "of": "T", "as_strided": {"shape": [2] * 40,
                                                              "stride": [0] * 39 + [1]}}],
           "ops": [{"name": "f", "kind": "fill", "fill_value": 5, "outputs": ["B"]},
                   {"name": "g", "kind": "fill", "fill_value": 6, "outputs": ["W"]},
                   {"name": "s", "kind": "reduce", "inputs": ["B"]}]}
    p = loads_program(json.dumps(doc))
    af.analyze(p.ops, complete=True)
    for op in p.ops:
        af.value_flow(p.ops, op)
    with pytest.raises(af.OpRefused, match="'s'"):
        af.run(p.ops)
    af.run(p.ops[:2])
    assert p.tensors["T"].data.tolist() == [6, 6, 3, 4]
    # brute force on the small equivalent: W touches elements 0 and 1 only
    assert sorted({i for i in itertools.chain([0, 1])}) == p.views["W"].footprint().tolist()


@pytest.mark.parametrize("workers", [1, 2])
def test_an_empty_view_numpy_cannot_hold_is_refused_before_any_op_runs(workers):
    """An empty view whose other axes multiply past what a byte count holds (NumPy refuses
    to make even the empty array): a clean error naming the view, nothing written."""
    t = af.Tensor("T", (4,), "float32", data=np.zeros(4, np.float32))
    empty = af.TensorView("E", t, 0, (0, 2**62), (1, 1))
    ops = [af.FillOperation("first", 1.0).set_outputs(t[0:2]),
           af.TransformOperation("t", "negative").set_inputs(empty).set_outputs(empty)]
    with pytest.raises(af.AliasflowError, match=r"view 'E': NumPy cannot make an array of "
                                                 r"shape \(0, 4611686018427387904\)"):
        af.run(ops, workers=workers)
    assert t.data.tolist() == [0.0] * 4
