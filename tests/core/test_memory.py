"""Memory is addresses: arrays imported separately alias exactly, across dtypes and imports.

Oracles: np.shares_memory(max_work=-1) on the arrays themselves, and brute-force byte
footprints computed from the arrays' own (address, shape, strides, itemsize).
"""
import copy
import gc
import itertools
import weakref

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import aliasflow as af
from aliasflow.core.storage import VIRTUAL_BASE, memory_groups


def byte_set(arr: np.ndarray) -> set[int]:
    """Every byte address the array touches (brute force)."""
    addr = arr.__array_interface__["data"][0]
    out = set()
    for idx in itertools.product(*[range(n) for n in arr.shape]):
        start = addr + sum(i * s for i, s in zip(idx, arr.strides))
        out.update(range(start, start + arr.itemsize))
    return out


DTYPES = [np.int8, np.int16, np.float32, np.float64, np.complex64]


@st.composite
def derived_array(draw, base: np.ndarray):
    """A random view of ``base``: slices with steps, transposes, as_strided, view(dtype)."""
    arr = base
    for _ in range(draw(st.integers(1, 4))):
        move = draw(st.sampled_from(["slice", "transpose", "view", "strided", "reshape"]))
        if move == "slice" and arr.ndim:
            index = []
            for n in arr.shape:
                start = draw(st.integers(-n - 1, n + 1)) if n else 0
                stop = draw(st.integers(-n - 1, n + 1)) if n else 0
                step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
                index.append(slice(start, stop, step))
            arr = arr[tuple(index)]
        elif move == "transpose":
            arr = arr.T
        elif move == "view" and arr.ndim and arr.size:
            dt = np.dtype(draw(st.sampled_from(DTYPES)))
            try:
                arr = arr.view(dt)
            except ValueError:
                pass
        elif move == "strided" and arr.size:
            # a window of the same bytes: stays inside the array's own extent
            flat = arr.reshape(-1) if arr.flags.c_contiguous else None
            if flat is not None and flat.size >= 2:
                n = draw(st.integers(1, flat.size))
                w = draw(st.integers(1, flat.size - n + 1))
                arr = np.lib.stride_tricks.as_strided(flat, (n, w), (flat.strides[0],) * 2)
        elif move == "reshape" and arr.flags.c_contiguous and arr.size:
            arr = arr.reshape(-1)
    return arr


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_separate_imports_alias_exactly(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    base = np.zeros(shape, dtype)
    arrays = [data.draw(derived_array(base)) for _ in range(3)]
    order = data.draw(st.permutations(range(3)))
    views = {k: af.from_numpy(arrays[k]) for k in order}  # imported separately, any order
    for i, j in itertools.combinations(range(3), 2):
        a, b = arrays[i], arrays[j]
        expected = bool(byte_set(a) & byte_set(b))
        assert np.shares_memory(a, b, max_work=-1) == expected  # the two oracles agree
        assert af.check_memory_overlap(views[i], views[j]) == expected
        assert bool(af.overlap(views[j], views[i])) == expected
    for k, arr in enumerate(arrays):
        v = views[k]
        assert v.numpy().shape == arr.shape
        np.testing.assert_array_equal(v.numpy().view(np.uint8) if arr.ndim and arr.size
                                      and False else v.numpy(), arr)
        assert v.numpy().__array_interface__["data"][0] == arr.__array_interface__["data"][0] \
            or arr.size == 0
        internal = len(byte_set(arr)) < arr.size * arr.itemsize
        assert v.has_internal_overlap() == internal


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_dependencies_between_imports_match_byte_footprints(data):
    base = np.zeros(data.draw(st.integers(4, 24)), np.float32)
    arrays = [data.draw(derived_array(base)) for _ in range(data.draw(st.integers(2, 5)))]
    views = [af.from_numpy(a) for a in arrays]
    ops = []
    for k, v in enumerate(views):
        if data.draw(st.booleans()):
            ops.append(af.FillOperation(f"w{k}", 1).set_outputs(v))
        else:
            ops.append(af.TransformOperation(f"r{k}").set_inputs(v))
    conflicts = {(d.src, d.dst) for d in af.analyze(ops, complete=True).dependencies}
    graph = af.analyze(ops)
    reach = {name: set() for name in (o.name for o in ops)}
    for name in graph.topological_order():
        for p in graph.predecessors(name):
            reach[name] |= reach[p] | {p}
    for i, j in itertools.combinations(range(len(ops)), 2):
        writes = {i, j} & {k for k, o in enumerate(ops) if o.output_views}
        expected = bool(writes) and bool(byte_set(arrays[i]) & byte_set(arrays[j]))
        assert ((ops[i].name, ops[j].name) in conflicts) == expected
        if expected:  # ordering edges order every conflict
            assert ops[i].name in reach[ops[j].name]


def test_two_wrappers_of_one_buffer_are_one_memory():
    buf = np.arange(16, dtype=np.float32)
    a = af.Tensor.from_numpy("a", buf.reshape(4, 4))
    b = af.Tensor.from_numpy("b", buf)
    w = af.FillOperation("w", 5).set_outputs(a[1])
    r = af.TransformOperation("r").set_inputs(b[6:7])
    deps = af.analyze([w, r]).dependencies
    assert [(d.src, d.dst, d.kind, d.implicit) for d in deps] == [("w", "r", "RAW", True)]
    assert af.value_flow([w, r], "r")[0].writer == "w"
    af.run([w, r], workers=2)
    assert r.result.tolist() == [5.0]


def test_reinterpreting_views_overlap_by_bytes():
    f = np.zeros(8, np.float32)
    i8 = af.from_numpy(f.view(np.int8)[9:11], "i8")  # bytes 9, 10: inside float 2
    floats = af.from_numpy(f, "f")
    assert af.check_memory_overlap(i8, floats[2])
    assert not af.check_memory_overlap(i8, floats[1]) and not af.check_memory_overlap(i8, floats[3])
    assert af.overlap(floats, i8).elements().tolist() == [2]
    assert af.overlap(i8, floats).elements().tolist() == [0, 1]  # i8's own tensor: bytes
    w = af.FillOperation("w", 1).set_outputs(i8)
    r = af.TransformOperation("r").set_inputs(floats[1:3])
    d, = af.analyze([w, r]).dependencies
    assert (d.kind, d.implicit) == ("RAW", True)
    flows = af.value_flow([w, r], "r")
    assert {(fl.writer, tuple(fl.elements.tolist())) for fl in flows} == \
        {(None, (1, 2)), ("w", (2,))}


def test_storages_are_address_ranges():
    s = af.Storage(0x1000, 16, name="s")
    t = af.Tensor.on(s, "float32")
    assert t.shape == (4,) and t.is_virtual and not s.has_memory
    u = af.Tensor.on(af.Storage(0x1008, 16, name="u"), "float32")
    assert af.check_memory_overlap(t[2:], u[:1]) and not af.check_memory_overlap(t[:2], u)
    with pytest.raises(af.AliasflowError, match="no memory"):
        t.view().numpy()
    with pytest.raises(af.AliasflowError, match="needs 20 bytes"):
        af.Tensor.on(s, "float32", (5,))
    with pytest.raises(af.AliasflowError, match="negative address"):
        af.Storage(-1, 4)


def test_virtual_storages_never_collide():
    a = af.Tensor.virtual("a", (10**12,))
    b = af.Tensor.virtual("b", (10**12,))
    assert a.storage.address >= VIRTUAL_BASE and not a.storage.overlaps(b.storage)
    real = af.Tensor("r", (4,))
    assert not a.storage.overlaps(real.storage)
    assert not af.check_memory_overlap(a.view(), b.view())


def test_memory_groups_are_connected_ranges():
    a, b, c, d = (af.Storage(0, 10), af.Storage(9, 5), af.Storage(14, 2), af.Storage(13, 0))
    g = memory_groups([c, a, b, d])
    assert g[id(a)][0] == g[id(b)][0] == g[id(d)][0] != g[id(c)][0]
    assert g[id(a)][1] == 0


def test_memory_lives_as_long_as_a_view():
    arr = np.arange(6.0)
    ref = weakref.ref(arr)
    v = af.from_numpy(arr[1:4])
    del arr
    gc.collect()
    assert ref() is not None
    assert v.numpy().tolist() == [1.0, 2.0, 3.0]
    del v
    gc.collect()
    assert ref() is None


def test_read_only_arrays_give_read_only_views():
    arr = np.arange(4.0)
    arr.flags.writeable = False
    v = af.from_numpy(arr, "ro")
    assert v.storage.readonly and not v.numpy().flags.writeable
    op = af.FillOperation("w", 1).set_outputs(v)
    with pytest.raises(af.ExecutionError, match="read-only"):
        af.run([op])
    assert arr.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_import_refusals():
    with pytest.raises(af.AliasflowError, match="needs an array"):
        af.from_numpy([1, 2, 3])
    with pytest.raises(af.AliasflowError, match="fixed-size"):
        af.from_numpy(np.array([object()]))
    with pytest.raises(af.AliasflowError, match="does not export DLPack"):
        af.from_dlpack(np.arange(3).tolist())
    with pytest.raises(af.AliasflowError, match="name"):
        af.from_numpy(np.zeros(2), name="")


def test_buffer_protocol_and_array_interface_import_without_copy():
    raw = bytearray(16)
    v = af.from_numpy(raw, "raw")
    v.numpy()[3] = 9
    assert raw[3] == 9
    mv = memoryview(raw)[4:8]
    w = af.from_numpy(mv, "mv")
    assert af.check_memory_overlap(v, w)


def test_packed_record_fields_use_byte_cells():
    rec = np.zeros(4, dtype=np.dtype([("a", "i1"), ("b", "<f4")], align=False))
    b = af.from_numpy(rec["b"], "b")
    a = af.from_numpy(rec["a"], "a")
    assert b.numpy().strides == (5,) and b.tensor.dtype == np.uint8
    assert not af.check_memory_overlap(a, b)
    assert af.check_memory_overlap(b, af.from_numpy(rec.view(np.uint8)[6:7]))


def test_deep_copy_copies_memory():
    buf = np.arange(4.0)
    v = af.from_numpy(buf)
    op = af.FillOperation("w", 7).set_outputs(v[1:])
    twin = copy.deepcopy([op])
    af.run(twin)
    assert buf.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert twin[0].output_views[0].tensor.data.tolist() == [0.0, 7.0, 7.0, 7.0]
