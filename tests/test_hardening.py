"""Regression tests for issue 10, one group per class of defect (the runner's and the CLI's
are in test_hardening_runner.py and test_cli_hostile.py)."""
import json
import re
import time
import warnings

import numpy as np
import pytest

import aliasflow as af
from aliasflow import solver
from aliasflow.core.values import fit_array, fit_scalar
from aliasflow.io import ProgramFileError, dumps_program, loads_program


def program_text(tensors, views=(), ops=()):
    return json.dumps({"format": "aliasflow-program", "version": 1, "tensors": list(tensors),
                       "views": list(views), "ops": list(ops)})


# ---- silent wrong values: one rule for every path -------------------------------------------
BAD_VALUES = [  # (value, dtype): none of these fit
    (float("nan"), "int32"), (float("nan"), "bool"), (1e39, "float32"), (300, "int8"),
    (2**64, "uint64"), (-1, "uint8"), (3.5, "int64"), (70000, "float16"), (2, "bool"),
    (float("inf"), "int8"), (1 + 2j, "float64"), (2**63, "int64"), (10**5000, "float64"),
]


@pytest.mark.parametrize("value, dtype", BAD_VALUES,
                         ids=[f"{k}-{d}" for k, (_, d) in enumerate(BAD_VALUES)])
def test_a_value_that_does_not_fit_is_refused_on_every_path(value, dtype):
    # Fill value
    t = af.Tensor("T", (3,), dtype)
    with pytest.raises(af.AliasflowError, match=rf"'f'.*(does not fit dtype {dtype}|a number)"):
        af.run([af.FillOperation("f", value).set_outputs(t[:])])
    assert not t.data.any()
    # Tensor data as a list and as a NumPy array (of the value's own natural dtype)
    with pytest.raises(af.AliasflowError, match=rf"tensor 'A'.*does not fit dtype {dtype}"):
        af.Tensor("A", (1,), dtype, data=[value])
    try:
        arr = np.array([value])
    except OverflowError:
        arr = None
    if arr is not None and arr.dtype != object:
        with pytest.raises(af.AliasflowError, match=rf"tensor 'A'.*does not fit dtype {dtype}"):
            af.Tensor("A", (1,), dtype, data=arr)


@pytest.mark.parametrize("value, dtype", [(0.1, "float32"), (np.float64(0.1), "float32"),
                                          (3.0, "int8"), (np.float32(3), "int8"),
                                          (2**64 - 1, "uint64"), (65504, "float16"),
                                          (1e-50, "float32"), (float("nan"), "float16"),
                                          (True, "int8"), (1.0, "bool")])
def test_values_that_fit_are_accepted_the_same_way_everywhere(value, dtype):
    expect = np.array(value).astype(dtype) if not isinstance(value, int) or value < 2**63 \
        else np.array([value], dtype)[0]
    t = af.Tensor("T", (2,), dtype, data=[value, value])
    if not isinstance(value, bool):  # Fill takes numbers only
        af.run([af.FillOperation("f", value).set_outputs(t[:])])
    listed = af.Tensor("L", (1,), dtype, data=[value]).data[0]
    arrayed = af.Tensor("A", (1,), dtype, data=np.array([value])).data[0]
    for got in (t.data[0], listed, arrayed, fit_scalar(value, dtype, "x")):
        assert got.tobytes() == np.asarray(expect, dtype).tobytes()


def test_python_and_numpy_floats_are_treated_alike():
    for dtype in ("float16", "float32", "float64", "int8", "uint64", "bool"):
        for v in (0.1, 1e5, 1e39, -0.0, 255.0, 1.0, 2.0**64):
            outcomes = []
            for value in (v, np.float64(v)):
                try:
                    outcomes.append(fit_scalar(value, dtype, "x").tobytes())
                except af.AliasflowError:
                    outcomes.append("refused")
            assert outcomes[0] == outcomes[1], (dtype, v)


def test_arrays_of_every_dtype_are_checked_against_an_exact_oracle():
    rng = np.random.default_rng(0)
    sources = [rng.integers(-300, 300, 50), rng.integers(0, 2**64 - 1, 50, dtype=np.uint64),
               rng.normal(0, 1e5, 50), np.array([np.nan, np.inf, 0.5, 65504.0, 65520.0]),
               np.array([True, False])]
    for src in sources:
        for dtype in ("bool", "int8", "uint8", "int64", "uint64", "float16", "float32"):
            dt = np.dtype(dtype)
            for x in src:  # the oracle: Python numbers, exact comparisons
                xv = x.item()
                if dt.kind == "b":
                    ok = xv in (0, 1)
                elif dt.kind in "iu":
                    info = np.iinfo(dt)
                    ok = float(xv).is_integer() if isinstance(xv, float) else True
                    ok = ok and info.min <= xv <= info.max
                else:
                    with np.errstate(over="ignore"):
                        ok = not (np.isinf(np.array(xv).astype(dt)) and np.isfinite(xv))
                try:
                    fit_array(np.array([x]), dt, "t")
                    assert ok, (x, dtype)
                except af.AliasflowError:
                    assert not ok, (x, dtype)


def test_program_file_values_follow_the_same_rule():
    bad = [({"name": "A", "shape": [1], "dtype": "int8", "init": {"data": [300]}}, "300"),
           ({"name": "A", "shape": [1], "dtype": "float32", "init": {"data": [1e39]}}, "1e+39"),
           ({"name": "A", "shape": [70000], "dtype": "float16", "init": "arange"}, "arange"),
           ({"name": "A", "shape": [1], "dtype": "float32", "init": {"fill": 1e39}}, "1e+39")]
    for tensor, word in bad:
        with pytest.raises(ProgramFileError, match=re.escape(word)):
            loads_program(program_text([tensor]))
    ok = loads_program(program_text([{"name": "A", "shape": [65505], "dtype": "float16",
                                      "init": "arange"}]))
    assert np.isfinite(ok.tensors["A"].data).all()
    fill = program_text([{"name": "A", "shape": [2], "dtype": "int32"}],
                        ops=[{"name": "f", "kind": "fill", "fill_value": "nan",
                              "outputs": ["A"]}])
    p = loads_program(fill)
    with pytest.raises(af.AliasflowError, match="'f'.*nan.*int32"):
        af.run(p.ops)


def test_a_subarray_dtype_is_refused():
    with pytest.raises(af.AliasflowError, match="subarray dtype"):
        af.Tensor("A", (3,), ("f4", (2,)))


# ---- sizes refused before allocating ---------------------------------------------------------
@pytest.mark.parametrize("shape", [(10**15,), (2**63,), (1,) * 65, (0, 2**62), (2**40, 2**40)])
def test_tensors_numpy_cannot_allocate_are_refused_naming_tensor_and_bytes(shape):
    with pytest.raises(af.AliasflowError, match=r"tensor .A.*(bytes|dims|64 bits)"):
        af.Tensor("A", shape)


def test_virtual_tensors_past_the_address_space_are_refused():
    with pytest.raises(af.AliasflowError, match=r"tensor 'V'.*64 bits"):
        af.Tensor.virtual("V", (2**70,))
    with pytest.raises(af.AliasflowError, match=r"tensor 'V'.*bytes"):
        af.Tensor.virtual("V", (2**35, 2**35))
    v = af.Tensor.virtual("V", (2**40,))
    assert v.get_storage_size() == 2**40


def test_a_program_file_has_a_total_memory_cap():
    tensors = [{"name": f"T{k}", "shape": [2**28], "dtype": "float32"} for k in range(8)]
    start = time.perf_counter()
    with pytest.raises(ProgramFileError, match=r"T4.*max_total_bytes"):
        loads_program(program_text(tensors))
    assert time.perf_counter() - start < 60  # refused, not allocated (4 x 1 GiB at most)
    small = [{"name": f"T{k}", "shape": [256], "dtype": "float32"} for k in range(3)]
    with pytest.raises(ProgramFileError, match="max_total_bytes"):
        loads_program(program_text(small), max_total_bytes=2048)
    assert len(loads_program(program_text(small), max_total_bytes=3072).tensors) == 3


# ---- views accepted must give numpy() ------------------------------------------------------
def test_free_strides_on_size_one_and_empty_axes_still_give_arrays():
    a = af.Tensor("A", (4,), "float64", data=np.arange(4.0))
    v = af.TensorView("v", a, 1, (1, 2), (2**59, 1))  # x 8 bytes: just within 64 bits
    np.testing.assert_array_equal(v.numpy(), [[1.0, 2.0]])
    e = af.TensorView("e", a, 4, (0, 3), (2**59, -(2**59)))
    assert e.numpy().shape == (0, 3)
    with pytest.raises(af.AliasflowError, match="64 bits"):
        af.TensorView("w", a, 1, (1, 2), (2**70, 1))


@pytest.mark.parametrize("make", [
    lambda a: af.TensorView("v", a, 0, (1, 4), (2**62, 1)),        # 2**64 bytes per step
    lambda a: af.TensorView("v", a, 0, (0, 4), (-(2**62), 1)),
    lambda a: af.TensorView("v", a, 0, (1, 4), (2**61, 1))[::2],   # the slice's step
    lambda a: a[0:0].reshape(0, 2**40, 2**40),                    # a reshape's new strides
    lambda a: a.view().as_strided((1,), (2**62,))])
def test_strides_beyond_64_bits_of_bytes_are_refused_when_the_view_is_made(make):
    # issue 28: a Fill through a stride of 2**62 float32 elements ran, and a view sliced to
    # a stride of 2**63 was saved in a program file that could not be loaded back
    a = af.Tensor("A", (4, 4))
    with pytest.raises(af.AliasflowError, match="beyond the 64-bit byte strides"):
        make(a)
    b = af.Tensor("B", (4, 4), "int8")
    v = af.TensorView("v", b, 0, (1, 4), (2**62, 1))      # 2**62 bytes: fits
    assert v[::-1].stride == (-(2**62), 1)
    from aliasflow.io import dumps_program, loads_program
    text = dumps_program([af.FillOperation("f", 1.0).set_outputs(v)])
    back = loads_program(text).views["v"]
    assert (back.offset, back.shape, back.stride) == (v.offset, v.shape, v.stride)


def test_more_than_64_dims_is_refused_when_the_view_is_made():
    a = af.Tensor("A", (4,))
    with pytest.raises(af.AliasflowError, match="70 dims"):
        af.TensorView("v", a, 0, (1,) * 70, (0,) * 70)
    with pytest.raises(af.AliasflowError, match="dims"):
        a.view()[(None,) * 70]


def test_as_strided_needs_shape_and_stride_as_sequences():
    # issue 28: an int shape and stride=None were read one way (row-major) where NumPy's
    # as_strided reads strides=None another (the array's own strides): refused, naming them
    a = af.Tensor("A", (4,))
    for shape, stride in [(2, 1), ((2,), None), (2, (1,)), ((2,), 1), ((2,), "x")]:
        with pytest.raises(af.AliasflowError, match="as_strided: (shape|stride) must be a "
                                                    "tuple of ints"):
            a.as_strided(shape, stride)
    assert a.as_strided([2], [np.int64(1)]).same_window(af.TensorView("w", a, 0, (2,), (1,)))


def test_critical_path_refuses_costs_that_are_not_numbers():
    a = af.Tensor("A", (4,))
    g = af.analyze([af.FillOperation("f").set_outputs(a[:])])
    for cost in ({"f": "abc"}, {"f": float("nan")}, {"f": None}, lambda n: "x", 3):
        with pytest.raises(af.AliasflowError, match="cost"):
            g.critical_path(cost)
    assert g.critical_path({"f": 2}) == (2.0, ["f"])


def test_huge_integers_in_program_files_are_refused_in_one_problem():
    text = program_text([{"name": "A", "shape": [4]}]).replace('"shape": [4]',
                                                                '"shape": [' + "9" * 5000 + "]")
    with pytest.raises(ProgramFileError, match="5000 digits"):
        loads_program(text)
    text = program_text([{"name": "A", "shape": [4], "dtype": "uint64",
                          "init": {"fill": 2**64}}])
    with pytest.raises(ProgramFileError, match="18446744073709551616"):
        loads_program(text)


def test_user_kernels_that_raise_are_wrapped_naming_op_and_kernel():
    a = af.Tensor("A", (4,))

    def broken(x):
        raise KeyError("oops")
    op = af.TransformOperation("t", broken).set_inputs(a[:]).set_outputs(a[:])
    with pytest.raises(af.ExecutionError, match=r"'t'.*kernel 'broken'.*KeyError") as info:
        op.execute()
    assert isinstance(info.value.__cause__, KeyError)
    red = af.ReduceOperation("r", fn=lambda x: x.sum()).set_inputs(a[:])
    with pytest.raises(af.ExecutionError, match=r"'r'.*kernel '<lambda>'.*axis"):
        af.run([red])


# ---- names -----------------------------------------------------------------------------------
def test_lone_surrogates_are_refused_at_load_and_save():
    text = program_text([{"name": "A\ud800", "shape": [2]}])
    with pytest.raises(ProgramFileError, match="lone surrogate"):
        loads_program(text)
    a = af.Tensor("B\udcff", (2,))
    prog = af.Program([af.FillOperation("f").set_outputs(a[:])])
    with pytest.raises(ProgramFileError, match="lone surrogate"):
        dumps_program(prog)


def _dot_strings(source: str) -> list[str]:
    """Every quoted string of a DOT file, unescaped as Graphviz reads it (the oracle: DOT's
    grammar, a quote ends a string unless a backslash escapes it)."""
    out = []
    for m in re.finditer(r'"((?:[^"\\]|\\.)*)"', source, flags=re.S):
        out.append(re.sub(r'\\(["\\])', r"\1", m.group(1)))
    return out


@pytest.mark.parametrize("name", ["back\\", 'q"uote', "a\\\\b", "[/x]", "<html>", "a\\nb"])
def test_dot_output_keeps_every_name(name):
    a = af.Tensor("A", (4,))
    w = af.FillOperation(name).set_outputs(a[:2].rename(name + "v"))
    r = af.TransformOperation(name + "2").set_inputs(a[1:3])
    source = af.analyze([w, r]).to_dot()
    strings = _dot_strings(source)
    assert name in strings and name + "2" in strings
    # balanced quoting: the source outside strings has no stray quote or backslash
    outside = re.sub(r'"((?:[^"\\]|\\.)*)"', "", source, flags=re.S)
    assert '"' not in outside and "\\" not in outside


# ---- never finishes: small hostile layouts are exact and fast; big ones can be bounded ------
def _cells(offset, shape, stride):
    cells = np.array(offset)
    for n, s in zip(shape, stride):
        cells = np.add.outer(cells, np.arange(n) * s)
    return cells.reshape(-1)


def test_ten_dim_views_of_5184_elements_are_decided_exactly():
    shape = (2, 2, 2, 2, 2, 2, 3, 3, 3, 3)
    rng = np.random.default_rng(1)
    for _ in range(5):
        s1 = tuple(int(x) for x in rng.integers(1, 10**6, 10))
        s2 = tuple(int(x) for x in rng.integers(1, 10**6, 10))
        o2 = int(rng.integers(0, 10**6))
        start = time.perf_counter()
        got = solver.intersects((0, shape, s1), (o2, shape, s2))
        assert time.perf_counter() - start < 5
        truth = np.intersect1d(_cells(0, shape, s1), _cells(o2, shape, s2)).size > 0
        assert got == truth
        if truth:
            x, y = solver.witness((0, shape, s1), (o2, shape, s2))
            assert sum(i * s for i, s in zip(x, s1)) == o2 + sum(i * s for i, s in zip(y, s2))


def test_fourteen_dim_internal_overlap_is_decided_exactly():
    rng = np.random.default_rng(2)
    shape = (2,) * 14
    for _ in range(5):
        stride = tuple(int(x) for x in rng.integers(1, 5000, 14))
        start = time.perf_counter()
        got = solver.has_internal_overlap((0, shape, stride))
        assert time.perf_counter() - start < 5
        assert got == (np.unique(_cells(0, shape, stride)).size < 2**14)


def test_a_work_budget_bounds_big_questions_and_reports_them():
    rng = np.random.default_rng(3)
    shape = (20,) * 10
    a = (0, shape, tuple(int(x) for x in rng.integers(10**6, 10**9, 10)))
    b = (12345, shape, tuple(int(x) for x in rng.integers(10**6, 10**9, 10)))
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with af.work_budget(1000) as budget:
            assert solver.intersects(a, b) is True  # undecided counts as overlapping
    assert time.perf_counter() - start < 10
    assert len(budget.undecided) == 1 and budget.undecided[0][0] == "intersects"
    assert any(issubclass(w.category, af.UndecidedOverlapWarning) for w in caught)
    # decided questions under a budget stay exact and are not reported
    with af.work_budget(1000) as budget:
        assert solver.intersects((0, (4,), (2,)), (1, (4,), (2,))) is False
    assert budget.undecided == []


def test_a_budget_keeps_analysis_sound():
    big = af.Tensor.virtual("V", (2**50,), "uint8")
    rng = np.random.default_rng(4)
    shape = (20,) * 10
    v1 = af.TensorView("v1", big, 0, shape, tuple(int(x) for x in rng.integers(10**6, 10**9, 10)))
    v2 = af.TensorView("v2", big, 12345, shape,
                       tuple(int(x) for x in rng.integers(10**6, 10**9, 10)))
    ops = [af.FillOperation("w").set_outputs(v1), af.TransformOperation("r").set_inputs(v2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with af.work_budget(1000) as budget:
            g = af.analyze(ops)
    assert budget.undecided and [(d.src, d.dst) for d in g.dependencies] == [("w", "r")]


def test_races_skip_ordered_pairs_and_stay_exact():
    a = af.Tensor("A", (4000,))
    rng = np.random.default_rng(5)
    ops = []
    for k in range(300):
        st = int(rng.choice([1, 2, 3, 5]))
        n = int(rng.integers(1, 40))
        off = int(rng.integers(0, 4000 - st * (n - 1)))
        v = af.TensorView(f"v{k}", a, off, (n,), (st,))
        ops.append(af.FillOperation(f"o{k}").set_outputs(v) if k % 2
                   else af.TransformOperation(f"o{k}").set_inputs(v))
    streams = {op.name: k % 3 for k, op in enumerate(ops)}
    got = {(d.src, d.dst, d.kind) for d in af.find_races(ops, streams)}
    position = {op.name: k for k, op in enumerate(ops)}
    truth = {(d.src, d.dst, d.kind) for d in af.analyze(ops, complete=True).dependencies
             if streams[d.src] != streams[d.dst]}
    assert got == truth
    assert all(position[s] < position[t] for s, t, _ in got)


# ---- API arguments of the wrong kind: AliasflowError, never a raw TypeError -----------------
@pytest.mark.parametrize("bad", [10**20, None, True, slice(None), Ellipsis, 3.5])
def test_arguments_of_the_wrong_kind_are_refused_clearly(bad):
    a = af.Tensor("A", (4, 4))
    fill = af.FillOperation("f").set_outputs(a[0])
    g = af.analyze([fill])
    calls = [lambda: af.analyze(bad), lambda: af.Program(bad), lambda: af.run(bad),
             lambda: af.find_races([fill], bad) if bad is not None else af.find_races(3),
             lambda: af.work_budget(bad).__enter__(), lambda: a.view().footprint(bad)
             if bad is not None else af.work_budget(0).__enter__(),
             lambda: g.predecessors([bad]), lambda: a.reshape(bad), lambda: a.transpose(bad)]
    for call in calls:
        try:
            call()
        except af.AliasflowError:
            continue
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"raised {type(exc).__name__}: {exc}")


def test_integers_past_64_bits_are_refused_everywhere_in_the_api():
    huge = 10**5000  # str() of it raises in Python >= 3.11: no message may try to print it
    a = af.Tensor("A", (4,))
    calls = [lambda: af.Tensor("X", (huge,)), lambda: af.Tensor("X", (-huge,)),
             lambda: af.Tensor.virtual("X", (huge,)), lambda: af.TensorView("v", a, huge, (1,)),
             lambda: af.TensorView("v", a, -huge, (1,)),
             lambda: af.TensorView("v", a, 0, (2,), (huge,)), lambda: a[huge], lambda: a[huge:],
             lambda: a[::-huge], lambda: a.as_strided((huge,), (0,)), lambda: a.reshape(huge),
             lambda: a[:1].broadcast_to((huge,)),
             lambda: af.run([af.FillOperation("f", huge).set_outputs(a[:])]),
             lambda: af.Tensor("X", (1,), "int64", data=[huge])]
    for call in calls:
        with pytest.raises(af.AliasflowError):
            call()
    with pytest.raises(IndexError):  # documented: get_physical_index raises IndexError
        a.view().get_physical_index(5)
