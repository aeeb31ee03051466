"""Probe cases: the front ends (``tf`` graph mode, TensorProto, the seed-002 memory model,
``mge``, ``te``)."""
from __future__ import annotations

import random

import reprlib

import numpy as np

import aliasflow as af
from probe_lib import Modified, Wrong, either, family, named, refused, same_array

_short = reprlib.Repr()
_short.maxlevel, _short.maxlist, _short.maxstring = 3, 4, 20
show = _short.repr

HUGE = [2**31, 2**32, 2**40, 2**62, 2**63 - 1, 2**63, 2**64, 2**70, 10**30, -1, -2, -(2**63),
        1.5, float("nan"), float("inf"), None, "3", True, np.int64(2**62), np.uint64(2**64 - 1)]


def _deep(depth: int):
    x = [1.0]
    for _ in range(depth):
        x = [x]
    return x


def _shape_rep(tfm):
    return getattr(tfm.memory, "TensorShapeRep", None) or tfm.memory.TensorShape


# ---- tf: the seed-002 memory model -----------------------------------------------------------
@named
def tf_memory_unref_then_numpy():
    from aliasflow import tf
    t = tf.memory.Tensor.allocate("float32", [1 << 22])
    t.buffer.unref()
    refused(lambda: t.numpy(), what="numpy() after the buffer was released")


@named
def tf_memory_shape_minus_one():
    from aliasflow import tf
    refused(lambda: _shape_rep(tf)([-1]), what="TensorShapeRep([-1])")


@named
def tf_memory_tensor_without_buffer():
    from aliasflow import tf
    t = tf.memory.Tensor("float32", [2, 3])
    same_array(t.numpy(), np.zeros((2, 3), np.float32), "Tensor(float32, [2, 3]).numpy()")
    if not t.buffer.owns_memory():
        raise Wrong("the buffer it allocated does not own its memory")


@named
def tf_memory_allocate_huge():
    from aliasflow import tf
    refused(lambda: tf.memory.Tensor.allocate("float64", [2**40, 2**20]), what="2**63 bytes")
    refused(lambda: tf.memory.Tensor.allocate("float64", [2**38]), what="2 TiB")


@family
def tf_memory_ops(seed):
    """Random refcount traffic on buffers and tensors, then reads: never a crash; a read of
    released memory is refused."""
    from aliasflow import tf
    rng = random.Random(seed)
    m = tf.memory
    things = []
    bufs = []
    for _ in range(rng.randrange(1, 12)):
        pick = rng.randrange(8)
        try:
            if pick == 0:
                things.append(m.Tensor.allocate(rng.choice(["float32", "int8", "float64"]),
                                                [rng.choice([0, 1, 5, 64])] * rng.randrange(3)))
            elif pick == 1 and things:
                t = rng.choice(things)
                n = t.dims[0] if t.dims else 0
                things.append(t.slice(rng.randrange(n + 1) if n else 0, n))
            elif pick == 2 and things:
                t = rng.choice(things)
                if t.buffer is not None:
                    t.buffer.unref()
            elif pick == 3 and things:
                t = rng.choice(things)
                if t.buffer is not None:
                    t.buffer.ref()
            elif pick == 4:
                arr = np.arange(rng.choice([1, 6, 12]), dtype=np.float32)
                things.append(m.from_numpy(arr))
                bufs.append(arr)
            elif pick == 5 and things:
                t = rng.choice(things)
                if t.buffer is not None:
                    bufs.append(t.buffer.sub_buffer(0, rng.choice([0, 1, 4])))
            elif pick == 6 and bufs and not isinstance(bufs[-1], np.ndarray):
                bufs[-1].unref()
            elif pick == 7 and things:
                m.memory_walk(rng.choice(things))
        except af.AliasflowError:
            pass
    for t in things:
        released = t.buffer is not None and (t.buffer.released or
                                             t.buffer.root_buffer().released)
        if released:
            refused(lambda: t.numpy(), what="numpy() of a tensor on a released buffer")
        else:
            either(lambda: t.numpy(), what="numpy()")


# ---- tf: graphs, sessions, TensorProto ---------------------------------------------------
@named
def tf_print_unknown_dim():
    from aliasflow import tf
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, (None, 2))
    if str(p) != 'Tensor("Placeholder:0", shape=(None, 2), dtype=float32)':
        raise Wrong(f"str(placeholder) is {str(p)!r}; TensorFlow 2.21 prints shape=(None, 2)")


@named
def tf_tensorshape_is_the_graph_shape():
    from aliasflow import tf
    g = tf.Graph()
    with g.as_default():
        c = tf.constant([1.0, 2.0])
    if not isinstance(c.shape, tf.TensorShape):
        raise Wrong("isinstance(t.shape, tf.TensorShape) is False")


@named
def tf_make_tensor_proto_float_into_int():
    from aliasflow import tf
    refused(lambda: tf.make_tensor_proto(3.5, dtype=tf.int32), what="3.5 as int32")


def _proto_bytes(dtype_enum, dims, field, values):
    from aliasflow.frontends.tf.proto import TensorProto
    p = TensorProto(dtype_enum, dims, **{field: values})
    return p.SerializeToString()


@named
def tf_make_ndarray_int_val_out_of_range():
    from aliasflow import tf
    refused(lambda: tf.make_ndarray(_proto_bytes(6, [1], "int_val", [300])), what="int8 300")
    refused(lambda: tf.make_ndarray(_proto_bytes(4, [1], "int_val", [-1])), what="uint8 -1")
    refused(lambda: tf.make_ndarray(_proto_bytes(19, [1], "half_val", [70000])),
            what="half 70000")


@named
def tf_make_ndarray_4_tib():
    from aliasflow import tf
    refused(lambda: tf.make_ndarray(_proto_bytes(1, [2**40, 4], "float_val", [1.0])),
            what="a 4 TiB proto")
    refused(lambda: tf.make_ndarray(_proto_bytes(1, [2**62, 2**62], "float_val", [1.0])),
            what="2**124 elements")


@named
def tf_feed_dict_as_a_list():
    from aliasflow import tf
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, (2,))
        x = p + 1.0
    with tf.Session(graph=g) as s:
        refused(lambda: s.run(x, feed_dict=[(p, np.ones(2, np.float32))]),
                what="feed_dict as a list of pairs")


@named
def tf_fetch_list_containing_itself():
    from aliasflow import tf
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(1.0)
    fetches = [c]
    fetches.append(fetches)
    with tf.Session(graph=g) as s:
        refused(lambda: s.run(fetches), what="a fetch list containing itself")


@named
def tf_constant_nested_deeply():
    from aliasflow import tf
    g = tf.Graph()
    with g.as_default():
        refused(lambda: tf.constant(_deep(5000)), what="a list nested 5000 deep")
    refused(lambda: tf.make_tensor_proto(_deep(5000)), what="make_tensor_proto of it")


@family
def tf_shapes(seed):
    """Hostile shapes, indices and axes: refused cleanly or a graph with the right shape."""
    from aliasflow import tf
    rng = random.Random(seed)
    dims = [rng.choice(HUGE + [0, 1, 2, 3]) for _ in range(rng.randrange(0, 4))]
    if rng.random() < 0.1:
        dims = rng.choice([_deep(3000), [2] * 300, 5, "abc", np.zeros((2, 2), int)])
    g = tf.Graph()
    pick = rng.randrange(9)
    with g.as_default():
        c = tf.constant(np.arange(12.0).reshape(3, 4))
        if pick == 0:
            either(lambda: tf.placeholder(tf.float32, dims), what=f"placeholder {show(dims)}")
        elif pick == 1:
            either(lambda: tf.zeros(dims), what=f"zeros {show(dims)}")
        elif pick == 2:
            either(lambda: tf.ones(dims, dtype=tf.int8), what=f"ones {show(dims)}")
        elif pick == 3:
            either(lambda: tf.constant(1.0, shape=dims), what=f"constant shape {show(dims)}")
        elif pick == 4:
            index = tuple(rng.choice(HUGE + [0, 1, -1, slice(None, None, rng.choice(HUGE))])
                          for _ in range(rng.randrange(1, 3)))
            either(lambda: c[index], what=f"c[{show(index)}]")
        elif pick == 5:
            either(lambda: tf.reduce_sum(c, rng.choice(HUGE + [0, 1, [0, 0], [2**70]])),
                   what="reduce_sum axis")
        elif pick == 6:
            either(lambda: tf.make_tensor_proto(1.0, shape=dims), what="make_tensor_proto shape")
        elif pick == 7:
            either(lambda: tf.TensorShape(dims), what=f"TensorShape {show(dims)}")
        else:
            either(lambda: _shape_rep(tf)(dims), what=f"TensorShapeRep {show(dims)}")


_FIT = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-2**31, 2**31 - 1),
        "int16": (-2**15, 2**15 - 1), "int64": (-2**63, 2**63 - 1)}


def _fits(value, dtype: str) -> bool:
    """An independent statement of the rule: ints hold integers in range, floats anything
    that does not overflow to infinity, bool 0/1."""
    if isinstance(value, (list, tuple)):
        return all(_fits(v, dtype) for v in value)
    v = value
    if dtype == "bool":
        return v == 0 or v == 1
    if dtype in _FIT:
        lo, hi = _FIT[dtype]
        return isinstance(v, (int, float)) and math_isfinite(v) and v == int(v) and \
            lo <= int(v) <= hi
    limit = {"float16": 65504.0, "float32": 3.4028234663852886e38,
             "float64": 1.7976931348623157e308}[dtype]
    if not math_isfinite(v):
        return True
    return abs(float(v)) <= limit * (1 + 2**-11) if dtype == "float16" else \
        abs(float(v)) < limit * (1 + 2**-25) if dtype == "float32" else True


def math_isfinite(v) -> bool:
    try:
        return np.isfinite(float(v))
    except OverflowError:
        return False


def _tf_compatible(value, dtype: str) -> bool:
    """TensorFlow's rule for Python values, before any range: a float is no int or bool
    (even 3.0), an int no bool."""
    if isinstance(value, (list, tuple)):
        return all(_tf_compatible(v, dtype) for v in value)
    if dtype == "bool":
        return isinstance(value, bool)
    if dtype in _FIT:
        return isinstance(value, int)
    return True


_VALUES = [0, 1, -1, 3.5, 300, -129, 255, 256, 2**31, 2**63, float("nan"), float("inf"), 1e39,
           70000.0, 65504.0, 0.1, -0.0, 127.0, 2**64]


@family
def tf_values(seed):
    """Values into constants, feeds, variables and TensorProtos: refused exactly when they do
    not fit the dtype; stored exactly otherwise."""
    from aliasflow import tf
    rng = random.Random(seed)
    dtype = rng.choice(["int8", "uint8", "int32", "float16", "float32", "bool"])
    value = rng.choice(_VALUES)
    if rng.random() < 0.3:
        value = [rng.choice(_VALUES) for _ in range(rng.randrange(1, 4))]
    pick = rng.randrange(4)
    # feeds convert as NumPy would, under the fit rule; everything else as tf.constant does
    fits = _fits(value, dtype) and (pick == 1 or _tf_compatible(value, dtype))
    tdt = getattr(tf, dtype)
    g = tf.Graph()

    def expect():
        with np.errstate(all="ignore"):
            return np.array(value, dtype=np.float64).astype(dtype)
    with g.as_default():
        if pick == 0:
            got = either(lambda: tf.constant(value, dtype=tdt), what=f"constant {value!r} {dtype}")
            if got[0] == "accepted":
                with tf.Session(graph=g) as s:
                    out = s.run(got[1])
                if not fits:
                    raise Wrong(f"constant {value!r} as {dtype} accepted: {out!r}")
                same_array(out, expect(), f"constant {value!r} as {dtype}")
            elif fits:
                raise Wrong(f"constant {value!r} as {dtype} refused: {got[1]}")
        elif pick == 1:
            shape = np.shape(value)
            p = tf.placeholder(tdt, shape)
            y = tf.identity(p)
            with tf.Session(graph=g) as s:
                got = either(lambda: s.run(y, {p: value}), what=f"feed {value!r} {dtype}")
            if got[0] == "accepted":
                if not fits:
                    raise Wrong(f"feed {value!r} as {dtype} accepted: {got[1]!r}")
                same_array(got[1], expect(), f"feed {value!r} as {dtype}")
            elif fits:
                raise Wrong(f"feed {value!r} as {dtype} refused: {got[1]}")
        elif pick == 2:
            got = either(lambda: tf.make_ndarray(tf.make_tensor_proto(value, dtype=tdt)),
                         what=f"proto {value!r} {dtype}")
            if got[0] == "accepted":
                if not fits:
                    raise Wrong(f"make_tensor_proto {value!r} as {dtype} accepted: {got[1]!r}")
                same_array(got[1], expect(), f"proto {value!r} as {dtype}")
            elif fits:
                raise Wrong(f"make_tensor_proto {value!r} as {dtype} refused: {got[1]}")
        else:
            shape = np.shape(value)
            v = tf.Variable(np.zeros(shape, dtype), dtype=tdt)
            got = either(lambda: v.assign(value), what=f"assign {value!r} {dtype}")
            if got[0] == "accepted":
                with tf.Session(graph=g) as s:
                    s.run(v.initializer)
                    out = s.run(got[1])
                if not fits:
                    raise Wrong(f"assign {value!r} as {dtype} accepted: {out!r}")
                same_array(out, expect(), f"assign {value!r} as {dtype}")
            elif fits:
                raise Wrong(f"assign {value!r} as {dtype} refused: {got[1]}")


_REAL_TF = []


def _real_tf():
    if not _REAL_TF:
        import tensorflow as real
        from tensorflow.core.framework import tensor_pb2
        _REAL_TF.append((real, tensor_pb2))
    return _REAL_TF[0]


@family
def tf_proto_bytes(seed):
    """TensorProto bytes made by real TensorFlow, then mutated: make_ndarray refuses cleanly,
    or gives what real TensorFlow's make_ndarray gives."""
    from aliasflow import tf
    real, tensor_pb2 = _real_tf()
    rng = random.Random(seed)
    dtype = rng.choice(["float32", "int8", "uint8", "int32", "int64", "float16", "bool",
                        "float64", "uint16", "complex64"])
    n = rng.choice([1, 2, 5])
    arr = (np.arange(n) % 2 if dtype == "bool" else np.arange(n) + 1).astype(dtype)
    data = bytearray(real.make_tensor_proto(arr if n > 1 and rng.random() < 0.5 else arr[:1],
                                            shape=[n]).SerializeToString())
    for _ in range(rng.randrange(1, 4)):
        how = rng.randrange(5)
        if how == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif how == 1:
            data += rng.choice([b"\x12\x0c\x12\x0a\x08\xff\xff\xff\xff\xff\xff\xff\xff\x7f",
                                b"\x38\xac\x02", b"\x68\xf0\xa2\x04", b"\x38\xff\xff\xff\xff\x0f",
                                b"\x1a\x01", b"\x22\x00", bytes([rng.randrange(256)])])
        elif how == 2 and data:
            del data[rng.randrange(len(data)):]
        elif how == 3:
            k = rng.randrange(len(data) + 1)
            data[k:k] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6)))
        else:
            data = bytearray(b"\x12\x08\x12\x06\x08" + bytes([0x80, 0x80, 0x80, 0x80, 0x10])
                             + data[len(data) // 2:])
    data = bytes(data)
    got = either(lambda: tf.make_ndarray(data), what="make_ndarray")
    if got[0] != "accepted":
        return
    try:
        proto = tensor_pb2.TensorProto.FromString(data)
        theirs = real.make_ndarray(proto)
    except Exception as exc:
        raise Wrong(f"accepted bytes real TensorFlow refuses ({type(exc).__name__}: "
                    f"{str(exc)[:80]}): {data.hex()[:80]}") from None
    ours = got[1]
    if ours.dtype != theirs.dtype or ours.shape != theirs.shape or \
            not np.array_equal(ours, theirs, equal_nan=ours.dtype.kind in "fc"):
        raise Wrong(f"make_ndarray gives {ours!r:.80}, TensorFlow {theirs!r:.80}")


tf_proto_bytes.warmup = _real_tf


# ---- mge ------------------------------------------------------------------------------------
@named
def mge_nan_into_int():
    from aliasflow import mge
    refused(lambda: mge.tensor(float("nan"), dtype="int32"), what="nan as int32")
    refused(lambda: mge.tensor([300], dtype="int8"), what="300 as int8")
    a = mge.tensor([1, 2], dtype="int32")
    refused(lambda: a.__setitem__(0, float("nan")), state=lambda: a.numpy(), what="a[0] = nan")
    b = mge.tensor([1, 2], dtype="int8")
    refused(lambda: b.__setitem__(0, 300), state=lambda: b.numpy(), what="b[0] = 300")


def _mge_state(tensors):
    from aliasflow import mge
    return (len(mge.recorded_ops()), [mge.layers(t).impl.uid for t in tensors],
            [t._impl.ndarray().copy() for t in tensors])


@named
def mge_setitem_refused_before_recording():
    from aliasflow import mge
    with mge.config(semantics="megengine"):
        a = mge.tensor([1.0, 2.0, 3.0])
        refused(lambda: a.__setitem__(5, 1.0), state=lambda: _mge_state([a]),
                what="a[5] = 1 (out of range)")
        three = mge.tensor([1.0, 2.0, 3.0])
        refused(lambda: a.__setitem__(slice(0, 2), three),
                state=lambda: _mge_state([a]), what="a[0:2] = 3 values")
        refused(lambda: a.__setitem__(slice(0, 2), [1.0, 2.0, 3.0]),
                state=lambda: _mge_state([a]), what="a[0:2] = a list of 3")
        refused(lambda: a.__setitem__(0, 1e39),
                state=lambda: _mge_state([a]), what="a[0] = 1e39 (float32)")


@family
def mge_assign(seed):
    """``a[i] = v``, ``a += v``, ``mge.tensor(v)`` in both semantics: refused with nothing
    recorded or changed, exactly when NumPy under the fit rule refuses; else the values
    NumPy gives."""
    from aliasflow import mge
    rng = random.Random(seed)
    dtype = rng.choice(["int8", "int32", "float32", "uint8", "bool", "float16"])
    semantics = rng.choice(["megengine", "alias"])
    with mge.config(semantics=semantics):
        a = mge.tensor(np.arange(6).reshape(2, 3) % 2, dtype=dtype)
        other = mge.tensor(np.zeros(3), dtype="float32")
        ref = np.arange(6).reshape(2, 3).astype(dtype) % 2 if dtype != "bool" else \
            (np.arange(6).reshape(2, 3) % 2).astype(bool)
        pick = rng.randrange(4)
        index = rng.choice([0, 1, -1, 2, 5, -3, (0, 1), (1, 5), slice(None), (slice(None), 0),
                            (Ellipsis, 2), (None, 0), 2**70, (0, 2**63)])
        value = rng.choice(_VALUES + [[1, 2, 3], [1.5, 2, 3], [[1, 2, 3]], [1, 2], np.int64(300),
                                      np.float64("nan"), np.float32(0.5)])
        state = lambda: _mge_state([a, other])  # noqa: E731
        if pick == 0:
            def oracle():
                out = ref.copy()
                target = out[index]
                v = np.asarray(value)
                if not _fits(np.asarray(value).tolist(), dtype):
                    raise ValueError("does not fit")
                np.broadcast_to(v, np.shape(target))
                out[index] = v
                return out
            try:
                want = oracle()
            except (IndexError, ValueError, TypeError, OverflowError):
                want = None
            got = either(lambda: a.__setitem__(index, value), state=state,
                         what=f"a[{index!r}] = {value!r} ({dtype}, {semantics})")
            if got[0] == "accepted":
                if want is None:
                    raise Wrong(f"a[{index!r}] = {value!r} ({dtype}) accepted: {a.numpy()!r}")
                same_array(a.numpy(), want, f"a[{index!r}] = {value!r} ({dtype})")
        elif pick == 1:
            fits = _fits(np.asarray(value).tolist(), dtype)
            got = either(lambda: mge.tensor(value, dtype=dtype), state=lambda: len(
                mge.recorded_ops()), what=f"mge.tensor({value!r}, {dtype})")
            if got[0] == "accepted" and not fits:
                raise Wrong(f"mge.tensor({value!r}, dtype={dtype}) accepted: {got[1]!r}")
            if got[0] == "accepted":
                with np.errstate(all="ignore"):
                    same_array(got[1].numpy(), np.array(value, np.float64).astype(dtype),
                               f"mge.tensor({value!r}, dtype={dtype})")
        elif pick == 2:
            either(lambda: a.__iadd__(value), state=state, what=f"a += {value!r} ({dtype})")
        else:
            either(lambda: a + value, state=state, what=f"a + {value!r} ({dtype})")


# ---- te ----------------------------------------------------------------------------------
@named
def te_huge_shapes_and_indices():
    from aliasflow import te
    refused(lambda: te.placeholder((2**70,)), what="placeholder of 2**70")
    A = te.placeholder((4,), name="A")
    refused(lambda: A[2**70], what="A[2**70]")
    C = te.compute((2**40, 2**40), lambda i, j: A[0], name="C")
    refused(lambda: te.lower([C]), what="lower a 2**80-element compute")
    f = te.build([C], [A, C])   # builds (as TVM's does); no array can be that big
    refused(lambda: f(np.zeros(4, np.float32), np.zeros(4, np.float32)), what="call it")


@family
def te_shapes(seed):
    """Hostile shapes, indices, reduce bounds and binds: refused cleanly, or run by
    ``te.build`` with the values NumPy gives."""
    from aliasflow import te
    rng = random.Random(seed)
    n = rng.choice([1, 3, 4])
    pick = rng.randrange(6)
    bad = rng.choice(HUGE + [0, 1, 2, n, n + 1, -n])
    A = te.placeholder((n,), name="A")
    x = np.arange(n, dtype=np.float32) + 1
    if pick == 0:
        either(lambda: te.placeholder((bad, 2)), what=f"placeholder ({bad!r}, 2)")
    elif pick == 1:
        either(lambda: A[bad], what=f"A[{bad!r}]")
    elif pick == 2:
        def go():
            k = te.reduce_axis((0, bad), name="k")
            C = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="C")
            out = np.zeros(1, np.float32)
            te.build([C], [A, C])(x, out)
            return out
        got = either(go, what=f"sum over 0..{bad!r}")
        if got[0] == "accepted":
            if not (type(bad) is int and 0 <= bad <= n):
                raise Wrong(f"a reduction over 0..{bad!r} of a {n}-element A was accepted")
            same_array(got[1], np.array([x[:bad].sum()], np.float32), f"sum over 0..{bad}")
    elif pick == 3:
        def go():
            C = te.compute((n,), lambda i: A[(i + bad) % n] if isinstance(bad, int) else A[i],
                           name="C")
            out = np.zeros(n, np.float32)
            te.build([C], [A, C])(x, out)
            return out
        got = either(go, what=f"A[(i + {bad!r}) % n]")
        if got[0] == "accepted" and isinstance(bad, int) and not isinstance(bad, bool):
            same_array(got[1], x[(np.arange(n) + bad) % n], f"A[(i + {bad}) % n]")
    elif pick == 4:
        m = te.var("m")
        B = te.placeholder((m,), name="B")
        C = te.compute((m, m), lambda i, j: B[i] * B[j], name="C")
        D = te.compute((m,), lambda i: C[i, i], name="D")
        either(lambda: te.lower([D], binds={"m": bad}), what=f"lower with m = {bad!r}")
    else:
        either(lambda: te.lower([te.compute((bad,), lambda i: A[0], name="C")]),
               what=f"lower compute of shape ({bad!r},)")
