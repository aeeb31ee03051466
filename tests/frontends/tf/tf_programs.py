"""Random TensorFlow 1 graph programs as plain data, and a builder that runs one through any
module with ``tf.compat.v1``'s API (``aliasflow.tf`` or real ``tensorflow.compat.v1``), so
both build the same graph from the same instructions."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

SHAPES = [(), (3,), (2, 3), (3, 3), (3, 2)]
DTYPES = ["float32", "int32", "float64"]
NAMES = ["x", "add", "add_1", "Add", "Const", "const_1", "foo", "foo_1", "Sum", "sum_2",
         "strided_slice", "Variable", "v", "y/z", "Assign", "read", "Identity"]


def _broadcasts(a, b) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _values(draw, shape, dtype):
    return np.array(draw(st.lists(st.integers(-3, 3), min_size=int(np.prod(shape)),
                                  max_size=int(np.prod(shape)))), dtype=dtype).reshape(shape)


def _index(draw, shape, allow_new=True):
    """A basic index into ``shape``: ints, slices (steps 1, 2, -1), maybe ``...``/None."""
    items, k = [], 0
    n_items = draw(st.integers(0, len(shape)))
    for _ in range(n_items):
        d = shape[k]
        k += 1
        if d and draw(st.booleans()):  # an int index needs a non-empty dim
            items.append(draw(st.integers(-d, d - 1)))
        else:
            step = draw(st.sampled_from([None, 1, 2, -1]))
            start = draw(st.one_of(st.none(), st.integers(-d - 1, d + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-d - 1, d + 1)))
            items.append(slice(start, stop, step))
    if allow_new and draw(st.integers(0, 4)) == 0:
        items.insert(draw(st.integers(0, len(items))), None)
    if allow_new and draw(st.integers(0, 4)) == 0:
        # after the items: they index the leading dims they were drawn for (before them, the
        # ellipsis would hand them the trailing dims, where an int may be out of range)
        items.append(Ellipsis)
    if not items:
        items = [Ellipsis]
    return items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)


def _name(draw):
    return draw(st.one_of(st.none(), st.none(), st.sampled_from(NAMES)))


@st.composite
def programs(draw, max_steps: int = 14):
    """``(steps, fetch indices, feed indices)``. Each value step records dtype and shape of
    what it makes; ``kind`` says whether it is a tensor, a variable or an update's result."""
    steps, made = [], []  # made: (kind, dtype, shape)
    depth = 0
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(2, max_steps))
    for _ in range(n):
        tensors = [i for i, m in enumerate(made) if m[0] in ("tensor", "var", "update")]
        variables = [i for i, m in enumerate(made) if m[0] == "var"]
        choices = ["const", "const", "var", "placeholder"]
        if tensors:
            choices += ["binop"] * 3 + ["scalar", "neg", "identity", "sum", "slice", "matmul",
                                        "ctrl", "like"]
        if variables:
            choices += ["assign"] * 3 + ["slice_assign"] * 2
        if depth:
            choices += ["end"]
        what = draw(st.sampled_from(choices))
        if what == "const" and draw(st.integers(0, 5)) == 0:
            shape = draw(st.sampled_from(SHAPES))
            steps.append(("filled", draw(st.sampled_from(["zeros", "ones"])), shape, dtype,
                          _name(draw)))
            made.append(("tensor", dtype, shape, True))
        elif what == "const":
            shape = draw(st.sampled_from(SHAPES))
            steps.append(("const", _values(draw, shape, dtype).tolist(), dtype, _name(draw)))
            made.append(("tensor", dtype, shape, True))
        elif what == "var":
            shape = draw(st.sampled_from(SHAPES))
            steps.append(("var", _values(draw, shape, dtype).tolist(), dtype, _name(draw)))
            made.append(("var", dtype, shape, True))
        elif what == "placeholder":
            shape = draw(st.sampled_from(SHAPES))
            static = tuple(None if draw(st.integers(0, 3)) == 0 else d for d in shape)
            if draw(st.integers(0, 6)) == 0:
                static = None
            steps.append(("placeholder", dtype, static, _values(draw, shape, dtype).tolist(),
                          _name(draw)))
            made.append(("tensor", dtype, shape, static is not None))
        elif what == "binop":
            i = draw(st.sampled_from(tensors))
            partners = [j for j in tensors if made[j][1] == made[i][1]
                        and _broadcasts(made[i][2], made[j][2])]
            j = draw(st.sampled_from(partners))
            op = draw(st.sampled_from(["+", "-", "*", "add", "subtract", "multiply", "/"]))
            steps.append(("binop", op, i, j, _name(draw)))
            out = "float64" if op == "/" and made[i][1] == "int32" else made[i][1]  # truediv
            made.append(("tensor", out, np.broadcast_shapes(made[i][2], made[j][2]),
                         made[i][3] and made[j][3]))
        elif what == "scalar":
            i = draw(st.sampled_from(tensors))
            op = draw(st.sampled_from(["+", "-", "*"] + (["/"] if made[i][1] != "int32" else [])))
            steps.append(("scalar", op, i, draw(st.integers(-2, 3)), draw(st.booleans())))
            made.append(("tensor", made[i][1], made[i][2], made[i][3]))
        elif what == "like":
            i = draw(st.sampled_from(tensors))
            steps.append(("like", draw(st.sampled_from(["zeros_like", "ones_like"])), i,
                          _name(draw)))
            made.append(("tensor", made[i][1], made[i][2], made[i][3]))
        elif what in ("neg", "identity"):
            i = draw(st.sampled_from(tensors))
            steps.append((what, i, _name(draw)))
            made.append(("tensor", made[i][1], made[i][2], made[i][3]))
        elif what == "sum":
            i = draw(st.sampled_from(tensors))
            shape = made[i][2]
            if not shape and not made[i][3]:  # axis=None needs a known rank
                steps.append(("neg", i, None))
                made.append(("tensor", made[i][1], shape, False))
                continue
            axis = None
            if shape and (draw(st.booleans()) or not made[i][3]):
                axes = draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1,
                                     max_size=len(shape), unique_by=lambda a: a % len(shape)))
                axis = axes[0] if len(axes) == 1 and draw(st.booleans()) else axes
            keep = draw(st.booleans())
            steps.append(("sum", i, axis, keep, _name(draw)))
            out = np.sum(np.zeros(shape), axis=None if axis is None else tuple(np.ravel(axis)),
                         keepdims=keep).shape
            made.append(("tensor", made[i][1], out, made[i][3]))
        elif what == "slice":
            i = draw(st.sampled_from(tensors))
            index = _index(draw, made[i][2])
            steps.append(("slice", i, index))
            made.append(("tensor", made[i][1], np.zeros(made[i][2])[index].shape, made[i][3]))
        elif what == "matmul":
            i = draw(st.sampled_from(tensors))
            a = made[i][2]
            partners = [j for j in tensors if made[j][1] == made[i][1] and len(made[j][2]) == 2
                        and len(a) == 2 and made[j][2][0] == a[1]]
            if not partners:
                steps.append(("neg", i, None))
                made.append(("tensor", made[i][1], made[i][2], made[i][3]))
                continue
            j = draw(st.sampled_from(partners))
            steps.append(("matmul", i, j, draw(st.one_of(st.just("@"), st.none(),
                                                         st.sampled_from(NAMES)))))
            made.append(("tensor", made[i][1], (a[0], made[j][2][1]), True))
        elif what == "assign":
            v = draw(st.sampled_from(variables))
            kind = draw(st.sampled_from(["assign", "assign_add", "assign_sub"]))
            same = [j for j in tensors if made[j][1] == made[v][1] and made[j][2] == made[v][2]]
            if same and draw(st.booleans()):
                value = ("ref", draw(st.sampled_from(same)))
            else:
                value = ("lit", _values(draw, made[v][2], made[v][1]).tolist())
            steps.append(("assign", kind, v, value, _name(draw)))
            made.append(("update", made[v][1], made[v][2], True))
        elif what == "slice_assign":
            v = draw(st.sampled_from(variables))
            if not made[v][2]:
                continue
            index = _index(draw, made[v][2], allow_new=False)
            shape = np.zeros(made[v][2])[index].shape
            steps.append(("slice_assign", v, index, _values(draw, shape, made[v][1]).tolist(),
                          shape, _name(draw)))
            made.append(("update", made[v][1], made[v][2], True))
        elif what == "ctrl":
            refs = draw(st.lists(st.sampled_from(tensors), min_size=1, max_size=2))
            clear = draw(st.integers(0, 5)) == 0
            steps.append(("ctrl", None if clear else refs))
            made.append(("ctrl", None, None, True))
            depth += 1
        elif what == "end":
            steps.append(("end",))
            made.append(("ctrl", None, None, True))
            depth -= 1
    values = [i for i, m in enumerate(made) if m[0] in ("tensor", "var", "update")]
    fetch = draw(st.lists(st.sampled_from(values), min_size=1, max_size=4)) if values else []
    as_op = draw(st.lists(st.booleans(), min_size=len(fetch), max_size=len(fetch)))
    return steps, list(zip(fetch, as_op))


def build(tf, steps):
    """Build ``steps`` in a new graph with module ``tf``; returns ``(graph, handles, feeds,
    init)``. ``handles[i]`` is what step ``i`` made (a tensor, variable or None)."""
    g = tf.Graph()
    handles, feeds, blocks = [], {}, []
    with g.as_default():
        for step in steps:
            kind = step[0]
            h = None
            if kind == "const":
                _, values, dtype, name = step
                h = tf.constant(values, dtype=getattr(tf, dtype), **_named(name))
            elif kind == "filled":
                _, fn, shape, dtype, name = step
                h = getattr(tf, fn)(shape, dtype=getattr(tf, dtype), name=name)
            elif kind == "var":
                _, values, dtype, name = step
                h = tf.Variable(np.array(values, dtype=dtype), name=name)
            elif kind == "placeholder":
                _, dtype, static, values, name = step
                h = tf.placeholder(getattr(tf, dtype), shape=static, name=name)
                feeds[h] = np.array(values, dtype=dtype)
            elif kind == "binop":
                _, op, i, j, name = step
                x, y = handles[i], handles[j]
                if op in ("add", "subtract", "multiply"):
                    h = getattr(tf, op)(x, y, name=name)
                else:
                    h = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                         "/": lambda: x / y}[op]()
            elif kind == "scalar":
                _, op, i, c, reverse = step
                x = handles[i]
                c = float(c) if "float" in _dtype(x) else int(c)
                fn = {"+": lambda a, b: a + b, "-": lambda a, b: a - b,
                      "*": lambda a, b: a * b, "/": lambda a, b: a / b}[op]
                h = fn(c, x) if reverse else fn(x, c)
            elif kind == "like":
                _, fn, i, name = step
                h = getattr(tf, fn)(handles[i], name=name)
            elif kind == "neg":
                _, i, name = step
                h = tf.negative(handles[i], name=name) if name else -handles[i]
            elif kind == "identity":
                _, i, name = step
                h = tf.identity(handles[i], name=name)
            elif kind == "sum":
                _, i, axis, keep, name = step
                h = tf.reduce_sum(handles[i], axis=axis, keepdims=keep, name=name)
            elif kind == "slice":
                _, i, index = step
                h = handles[i][index]
            elif kind == "matmul":
                _, i, j, name = step
                h = handles[i] @ handles[j] if name == "@" else tf.matmul(handles[i], handles[j],
                                                                          name=name)
            elif kind == "assign":
                _, how, v, value, name = step
                value = handles[value[1]] if value[0] == "ref" else \
                    np.array(value[1], dtype=_dtype(handles[v]))
                h = getattr(handles[v], how)(value, name=name)
            elif kind == "slice_assign":
                _, v, index, values, shape, name = step
                h = handles[v][index].assign(
                    np.array(values, dtype=_dtype(handles[v])).reshape(shape), name=name)
            elif kind == "ctrl":
                refs = None if step[1] is None else [handles[i] for i in step[1]]
                ctx = tf.control_dependencies(refs)
                ctx.__enter__()
                blocks.append(ctx)
            elif kind == "end":
                blocks.pop().__exit__(None, None, None)
            handles.append(h)
        while blocks:
            blocks.pop().__exit__(None, None, None)
        init = tf.global_variables_initializer()
    return g, handles, feeds, init


def _named(name):
    return {} if name is None else {"name": name}


def _dtype(x) -> str:
    return x.dtype.base_dtype.name


def describe(graph) -> list:
    """Everything about a graph's ops that both frameworks must agree on."""
    out = []
    for op in graph.get_operations():
        out.append((op.name, op.type, [t.name for t in op.inputs],
                    [c.name for c in op.control_inputs],
                    [(t.name, str(t.shape), t.dtype.name, str(t), repr(t)) for t in op.outputs]))
    return out


def fetches(handles, picks):
    """The fetch list: handle ``i`` as itself, or its op when the flag says so."""
    out = []
    for i, as_op in picks:
        h = handles[i]
        out.append(h.op if as_op and hasattr(h, "op") and not hasattr(h, "initializer")
                   else h)
    return out
