"""Big elementwise ops written straight into their output (``core.direct``) against NumPy.

The oracle is what ``execute`` promises: NumPy computes ``fn(*inputs)`` into a new array,
which is then copied into the output. The direct way must give the same bytes (NaN payloads
included), take the general way's errors, and leave the output untouched when a
floating-point error raises. ``MIN_SIZE`` is lowered so that small arrays take it too; each
test also checks that the direct way really ran (a spy counts its calls).
"""
import contextlib
import copy
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aliasflow as af
from aliasflow.core import direct, functions, primitives

from strategies import programs
from test_execution import numpy_reference, snapshot

UFUNCS = {**{k: f for k, f in functions.UNARY.items() if isinstance(f, np.ufunc)},
          **{k: f for k, f in functions.BINARY.items() if isinstance(f, np.ufunc)}}
DTYPES = ["float16", "float32", "float64", "complex64", "complex128", "int8", "int32",
          "uint16", "int64", ">f8", "bool"]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, np.inf, -np.inf, np.nan, 1e-310, 1e300, -7.25,
           np.pi, 100.0, 2.0 ** 31]


@contextlib.contextmanager
def direct_everywhere(min_size=0):
    """Every op at least ``min_size`` big takes the direct way where allowed; counts runs."""
    saved, real = direct.MIN_SIZE, direct.ufunc_into
    taken = []

    def spy(fn, inputs, out):
        ran = real(fn, inputs, out)
        taken.append(ran)
        return ran
    direct.MIN_SIZE = min_size
    primitives.ufunc_into = spy
    try:
        yield taken
    finally:
        direct.MIN_SIZE = saved
        primitives.ufunc_into = real


@st.composite
def cases(draw):
    """A registry ufunc op over one storage: inputs and output contiguous or not, at any
    offset, the output possibly one of the inputs or overlapping one."""
    name = draw(st.sampled_from(sorted(UFUNCS)))
    fn = UFUNCS[name]
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 40))
    size = 4 * n + 8
    values = draw(st.lists(st.sampled_from(SPECIAL) | st.floats(-50, 50), min_size=size,
                           max_size=size))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = np.array(values).astype(dtype)
    tensor = af.Tensor("T", (size,), dtype, data=data)

    def view():
        kind = draw(st.sampled_from(["dense", "dense", "dense", "stepped", "reversed"]))
        if kind == "dense":
            start = draw(st.integers(0, size - n))
            return tensor[start:start + n]
        if kind == "stepped":
            start = draw(st.integers(0, size - 2 * n + 1))
            return tensor[start:start + 2 * n - 1:2]
        start = draw(st.integers(n - 1, size - 1))
        return tensor[start - n + 1:start + 1][::-1]
    inputs = [view() for _ in range(fn.nin)]
    out = draw(st.sampled_from(inputs)) if draw(st.booleans()) else view()
    op = (af.TransformOperation if fn.nin == 1 else af.BinaryOperation)("op", name)
    return op.set_inputs(*inputs).set_outputs(out)


def outcome(op):
    try:
        with np.errstate(all="ignore"):
            op.execute()
        return None, op.output_views[0].tensor.data.tobytes()
    except (af.AliasflowError, af.ExecutionError) as exc:
        return type(exc).__name__, op.output_views[0].tensor.data.tobytes()


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_a_direct_write_equals_numpy_computing_then_copying(op):
    twin = copy.deepcopy(op)
    out = twin.output_views[0]
    try:
        with np.errstate(all="ignore"):
            # on the views themselves: a loop over a copy may differ in a NaN's sign bit
            value = np.asarray(twin.fn(*[v.numpy() for v in twin.input_views]))
    except (TypeError, ValueError):  # the kernel refuses these values: nothing written
        expected = ("ExecutionError", out.tensor.data.tobytes())
    else:
        if np.can_cast(value.dtype, out.dtype, "same_kind"):
            out._ndarray()[...] = value
            expected = (None, out.tensor.data.tobytes())
        else:
            expected = ("AliasflowError", out.tensor.data.tobytes())
    with direct_everywhere():
        got = outcome(op)
    assert got == expected, (op.fn_name, out.dtype, [v.numpy() for v in op.input_views])


def test_the_direct_way_runs_for_dense_same_dtype_cases():
    # the property above is not vacuous: dense same-dtype cases do take the direct way
    tensor = af.Tensor("T", (64,), "float32", data=np.linspace(-3, 3, 64))
    with direct_everywhere() as taken:
        for name, fn in UFUNCS.items():
            ins = [tensor[0:16], tensor[16:32]][:fn.nin]
            op = (af.TransformOperation if fn.nin == 1 else af.BinaryOperation)(name, name)
            with np.errstate(all="ignore"):
                op.set_inputs(*ins).set_outputs(tensor[40:56]).execute()
    assert taken == [True] * len(UFUNCS)


def test_the_direct_way_is_refused_where_the_loop_could_differ():
    t = af.Tensor("T", (64,), "float32", data=np.linspace(1, 2, 64))
    d = af.Tensor("D", (64,), "float64", data=np.linspace(1, 2, 64))
    i = af.Tensor("I", (64,), "int32", data=np.arange(64))
    refused = [
        ("sin", [t[0:32:2]], t[32:48]),  # strided input
        ("sin", [t[0:16]], t[32:64:2]),  # strided output
        ("sin", [t[0:16]], d[0:16]),  # output dtype is not the loop's
        ("sin", [i[0:16]], d[0:16]),  # input cast to the loop's dtype
        ("add", [t[0:16], d[0:16]], d[16:32]),  # one input cast
        ("add", [t[0:16], t[0:1]], t[32:48]),  # broadcast input
    ]
    with direct_everywhere() as taken:
        for name, ins, out in refused:
            op = (af.TransformOperation if len(ins) == 1 else af.BinaryOperation)(name, name)
            op.set_inputs(*ins).set_outputs(out).execute()
    assert taken == [False] * len(refused)


def test_small_ops_keep_the_general_way_by_default():
    t = af.Tensor("T", (64,), "float32", data=np.linspace(1, 2, 64))
    with direct_everywhere(min_size=direct.MIN_SIZE) as taken:
        af.TransformOperation("s", "sin").set_inputs(t[0:16]).set_outputs(t[16:32]).execute()
    assert taken == [False]


@pytest.mark.parametrize("how", ["seterr raise", "seterr call", "warnings error"])
def test_a_floating_point_error_that_raises_leaves_the_output_untouched(how):
    n = direct.MIN_SIZE  # big enough for the direct way, at the default size
    t = af.Tensor("T", (2 * n,), "float64", data=np.zeros(2 * n))
    op = af.TransformOperation("log", "log").set_inputs(t[:n]).set_outputs(t[n:])
    t.data[n:] = 7.0
    before = t.data.tobytes()

    def boom(kind, flag):
        raise FloatingPointError(kind)
    with contextlib.ExitStack() as stack:
        if how == "seterr raise":
            stack.enter_context(np.errstate(divide="raise"))
        elif how == "seterr call":
            stack.enter_context(np.errstate(divide="call", call=boom))
        else:
            stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("error")
        with pytest.raises(af.ExecutionError, match="log"):
            op.execute()
    assert t.data.tobytes() == before


def test_a_loop_that_raises_midway_never_writes_directly():
    # NumPy's integer power refuses a negative exponent after writing the elements before it
    t = af.Tensor("T", (30,), "int8", data=np.r_[np.ones(9), -1, np.zeros(20)])
    op = af.BinaryOperation("pow", "power").set_inputs(t[0:10], t[0:10]).set_outputs(t[10:20])
    before = t.data.tobytes()
    with direct_everywhere() as taken, pytest.raises(af.ExecutionError, match="negative"):
        op.execute()
    assert taken == [False] and t.data.tobytes() == before


def test_a_floating_point_warning_is_still_given_and_the_output_written():
    n = direct.MIN_SIZE
    t = af.Tensor("T", (2 * n,), "float64", data=np.zeros(2 * n))
    with direct_everywhere(min_size=n) as taken, np.errstate(divide="warn"):
        with pytest.warns(RuntimeWarning, match="divide by zero"):
            af.TransformOperation("log", "log").set_inputs(t[:n]).set_outputs(t[n:]).execute()
    assert taken == [True]
    assert np.all(t.data[n:] == -np.inf)


@settings(max_examples=300, deadline=None)
@given(programs(max_ops=10, executable=True, max_tensors=3))
def test_program_order_matches_numpy_with_direct_writes(ops):
    twin = copy.deepcopy(ops)
    with direct_everywhere():
        af.run(ops)
    numpy_reference(twin)
    assert snapshot(ops) == snapshot(twin)
