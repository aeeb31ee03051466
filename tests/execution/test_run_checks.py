"""The checks run() makes before running: once per signature, the same outcome as checking
every record alone; and a graph fits the records it was analysed from, whatever copies.

:func:`aliasflow.execution.interpreter.check_all` checks one record per signature (kind,
parameters by value and type, views' layouts up to offsets); the reference is
:func:`aliasflow.core.interpret.check` of every record in program order. Records are
compared on random programs with repeated, hostile and retyped parameters.
"""
from __future__ import annotations

import copy
import fractions

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.core import interpret
from aliasflow.execution import interpreter
from aliasflow.execution.ready import is_light

from strategies import programs

FILLS = [0, 1, 1.0, -2.5, np.float32(1.0), np.int8(1), np.uint64(7), True,
         fractions.Fraction(1, 2), 1 + 2j, float("nan"), [1.0], "1"]
AXES = [0, -1, 1, 0.0, False, np.int64(0)]


def twin(rec, draw):
    """A record with ``rec``'s kind and views under another name, some parameters changed
    (possibly to values of another type, or not numbers at all), views possibly fresh
    objects equal to the old ones."""
    params = dict(rec.params)
    if "fill_value" in params and draw(st.booleans()):
        params["fill_value"] = draw(st.sampled_from(FILLS))
    if "axis" in params and draw(st.booleans()):
        params["axis"] = draw(st.sampled_from(AXES))
    if "fn" in params and draw(st.booleans()):
        params["fn"] = draw(st.sampled_from([np.negative, np.square, "negative", "exp",
                                             params["fn"]]))
    accesses = rec.accesses
    if draw(st.booleans()):  # equal views, fresh objects
        accesses = [af.Access(a.slot, a.mode, af.TensorView(a.view.name, a.view.tensor,
                                                            a.view.offset, a.view.shape,
                                                            a.view.stride))
                    for a in accesses]
    return af.OpRecord(rec.name + "'", rec.prim, accesses, params, rec.n_values)


@st.composite
def repeated_programs(draw):
    """A random program, then twins of its records (same views and kernels: one signature,
    or parameters changed)."""
    ops = [op.record() for op in draw(programs(max_ops=8, executable=draw(st.booleans()),
                                               max_tensors=2))]
    return ops + [twin(rec, draw) for rec in ops]


def first_refused_alone(records):
    for rec in records:
        try:
            interpret.check(rec)
        except af.AliasflowError:
            return rec.name
    return None


@settings(max_examples=150, deadline=None)
@given(repeated_programs())
def test_check_all_refuses_the_first_record_that_fails_alone(records):
    """check_all refuses the first record that the check refuses alone (or none), and
    gives is_light of every record."""
    first = first_refused_alone(records)
    try:
        _, light = interpreter.check_all(records)
    except interpreter.OpRefused as exc:
        assert exc.op_name == first
    else:
        assert first is None
        assert light == bytes(is_light(rec, af.PRIMITIVES[rec.prim]) for rec in records)


def test_an_axis_equal_to_another_but_not_an_int_is_checked_itself():
    """0 == 0.0 == False in a dict: the signature keeps a parameter's type, so a Reduce
    whose axis is 0.0 or False is refused before anything runs, not grouped with one whose
    axis is 0."""
    t = af.Tensor("T", (3, 4), "float64", data=np.ones((3, 4)))
    good = af.ReduceOperation("good", axis=0).set_inputs(t[:, :2]).set_outputs(t[0, 2:])
    ops = [good.record()] + [good.record().replace(name=name, params={"fn": "sum", "axis": axis})
                             for name, axis in (("float", 0.0), ("bool", False))]
    assert interpreter.check_all(ops[:1])[1] == b"\x01"
    for bad in ops[1:]:
        with pytest.raises(interpreter.OpRefused, match=f"'{bad.name}': axis must be an int"):
            interpreter.check_all([ops[0], bad])
        with pytest.raises(af.OpRefused):
            af.run([ops[0], bad], workers=2)
    assert t.data.tolist() == np.ones((3, 4)).tolist()  # nothing ran


def test_records_with_unreadable_parameters_are_checked_alone():
    """Parameters that are containers (a list as a fill value) say nothing by identity: such
    a record gets no signature and its own check (which refuses it)."""
    t = af.Tensor("T", (8,), "float64")
    good = af.FillOperation("good", 1.0).set_outputs(t[:2]).record()
    strange = good.replace(name="strange", params={"fill_value": [1.0]})
    assert interpreter.signature(strange) is None
    with pytest.raises(interpreter.OpRefused, match="'strange': fill_value must be a number"):
        interpreter.check_all([good, strange])


# ---------------------------------------------------------------- a graph fits its records
def changed_copies(ops, draw):
    """``ops`` (builders) with one thing changed, and whether the change is one a graph of
    the old ops no longer fits (other accesses)."""
    k = draw(st.integers(0, len(ops) - 1))
    op = ops[k]
    change = draw(st.sampled_from(["equal view", "extra view", "dropped view", "copied op",
                                   "tuple lists"]))
    out = list(ops)
    if change == "equal view" and op.input_views:
        v = op.input_views[0]
        op.input_views = [af.TensorView(v.name, v.tensor, v.offset, v.shape, v.stride)] + \
            op.input_views[1:]
        return out, False  # the same memory the same way: the same dependencies
    if change == "extra view":
        op.output_views = op.output_views + [af.Tensor("X", (2,))[:]]
        return out, True
    if change == "dropped view" and op.output_views:
        op.output_views = op.output_views[1:]
        return out, True
    if change == "copied op":
        out[k] = copy.copy(op)
    elif change == "tuple lists":
        op.input_views = tuple(op.input_views)
    return out, False


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_graph_fits_exactly_the_records_with_its_accesses(data):
    ops = data.draw(programs(max_ops=6))
    graph = af.analyze(ops)
    graph.check_matches([op.record() for op in ops])
    now, changed = changed_copies(ops, data.draw)
    records = [op.record() for op in now]
    if changed:
        with pytest.raises(af.AliasflowError, match="has other views.*analyse again"):
            graph.check_matches(records)
    else:
        graph.check_matches(records)
        assert af.analyze(now).edges == graph.edges
