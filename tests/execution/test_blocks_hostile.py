"""Issue 28: the block runner under failing kernels, raising progress callbacks, backends that
answer garbage and block sizes that parse to nonsense. The oracle is the one-thread run
(``af.run(ops)``): the same storages, results and error, whatever the block size."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.execution.distributed import LocalBackend, parse_bytes


def build(steps, fail_at):
    a = af.Tensor("A", (8,), data=np.arange(8.0))
    b = af.Tensor("B", (8,), data=np.arange(8.0) * 10)
    ops = []
    for k, (kind, lo, which) in enumerate(steps):
        t = (a, b)[which]
        if k == fail_at:
            def bad(x):
                raise ValueError("kernel failed on purpose")
            ops.append(af.TransformOperation(f"op{k}", bad).set_inputs(a[::2])
                       .set_outputs(b[1::2]))
        elif kind == "fill":
            ops.append(af.FillOperation(f"op{k}", float(k)).set_outputs(t[lo:lo + 4]))
        elif kind == "neg":
            ops.append(af.TransformOperation(f"op{k}", "negative").set_inputs(a[lo:lo + 4])
                       .set_outputs(b[4 - lo:8 - lo]))
        elif kind == "add":
            ops.append(af.BinaryOperation(f"op{k}", "add").set_inputs(a[:4], t[lo:lo + 4])
                       .set_outputs(a[4:]))
        else:
            ops.append(af.ReduceOperation(f"op{k}", fn="sum").set_inputs(t[lo:lo + 4]))
    return ops, (a, b)


def outcome(ops, tensors, stop_at, **kw):
    calls = []

    def progress(n):
        calls.append(n)
        if stop_at is not None and len(calls) >= stop_at:
            raise KeyError("stop")
    try:
        af.run(ops, progress=progress, **kw)
        error = None
    except af.ExecutionError as exc:
        error = ("op failed", exc.op_name)
    except KeyError:
        error = ("progress", None)
    return (error, calls, [t.data.tobytes() for t in tensors],
            [None if op.result is None else np.asarray(op.result).tobytes() for op in ops])


STEPS = st.lists(st.tuples(st.sampled_from(["fill", "neg", "add", "sum"]), st.integers(0, 4),
                           st.integers(0, 1)), min_size=1, max_size=7)


@settings(max_examples=80, deadline=None)
@given(steps=STEPS, data=st.data(), block_bytes=st.sampled_from([1, 3, 4, 12, 16, "16B", 64]))
def test_failures_and_raising_callbacks_leave_what_one_thread_leaves(steps, data, block_bytes):
    fail_at = data.draw(st.one_of(st.none(), st.integers(0, len(steps) - 1)))
    stop_at = data.draw(st.one_of(st.none(), st.integers(1, len(steps) + 1)))
    want = outcome(*build(steps, fail_at), stop_at)
    got = outcome(*build(steps, fail_at), stop_at, block_bytes=block_bytes)
    assert got == want


class Backend:
    def __init__(self, answer):
        self.answer = answer

    def execute(self, plan, progress=None):
        return self.answer(LocalBackend().execute(plan))


GARBAGE = {
    "None": lambda vr: None,
    "values only": lambda vr: vr[0],
    "three things": lambda vr: (vr[0], vr[1], None),
    "None blocks": lambda vr: ({k: None for k in vr[0]}, vr[1]),
    "short blocks": lambda vr: ({k: v[:-1] for k, v in vr[0].items()}, vr[1]),
    "long blocks": lambda vr: ({k: np.concatenate([v, v]) for k, v in vr[0].items()}, vr[1]),
    "float blocks": lambda vr: ({k: v.astype(float) for k, v in vr[0].items()}, vr[1]),
    "lists": lambda vr: ({k: list(v) for k, v in vr[0].items()}, vr[1]),
    "a block missing": lambda vr: (dict(list(vr[0].items())[1:]), vr[1]),
    "an extra block": lambda vr: ({**vr[0], (9, 9, 9): np.zeros(4, np.uint8)}, vr[1]),
    "no results": lambda vr: (vr[0], {}),
    "results None": lambda vr: (vr[0], None),
}


@pytest.mark.parametrize("name", list(GARBAGE))
def test_a_backend_answering_garbage_is_refused_before_anything_is_written(name):
    ops, (a, b) = build([("fill", 0, 0), ("neg", 1, 1), ("sum", 2, 0)], None)
    before = a.data.copy(), b.data.copy()
    with pytest.raises(af.AliasflowError, match="backend Backend answered.*nothing was "
                                                "written back"):
        af.run(ops, backend=Backend(GARBAGE[name]), block_bytes=8)
    assert a.data.tobytes() == before[0].tobytes() and b.data.tobytes() == before[1].tobytes()
    af.run(ops, backend=Backend(lambda vr: vr), block_bytes=8)  # the honest answer runs
    assert a.data[:4].tolist() == [0.0] * 4


@pytest.mark.parametrize("value", ["9" * 400, "1" + "0" * 400 + "KiB", "inf", "nan", "1e400",
                                   "0.5", "-1", "\u0661\u0666", 2**70, "99999999999999999999 GiB",
                                   1.5, float("inf"), "1.0000000000000000000000001"])
def test_block_sizes_that_are_not_byte_counts_are_refused(value):
    a = af.Tensor("A", (4,))
    with pytest.raises(af.AliasflowError, match="block_bytes"):
        af.run([af.FillOperation("f", 2.0).set_outputs(a[:])], block_bytes=value)
    assert not a.data.any()


def test_block_sizes_are_read_exactly():
    assert parse_bytes("1.5KiB") == 1536 and parse_bytes(" 16 MiB ") == 2**24
    assert parse_bytes("0.5KiB") == 512 and parse_bytes(str(2**63 - 1)) == 2**63 - 1
    with pytest.raises(af.AliasflowError, match="more than"):
        parse_bytes(str(2**63))
