"""Program files: round trips, shipped examples, validation messages, safety, execution."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import aliasflow as af
from aliasflow.core.functions import REGISTRIES
from aliasflow.core.builders import (BinaryOperation, FillOperation, ReduceOperation,
                                       TransformOperation)
from aliasflow.core.program import Program
from aliasflow.core.view import Tensor
from aliasflow.core.view import TensorView
from aliasflow.io import (MAX_FILE_BYTES, ProgramFileError, dumps_program, load_program,
                          loads_program, save_program)
from aliasflow.io._index import IndexSyntaxError, format_index, parse_index
from aliasflow.io._values import DTYPES
from aliasflow.seeds import complex_example, simple_example

from repo import EXAMPLES


# ---- helpers ---------------------------------------------------------------------------------
def _param(value):
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__ if not isinstance(value, np.generic) else "np", value)


def _bits(data: np.ndarray) -> bytes:
    """Exact contents, with every NaN made the canonical NaN (files keep no NaN payloads)."""
    if data.dtype.kind == "f":
        data = data.copy()
        data[np.isnan(data)] = np.nan
    return data.tobytes()


def signature(program: Program):
    """Everything a program file must preserve, in order, as comparable values."""
    tensors = [(name, t.shape, t.dtype.name, _bits(t.data))
               for name, t in program.tensors.items()]
    views = [(name, v.tensor.name, v.offset, v.shape, v.stride)
             for name, v in program.views.items()]
    ops = [(op.name, op.kind, {k: _param(v) for k, v in op.params.items()},
            [v.name for v in op.input_views], [v.name for v in op.output_views])
           for op in program.ops]
    return tensors, views, ops


def structure(program: Program):
    """Footprints and op structure (what must match the seed programs)."""
    views = {name: (v.tensor.name, v.tensor.shape, af.compute_view_footprint(v))
             for name, v in program.views.items()}
    ops = [(op.name, op.kind, op.params, [v.name for v in op.input_views],
            [v.name for v in op.output_views]) for op in program.ops]
    return views, ops


def roundtrip(program: Program) -> Program:
    return loads_program(dumps_program(program))


BASE = {
    "format": "aliasflow-program",
    "version": 1,
    "tensors": [{"name": "A", "shape": [4, 4]}, {"name": "B", "shape": [2, 2], "dtype": "int32"}],
    "views": [{"name": "v", "tensor": "A", "offset": 5, "shape": [2, 2], "stride": [4, 1]},
              {"name": "w", "of": "A", "index": "1:3, ::2"}],
    "ops": [{"name": "f", "kind": "fill", "fill_value": 2.0, "outputs": ["v"]},
            {"name": "t", "kind": "transform", "fn": "exp", "inputs": ["w"], "outputs": ["v"]}],
}


def problems_of(doc_or_text) -> list[str]:
    text = doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text)
    with pytest.raises(ProgramFileError) as info:
        loads_program(text)
    assert info.value.problems, "a ProgramFileError must list its problems"
    for p in info.value.problems:
        assert p in str(info.value)
    return info.value.problems


# ---- round trips -----------------------------------------------------------------------------
def test_base_document_loads():
    p = loads_program(json.dumps(BASE))
    assert list(p.tensors) == ["A", "B"]
    assert p.views["w"].same_window(p.tensors["A"][1:3, ::2])
    assert [op.name for op in p.ops] == ["f", "t"]
    assert p.description is None


@pytest.mark.parametrize("make", [simple_example, complex_example])
def test_seed_programs_round_trip(make):
    p = make()
    q = roundtrip(p)
    assert signature(q) == signature(p)
    assert dumps_program(q) == dumps_program(p)


def test_round_trip_keeps_contents_params_and_description():
    a = Tensor("A", (2, 3), "float32", [[0.1, -0.0, np.nan], [np.inf, -np.inf, 1e-45]])
    b = Tensor("B", (3,), "int64", [-2**63, 0, 2**63 - 1])
    c = Tensor("C", (2, 2), "bool", [[True, False], [False, False]])
    d = Tensor("D", (), "float64", 3.5)
    e = Tensor("E", (2, 0), "uint8")
    u = Tensor("U", (2,), "uint64", np.array([0, 2**64 - 1], dtype=np.uint64))
    h = Tensor("H", (3,), "float16", [0.1, 65504, 6e-8])
    ops = [FillOperation("f1", 7).set_outputs(b.view()),
           FillOperation("f2", float("nan")).set_outputs(a[0]),
           FillOperation("f3", -math.inf).set_outputs(a[1, ::-1]),
           ReduceOperation("r", axis=0, fn="max").set_inputs(a.T).set_outputs(a[1]),
           BinaryOperation("b", "power").set_inputs(a[0], a[1]),
           TransformOperation("t", np.exp).set_inputs(d.view())]
    p = Program(ops, [a, b, c, d, e, u, h])
    p.description = "all kinds of values"
    q = roundtrip(p)
    assert signature(q) == signature(p)
    assert q.description == "all kinds of values"
    assert q.tensors["B"].data.tolist() == [-2**63, 0, 2**63 - 1]
    assert np.isnan(q.op("f2").fill_value) and q.op("f3").fill_value == -math.inf
    assert isinstance(q.op("f1").fill_value, int)


def test_saved_file_is_standard_json_and_readable():
    a = Tensor("A", (2, 2), "float32", [[1.5, np.nan], [np.inf, 0.1]])
    text = dumps_program(Program([FillOperation("f").set_outputs(a[0])], [a]))
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    assert doc["tensors"][0]["init"]["data"] == [[1.5, "nan"], ["inf", 0.1]]  # shortest float32
    assert doc["views"] == [{"name": "A[0]", "tensor": "A", "offset": 0, "shape": [2],
                             "stride": [1]}]
    assert "zeros" in dumps_program(Program([], [Tensor("Z", (3,))]))


def test_negative_zero_is_not_saved_as_zeros():
    a = Tensor("A", (2,), "float64", [0.0, -0.0])
    q = roundtrip(Program([], [a]))
    assert np.signbit(q.tensors["A"].data).tolist() == [False, True]


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(st.sampled_from(["float16", "float32", "float64"]), hnp.array_shapes(
    min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_float_contents_are_bit_exact(arr):
    t = Tensor("T", arr.shape, arr.dtype, arr)
    back = roundtrip(Program([], [t])).tensors["T"].data
    assert back.dtype == arr.dtype
    nan = np.isnan(arr)
    assert np.array_equal(np.isnan(back), nan)
    # Every non-NaN value keeps its exact bits (-0.0, subnormals, infinities included);
    # NaN is written as "nan", so a NaN's sign and payload are not kept.
    assert back[~nan].tobytes() == arr[~nan].tobytes()


names = st.text(min_size=1, max_size=6)


@st.composite
def programs(draw):
    """Random programs: tensors of every dtype, views made by every derivation, all op kinds."""
    tensors = []
    for name in draw(st.lists(names, min_size=1, max_size=3, unique=True)):
        dtype = draw(st.sampled_from(DTYPES))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
        data = draw(st.one_of(st.none(), hnp.arrays(dtype, shape)))
        tensors.append(Tensor(name, shape, dtype, data))
    views: list[TensorView] = []
    for name in draw(st.lists(names, max_size=6, unique=True)):
        t = draw(st.sampled_from(tensors))
        base = t.view()
        how = draw(st.sampled_from(["full", "index", "transpose", "as_strided", "explicit"]))
        try:
            if how == "index":
                items = tuple(draw(st.one_of(
                    st.integers(-3, 3), st.none(),
                    st.builds(slice, st.none() | st.integers(-5, 5), st.none() | st.integers(-5, 5),
                              st.none() | st.integers(-3, 3).filter(bool))))
                    for _ in range(draw(st.integers(0, base.ndim))))
                v = base[items]
            elif how == "transpose":
                v = base.transpose(draw(st.permutations(range(base.ndim))))
            elif how in ("as_strided", "explicit"):
                ndim = draw(st.integers(0, 3))
                shape = tuple(draw(st.integers(0, 4)) for _ in range(ndim))
                stride = tuple(draw(st.integers(-4, 4)) for _ in range(ndim))
                offset = draw(st.integers(0, max(t.get_storage_size(), 1)))
                v = (base.as_strided(shape, stride, offset) if how == "as_strided"
                     else TensorView(name, t, offset, shape, stride))
            else:
                v = base
        except af.AliasflowError:
            continue
        views.append(v.rename(name) if how != "full" else v)
    pool = views + [t.view() for t in tensors]
    ops = []
    for name in draw(st.lists(names, max_size=6, unique=True)):
        kind = draw(st.sampled_from(["fill", "transform", "binary", "reduce"]))
        if kind == "fill":
            op = FillOperation(name, draw(st.one_of(st.integers(-10**6, 10**6),
                                                    st.floats(allow_nan=True))))
        elif kind == "reduce":
            op = ReduceOperation(name, draw(st.integers(-3, 3)),
                                 draw(st.sampled_from(sorted(REGISTRIES["reduce"]))))
        else:
            cls = TransformOperation if kind == "transform" else BinaryOperation
            family = "unary" if kind == "transform" else "binary"
            op = cls(name, draw(st.sampled_from(sorted(REGISTRIES[family]))))
        op.set_inputs(*draw(st.lists(st.sampled_from(pool), max_size=2)))
        op.set_outputs(*draw(st.lists(st.sampled_from(pool), max_size=2)))
        ops.append(op)
    try:
        return Program(ops, tensors, views)
    except af.AliasflowError:  # a view and a tensor full view under one name: not a program
        from hypothesis import reject
        reject()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(programs())
def test_random_programs_round_trip(program):
    text = dumps_program(program)
    q = loads_program(text)
    assert signature(q) == signature(program)
    assert dumps_program(q) == text
    def window(v):
        return v.tensor.name, v.offset, v.shape, v.stride

    for op_p, op_q in zip(program.ops, q.ops):
        for role in ("input_views", "output_views"):
            assert [window(v) for v in getattr(op_p, role)] == \
                [window(v) for v in getattr(op_q, role)]


def test_save_and_load_a_file(tmp_path):
    path = tmp_path / "p.json"
    save_program(complex_example(), path, description="seed")
    q = load_program(path)
    assert signature(q) == signature(complex_example())
    assert q.description == "seed"
    q2 = load_program(str(path))
    assert signature(q2) == signature(q)


# ---- shipped examples ------------------------------------------------------------------------
@pytest.mark.parametrize("name, make", [("seed_simple", simple_example),
                                        ("seed_complex", complex_example)])
def test_seed_example_files_are_the_seed_programs(name, make):
    p = load_program(EXAMPLES / f"{name}.json")
    assert structure(p) == structure(make())
    assert signature(p) == signature(make())
    assert af.analyze_dependencies(p.ops) == af.analyze_dependencies(make().ops)


def test_every_example_loads_and_describes_itself():
    files = sorted(EXAMPLES.glob("*.json"))
    assert len(files) >= 3
    for f in files:
        doc = json.loads(f.read_text())
        assert isinstance(doc.get("description"), str) and len(doc["description"]) > 40, f
        p = load_program(f)
        assert p.description == doc["description"]
        af.analyze(p.ops)  # every example can be analysed


def test_seed_complex_loads_although_it_cannot_run():
    p = load_program(EXAMPLES / "seed_complex.json")
    assert af.analyze_dependencies(p.ops)["add_op_ab"] == ["fill_op_a", "transform_op_a"]
    with pytest.raises(af.ExecutionError, match="add_op_ab"):
        af.run(p.ops)


def _numpy_transpose_example(order):
    """The transpose example computed with plain NumPy, ops in the given order."""
    A = np.arange(9, dtype=np.float32).reshape(3, 3)
    total = None
    for step in order:
        if step == "negate_col0":
            col0 = A.T[0]
            col0[...] = -col0.copy()
        else:
            total = A[1].sum()
    return A, total


def test_transpose_example_result_depends_on_order():
    p = load_program(EXAMPLES / "transpose_inplace.json")
    graph = af.analyze(p.ops)
    deps = [(d.src, d.dst, d.kind, d.implicit) for d in graph.dependencies]
    assert deps == [("negate_col0", "sum_row1", "RAW", True)]
    af.run(p.ops)
    A, total = _numpy_transpose_example(["negate_col0", "sum_row1"])
    assert p.tensors["row1_sum"].data[()] == total == 6
    assert np.array_equal(p.tensors["A"].data, A)
    # The other order, in aliasflow and in NumPy, gives a different answer.
    q = load_program(EXAMPLES / "transpose_inplace.json")
    af.run(list(reversed(q.ops)))
    _, other = _numpy_transpose_example(["sum_row1", "negate_col0"])
    assert q.tensors["row1_sum"].data[()] == other == 12 != total
    # The parallel runner respects the implicit dependency.
    r = load_program(EXAMPLES / "transpose_inplace.json")
    af.run(r.ops, workers=2)
    assert r.tensors["row1_sum"].data[()] == total


def test_sliding_window_example():
    p = load_program(EXAMPLES / "sliding_window.json")
    assert p.views["windows"].has_internal_overlap()
    deps = {(d.src, d.dst, d.kind, d.implicit) for d in af.analyze(p.ops).dependencies}
    assert ("window_sums", "clear_middle", "WAR", True) in deps
    assert ("clear_middle", "window_sums_after", "RAW", True) in deps
    af.run(p.ops)
    x = np.arange(8.0)
    before = np.lib.stride_tricks.sliding_window_view(x, 3).sum(axis=1)
    x[3:5] = 0
    after = np.lib.stride_tricks.sliding_window_view(x, 3).sum(axis=1)
    assert np.array_equal(p.tensors["sums_before"].data, before)
    assert np.array_equal(p.tensors["sums_after"].data, after)
    assert not np.array_equal(before, after)


# ---- references and derivations --------------------------------------------------------------
def test_tensor_name_means_its_full_view_and_views_shadow_tensors():
    doc = copy.deepcopy(BASE)
    doc["ops"] = [{"name": "f", "kind": "fill", "outputs": ["A"]},
                  {"name": "r", "kind": "reduce", "inputs": ["A"]}]
    p = loads_program(json.dumps(doc))
    out, inp = p.ops[0].output_views[0], p.ops[1].input_views[0]
    assert out is inp and out.name == "A" and out.same_window(p.tensors["A"].view())
    deps = af.analyze(p.ops).dependencies
    assert [(d.kind, d.implicit) for d in deps] == [("RAW", False)]
    doc["views"].append({"name": "A", "tensor": "B"})  # a view named like a tensor wins
    p = loads_program(json.dumps(doc))
    assert p.ops[0].output_views[0].tensor is p.tensors["B"]


@pytest.mark.parametrize("entry, python", [
    ({"of": "A", "index": "1:3, ::-2"}, lambda A: A[1:3, ::-2]),
    ({"of": "A", "index": "..., None, -1"}, lambda A: A[..., None, -1]),
    ({"of": "A", "index": ""}, lambda A: A.view()),
    ({"of": "A", "transpose": None}, lambda A: A.T),
    ({"of": "A", "transpose": [1, 0]}, lambda A: A.transpose(1, 0)),
    ({"of": "A", "reshape": [2, -1]}, lambda A: A.reshape(2, -1)),
    ({"of": "A", "reshape": [16]}, lambda A: A.reshape(16)),
    ({"of": "v0", "broadcast_to": [3, 4, 4]}, lambda A: A.broadcast_to((3, 4, 4))),
    ({"of": "v0", "as_strided": {"shape": [3, 3], "stride": [1, 1], "offset": 2}},
     lambda A: A.as_strided((3, 3), (1, 1), 2)),
    ({"of": "v1", "as_strided": {"shape": [2], "stride": [5]}},
     lambda A: A[1:, 1:].as_strided((2,), (5,))),
    ({"of": "v1", "index": "::-1, 1"}, lambda A: A[1:, 1:][::-1, 1]),
    ({"tensor": "A"}, lambda A: A.view()),
    ({"tensor": "A", "shape": [2, 8]}, lambda A: TensorView("x", A, 0, (2, 8))),
])
def test_derived_views_agree_with_python(entry, python):
    doc = copy.deepcopy(BASE)
    doc["views"] = [{"name": "v0", "of": "A", "index": ""},
                    {"name": "v1", "of": "A", "index": "1:, 1:"}, dict(name="x", **entry)]
    doc["ops"] = [{"name": "use", "kind": "transform", "inputs": ["x"]}]
    p = loads_program(json.dumps(doc))
    assert p.views["x"].same_window(python(p.tensors["A"])), p.views["x"]
    assert p.views["x"].name == "x"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-6, 6), st.none(), st.just(Ellipsis),
                          st.builds(slice, st.none() | st.integers(-6, 6),
                                    st.none() | st.integers(-6, 6),
                                    st.none() | st.integers(-4, 4).filter(bool))),
                max_size=4))
def test_index_strings_parse_like_python(items):
    items = tuple(items)
    text = format_index(items)
    assert parse_index(text) == items
    A = Tensor("A", (4, 5))
    try:
        expected = A[items]
    except af.AliasflowError:
        expected = None
    doc = {"format": "aliasflow-program", "version": 1,
           "tensors": [{"name": "A", "shape": [4, 5]}],
           "views": [{"name": "v", "of": "A", "index": text}], "ops": []}
    if expected is None:
        assert any(p.startswith("$.views[0].index: ") for p in problems_of(doc))
    else:
        v = loads_program(json.dumps(doc)).views["v"]
        assert (v.offset, v.shape, v.stride) == (expected.offset, expected.shape, expected.stride)


@given(st.text(max_size=30))
def test_index_parser_fails_only_with_syntax_errors(text):
    try:
        items = parse_index(text)
    except IndexSyntaxError as exc:
        assert "position" in str(exc)
    else:
        assert all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in items)


# ---- refusals --------------------------------------------------------------------------------
def _set(path, value):
    """A mutation of BASE: set the item at ``path`` (a tuple of keys) to ``value``."""
    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate


def _delete(path):
    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return mutate


def _append(path, value):
    def mutate(doc):
        target = doc
        for key in path:
            target = target[key]
        target.append(value)
    return mutate


BAD = [
    # (id, mutation of BASE or raw text, substrings that one problem line must all contain)
    ("not json", "{\"format\": ", ["$: not valid JSON", "line 1"]),
    ("not an object", "[1, 2]", ["$: expected a JSON object", "[1, 2]"]),
    ("empty object", "{}", ["$: missing key 'format'"]),
    ("wrong format", _set(("format",), "aliasflow-progam"), ["$.format", '"aliasflow-progam"']),
    ("missing format", _delete(("format",)), ["$: missing key 'format'"]),
    ("newer version", _set(("version",), 2), ["$.version", "2", "version 1"]),
    ("version as string", _set(("version",), "1"), ["$.version", '"1"']),
    ("missing version", _delete(("version",)), ["$: missing key 'version'"]),
    ("top-level typo", _set(("opps",), []), ["$.opps", "did you mean 'ops'"]),
    ("description not text", _set(("description",), 5), ["$.description", "5"]),
    ("tensors not a list", _set(("tensors",), "A"), ["$.tensors", '"A"']),
    ("missing tensors", _delete(("tensors",)), ["$: missing key 'tensors'"]),
    ("tensor not an object", _set(("tensors", 1), 7), ["$.tensors[1]", "7"]),
    ("tensor without name", _delete(("tensors", 0, "name")), ["$.tensors[0]", "'name'"]),
    ("empty tensor name", _set(("tensors", 0, "name"), ""), ["$.tensors[0].name", '""']),
    ("tensor name not text", _set(("tensors", 0, "name"), 3), ["$.tensors[0].name", "3"]),
    ("duplicate tensor", _set(("tensors", 1, "name"), "A"), ["$.tensors[1].name", "'A'"]),
    ("negative size", _set(("tensors", 0, "shape"), [4, -4]),
     ["$.tensors[0].shape[1]", "negative size -4"]),
    ("shape as text", _set(("tensors", 0, "shape"), "4x4"), ["$.tensors[0].shape", '"4x4"']),
    ("shape with float", _set(("tensors", 0, "shape"), [4, 4.0]),
     ["$.tensors[0].shape", "4.0"]),
    ("shape with bool", _set(("tensors", 0, "shape"), [True]), ["$.tensors[0].shape", "true"]),
    ("huge tensor", _set(("tensors", 0, "shape"), [2**40, 2**20]),
     ["$.tensors[0].shape", "bytes", str(2**40)]),
    ("too many dims", _set(("tensors", 0, "shape"), [1] * 40), ["$.tensors[0].shape", "40 dims"]),
    ("unknown dtype", _set(("tensors", 0, "dtype"), "float33"),
     ["$.tensors[0].dtype", '"float33"', "float32"]),
    ("object dtype", _set(("tensors", 0, "dtype"), "object"), ["$.tensors[0].dtype", "object"]),
    ("complex dtype", _set(("tensors", 0, "dtype"), "complex64"),
     ["$.tensors[0].dtype", "complex64"]),
    ("tensor key typo", _set(("tensors", 0, "dtyp"), "int8"),
     ["$.tensors[0].dtyp", "did you mean 'dtype'"]),
    ("unknown init", _set(("tensors", 0, "init"), "random"), ["$.tensors[0].init", '"random"']),
    ("init object typo", _set(("tensors", 0, "init"), {"dat": [1]}),
     ["$.tensors[0].init", "dat"]),
    ("data rows missing", _set(("tensors", 1, "init"), {"data": [[1, 2]]}),
     ["$.tensors[1].init.data", "expected 2 elements", "got 1"]),
    ("data row too short", _set(("tensors", 1, "init"), {"data": [[1, 2], [3]]}),
     ["$.tensors[1].init.data[1]", "got 1"]),
    ("data scalar for row", _set(("tensors", 1, "init"), {"data": [[1, 2], 3]}),
     ["$.tensors[1].init.data[1]", "got 3"]),
    ("data element text", _set(("tensors", 1, "init"), {"data": [[1, "x"], [3, 4]]}),
     ["$.tensors[1].init.data[0][1]", '"x"']),
    ("data float for int", _set(("tensors", 1, "init"), {"data": [[1, 2.5], [3, 4]]}),
     ["$.tensors[1].init.data[0][1]", "2.5", "int32"]),
    ("data out of range", _set(("tensors", 1, "init"), {"data": [[1, 2], [3, 2**40]]}),
     ["$.tensors[1].init.data[1][1]", str(2**40), "int32"]),
    ("data bool for float", _set(("tensors", 0, "init"), {"data": [[True] * 4] * 4}),
     ["$.tensors[0].init.data[0][0]", "true"]),
    ("fill not a number", _set(("tensors", 0, "init"), {"fill": "one"}),
     ["$.tensors[0].init.fill", '"one"']),
    ("arange overflows", _set(("tensors", 1), {"name": "B", "shape": [300], "dtype": "int8",
                                               "init": "arange"}),
     ["$.tensors[1].init", "299", "int8"]),
    ("views not a list", _set(("views",), {}), ["$.views", "{}"]),
    ("view not an object", _set(("views", 0), "v"), ["$.views[0]", '"v"']),
    ("view unknown tensor", _set(("views", 0, "tensor"), "Z"), ["$.views[0].tensor", "'Z'"]),
    ("view stride text", _set(("views", 0, "stride"), "x"),
     ["$.views[0].stride", "expected a list of ints", '"x"']),
    ("view stride item", _set(("views", 0, "stride"), [4, "1"]), ["$.views[0].stride", '"1"']),
    ("view offset float", _set(("views", 0, "offset"), 1.5), ["$.views[0].offset", "1.5"]),
    ("view offset huge", _set(("views", 0, "offset"), 2**70),
     ["$.views[0].offset", str(2**70), "64 bits"]),
    ("view negative offset", _set(("views", 0, "offset"), -1),
     ["$.views[0]", "'v'", "negative offset -1"]),
    ("view out of bounds", _set(("views", 0, "offset"), 11),
     ["$.views[0]", "'v'", "highest element 16", "storage size 16"]),
    ("view below zero", _set(("views", 0, "stride"), [-8, 1]),
     ["$.views[0]", "'v'", "lowest element -3"]),
    ("view stride rank", _set(("views", 0, "stride"), [1]), ["$.views[0]", "(1,)", "2 dims"]),
    ("view negative size", _set(("views", 0, "shape"), [-2, 2]),
     ["$.views[0].shape[0]", "negative size -2"]),
    ("duplicate view", _set(("views", 1, "name"), "v"), ["$.views[1].name", "'v'"]),
    ("view neither kind", _delete(("views", 0, "tensor")), ["$.views[0]", '"tensor"', '"of"']),
    ("view both kinds", _set(("views", 1, "tensor"), "A"), ["$.views[1].tensor", "unknown key"]),
    ("view key typo", _set(("views", 0, "strde"), [1, 1]),
     ["$.views[0].strde", "did you mean 'stride'"]),
    ("derived without step", _delete(("views", 1, "index")),
     ["$.views[1]", "exactly one of", "none"]),
    ("derived two steps", _set(("views", 1, "transpose"), None),
     ["$.views[1]", "exactly one of", "index, transpose"]),
    ("derived offset", _set(("views", 1, "offset"), 3), ["$.views[1].offset", "as_strided"]),
    ("index injection", _set(("views", 1, "index"), "__import__('os').system('x')"),
     ["$.views[1].index", "__import__", "position 0"]),
    ("index eval-ish", _set(("views", 1, "index"), "slice(1, 3)"),
     ["$.views[1].index", "slice(1, 3)"]),
    ("index not text", _set(("views", 1, "index"), 1), ["$.views[1].index", "got 1"]),
    ("index list", _set(("views", 1, "index"), [1, 2]), ["$.views[1].index", "[1, 2]"]),
    ("index out of range", _set(("views", 1, "index"), "9"),
     ["$.views[1].index", "index 9 out of range"]),
    ("index too many", _set(("views", 1, "index"), "1, 2, 3"),
     ["$.views[1].index", "too many indices"]),
    ("index zero step", _set(("views", 1, "index"), "::0"), ["$.views[1].index", "zero"]),
    ("index two ellipses", _set(("views", 1, "index"), "..., ..."),
     ["$.views[1].index", "'...'"]),
    ("index bad syntax", _set(("views", 1, "index"), "1:2:3:4"),
     ["$.views[1].index", '"1:2:3:4"', "position 5"]),
    ("of unknown", _set(("views", 1, "of"), "Q"), ["$.views[1].of", "unknown view 'Q'"]),
    ("of not text", _set(("views", 1, "of"), ["A"]), ["$.views[1].of", '["A"]']),
    ("of later view", _set(("views", 0), {"name": "v", "of": "w", "index": ""}),
     ["$.views[0].of", "'w'", "defined later"]),
    ("transpose not a permutation", _set(("views", 1), {"name": "w", "of": "A",
                                                         "transpose": [0, 0]}),
     ["$.views[1].transpose", "permutation"]),
    ("transpose text", _set(("views", 1), {"name": "w", "of": "A", "transpose": "T"}),
     ["$.views[1].transpose", '"T"']),
    ("reshape needs copy", _set(("views", 1), {"name": "w", "of": "v", "reshape": [4]}),
     ["$.views[1].reshape", "'v'", "needs a copy"]),
    ("reshape -2", _set(("views", 1), {"name": "w", "of": "A", "reshape": [-2, 8]}),
     ["$.views[1].reshape[0]", "-2"]),
    ("reshape wrong size", _set(("views", 1), {"name": "w", "of": "A", "reshape": [3, 3]}),
     ["$.views[1].reshape", "(3, 3)"]),
    ("broadcast mismatch", _set(("views", 1), {"name": "w", "of": "A", "broadcast_to": [3, 3]}),
     ["$.views[1].broadcast_to", "(3, 3)"]),
    ("as_strided without stride", _set(("views", 1), {"name": "w", "of": "A",
                                                       "as_strided": {"shape": [2]}}),
     ["$.views[1].as_strided", "missing key 'stride'"]),
    ("as_strided typo", _set(("views", 1), {"name": "w", "of": "A", "as_strided": {
        "shape": [2], "stride": [1], "strides": [1]}}),
     ["$.views[1].as_strided.strides", "did you mean 'stride'"]),
    ("as_strided out of bounds", _set(("views", 1), {"name": "w", "of": "A", "as_strided": {
        "shape": [3], "stride": [7], "offset": 3}}),
     ["$.views[1].as_strided", "'w'", "highest element 17"]),
    ("as_strided not object", _set(("views", 1), {"name": "w", "of": "A", "as_strided": [2]}),
     ["$.views[1].as_strided", "[2]"]),
    ("ops not a list", _set(("ops",), None), ["$.ops", "null"]),
    ("missing ops", _delete(("ops",)), ["$: missing key 'ops'"]),
    ("op not an object", _set(("ops", 0), "f"), ["$.ops[0]", '"f"']),
    ("op without kind", _delete(("ops", 0, "kind")), ["$.ops[0]", "missing key 'kind'"]),
    ("unknown kind", _set(("ops", 0, "kind"), "fil"),
     ["$.ops[0].kind", '"fil"', "did you mean 'fill'"]),
    ("kind not text", _set(("ops", 0, "kind"), 1), ["$.ops[0].kind", "1"]),
    ("unknown fn", _set(("ops", 1, "fn"), "expp"), ["$.ops[1].fn", '"expp"', "exp"]),
    ("fn from another family", _set(("ops", 1, "fn"), "add"), ["$.ops[1].fn", '"add"']),
    ("fn as code", _set(("ops", 1, "fn"), "lambda x: __import__('os')"),
     ["$.ops[1].fn", "lambda x"]),
    ("fn not text", _set(("ops", 1, "fn"), {"name": "exp"}), ["$.ops[1].fn", '{"name": "exp"}']),
    ("fill value text", _set(("ops", 0, "fill_value"), "x"), ["$.ops[0].fill_value", '"x"']),
    ("fill value bool", _set(("ops", 0, "fill_value"), True), ["$.ops[0].fill_value", "true"]),
    ("axis float", _set(("ops", 1), {"name": "t", "kind": "reduce", "axis": 1.5}),
     ["$.ops[1].axis", "1.5"]),
    ("param of another kind", _set(("ops", 0, "fn"), "exp"), ["$.ops[0].fn", "unknown key"]),
    ("op key typo", _set(("ops", 1, "input"), ["v"]), ["$.ops[1].input", "'inputs'"]),
    ("unknown input view", _set(("ops", 1, "inputs"), ["foo"]),
     ["$.ops[1].inputs[0]", "unknown view 'foo'"]),
    ("unknown output view", _set(("ops", 1, "outputs"), ["v", "vv"]),
     ["$.ops[1].outputs[1]", "'vv'", "did you mean 'v'"]),
    ("inputs not a list", _set(("ops", 1, "inputs"), "w"), ["$.ops[1].inputs", '"w"']),
    ("input not text", _set(("ops", 1, "inputs"), [0]), ["$.ops[1].inputs[0]", "0"]),
    ("duplicate op", _set(("ops", 1, "name"), "f"), ["$.ops[1].name", "'f'"]),
    ("duplicate key", '{"format": "aliasflow-program", "version": 1, "version": 1, '
                      '"tensors": [], "ops": []}', ["$.version", "more than once"]),
    ("NaN as version", '{"format": "aliasflow-program", "version": NaN, "tensors": [], '
                       '"ops": []}', ["$.version", "NaN"]),
]


@pytest.mark.parametrize("mutation, expected", [(m, e) for _, m, e in BAD],
                         ids=[case[0] for case in BAD])
def test_bad_input_is_refused_with_path_and_value(mutation, expected):
    if isinstance(mutation, str):
        text = mutation
    else:
        doc = copy.deepcopy(BASE)
        mutation(doc)
        text = json.dumps(doc)
    problems = problems_of(text)
    assert any(all(s in p for s in expected) for p in problems), problems
    assert all(p.startswith("$") for p in problems), problems


def test_every_problem_is_reported_at_once():
    doc = copy.deepcopy(BASE)
    doc["format"] = "x"
    doc["tensors"][0]["dtype"] = "float33"
    doc["tensors"][1]["shape"] = [-1]
    doc["views"][0]["stride"] = "x"
    doc["ops"][0]["kind"] = "fil"
    doc["ops"][1]["inputs"] = ["nope"]
    problems = problems_of(doc)
    for path in ("$.format", "$.tensors[0].dtype", "$.tensors[1].shape[0]", "$.views[0].stride",
                 "$.ops[0].kind", "$.ops[1].inputs[0]"):
        assert any(p.startswith(path + ":") for p in problems), (path, problems)


def test_broken_definitions_do_not_cascade():
    doc = copy.deepcopy(BASE)
    doc["tensors"][0]["dtype"] = "float33"  # A is broken: views and ops on it say nothing more
    problems = problems_of(doc)
    assert len(problems) == 1, problems


def test_many_data_problems_are_capped():
    doc = copy.deepcopy(BASE)
    doc["tensors"][1]["shape"] = [100]
    doc["tensors"][1]["init"] = {"data": ["x"] * 100}
    problems = problems_of(doc)
    assert 3 <= len(problems) <= 10


def test_injection_is_never_executed(tmp_path, monkeypatch):
    import builtins
    marker = tmp_path / "pwned"
    monkeypatch.setattr(builtins, "eval", lambda *a, **k: pytest.fail("eval called"))
    monkeypatch.setattr(builtins, "exec", lambda *a, **k: pytest.fail("exec called"))
    doc = copy.deepcopy(BASE)
    doc["views"][1]["index"] = f"__import__('os').system('touch {marker}')"
    doc["ops"][1]["fn"] = f"__import__('os').system('touch {marker}')"
    doc["tensors"][0]["dtype"] = "O"
    problems = problems_of(doc)
    assert any("$.views[1].index" in p for p in problems)
    assert any("$.ops[1].fn" in p for p in problems)
    assert any("$.tensors[0].dtype" in p for p in problems)
    assert not marker.exists()


def test_size_limits(tmp_path):
    assert MAX_FILE_BYTES == 256 * 2**20
    text = json.dumps(BASE)
    with pytest.raises(ProgramFileError, match="larger than the limit"):
        loads_program(text, max_bytes=100)
    path = tmp_path / "big.json"
    path.write_text(text + " " * 1000)
    with pytest.raises(ProgramFileError, match=r"big\.json.*limit of 500 bytes"):
        load_program(path, max_bytes=500)
    assert load_program(path).ops[0].name == "f"


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        load_program(tmp_path / "nope.json")


def test_error_names_the_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{")
    with pytest.raises(ProgramFileError) as info:
        load_program(path)
    assert str(info.value).startswith(str(path))
    assert isinstance(info.value, af.AliasflowError)


def test_nonfinite_values_are_read():
    doc = copy.deepcopy(BASE)
    doc["tensors"][0]["init"] = {"data": [["nan", "inf", "-inf", 1], [0] * 4, [0] * 4, [0] * 4]}
    doc["ops"][0]["fill_value"] = "-inf"
    p = loads_program(json.dumps(doc))
    row = p.tensors["A"].data[0]
    assert np.isnan(row[0]) and row[1] == np.inf and row[2] == -np.inf and row[3] == 1
    assert p.ops[0].fill_value == -np.inf
    p = loads_program(json.dumps(doc).replace('"-inf"', "-Infinity"))  # Python's json output
    assert p.ops[0].fill_value == -np.inf


@pytest.mark.parametrize("init, expected", [
    ("zeros", np.zeros((2, 2))), ("ones", np.ones((2, 2))),
    ("arange", np.arange(4).reshape(2, 2)), ({"fill": -2}, np.full((2, 2), -2)),
    ({"data": [[1, 2], [3, 4]]}, np.array([[1, 2], [3, 4]])),
])
def test_init_forms(init, expected):
    doc = copy.deepcopy(BASE)
    doc["tensors"][1]["init"] = init
    p = loads_program(json.dumps(doc))
    assert p.tensors["B"].data.dtype == np.int32
    assert np.array_equal(p.tensors["B"].data, expected)


def test_zero_dim_and_empty_tensors():
    doc = {"format": "aliasflow-program", "version": 1,
           "tensors": [{"name": "s", "shape": [], "dtype": "float64", "init": {"data": 2.5}},
                       {"name": "e", "shape": [0, 3], "init": {"data": []}}],
           "ops": [{"name": "r", "kind": "reduce", "axis": 0, "inputs": ["e"]}]}
    p = loads_program(json.dumps(doc))
    assert p.tensors["s"].data[()] == 2.5 and p.tensors["e"].shape == (0, 3)
    assert signature(roundtrip(p)) == signature(p)


# ---- saving refuses what a file cannot hold --------------------------------------------------
def test_save_refuses_callables_naming_the_op():
    a = Tensor("A", (2,))
    ops = [TransformOperation("custom", lambda x: x + 1).set_inputs(a.view()),
           BinaryOperation("fine", np.add).set_inputs(a.view(), a.view()),
           ReduceOperation("my_sum", fn=lambda x, axis: x.sum(axis)).set_inputs(a.view())]
    with pytest.raises(ProgramFileError) as info:
        dumps_program(Program(ops, [a]))
    message = str(info.value)
    assert "'custom'" in message and "'my_sum'" in message and "'fine'" not in message
    assert "Python callable" in message


def test_save_refuses_a_lookalike_function():
    def exp(x):
        return x
    op = TransformOperation("t", exp).set_inputs(Tensor("A", (2,)).view())
    with pytest.raises(ProgramFileError, match="'t'"):
        dumps_program(Program([op]))


def test_save_refuses_unregistered_kinds_and_dtypes():
    a = Tensor("A", (2,))
    c = Tensor("C", (2,), "complex64")
    scale = af.OpRecord("s", "scale", [af.Access(0, "RW", a.view())])  # no such primitive
    with pytest.raises(ProgramFileError) as info:
        dumps_program(Program([scale], [a, c]))
    assert "'s'" in str(info.value) and "'scale'" in str(info.value)
    assert "'C'" in str(info.value) and "complex64" in str(info.value)


def test_builder_subclasses_cannot_bring_kernels():
    """A kernel belongs to a Primitive: a builder's compute() would be ignored by every
    runner, so defining one is refused when the class is made."""
    with pytest.raises(TypeError, match="Scale defines compute"):
        class Scale(TransformOperation):
            def compute(self, values):
                return values[0] * 2


# ---- robustness: arbitrary JSON never crashes the loader ---------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20)


def _leaf_paths(value, path=()):
    if isinstance(value, dict):
        yield path
        for k, v in value.items():
            yield from _leaf_paths(v, path + (k,))
    elif isinstance(value, list):
        yield path
        for i, v in enumerate(value):
            yield from _leaf_paths(v, path + (i,))
    else:
        yield path


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_documents_load_or_fail_cleanly(data):
    doc = copy.deepcopy(BASE)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _leaf_paths(doc) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        _set(path, data.draw(json_values))(doc)
    try:
        loads_program(json.dumps(doc))
    except ProgramFileError as exc:
        assert exc.problems and all(p.startswith("$") for p in exc.problems)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_arbitrary_json_fails_cleanly(value):
    with pytest.raises(ProgramFileError):
        loads_program(json.dumps(value))


def test_bytes_input_bad_encoding_and_deep_nesting():
    assert loads_program(json.dumps(BASE).encode()).ops[1].name == "t"
    with pytest.raises(ProgramFileError, match=r"\$: not valid UTF-8"):
        loads_program(b'{"format": "\xff"}')
    deep = "[" * 100000 + "]" * 100000
    assert any(p.startswith("$:") for p in problems_of(deep))
