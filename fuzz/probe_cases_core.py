"""Probe cases: views and runs in the core, DLPack export and import, the block runner."""
from __future__ import annotations

import random

import numpy as np

import aliasflow as af
from probe_lib import (CLEAN, DLPACK_CLEAN, Modified, Wrong, either, family, named, refused,
                       same_array)


# ---- core leftovers ------------------------------------------------------------------------
@named
def core_fill_through_stride_2_62():
    a = af.Tensor("A", (4, 4))
    before = a.data.copy()

    def go():
        v = af.TensorView("v", a, 0, (1, 4), (2**62, 1))
        af.run([af.FillOperation("f", 2.0).set_outputs(v)])
    refused(go, state=lambda: a.data.copy(), what="fill through stride 2**62")
    same_array(a.data, before, "A after the refusal")


@named
def core_as_strided_int_shape():
    a = af.Tensor("A", (4,))
    refused(lambda: a.as_strided(2, 1), what="as_strided(2, 1)")


@named
def core_as_strided_none_stride():
    a = af.Tensor("A", (4,))
    refused(lambda: a.as_strided((2,), None), what="as_strided((2,), None)")


@named
def core_rename_empty():
    a = af.Tensor("A", (4,))
    refused(lambda: a[1:].rename(""), what="rename('')")


@named
def core_stride_beyond_64_bits_saved():
    from aliasflow.io import dumps_program, loads_program
    a = af.Tensor("A", (4, 4))

    def go():
        v = af.TensorView("v", a, 0, (1, 4), (2**62, 1))[::2]  # stride 2**63 by slicing
        return dumps_program([af.FillOperation("f", 1.0).set_outputs(v)])
    state, text = either(go, what="a view with stride 2**63")
    if state == "accepted":
        either(lambda: loads_program(text), lambda p: None, what="load it back")
        try:
            loads_program(text)
        except af.AliasflowError as exc:
            raise Wrong(f"saved a program that cannot be loaded back: {exc}") from None


class _Forward:
    """What NumPy's overlap suite passes to np.shares_memory: only __array_interface__."""

    def __init__(self, arr):
        self.__array_interface__ = arr.__array_interface__
        self._keep = arr


@named
def core_overlap_of_array_interface_objects():
    buf = np.zeros(16, np.float32)
    x, y = _Forward(buf[2:8]), _Forward(buf[6:])
    got = af.check_memory_overlap(x, y)
    if got is not True:
        raise Wrong(f"check_memory_overlap gave {got!r}, NumPy says True")
    ov = af.overlap(x, _Forward(buf[:2]))
    if ov.count != 0:
        raise Wrong(f"overlap count {ov.count}, NumPy says 0")


@family
def core_views(seed):
    """Views with hostile fields: made or refused; a made view's numpy() agrees with NumPy's
    as_strided over the same memory, and a Fill through it writes exactly its elements."""
    rng = random.Random(seed)
    dtype = rng.choice(["float32", "int8", "float64", "uint16"])
    n = rng.choice([1, 4, 16, 17])
    a = af.Tensor("A", (n,), dtype)
    big = [2**62, 2**63 - 1, 2**63, -2**63, 2**64, 2**31, 10**20, -1, 0, 1, 3]
    ndim = rng.randrange(0, 4)
    shape = tuple(rng.choice([0, 1, 1, 2, 3, 2**40, 2**63]) for _ in range(ndim))
    stride = tuple(rng.choice(big) for _ in range(ndim))
    offset = rng.choice([0, 1, n - 1, n, 2**63, -1])
    state = lambda: a.data.copy()  # noqa: E731

    def make():
        v = af.TensorView("v", a, offset, shape, stride)
        if rng.random() < 0.5:
            v = v[tuple(slice(None, None, rng.choice([1, 2, -1, -2, 2**62])) for _ in shape)]
        return v
    got, v = either(make, state=state, what=f"TensorView({offset}, {shape}, {stride})")
    if got == "refused":
        return
    isz = a.dtype.itemsize
    for s in v.byte_strides:
        if not -2**63 <= s < 2**63:
            raise Wrong(f"view {v!r} accepted with byte stride {s} beyond 64 bits")
    expect = sorted({v.offset + sum(i * s for i, s in zip(idx, v.stride))
                     for idx in np.ndindex(*v.shape)}) if 0 < v.size <= 4096 else None
    if expect is not None:
        got_fp = v.footprint().tolist()
        if got_fp != expect:
            raise Wrong(f"footprint {got_fp[:8]} differs from brute force {expect[:8]}")
        af.run([af.FillOperation("f", 1).set_outputs(v)])
        touched = np.flatnonzero(a.data).tolist()
        if touched != expect:
            raise Wrong(f"fill wrote {touched[:8]}, the view's elements are {expect[:8]}")
    del isz


# ---- DLPack --------------------------------------------------------------------------------
@named
def dlpack_export_device_int():
    v = af.Tensor("A", (4,))[:]
    refused(lambda: v.__dlpack__(dl_device=5), clean=DLPACK_CLEAN, what="dl_device=5")


@named
def dlpack_import_neg_bit():
    import torch
    z = torch.tensor([1 + 2j, 3 - 4j])
    y = z.conj().imag
    state, v = either(lambda: af.from_dlpack(y), what="from_dlpack(z.conj().imag)")
    if state == "accepted":
        same_array(v.numpy(), y.resolve_neg().numpy(), "z.conj().imag")


@named
def dlpack_import_conj_bit():
    import torch
    z = torch.tensor([1 + 2j, 3 - 4j])
    state, v = either(lambda: af.from_dlpack(z.conj()), what="from_dlpack(z.conj())")
    if state == "accepted":
        same_array(v.numpy(), z.conj().resolve_conj().numpy(), "z.conj()")


@family
def dlpack_export(seed):
    """__dlpack__ with arguments of every kind: a capsule NumPy and PyTorch read as the
    view's values, or BufferError/AliasflowError."""
    rng = random.Random(seed)
    t = af.Tensor("A", (4, 5), rng.choice(["float32", "int16", "uint8", "float64"]),
                  data=np.arange(20).reshape(4, 5))
    v = rng.choice([t[:], t[1:, ::2], t.T, t[::-1], t[0], t[None, 2], t.view().broadcast_to(
        (2, 4, 5))])
    pool = [None, 5, (1, 0), (5, 0), (1,), (1, 0, 0), ("a", 0), (2**70, 0), (1, -1),
            [1, 0], (1.0, 0), "cpu", (True, False)]
    kw = {}
    if rng.random() < 0.6:
        kw["dl_device"] = rng.choice(pool)
    if rng.random() < 0.5:
        kw["max_version"] = rng.choice([None, (1, 0), (0, 8), 3, (1,), (2**70, 0), "1.0",
                                        (1, 0, 0), (-1, 0)])
    if rng.random() < 0.3:
        kw["stream"] = rng.choice([None, 0, 1, -1, "x", 2**70])
    if rng.random() < 0.4:
        kw["copy"] = rng.choice([None, True, False, "x", 1, 0])
    got, cap = either(lambda: v.__dlpack__(**kw), clean=DLPACK_CLEAN, what=f"__dlpack__({kw})")
    if got == "accepted":
        class Holder:
            def __dlpack__(self, **_):
                return cap

            def __dlpack_device__(self):
                return (1, 0)
        arr = np.from_dlpack(Holder())
        same_array(arr, v.numpy(), f"__dlpack__({kw}) read back")


class _Liar:
    """A DLPack producer whose answers are chosen by the fuzzer."""

    def __init__(self, dlpack, device):
        self._dlpack, self._device = dlpack, device

    def __dlpack__(self, **kw):
        return self._dlpack(**kw)

    def __dlpack_device__(self):
        return self._device()


@family
def dlpack_import(seed):
    """Producers that lie or fail: refused cleanly, or imported with the right values."""
    import torch
    rng = random.Random(seed)
    base = torch.arange(12).to(rng.choice([torch.float32, torch.int16, torch.complex64]))
    real = base.reshape(3, 4)
    pick = rng.randrange(12)
    expect = None
    if pick == 0:
        obj = _Liar(lambda **kw: None, lambda: (1, 0))
    elif pick == 1:
        obj = _Liar(lambda **kw: 1 / 0, lambda: (1, 0))
    elif pick == 2:
        device = rng.choice([(2, 0), (1, 0), None, "cpu", (1,), (13, 0), (2**70, 0)])
        obj = _Liar(lambda **kw: real.__dlpack__(**kw), lambda: device)
        expect = real.numpy()
    elif pick == 3:
        def raises(**kw):
            raise rng.choice([KeyError("k"), RuntimeError("r"), MemoryError(),
                              RecursionError(), StopIteration(), OverflowError("o")])
        obj = _Liar(raises, lambda: (1, 0))
    elif pick == 4:
        obj = _Liar(lambda: real.__dlpack__(), lambda: (1, 0))  # takes no keywords
        expect = real.numpy()
    elif pick == 5:
        cap = real.__dlpack__()
        np.from_dlpack(_Liar(lambda **kw: cap, lambda: (1, 0)))  # the capsule is used
        obj = _Liar(lambda **kw: cap, lambda: (1, 0))
    elif pick == 6:
        obj = _Liar(lambda **kw: b"not a capsule", lambda: (1, 0))
    elif pick == 7:
        z = real if real.is_complex() else real.to(torch.complex64)
        obj = rng.choice([z.conj(), z.conj().imag, z.imag, (-z).imag, z.conj().real,
                          z.conj()[1:, ::2]])
        expect = obj.resolve_conj().resolve_neg().numpy()
    elif pick == 8:
        obj = real.t()[::2]
        expect = obj.numpy()
    elif pick == 9:
        obj = _Liar(lambda **kw: real.__dlpack__(**kw), lambda: 1 / 0)
        expect = real.numpy()
    elif pick == 10:
        obj = torch.zeros(2, 3).expand(4, 2, 3)
        expect = obj.numpy()
    else:
        obj = _Liar(lambda **kw: real.__dlpack__(**kw), lambda: (1, 0))
        expect = real.numpy()

    def check(v):
        if expect is not None:
            same_array(v.numpy(), expect, f"import of case {pick}")
    either(lambda: af.from_dlpack(obj), check, what=f"from_dlpack case {pick}")


# ---- the block runner -----------------------------------------------------------------------
@named
def blocks_block_bytes_infinity():
    a = af.Tensor("A", (4,))
    refused(lambda: af.run([af.FillOperation("f").set_outputs(a[:])],
                           block_bytes="9" * 400), state=lambda: a.data.copy(),
            what="block_bytes of 400 digits")


class _BadBackend:
    def __init__(self, answer):
        self.answer = answer

    def execute(self, plan, progress=None):
        return self.answer(plan)


@named
def blocks_backend_returns_none():
    a = af.Tensor("A", (4,))
    refused(lambda: af.run([af.FillOperation("f").set_outputs(a[:])],
                           backend=_BadBackend(lambda p: None)),
            state=lambda: a.data.copy(), what="a backend returning None")


@named
def blocks_backend_returns_short_blocks():
    a = af.Tensor("A", (64,))

    def short(p):
        from aliasflow.execution.distributed import LocalBackend
        values, results = LocalBackend().execute(p)
        return {k: v[:1] for k, v in values.items()}, results
    refused(lambda: af.run([af.FillOperation("f").set_outputs(a[:])], backend=_BadBackend(short),
                           block_bytes=16),
            state=lambda: a.data.copy(), what="a backend returning short blocks")


def _program(rng, n_ops=6, fail_at=None):
    a = af.Tensor("A", (8,), data=np.arange(8.0))
    b = af.Tensor("B", (8,), data=np.arange(8.0) * 10)
    ops = []
    for k in range(n_ops):
        if k == fail_at:
            def bad(x):
                raise ValueError("kernel failed on purpose")
            ops.append(af.TransformOperation(f"op{k}", bad).set_inputs(a[::2])
                       .set_outputs(b[1::2]))
            continue
        kind = rng.randrange(3)
        lo = rng.randrange(0, 4)
        if kind == 0:
            ops.append(af.FillOperation(f"op{k}", float(k)).set_outputs(
                rng.choice([a, b])[lo:lo + 4]))
        elif kind == 1:
            ops.append(af.TransformOperation(f"op{k}", "negative").set_inputs(a[lo:lo + 4])
                       .set_outputs(b[4 - lo:8 - lo]))
        else:
            ops.append(af.BinaryOperation(f"op{k}", "add").set_inputs(a[:4], b[lo:lo + 4])
                       .set_outputs(a[4:]))
    return ops, (a, b)


def _outcome(ops, tensors, **kw):
    calls = [0]
    stop_at = kw.pop("stop_at", None)

    def progress(n):
        calls[0] += n
        if stop_at is not None and calls[0] >= stop_at:
            raise KeyError("progress stopped the run")
    try:
        af.run(ops, progress=progress, **kw)
        err = None
    except (af.ExecutionError, KeyError) as exc:
        err = (type(exc).__name__, getattr(exc, "op_name", None))
    return err, [t.data.copy() for t in tensors], [None if op.result is None else
                                                   np.asarray(op.result).copy() for op in ops]


@family
def blocks_failures(seed):
    """A failing kernel or a raising progress callback: the block run leaves exactly what
    the one-thread run leaves (storages, results, the error)."""
    rng = random.Random(seed)
    fail_at = rng.choice([None, rng.randrange(6)])
    stop_at = rng.choice([None, rng.randrange(1, 7)])
    bb = rng.choice([4, 8, 12, 16, "16B", 3, 1])
    ops1, t1 = _program(random.Random(seed), fail_at=fail_at)
    ops2, t2 = _program(random.Random(seed), fail_at=fail_at)
    want = _outcome(ops1, t1, stop_at=stop_at)
    got = _outcome(ops2, t2, stop_at=stop_at, block_bytes=bb)
    if want[0] != got[0]:
        raise Wrong(f"error {got[0]} with block_bytes={bb!r}, {want[0]} without")
    for k, (x, y) in enumerate(zip(want[1], got[1])):
        same_array(y, x, f"tensor {k} after the run (block_bytes={bb!r}, stop_at={stop_at}, "
                         f"fail_at={fail_at})")
    for k, (x, y) in enumerate(zip(want[2], got[2])):
        if (x is None) != (y is None) or (x is not None and x.tobytes() != y.tobytes()):
            raise Wrong(f"result of op{k} differs with block_bytes={bb!r}")


@family
def blocks_backends(seed):
    """Backends answering garbage: refused before anything is written back."""
    from aliasflow.execution.distributed import LocalBackend
    rng = random.Random(seed)
    ops, tensors = _program(rng)
    pick = rng.randrange(9)

    def answer(p):
        values, results = LocalBackend().execute(p)
        if pick == 0:
            return None
        if pick == 1:
            return values
        if pick == 2:
            return {k: None for k in values}, results
        if pick == 3:
            return {k: v[:-1] for k, v in values.items()}, results
        if pick == 4:
            return dict(list(values.items())[1:]), results
        if pick == 5:
            return {k: v.astype(np.float64) for k, v in values.items()}, results
        if pick == 6:
            return {k: list(v) for k, v in values.items()}, results
        if pick == 7:
            return values, None
        return {k: np.concatenate([v, v]) for k, v in values.items()}, results
    refused(lambda: af.run(ops, backend=_BadBackend(answer), block_bytes=rng.choice([4, 16])),
            state=lambda: [t.data.copy() for t in tensors], what=f"backend answer {pick}")


@family
def blocks_bytes(seed):
    rng = random.Random(seed)
    value = rng.choice(["9" * rng.randrange(300, 5000), "1" + "0" * 400 + "KiB", "inf", "nan",
                        "1e400", "1.5", "0.5", "-1", "1" * 30 + ".5 GiB", " 16 MiB ", "16MiB",
                        "0", "1.0000000000000000000000001", 2**70, -3, 1.5, float("inf"),
                        "\u0661\u0666", "16 mib", "99999999999999999999 GiB"])
    a = af.Tensor("A", (16,))
    state = lambda: a.data.copy()  # noqa: E731

    def go():
        af.run([af.FillOperation("f", 3.0).set_outputs(a[:])], block_bytes=value)
        return a.data.copy()
    either(go, lambda arr: same_array(arr, np.full(16, 3.0, np.float32), "A"), state=state,
           what=f"block_bytes={value!r:.40}")


# ---- views that repeat their elements -----------------------------------------------------
@named
def repeat_fill_2_62_windows():
    t = af.Tensor("T", (64,))
    af.run([af.FillOperation("w", 2.0).set_outputs(t.as_strided((2,) * 62, (1,) * 62))])
    expect = np.zeros(64, np.float32)
    expect[:63] = 2.0
    same_array(t.data, expect, "T after filling 2**62 overlapping indices")


@named
def repeat_reduce_2_40_broadcast():
    t = af.Tensor("T", (4,), data=[1, 2, 3, 4])
    u = af.Tensor("U", (4,))
    ops = [af.FillOperation("first", 9.0).set_outputs(u[:]),
           af.ReduceOperation("total").set_inputs(t.as_strided((2**40,), (0,), 1))]
    af.analyze(ops)
    af.value_flow(ops)
    refused(lambda: af.run(ops), state=lambda: (t.data.copy(), u.data.copy()),
            what="a reduction over 2**40 repeated indices")


@family
def repeat_views(seed):
    """Random windows with repeats on a small tensor: Fill through them writes what NumPy
    writes through the same as_strided array (small cases), value flow agrees."""
    rng = random.Random(seed)
    n = rng.choice([1, 4, 9, 16])
    ndim = rng.randrange(1, 6)
    shape = tuple(rng.choice([1, 2, 3, 2**20, 2**40]) for _ in range(ndim))
    stride = tuple(rng.choice([0, 0, 1, 2]) for _ in range(ndim))
    t = af.Tensor("T", (n,), rng.choice(["float32", "int8", "float64"]))
    got, v = either(lambda: t.as_strided(shape, stride, 0), what="the window")
    if got == "refused":
        return
    small = tuple(min(k, 3) for k in shape)  # the same elements through fewer indices
    expect = t.data.copy()
    isz = expect.itemsize
    np.lib.stride_tricks.as_strided(expect, small, [s * isz for s in stride])[...] = 7
    if any(k > 3 and s for k, s in zip(shape, stride)):
        return  # a non-zero stride over more than 3 indices reaches more elements
    af.run([af.FillOperation("f", 7).set_outputs(v)])
    same_array(t.data, expect, f"fill through {shape} {stride}")
    flows = af.value_flow([af.FillOperation("g", 1).set_outputs(v),
                           af.TransformOperation("r").set_inputs(t.view())], "r")
    written = sorted(int(e) for f in flows if f.writer == "g" for e in f.elements)
    same_array(np.array(written), np.flatnonzero(expect == 7), "flow from the fill")
