"""aliasflow.mge: seed 001's table and exercises observed through mge.layers, refcounts,
random eager programs against NumPy (alias semantics) and against value semantics
(MegEngine semantics), and the dependency edges each semantics implies."""
import gc

import numpy as np
import pytest
from repo import ROOT
from hypothesis import given, settings, strategies as st

import aliasflow as af
import aliasflow.mge
from aliasflow import mge
from aliasflow.mge import functional as F


@pytest.fixture(autouse=True)
def defaults():
    with mge.config(version="1.9", semantics="megengine"):
        mge.reset()
        yield
    mge.reset()


def fresh():
    return mge.tensor([[1.0, 2.0], [3.0, 4.0]])


BOTH = pytest.mark.parametrize("semantics", ["megengine", "alias"])


# ---- the seed's table, row by row -----------------------------------------------------------
@BOTH
def test_row_iadd(semantics):
    mge.config(semantics=semantics)
    a = fresh()
    before = mge.layers(a)
    a += 1
    after = mge.layers(a)
    assert after.python_id == before.python_id
    np.testing.assert_array_equal(a.numpy(), [[2, 3], [4, 5]])
    if semantics == "megengine":   # C++ tensor new, storage new, the old one's ref - 1
        assert after.impl.uid != before.impl.uid
        assert after.storage.uid != before.storage.uid
        assert before.storage.handle.refcount == 0 and before.storage.handle.released
        assert after.storage.refcount == 1
    else:                           # written through: nothing new
        assert after.impl.uid == before.impl.uid
        assert after.storage.uid == before.storage.uid and after.storage.refcount == 1


@BOTH
def test_row_rebind(semantics):
    mge.config(semantics=semantics)
    a = fresh()
    before = mge.layers(a)
    old = a
    a = a + 1
    after = mge.layers(a)
    assert after.python_id != before.python_id
    assert after.impl.uid != before.impl.uid and after.storage.uid != before.storage.uid
    assert before.storage.handle.refcount == 1      # `old` still holds it
    del old
    gc.collect()
    assert before.storage.handle.refcount == 0 and before.storage.handle.released


@BOTH
@pytest.mark.parametrize("version", ["1.8", "1.9"])
def test_row_getitem(semantics, version):
    mge.config(semantics=semantics, version=version)
    a = fresh()
    before = mge.layers(a)
    b = a[0]
    lb, la = mge.layers(b), mge.layers(a)
    assert lb.python_id != la.python_id and lb.impl.uid != la.impl.uid
    assert (la.python_id, la.impl.uid, la.storage.uid) == (before.python_id, before.impl.uid,
                                                           before.storage.uid)
    np.testing.assert_array_equal(b.numpy(), [1, 2])
    if version == "1.9":            # reuses the storage: ref + 1
        assert lb.storage.uid == la.storage.uid and lb.storage.refcount == 2
        assert (lb.impl.shape, lb.impl.stride, lb.impl.offset) == ((2,), (1,), 0)
    else:                           # a new storage with a copy of the needed part
        assert lb.storage.uid != la.storage.uid
        assert lb.storage.nbytes == 8 and la.storage.refcount == 1


@pytest.mark.parametrize("version", ["1.8", "1.9"])
@pytest.mark.parametrize("make", [lambda a: a.reshape(4), lambda a: F.transpose(a),
                                  lambda a: aliasflow.mge.functional.transpose(a, (1, 0)),
                                  lambda a: a.T])
def test_row_reshape_transpose(version, make):
    mge.config(version=version)
    a = fresh()
    b = make(a)
    la, lb = mge.layers(a), mge.layers(b)
    assert lb.python_id != la.python_id and lb.impl.uid != la.impl.uid
    assert (lb.storage.uid == la.storage.uid) == (version == "1.9")
    assert la.storage.refcount == (2 if version == "1.9" else 1)
    np.testing.assert_array_equal(b.numpy(), make_np(make))


def make_np(make):
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    with mge.config(version="1.9"):
        probe = make(mge.tensor(x))
    return probe.numpy()


def test_transpose_layout_is_a_view():
    a = fresh()
    lt = mge.layers(F.transpose(a))
    assert (lt.impl.shape, lt.impl.stride, lt.impl.offset) == ((2, 2), (1, 2), 0)


@BOTH
def test_row_setitem(semantics):
    mge.config(semantics=semantics)
    a = fresh()
    before = mge.layers(a)
    a[0] = 1
    after = mge.layers(a)
    assert after.python_id == before.python_id
    np.testing.assert_array_equal(a.numpy(), [[1, 1], [3, 4]])
    if semantics == "megengine":    # new C++ tensor on a new storage with a copy; old ref - 1
        assert after.impl.uid != before.impl.uid and after.storage.uid != before.storage.uid
        assert after.storage.nbytes == before.storage.nbytes
        assert before.storage.handle.released
    else:
        assert after.impl.uid == before.impl.uid and after.storage.uid == before.storage.uid


@BOTH
def test_row_alias(semantics):
    mge.config(semantics=semantics)
    a = fresh()
    before = mge.layers(a)
    b = a
    assert mge.layers(b) == before


def test_seed_module_agrees_with_the_table_in_megengine_mode():
    from aliasflow.frontends.mge import seed
    for row in seed.ROWS:
        assert seed.observe(row, "megengine").kinds() == row.seed, row.statement
    # alias mode differs exactly on the two statements that write
    differs = [r.statement for r in seed.ROWS if seed.observe(r, "alias").kinds() != r.seed]
    assert differs == ["a += 1", "a[0] = 1"]


# ---- refcounts and release ------------------------------------------------------------------
def test_refcounts_follow_implementations_and_release_at_zero():
    a = fresh()
    handle = mge.layers(a).storage.handle
    b, c, d = a[0], a.T, a.reshape(4)
    assert handle.refcount == 4
    e = b
    del b
    gc.collect()
    assert handle.refcount == 4          # e still refers to that implementation
    del e, c
    gc.collect()
    assert handle.refcount == 2
    del a
    gc.collect()
    assert handle.refcount == 1 and not handle.released
    np.testing.assert_array_equal(d.numpy(), [1, 2, 3, 4])
    del d
    gc.collect()
    assert handle.refcount == 0 and handle.released


def test_layers_report_real_addresses():
    a = fresh()
    python_id, impl, info = mge.layers(a)
    assert python_id == id(a) and impl.storage == info and impl.id == impl.uid
    lay = mge.layers(a)
    assert (lay.python, lay.cpp, lay.storage.ptr, lay.storage.length) == (
        id(a), lay.impl, info.address, info.nbytes)
    assert (impl.shape, impl.stride, impl.offset, impl.dtype) == ((2, 2), (2, 1), 0, "float32")
    assert info.nbytes == 16 and info.address == a._impl.storage.array.ctypes.data
    assert mge.layers(a[1]).impl.offset == 2


# ---- the four exercises ---------------------------------------------------------------------
def exercise(i):
    a = mge.tensor([1, 2])
    if i == 0:
        b = a
        b += 1
        return a
    if i == 1:
        b = a
        b = b + 1
        return a
    if i == 2:
        b = a[0]
        b += 1
        return a
    b = a
    a[0] += 1
    return b


SEED_ANSWERS = [[2, 3], [1, 2], [1, 2], [2, 2]]
ALIAS_ANSWERS = [[2, 3], [1, 2], [2, 2], [2, 2]]


@pytest.mark.parametrize("version", ["1.8", "1.9"])
@pytest.mark.parametrize("i", range(4))
def test_exercises(i, version):
    with mge.config(version=version, semantics="megengine"):
        assert exercise(i).numpy().tolist() == SEED_ANSWERS[i]
    with mge.config(version=version, semantics="alias"):
        # 1.8 copies a[0], so even writing through cannot reach a
        expected = ALIAS_ANSWERS[i] if version == "1.9" else SEED_ANSWERS[i]
        assert exercise(i).numpy().tolist() == expected


@BOTH
def test_exercise_three_edge_exists_only_when_writes_go_through(semantics):
    mge.config(semantics=semantics)
    a = mge.tensor([1, 2])
    b = a[0]
    b += 1
    a.numpy()
    ops = mge.recorded_ops()
    inc, read = ops[-2], ops[-1]
    assert inc.name.startswith("iadd") and read.name.startswith("numpy")
    graph = af.analyze(ops, complete=True)
    edges = {(d.src, d.dst, d.kind, d.implicit) for d in graph.dependencies}
    if semantics == "alias":
        assert (inc.name, read.name, "RAW", True) in edges
        # value flow: element 0 of a comes from the increment, element 1 from the constant
        flows = {f.writer: f.elements.tolist() for f in af.value_flow(ops, read)}
        assert flows == {inc.name: [0], ops[0].name: [1]}
    else:
        assert not any(d.src == inc.name and d.dst == read.name for d in graph.dependencies)


def test_recorded_program_replays_in_parallel_to_the_same_values():
    with mge.config(semantics="alias"):
        a = mge.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
        b = a[1:, ::2]
        b *= 3
        c = F.transpose(a)
        c[0] = c[1] + 1
        a -= b.reshape(4).reshape(2, 2)[0, 0]
        expected = {name: t.numpy() for name, t in {"a": a, "b": b, "c": c}.items()}
    ops = mge.recorded_ops()
    af.run(ops, workers=2)
    for name, t in {"a": a, "b": b, "c": c}.items():
        np.testing.assert_array_equal(t._impl.ndarray(), expected[name], err_msg=name)


# ---- repr, errors ---------------------------------------------------------------------------
def test_repr_like_megengine():
    assert repr(mge.tensor([1.0, 2.0])) == "Tensor([1. 2.], device=xpux:0)"
    assert repr(mge.tensor([1, 2])) == "Tensor([1 2], dtype=int32, device=xpux:0)"
    assert repr(mge.tensor(5.0)) == "Tensor(5.0, device=xpux:0)"
    assert repr(mge.tensor([[1, 2], [3, 4]])) == \
        "Tensor([[1 2]\n [3 4]], dtype=int32, device=xpux:0)"
    assert str(mge.tensor([0.123456])) == "Tensor([0.1235], device=xpux:0)"


def test_iteration_and_numpy_conversion():
    a = fresh()
    assert [row.numpy().tolist() for row in a] == [[1, 2], [3, 4]]
    assert np.asarray(a).tolist() == [[1, 2], [3, 4]] and len(a) == 2
    with pytest.raises(IndexError):
        a[2]


def test_dtypes_follow_megengine():
    assert mge.tensor([1, 2]).dtype == np.int32
    assert mge.tensor([1.0]).dtype == np.float32
    assert mge.tensor(np.arange(3, dtype=np.int16)).dtype == np.int16
    assert (mge.tensor([1, 2]) / 2).dtype == np.float32
    assert (mge.tensor([1, 2]) + 1).dtype == np.int32


@pytest.mark.parametrize("call, message", [
    (lambda: mge.config(version="2.0"), "version must be one of"),
    (lambda: mge.config(semantics="copy"), "semantics must be one of"),
    (lambda: fresh()[[0, 1]], "unsupported index"),
    (lambda: fresh()[5], "index 5"),
    (lambda: fresh() + mge.tensor([1.0, 2.0, 3.0]), "do not broadcast"),
    (lambda: fresh().reshape(3), "cannot reshape"),
    (lambda: mge.tensor("abc"), "unsupported dtype"),
    (lambda: mge.layers(np.zeros(2)), "needs an mge Tensor"),
])
def test_bad_input_is_refused_clearly(call, message):
    with pytest.raises(af.AliasflowError, match=message):
        call()


def test_alias_mode_refuses_writes_that_cannot_fit_before_touching_memory():
    mge.config(semantics="alias")
    a = mge.tensor([1, 2])
    square, pair = mge.tensor([[1, 2], [3, 4]]), mge.tensor([1, 2])
    before = len(mge.recorded_ops())
    with pytest.raises(af.AliasflowError, match="cannot be written"):
        a /= 2
    with pytest.raises(af.AliasflowError, match="does not broadcast"):
        a += square
    with pytest.raises(af.AliasflowError, match="cannot assign"):
        a[0] = pair
    assert len(mge.recorded_ops()) == before and a.numpy().tolist() == [1, 2]


def test_config_context_manager_restores():
    with mge.config(version="1.8", semantics="alias") as cfg:
        assert (cfg.version, cfg.semantics) == ("1.8", "alias")
    now = mge.config()
    assert (now.version, now.semantics) == ("1.9", "megengine")


# ---- random eager programs ------------------------------------------------------------------
def np_window(arr, index):
    items = index if isinstance(index, tuple) else (index,)
    return arr[items + (Ellipsis,)]


@st.composite
def indices(draw, shape):
    k = draw(st.integers(0, len(shape)))
    out = []
    for n in shape[:k]:
        if n > 0 and draw(st.booleans()):
            out.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.none() | st.integers(-n - 1, n + 1))
            stop = draw(st.none() | st.integers(-n - 1, n + 1))
            step = draw(st.sampled_from([None, 1, 2, -1, -2]))
            out.append(slice(start, stop, step))
    return tuple(out)


class Box:
    """The value-semantics oracle's Python object: a name bound to an array it owns."""

    def __init__(self, arr):
        self.arr = arr


def check_same(pairs, semantics):
    # refcounts: each storage is used by exactly the distinct implementations of live tensors
    gc.collect()
    users = {}
    for t, _ in pairs:
        info = mge.layers(t)
        users.setdefault(info.storage.uid, {})[info.impl.uid] = info.storage.handle
    for impls in users.values():
        (handle,) = set(impls.values())
        assert handle.refcount == len(impls) and not handle.released
    for t, ref in pairs:
        arr = ref if semantics == "alias" else ref.arr
        np.testing.assert_array_equal(t.numpy(), arr)
        assert t.shape == arr.shape
    if semantics == "alias":   # storage identity is the array's memory identity
        for t1, r1 in pairs:
            for t2, r2 in pairs:
                same = mge.layers(t1).storage.uid == mge.layers(t2).storage.uid
                assert same == (root(r1) is root(r2))
                if r1.size and r2.size:
                    assert af.check_memory_overlap(t1._impl.view, t2._impl.view) == \
                        np.shares_memory(r1, r2, max_work=-1)


def root(arr):
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


@settings(max_examples=50, deadline=None)
@given(data=st.data(), semantics=st.sampled_from(["alias", "megengine"]),
       version=st.sampled_from(["1.8", "1.9"]))
def test_random_programs_match_numpy(data, semantics, version):
    if semantics == "alias" and version == "1.8":
        version = "1.9"   # NumPy's views share; 1.8's copies are checked by value semantics
    mge.config(semantics=semantics, version=version)
    shape = data.draw(st.tuples(st.integers(1, 4), st.integers(1, 4)))
    init = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    if semantics == "alias":
        pairs = [(mge.tensor(init), init.copy())]
    else:
        pairs = [(mge.tensor(init), Box(init.copy()))]
    val = (lambda r: r) if semantics == "alias" else (lambda r: r.arr)
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(pairs) - 1))
        t, ref = pairs[i]
        action = data.draw(st.sampled_from(["index", "transpose", "reshape", "binary",
                                            "inplace", "setitem"]))
        if action == "index":
            idx = data.draw(indices(t.shape))
            arr = np_window(val(ref), idx)
            pairs.append((t[idx], arr if semantics == "alias" else Box(arr.copy())))
        elif action == "transpose":
            arr = val(ref).T
            pairs.append((F.transpose(t), arr if semantics == "alias" else Box(arr.copy())))
        elif action == "reshape":
            arr = val(ref).reshape(-1)
            pairs.append((t.reshape(-1), arr if semantics == "alias" else Box(arr.copy())))
        else:
            op = data.draw(st.sampled_from(["add", "sub", "mul"]))
            j = data.draw(st.integers(-1, len(pairs) - 1))
            if j < 0:
                other_t = other_a = float(data.draw(st.integers(-3, 3)))
            else:
                other_t, other_a = pairs[j][0], val(pairs[j][1])
                if action != "binary" and not _fits(np.shape(other_a), val(ref).shape):
                    continue
                if action == "binary" and not _fits(np.shape(other_a), val(ref).shape) \
                        and not _fits(val(ref).shape, np.shape(other_a)):
                    try:
                        np.broadcast_shapes(np.shape(other_a), val(ref).shape)
                    except ValueError:
                        continue
            if action == "binary":
                fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op]
                res = {"add": t.__add__, "sub": t.__sub__, "mul": t.__mul__}[op](other_t)
                # a new tensor is row-major in MegEngine; NumPy may keep an input's column-major
                # layout, which would change what a later reshape shares (np.array, not
                # np.ascontiguousarray: that one makes a 0-d result 1-d)
                arr = np.array(fn(val(ref), other_a), order="C")
                pairs.append((res, arr if semantics == "alias" else Box(arr)))
            elif action == "inplace":
                if op == "add":
                    t += other_t
                elif op == "sub":
                    t -= other_t
                else:
                    t *= other_t
                fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op]
                if semantics == "alias":
                    fn(ref, other_a, out=ref)
                else:
                    # an array, also when 0-d (NumPy returns a scalar then, and a scalar's
                    # window is a copy: a later setitem would write to that copy)
                    ref.arr = np.asarray(fn(ref.arr, other_a))
            else:
                idx = data.draw(indices(t.shape))
                if j >= 0 and not _fits(np.shape(other_a), np_window(val(ref), idx).shape):
                    continue
                t[idx] = other_t
                if semantics == "alias":
                    np_window(ref, idx)[...] = other_a
                else:
                    ref.arr = np.array(ref.arr)  # a copy, and an array even if 0-d
                    np_window(ref.arr, idx)[...] = other_a
        check_same(pairs, semantics)
    # the recording replays, in dependency order on two threads, to the same final values
    finals = [t.numpy() for t, _ in pairs]
    af.run(mge.recorded_ops(), workers=2)
    for (t, _), expected in zip(pairs, finals):
        np.testing.assert_array_equal(t._impl.ndarray(), expected)


def _fits(small, big):
    try:
        return np.broadcast_shapes(small, big) == tuple(big)
    except ValueError:
        return False


def test_readme_section_runs():
    import contextlib
    import io
    import re
    from pathlib import Path
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Framework styles"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().split() == ["2"]
