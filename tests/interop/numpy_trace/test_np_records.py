"""A NumPy trace's op records: exact byte views by address (checked against the bytes the
arrays touch, enumerated), and what af.analyze and af.value_flow make of them."""
import textwrap

import numpy as np
import pytest

import aliasflow as af
from aliasflow.interop.numpy_trace import runtime
from aliasflow.interop.numpy_trace.rewrite import rewrite
from aliasflow.interop.numpy_trace.trace import NumpyTrace

runtime.install()


def traced(source, ns):
    code = rewrite(textwrap.dedent(source), "<rec>", runtime.register_site)[0]
    with NumpyTrace() as t:
        exec(code, ns)
    return t


def byte_addresses(x):
    start = np.zeros((), np.int64) + x.__array_interface__["data"][0]
    for n, s in zip(x.shape, x.strides):
        start = np.add.outer(start, np.arange(n, dtype=np.int64) * s)
    return np.unique(np.add.outer(start.ravel(), np.arange(x.itemsize)).ravel())


def test_views_are_the_bytes_the_arrays_touch():
    buf = np.arange(64, dtype=np.uint8)
    ns = {"np": np, "d": buf[1:33].view(">i4")[::-2], "s": buf[:48].view(np.int16)[2::3],
          "f": buf[8:40].view(np.float64).reshape(2, 2).T}
    t = traced("""
        d[...] = s[:d.size]
        f += 1.5
        np.negative(f, out=f)
        """, ns)
    views = [a.view for rec in t.ops for a in rec.accesses]
    arrays = [ns["d"], ns["s"][:ns["d"].size], ns["f"], ns["f"], ns["f"]]   # f += 1.5: one
    assert len(views) == len(arrays)
    for v, x in zip(views, arrays):
        got = v.footprint() + v.tensor.storage.address    # bytes, absolute
        assert np.array_equal(np.unique(got), byte_addresses(x))


def test_records_analyse_like_any_program():
    a = np.zeros(8)
    b = np.arange(8.)
    t = traced("""
        a[1:] = b[:-1]
        np.add(a, 1, out=b)
        c = b * 2
        a[::2] = c[::2]
        """, {"np": np, "a": a, "b": b})
    records = t.ops
    assert [r.prim for r in records] == ["numpy.setitem", "numpy.ufunc add", "numpy.setitem"]
    deps = {(d.src, d.dst, d.kind) for d in af.analyze(records, complete=True).dependencies}
    assert ("setitem#0", "ufunc add#1", "RAW") in deps     # add reads a written by #0
    assert ("setitem#0", "ufunc add#1", "WAR") in deps     # add writes b read by #0
    assert ("setitem#0", "setitem#2", "WAW") in deps
    flows = af.value_flow(records, records[1])
    # bytes of a[1:] from the first store; a[0] as it was before the trace
    assert {f.writer: f.count for f in flows} == {"setitem#0": 7 * 8, None: 8}


def test_scattered_writes_keep_exact_elements():
    a = np.arange(10)
    t = traced("a[[1, 5, 7]] = 0\n", {"np": np, "a": a})
    [rec] = t.ops
    [write] = [acc for acc in rec.accesses if acc.mode != "R"]
    assert write.mode == "RW"    # may-write of the whole array, exact elements beside it
    note = t.recorder.ops[0]
    base = a.__array_interface__["data"][0]
    assert sorted((note[2][0][3] - base) // 8) == [1, 5, 7]


def test_memory_reused_is_a_new_lifetime():
    t = traced("""
        for i in range(3):
            tmp = np.empty(1000)
            tmp[:] = i
        """, {"np": np})
    gens = {note[2][0][2][4] for note in t.recorder.ops}
    assert len(gens) == 3


def test_torch_from_numpy_shares_addresses():
    torch = pytest.importorskip("torch")
    a = np.arange(12.)
    with af.trace() as t:
        ta = torch.from_numpy(a)
        ta[1:].add_(1)                 # PyTorch writes a's memory
        np.copyto(a[:4], a[4:8])       # NumPy (a wrapped function) reads and writes it
    assert len(t.numpy) == 1 and len(t.torch) >= 1
    np_bytes = t.numpy.ops[0].accesses[0].view
    torch_write = next(acc.view for op in t.torch.ops for acc in op.accesses
                       if acc.mode != "R" and op.name.startswith("aten.add_"))
    start = torch_write.tensor.storage.address + torch_write.byte_offset
    assert start == a.ctypes.data + a.itemsize     # ta[1:]: element 1 of a, by address
    assert np_bytes.tensor.storage.address <= start < \
        np_bytes.tensor.storage.address + np_bytes.tensor.storage.nbytes


def test_order_facts_only_on_request():
    a = np.arange(10.)
    t = traced("""
        v = a[2:6]
        a[:4] = 1.0
        b = np.zeros(4)
        np.add(v, 1, out=b)
        """, {"np": np, "a": a})
    assert t.findings() == []
    order = t.findings(all=True)
    assert [(f.severity, f.kind) for f in order] == [("order", "RAW")]
    assert order[0].lines == ["<rec>:3", "<rec>:5"]
