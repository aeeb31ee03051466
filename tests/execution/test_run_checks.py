"""The checks run() makes before a parallel run, compiled and pure, answer alike.

Two compiled helpers speed them up: ``_ready.signature_groups`` (which ops share a check
signature: :func:`aliasflow.execution.checks.signature_groups` is the reference) and
``_walker.same_views`` (whether a graph's ops still have their views:
``OpViews.mismatch``'s Python loops are the reference). Both are compared with their
references on random programs, hostile ops and garbage arguments.
"""
from __future__ import annotations

import copy
import fractions

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.analysis import schedule
from aliasflow.execution import checks

from strategies import programs

GROUPS = checks.compiled_groups
SAME = schedule._same_views
needs_groups = pytest.mark.skipif(GROUPS is None, reason="compiled signature_groups not loaded")
needs_same = pytest.mark.skipif(SAME is None, reason="compiled same_views not loaded")


def compiled_groups(ops) -> list[int]:
    return np.frombuffer(GROUPS(tuple(ops), af.FillOperation, checks._PLAIN_NUMBERS),
                         np.int32).tolist()


FILLS = [0, 1, 1.0, -2.5, np.float32(1.0), np.int8(1), np.uint64(7), True,
         fractions.Fraction(1, 2), 1 + 2j, float("nan")]


@st.composite
def repeated_programs(draw):
    """A random program, then copies of its ops (same views, same kernels: one signature)
    and ops sharing view objects or made of equal fresh views."""
    ops = draw(programs(max_ops=8, executable=draw(st.booleans()), max_tensors=2))
    more = []
    for op in ops:
        twin = copy.copy(op)
        twin.name = op.name + "'"
        if isinstance(twin, af.FillOperation) and draw(st.booleans()):
            twin.fill_value = draw(st.sampled_from(FILLS))
        if hasattr(twin, "axis") and draw(st.booleans()):
            twin.axis = draw(st.sampled_from([0, -1, 1, 0.0]))
        if hasattr(twin, "fn") and draw(st.booleans()):
            twin.fn = draw(st.sampled_from([np.negative, np.square, twin.fn]))
        if draw(st.integers(0, 4)) == 0:
            twin.elementwise = not getattr(twin, "elementwise", False)
        if draw(st.booleans()):  # equal views, fresh objects
            twin.input_views = [af.TensorView(v.name, v.tensor, v.offset, v.shape, v.stride)
                                for v in op.input_views]
        more.append(twin)
    return ops + more


@needs_groups
@settings(max_examples=200, deadline=None)
@given(repeated_programs())
def test_compiled_groups_are_the_references(ops):
    assert compiled_groups(ops) == checks.signature_groups(ops)


class Raises:
    """An op attribute that raises when read."""

    def __init__(self, exc):
        self.exc = exc

    def __get__(self, obj, owner=None):
        raise self.exc


def hostile_ops():
    t = af.Tensor("T", (8,), "float64")
    good = af.TransformOperation("good", "negative").set_inputs(t[:4]).set_outputs(t[4:])
    ops = [good]
    for k, exc in enumerate([ValueError("no"), TypeError("no"), AttributeError("no"),
                             RuntimeError("no")]):
        cls = type(f"Bad{k}", (af.TransformOperation,), {"axis": Raises(exc)})
        ops.append(cls(f"bad{k}", "negative").set_inputs(t[:4]).set_outputs(t[4:]))
    odd = af.TransformOperation("odd", "negative").set_inputs(t[:4])
    odd.output_views = 5  # not iterable
    ops.append(odd)
    other_fill = af.FillOperation("other_fill", 1.0).set_outputs(t[:2])
    other_fill.fill_value = np.float64(2.0)
    ops.append(other_fill)
    strange = af.FillOperation("strange", 1.0).set_outputs(t[:2])
    strange.fill_value = [1.0]  # not a plain number: checked alone
    ops.append(strange)
    ops.append(copy.copy(good))
    return ops


@needs_groups
def test_hostile_ops_are_grouped_as_the_reference_groups_them():
    ops = hostile_ops()
    got = compiled_groups(ops)
    assert got == checks.signature_groups(ops)
    # AttributeError from a property counts as missing (getattr with a default); the others
    # send the op to be checked alone; the last op shares the first's check
    assert got == [0, -1, -1, 3, -1, -1, 6, -1, 0]


@needs_groups
def test_an_interrupt_while_reading_an_op_propagates():
    t = af.Tensor("T", (8,), "float64")
    cls = type("Interrupting", (af.TransformOperation,), {"axis": Raises(KeyboardInterrupt())})
    ops = [cls("i", "negative").set_inputs(t[:4]).set_outputs(t[4:])]
    with pytest.raises(KeyboardInterrupt):
        compiled_groups(ops)
    with pytest.raises(KeyboardInterrupt):
        checks.signature_groups(ops)


GARBAGE = [None, 0, "x", (), [], (1, 2), frozenset(), {1}, af.FillOperation, object(), b"",
           np.zeros(3)]


@needs_groups
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(GARBAGE), max_size=4))
def test_signature_groups_refuses_garbage(args):
    try:
        GROUPS(*args)
    except (TypeError, ValueError):
        pass


@pytest.mark.parametrize("backend", ["compiled", "pure"])
@settings(max_examples=60, deadline=None)
@given(ops=st.one_of(repeated_programs(), st.just(hostile_ops())))
def test_check_all_refuses_the_first_op_that_fails_alone(backend, ops):
    """With either grouping, check_all refuses the first op that check_op refuses (or none)
    and gives is_light of every op."""
    saved = checks.compiled_groups
    if backend == "pure":
        checks.compiled_groups = None
    elif saved is None:
        pytest.skip("compiled signature_groups not loaded")
    try:
        first = None
        for op in ops:
            try:
                checks.check_op(op)
            except af.AliasflowError:
                first = op.name
                break
            except Exception:  # noqa: BLE001 - an op check_op cannot even read
                first = "unreadable"
                break
        try:
            light = checks.check_all(ops)
        except checks.OpRefused as exc:
            assert exc.op_name == first
        except Exception:  # noqa: BLE001
            assert first == "unreadable"
        else:
            assert first is None
            from aliasflow.execution.ready import is_light
            assert light == bytes(is_light(op) for op in ops)
    finally:
        checks.compiled_groups = saved


# ---------------------------------------------------------------- same_views
def changed_copies(ops, draw):
    """``ops`` with one thing changed that run() must notice, and a description."""
    k = draw(st.integers(0, len(ops) - 1))
    op = ops[k]
    change = draw(st.sampled_from(["equal view", "extra view", "dropped view", "other op",
                                   "tuple lists"]))
    out = list(ops)
    if change == "equal view" and op.input_views:
        v = op.input_views[0]
        op.input_views = [af.TensorView(v.name, v.tensor, v.offset, v.shape, v.stride)] + \
            op.input_views[1:]
    elif change == "extra view":
        op.output_views = op.output_views + [af.Tensor("X", (2,))[:]]
    elif change == "dropped view" and op.output_views:
        op.output_views = op.output_views[1:]
    elif change == "other op":
        out[k] = copy.copy(op)
    elif change == "tuple lists":  # the same views in a tuple: still the same program
        op.input_views = tuple(op.input_views)
        return out, False
    else:
        return out, False
    return out, True


@needs_same
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_same_views_agrees_with_the_python_loops(data):
    ops = data.draw(programs(max_ops=6))
    snap = schedule.OpViews.of(ops)
    starts = np.ascontiguousarray(snap.starts, np.int64)
    assert SAME(tuple(ops), snap.ops, snap.views, starts)
    now, changed = changed_copies(ops, data.draw)
    compiled = SAME(tuple(now), snap.ops, snap.views, starts)
    saved = schedule._same_views
    schedule._same_views = None
    try:
        why = snap.mismatch(now)
    finally:
        schedule._same_views = saved
    assert compiled == (why is None)
    assert compiled != changed


@needs_same
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(GARBAGE + [np.zeros(3, np.int64), np.zeros(1, np.int32),
                                           np.zeros((1, 1), np.int64)]), max_size=5))
def test_same_views_refuses_garbage(args):
    try:
        SAME(*args)
    except (TypeError, ValueError, BufferError):
        pass


@needs_same
def test_same_views_checks_its_starts():
    t = af.Tensor("T", (4,))
    ops = (af.FillOperation("f", 1.0).set_outputs(t[:2]),)
    views = [ops[0].output_views[0]]
    assert SAME(ops, ops, views, np.array([0, 0, 1], np.int64))
    for bad in ([0, 1, 1], [0, 0, 2], [1, 0, 1], [0, -1, 1]):
        assert not SAME(ops, ops, views, np.array(bad, np.int64))
    with pytest.raises(ValueError):
        SAME(ops, ops, views, np.array([0, 1], np.int64))
    with pytest.raises(TypeError, match="starts must be a 1-d int64 array"):
        SAME(ops, ops, views, np.array([0, 0, 1], np.int32))


@pytest.mark.parametrize("backend", ["compiled", "pure"])
def test_an_axis_equal_to_another_but_not_an_int_is_checked_itself(backend, monkeypatch):
    """0 == 0.0 == False in a dict: the signature keeps the axis's type, so a Reduce whose
    axis was set to 0.0 after construction is refused before anything runs, not grouped
    with one whose axis is 0."""
    if backend == "pure":
        monkeypatch.setattr(checks, "compiled_groups", None)
    elif GROUPS is None:
        pytest.skip("compiled signature_groups not loaded")
    t = af.Tensor("T", (3, 4), "float64", data=np.ones((3, 4)))
    ops = []
    for name, axis in (("good", 0), ("float", 0.0), ("bool", False)):
        op = af.ReduceOperation(name, axis=0).set_inputs(t[:, :2]).set_outputs(t[0, 2:])
        op.axis = axis
        ops.append(op)
    assert checks.check_all(ops[:1]) == b"\x01"
    for bad in ops[1:]:
        with pytest.raises(checks.OpRefused, match=f"'{bad.name}': axis must be an int"):
            checks.check_all([ops[0], bad])
        with pytest.raises(checks.OpRefused):
            af.run([ops[0], bad], workers=2)
    assert t.data.tolist() == np.ones((3, 4)).tolist()  # nothing ran
