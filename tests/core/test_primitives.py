"""An op kind added from outside the package: one Primitive, registered, then analysed, run
(one worker, threads, blocks), saved and loaded, built as a builder and as a record.

The kind here is ``axpy``: ``out = alpha * x + y``, elementwise with NumPy broadcasting. Its
results are compared with NumPy computing the same thing on copies.
"""
from __future__ import annotations

import numpy as np
import pytest

import aliasflow as af
from aliasflow.io import dumps_program, loads_program


def axpy_kernel(params, inputs):
    x, y = inputs
    return params["alpha"] * x + y


def axpy_result(params, inputs):
    (sx, dx), (sy, dy) = inputs
    return np.broadcast_shapes(sx, sy), np.result_type(dx, dy)


AXPY = af.Primitive("axpy", axpy_kernel, arity=2, params={"alpha": "number"},
                    defaults={"alpha": 1.0}, result=axpy_result, light=True,
                    doc="out = alpha * x + y")


@pytest.fixture(autouse=True)
def axpy():
    af.PRIMITIVES.register(AXPY)
    yield AXPY
    del af.PRIMITIVES["axpy"]


def program():
    """Three axpy ops over one tensor whose views overlap: the second reads what the first
    wrote (through a different view), the third writes what the second read."""
    t = af.Tensor("T", (12,), "float64", data=np.arange(12.0))
    ops = [AXPY.make("a", alpha=2.0).set_inputs(t[0:4], t[4:8]).set_outputs(t[8:12]),
           af.OpRecord("b", "axpy", [af.Access(0, "R", t[6:10]), af.Access(1, "R", t[0:4]),
                                     af.Access(2, "W", t[0:4])], {"alpha": -1.0}),
           AXPY.make("c").set_inputs(t[1:5], t[3:7]).set_outputs(t[2:6])]
    return t, ops


def numpy_program() -> np.ndarray:
    a = np.arange(12.0)
    a[8:12] = 2.0 * a[0:4].copy() + a[4:8].copy()
    a[0:4] = -1.0 * a[6:10].copy() + a[0:4].copy()
    a[2:6] = 1.0 * a[1:5].copy() + a[3:7].copy()
    return a


def test_a_registered_kind_builds_with_its_defaults_and_checks_its_params():
    op = AXPY.make("x")
    assert isinstance(op, af.Operation) and op.kind == "axpy" and op.params == {"alpha": 1.0}
    with pytest.raises(af.AliasflowError, match="'y': alpha must be a number, got 'big'"):
        AXPY.make("y", alpha="big")
    with pytest.raises(af.AliasflowError, match="unknown parameter"):
        AXPY.make("z", beta=2)
    with pytest.raises(af.AliasflowError, match="already registered"):
        af.PRIMITIVES.register(af.Primitive("axpy", axpy_kernel))


def test_analyze_finds_the_implicit_flows():
    _, ops = program()
    deps = {(d.src, d.dst, d.kind, d.implicit) for d in af.analyze(ops).dependencies}
    assert ("a", "b", "RAW", True) in deps       # b reads T[6:10], a wrote T[8:12]
    assert ("b", "c", "RAW", True) in deps       # c reads T[1:5], b wrote T[0:4]
    assert ("a", "b", "WAR", True) in deps or ("a", "b", "RAW", True) in deps


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_runs_equal_numpy_on_copies(workers):
    t, ops = program()
    af.run(ops, workers=workers)
    assert t.data.tolist() == numpy_program().tolist()


def test_runs_on_blocks_equal_numpy_on_copies():
    t, ops = program()
    af.run(ops, block_bytes=16)  # tasks on storage blocks, records shipped by value
    assert t.data.tolist() == numpy_program().tolist()


def test_save_load_and_run_again():
    _, ops = program()
    text = dumps_program(ops)
    assert '"kind": "axpy"' in text and '"alpha": -1' in text
    loaded = loads_program(text)
    assert [r.prim for r in loaded.records] == ["axpy"] * 3
    assert [dict(r.params) for r in loaded.records] == [{"alpha": 2.0}, {"alpha": -1.0},
                                                       {"alpha": 1.0}]
    assert dumps_program(loaded) == text
    af.run(loaded.ops, workers=2)
    assert loaded.tensors["T"].data.tolist() == numpy_program().tolist()


def test_the_checks_use_the_kinds_rules_before_anything_runs():
    t = af.Tensor("T", (8,), "float64")
    bad = AXPY.make("bad").set_inputs(t[0:3], t[3:5]).set_outputs(t[5:8])  # (3,) + (2,)
    with pytest.raises(af.OpRefused, match="'bad'"):
        af.run([AXPY.make("ok").set_inputs(t[0:2], t[2:4]).set_outputs(t[4:6]), bad])
    assert not t.data.any()  # nothing ran


def test_an_unregistered_kind_is_analysed_but_not_run():
    t = af.Tensor("T", (4,))
    rec = af.OpRecord("w", "scatter_add", [af.Access(0, "RW", t[:2])])
    assert af.analyze([rec, af.TransformOperation("r").set_inputs(t[1:])]).edges == [("w", "r")]
    with pytest.raises(af.OpRefused, match="'w': kind 'scatter_add' is not a registered"):
        af.run([rec])
