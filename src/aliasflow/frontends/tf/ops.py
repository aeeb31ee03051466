"""Graph-building functions in ``tf.compat.v1``'s names: constants, placeholders, arithmetic,
``matmul``, ``reduce_sum``, slicing (``StridedSlice``), ``identity`` and ``group``.

Every function opens the name scope TensorFlow opens and converts Python values inside it
under the argument names TensorFlow uses, so ``a + 1.0`` makes ``add/y`` then ``add``. Shapes
are inferred as TensorFlow does (broadcasting with unknown dims); dtypes must match exactly
(no promotion), and a mismatch is refused with an :class:`~aliasflow.AliasflowError`.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...core.errors import AliasflowError
from ...core.values import INT64, check_nbytes, fit_array, show_value
from .dtypes import DType, TensorShape, as_dtype, float32, float64, int32, int64, string
from .graph import Graph, Operation, Tensor, get_default_graph
from .shapes import _expand_index, fill_dims, output_shapes


# ---- conversion -----------------------------------------------------------------------------
def _graph_for(*values) -> Graph:
    """The graph of the tensors among ``values`` (all must share it), else the default."""
    found = None
    for v in values:
        if hasattr(v, "_as_graph_tensor"):
            v = v._as_graph_tensor()
        if isinstance(v, (Tensor, Operation)):
            if found is not None and v.graph is not found:
                raise AliasflowError(f"{v.name!r} is from a different graph than the other "
                                     f"inputs")
            found = v.graph
    return found if found is not None else get_default_graph()


def atomic(fn):
    """Build in a transaction on the graph of the arguments: on an error nothing is added."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            graph = _graph_for(*args, *kwargs.values())
        except AliasflowError:
            return fn(*args, **kwargs)  # raises the same error, nothing built yet
        with graph._transaction():
            return fn(*args, **kwargs)
    return wrapper


def _infer_dtype(arr: np.ndarray, value) -> DType:
    if isinstance(value, (np.ndarray, np.generic)):
        return as_dtype(arr.dtype)
    kind = arr.dtype.kind
    if kind == "f":
        return float32
    if kind in "iu":
        return int32 if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31) else int64
    if kind == "b":
        return as_dtype("bool")
    if kind == "c":
        return as_dtype("complex128")
    if kind in "SU":
        return string
    raise AliasflowError(f"cannot convert {show_value(value)} to a tensor")


_CASTS = {"b": "biufc", "i": "iufc", "u": "iufc", "f": "fc", "c": "c"}  # as TensorFlow


def _to_numpy(value, dtype=None, what: str = "constant") -> tuple[np.ndarray, DType]:
    """``value`` as an array and its TensorFlow dtype (TensorFlow's defaults: Python floats
    are float32, ints int32 unless they need int64). A value that does not fit the dtype is
    refused (``300`` as int8, ``1e39`` as float32, ``nan`` as an int), the rule of
    :mod:`aliasflow.core.values`."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise AliasflowError(f"{what}: cannot convert {show_value(value)} to a tensor: "
                             f"{exc}") from None
    if arr.dtype.kind == "O":
        # Python ints beyond 64 bits (or mixed with floats) are numbers all the same: they
        # may fit a float dtype named explicitly
        if dtype is None or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                    for x in arr.ravel()):
            raise AliasflowError(f"{what}: cannot convert {show_value(value)} to a tensor "
                                 f"(ragged, too large or not numbers)")
        as_float = any(isinstance(x, float) for x in arr.ravel())
        arr = np.array(arr.ravel().tolist(), dtype=np.float64 if as_float else object) \
            .reshape(arr.shape) if as_float else arr
    if dtype is None:
        dt = _infer_dtype(arr, value)
    else:
        dt = as_dtype(dtype).base_dtype
    if dt == string:
        raise AliasflowError("string tensors are not supported in aliasflow.tf graph mode")
    target = dt.numpy
    kind = "i" if arr.dtype.kind == "O" else arr.dtype.kind  # big Python ints
    if arr.size and kind not in "SU" and target.kind not in _CASTS.get(kind, ""):
        raise AliasflowError(f"{what}: cannot convert {show_value(value)} (of {arr.dtype}) to "
                             f"{dt.name}")
    if arr.dtype.kind in "SU":
        raise AliasflowError(f"{what}: cannot convert {show_value(value)} (strings) to "
                             f"{dt.name}")
    return fit_array(arr, target, what), dt


def _index_array(values, what: str, *more) -> np.ndarray | list[np.ndarray]:
    """Shape or index values as TensorFlow stores them: int32, or int64 when a value needs
    it (all of ``values`` and ``more`` alike: a slice's begin, end and strides share one
    type); a value beyond int64 is refused."""
    lists = [[int(v) for v in vs] for vs in (values, *more)]
    flat = [v for vs in lists for v in vs]
    bad = [v for v in flat if not INT64[0] <= v <= INT64[1]]
    if bad:
        raise AliasflowError(f"{what}: {show_value(bad[0])} does not fit in int64")
    dtype = np.int32 if all(-2**31 <= v < 2**31 for v in flat) else np.int64
    arrays = [np.asarray(vs, dtype) for vs in lists]
    return arrays if more else arrays[0]


def _constant(graph: Graph, value, dtype=None, shape=None, name="Const") -> Tensor:
    arr, dt = _to_numpy(value, dtype, f"constant {name!r}")
    if shape is not None:
        shape = TensorShape(shape)
        if not shape.is_fully_defined():
            raise AliasflowError(f"constant {name!r}: shape {shape} must be fully defined")
        size = prod(shape.dims)
        nbytes = check_nbytes(tuple(shape.dims), dt.numpy, f"constant {name!r}")
        if arr.size == size:
            arr = arr.reshape(shape.dims)
        elif 0 < arr.size < size:  # tf.compat.v1.constant repeats the last value
            try:
                filled = np.empty(size, arr.dtype)
            except MemoryError:
                raise AliasflowError(f"constant {name!r}: cannot allocate {nbytes} bytes for "
                                     f"shape {shape}") from None
            filled[:arr.size] = arr.ravel()
            filled[arr.size:] = arr.ravel()[-1]
            arr = filled.reshape(shape.dims)
        else:
            raise AliasflowError(f"constant {name!r}: {arr.size} value(s) do not fit shape "
                                 f"{shape}")
    arr = np.array(arr, order="C")  # a private copy (ascontiguousarray would make 0-d 1-d)
    arr.flags.writeable = False
    op = graph._create_op("Const", [], [(dt, TensorShape(arr.shape))], name,
                          {"value": arr, "dtype": dt})
    return op.outputs[0]


def _convert(graph: Graph, value, name: str, dtype=None, hint=None) -> Tensor:
    """A tensor from ``value``: tensors pass (their dtype checked against ``dtype``),
    variables give their value, anything else becomes a ``Const`` named ``name``."""
    if hasattr(value, "_as_graph_tensor"):
        value = value._value_tensor()
    if isinstance(value, Tensor):
        if value.graph is not graph:
            raise AliasflowError(f"tensor {value.name!r} is from a different graph")
        if dtype is not None and value.dtype.base_dtype != as_dtype(dtype).base_dtype:
            raise AliasflowError(f"tensor {value.name!r} has dtype {value.dtype.base_dtype.name},"
                                 f" expected {as_dtype(dtype).base_dtype.name}")
        return value
    if isinstance(value, Operation):
        raise AliasflowError(f"operation {value.name!r} has no value to use as a tensor")
    if dtype is None and hint is not None:
        try:
            return _constant(graph, value, hint, name=name)
        except AliasflowError:
            pass
    return _constant(graph, value, dtype, name=name)


@atomic
def convert_to_tensor(value, dtype=None, name=None) -> Tensor:
    """``tf.convert_to_tensor``: tensors pass through, variables give their value, Python
    and NumPy values become a ``Const``."""
    return _convert(_graph_for(value), value, name or "Const", dtype=dtype)


@atomic
def constant(value, dtype=None, shape=None, name="Const") -> Tensor:
    """``tf.constant``: a ``Const`` op holding ``value`` (copied)."""
    return _constant(get_default_graph(), value, dtype, shape, name)


@atomic
def placeholder(dtype, shape=None, name=None) -> Tensor:
    """``tf.placeholder``: a value that must be fed to ``Session.run``."""
    dt = as_dtype(dtype).base_dtype
    if dt == string:
        raise AliasflowError("string tensors are not supported in aliasflow.tf graph mode")
    shape = TensorShape(shape)
    op = get_default_graph()._create_op("Placeholder", [], [(dt, shape)], name,
                                        {"dtype": dt, "shape": shape})
    return op.outputs[0]


def _make(graph: Graph, op_type: str, inputs: list[Tensor], dtype: DType, scope: str,
          attrs: dict | None = None) -> Tensor:
    """Create a one-output op after inferring its shape (a probe op carries the attrs)."""
    attrs = attrs or {}
    probe = Operation.__new__(Operation)
    probe.name, probe.type, probe._attrs, probe.outputs = scope.rstrip("/"), op_type, attrs, []
    shape = output_shapes(probe, [t.shape for t in inputs])[0]
    return graph._create_op(op_type, inputs, [(dtype, shape)], scope, attrs).outputs[0]


def _same_dtype(op_type: str, x: Tensor, y: Tensor, names=("x", "y")) -> DType:
    dx, dy = x.dtype.base_dtype, y.dtype.base_dtype
    if dx != dy:
        raise AliasflowError(f"input {names[1]!r} of {op_type!r} op has type {dy.name} that "
                             f"does not match type {dx.name} of argument {names[0]!r}")
    return dx


_NUMERIC = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
            "uint8", "uint16", "uint32", "uint64", "complex64", "complex128")


def _elementwise(graph, op_type: str, x: Tensor, y: Tensor, scope: str) -> Tensor:
    dt = _same_dtype(op_type, x, y)
    if dt.name not in _NUMERIC:
        raise AliasflowError(f"{op_type}: dtype {dt.name} is not supported")
    return _make(graph, op_type, [x, y], dt, scope, {"T": dt})


# TensorFlow's truediv: small ints divide in float32, 32/64-bit ints in float64
_TRUEDIV = {"int8": float32, "uint8": float32, "int16": float32, "uint16": float32,
            "int32": float64, "int64": float64}


def _truediv(graph, x: Tensor, y: Tensor, scope: str) -> Tensor:
    dt = _same_dtype("RealDiv", x, y)
    if dt.name in ("uint32", "uint64"):
        raise AliasflowError(f"truediv: dtype {dt.name} is not supported")
    if dt.name in _TRUEDIV:
        x, y = cast(x, _TRUEDIV[dt.name]), cast(y, _TRUEDIV[dt.name])
    return _elementwise(graph, "RealDiv", x, y, scope)


def _matmul(graph, a: Tensor, b: Tensor, scope: str) -> Tensor:
    """``MatMul`` for matrices; TensorFlow switches to ``BatchMatMulV2`` when a rank is
    unknown or above 2."""
    dt = _same_dtype("MatMul", a, b, ("a", "b"))
    if a.shape.rank is None or b.shape.rank is None or a.shape.rank > 2 or b.shape.rank > 2:
        return _make(graph, "BatchMatMulV2", [a, b], dt, scope,
                     {"T": dt, "adj_x": False, "adj_y": False})
    return _make(graph, "MatMul", [a, b], dt, scope,
                 {"T": dt, "transpose_a": False, "transpose_b": False})


# ---- public ops -----------------------------------------------------------------------------
def _binary(op_type: str, default: str, x, y, name) -> Tensor:
    g = _graph_for(x, y)
    with g.as_default(), g.name_scope(name if name is not None else default) as scope:
        x = _convert(g, x, "x")
        y = _convert(g, y, "y", hint=x.dtype.base_dtype)
        if op_type == "RealDiv":
            return _truediv(g, x, y, scope)
        return _elementwise(g, op_type, x, y, scope)


@atomic
def add(x, y, name=None) -> Tensor:
    """``tf.add`` (op type ``AddV2``, default name ``Add``)."""
    return _binary("AddV2", "Add", x, y, name)


@atomic
def subtract(x, y, name=None) -> Tensor:
    """``tf.subtract`` (``Sub``)."""
    return _binary("Sub", "Sub", x, y, name)


@atomic
def multiply(x, y, name=None) -> Tensor:
    """``tf.multiply`` (``Mul``)."""
    return _binary("Mul", "Mul", x, y, name)


@atomic
def truediv(x, y, name=None) -> Tensor:
    """``tf.truediv``: ``RealDiv``, ints cast to float first as TensorFlow does."""
    return _binary("RealDiv", "truediv", x, y, name)


@atomic
def divide(x, y, name=None) -> Tensor:
    """``tf.divide``: with a name, ``truediv``; without one, TensorFlow converts a Python ``x``
    first (a ``Const`` of ``y``'s dtype, named as any constant) and then divides with ``/``."""
    if name is not None:
        return truediv(x, y, name)
    if not isinstance(x, Tensor) and not hasattr(x, "_as_graph_tensor"):
        g = _graph_for(x, y)
        dtype = y.dtype.base_dtype if isinstance(y, Tensor) or hasattr(y, "_as_graph_tensor") \
            else None
        with g.as_default():
            x = _convert(g, x, "Const", dtype=dtype)
    return _binary_operator("truediv", x, y)


@atomic
def matmul(a, b, name=None) -> Tensor:
    """``tf.matmul`` of two matrices (``MatMul``; no transposes or batches)."""
    g = _graph_for(a, b)
    with g.as_default(), g.name_scope(name if name is not None else "MatMul") as scope:
        a = _convert(g, a, "a")
        b = _convert(g, b, "b", hint=a.dtype.base_dtype)
        return _matmul(g, a, b, scope)


@atomic
def _binary_operator(op_name: str, tensor: Tensor, other, reverse: bool = False) -> Tensor:
    """A Python operator: scope ``add``/``sub``/``mul``/``truediv``/``matmul``; the other
    operand is converted as ``y`` (``b`` for matmul) or, reflected, as ``x``."""
    g = _graph_for(tensor, other)
    with g.as_default(), g.name_scope(op_name) as scope:
        if reverse:
            x, y = _convert(g, other, "x", dtype=tensor.dtype.base_dtype), tensor
        else:
            x = tensor
            y = _convert(g, other, "b" if op_name == "matmul" else "y",
                         hint=tensor.dtype.base_dtype)
        if op_name == "matmul":
            return _matmul(g, x, y, scope)
        if op_name == "truediv":
            return _truediv(g, x, y, scope)
        return _elementwise(g, {"add": "AddV2", "sub": "Sub", "mul": "Mul"}[op_name], x, y,
                            scope)


def _unary(op_type: str, x, name, arg: str = "x") -> Tensor:
    g = _graph_for(x)
    with g.as_default(), g.name_scope(name if name is not None else op_type) as scope:
        x = _convert(g, x, arg)  # a Python value becomes a Const named after the op's argument
        dt = x.dtype.base_dtype
        return _make(g, op_type, [x], dt, scope, {"T": dt})


@atomic
def negative(x, name=None) -> Tensor:
    """``tf.negative`` / ``-x`` (``Neg``)."""
    return _unary("Neg", x, name)


@atomic
def identity(input, name=None) -> Tensor:  # noqa: A002 - TensorFlow's argument name
    """``tf.identity``. At run time the output *is* the input's memory (TensorFlow forwards
    the buffer): reading a variable through it sees writes made before the reader runs."""
    return _unary("Identity", input, name, arg="input")


@atomic
def cast(x, dtype, name=None) -> Tensor:
    """``tf.cast`` (``Cast``; returns ``x`` itself when the dtype already matches)."""
    g = _graph_for(x)
    dt = as_dtype(dtype).base_dtype
    if isinstance(x, Tensor) and x.dtype.base_dtype == dt:
        return x
    with g.as_default(), g.name_scope(name if name is not None else "Cast") as scope:
        x = _convert(g, x, "x")
        if x.dtype.base_dtype == dt:
            return x
        return _make(g, "Cast", [x], dt, scope, {"SrcT": x.dtype.base_dtype, "DstT": dt})


@atomic
def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """``tf.reduce_sum`` (``Sum``; axis None sums everything, through a root ``Const``)."""
    if reduction_indices is not None:
        if axis is not None:
            raise AliasflowError("reduce_sum: give axis or reduction_indices, not both")
        axis = reduction_indices
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    g = _graph_for(input_tensor)
    with g.as_default():
        x = _convert(g, input_tensor, "input") if hasattr(input_tensor, "_as_graph_tensor") \
            or isinstance(input_tensor, Tensor) else None
        if axis is None:
            if x is not None and x.shape.rank is None:
                raise AliasflowError("reduce_sum: axis=None needs a tensor of known rank")
            if x is not None and x.shape.rank:
                axis_value = list(range(x.shape.rank))
                axis_t = _constant(g, np.arange(x.shape.rank, dtype=np.int32), name="Const")
            else:  # TensorFlow: range(0, rank(x)), the rank folded to a Const named Rank (a
                # Python value converted inside that scope first, and again for the Sum)
                with g.name_scope("Rank") as rank_scope:
                    rank = (x if x is not None else _convert(g, input_tensor, "Const")).shape.rank
                    rank_t = _constant(g, np.int32(rank), name=rank_scope)
                axis_value = list(range(rank))
                with g.name_scope("range") as range_scope:
                    start = _constant(g, np.int32(0), name="start")
                    delta = _constant(g, np.int32(1), name="delta")
                    axis_t = g._create_op("Range", [start, rank_t, delta],
                                          [(int32, TensorShape([rank]))], range_scope,
                                          {"Tidx": int32}).outputs[0]
        else:
            axis_value, axis_t = axis, None
        with g.name_scope(name if name is not None else "Sum") as scope:
            if x is None:
                x = _convert(g, input_tensor, "input")
            if axis_t is None:
                if isinstance(axis, Tensor):
                    raise AliasflowError("reduce_sum: axis must be Python ints here")
                axis_t = _constant(g, axis, int32, name="reduction_indices")
            dt = x.dtype.base_dtype
            if dt.name not in _NUMERIC:
                raise AliasflowError(f"reduce_sum: dtype {dt.name} is not supported")
            return _make(g, "Sum", [x, axis_t], dt, scope,
                         {"T": dt, "keep_dims": keepdims, "_axis": axis_value})


def _slice_spec(index):
    """TensorFlow's ``_slice_helper`` encoding: begin/end/strides and the five masks."""
    items = index if isinstance(index, (tuple, list)) else (index,)
    begin, end, strides = [], [], []
    masks = dict(begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                 shrink_axis_mask=0)
    for k, s in enumerate(items):
        bit = 1 << k
        if isinstance(s, slice):
            for part in (s.start, s.stop, s.step):
                if part is not None and (isinstance(part, (bool, np.bool_))
                                         or not isinstance(part, (int, np.integer))):
                    raise AliasflowError(f"slice {s!r}: bounds must be Python ints here")
            if s.step == 0:
                raise AliasflowError("slice step cannot be zero")
            begin.append(0 if s.start is None else int(s.start))
            masks["begin_mask"] |= bit if s.start is None else 0
            end.append(0 if s.stop is None else int(s.stop))
            masks["end_mask"] |= bit if s.stop is None else 0
            strides.append(1 if s.step is None else int(s.step))
        elif s is Ellipsis or s is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        elif isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)):
            begin.append(int(s)), end.append(int(s) + 1), strides.append(1)
            masks["shrink_axis_mask"] |= bit
        else:
            raise AliasflowError(f"unsupported index {s!r} (ints, slices, ... and None only)")
    if sum(s is Ellipsis for s in items) > 1:
        raise AliasflowError("an index can have only one '...'")
    py_index = tuple(slice(s.start, s.stop, s.step) if isinstance(s, slice)
                     else (s if s is None or s is Ellipsis else int(s)) for s in items)
    return py_index, begin, end, strides, masks


@atomic
def _slice(tensor, index, var=None) -> Tensor:
    """``tensor[index]``: the ``strided_slice`` scope with ``stack`` constants, then the op.

    A slice of a variable gets an ``assign(value, name=None)`` method (``StridedSliceAssign``).
    """
    py_index, begin, end, strides, masks = _slice_spec(index)
    g = _graph_for(tensor)
    with g.as_default(), g.name_scope("strided_slice") as scope:
        x = _convert(g, tensor, "input")
        if x.shape.rank is not None:
            _expand_index(scope[:-1], py_index, x.shape.rank)
        stacks = [_constant(g, v, name="stack")
                  for v in _index_array(begin, f"index {show_value(index)}", end, strides)]
        dt = x.dtype.base_dtype
        out = _make(g, "StridedSlice", [x, *stacks], dt, scope,
                    {"T": dt, "Index": stacks[0].dtype, **masks, "_index": py_index})
    if var is not None:
        def assign(value, name=None):
            out.op._attrs["_assign_base"] = True  # see races(): unused, it is not a read
            return var._strided_slice_assign(py_index, stacks, masks, value,
                                             name if name is not None else scope + "_assign")
        out.assign = assign
    return out


@atomic
def no_op(name=None) -> Operation:
    """``tf.no_op`` (``NoOp``)."""
    return get_default_graph()._create_op("NoOp", [], [], name)


@atomic
def group(*inputs, name=None) -> Operation:
    """``tf.group``: a ``NoOp`` (default name ``group_deps``) with the inputs as control
    inputs."""
    g = _graph_for(*inputs)
    with g.as_default(), g.control_dependencies(list(inputs)):
        return g._create_op("NoOp", [], [], name if name is not None else "group_deps")


# ---- zeros and ones ---------------------------------------------------------------------------


def _fill(graph, dims: Tensor, value, dtype, scope: str) -> Tensor:
    value_t = _constant(graph, np.zeros((), dtype.numpy) + value, dtype, name="Const")
    probe = Operation.__new__(Operation)
    probe.name, probe.type, probe._inputs, probe._attrs = scope[:-1], "Fill", [dims], {}
    shape = fill_dims(probe, lambda t: t.shape)
    return graph._create_op("Fill", [dims, value_t], [(dtype, shape)], scope,
                            {"T": dtype, "index_type": dims.dtype}).outputs[0]


def _filled(value, shape, dtype, name, default: str) -> Tensor:
    """TensorFlow's ``zeros``/``ones``: a ``Const`` below 1000 elements, else ``Fill``."""
    dt = as_dtype(dtype).base_dtype
    g = get_default_graph()
    with g.name_scope(name if name is not None else default) as scope:
        if isinstance(shape, Tensor):
            return _fill(g, shape, value, dt, scope)
        shape = TensorShape(shape)
        if not shape.is_fully_defined():
            raise AliasflowError(f"{default}: shape {shape} must be fully defined")
        if prod(shape.dims) < 1000:
            check_nbytes(tuple(shape.dims), dt.numpy, f"{default} {scope[:-1]!r}")
            return _constant(g, np.full(shape.dims, value, dt.numpy), dt, name=scope)
        dims = _constant(g, _index_array(shape.dims, f"{default} shape"),
                         name="shape_as_tensor")
        return _fill(g, dims, value, dt, scope)


@atomic
def zeros(shape, dtype=float32, name=None) -> Tensor:
    """``tf.zeros`` (a ``Const`` named ``zeros``, or ``Fill`` from 1000 elements on)."""
    return _filled(0, shape, dtype, name, "zeros")


@atomic
def ones(shape, dtype=float32, name=None) -> Tensor:
    """``tf.ones`` (a ``Const`` named ``ones``, or ``Fill`` from 1000 elements on)."""
    return _filled(1, shape, dtype, name, "ones")


@atomic
def zeros_like(tensor, dtype=None, name=None) -> Tensor:
    """``tf.zeros_like``: ``zeros`` of a fully defined shape, else a ``ZerosLike`` op."""
    g = _graph_for(tensor)
    with g.as_default(), g.name_scope(name if name is not None else "zeros_like") as scope:
        x = _convert(g, tensor, "tensor")
        dt = as_dtype(dtype).base_dtype if dtype is not None else x.dtype.base_dtype
        if x.shape.is_fully_defined():
            return zeros(x.shape.dims, dt, name=scope)
        if dt != x.dtype.base_dtype:
            raise AliasflowError("zeros_like: a new dtype needs a fully defined shape here")
        return _make(g, "ZerosLike", [x], dt, scope, {"T": dt})


@atomic
def ones_like(tensor, dtype=None, name=None) -> Tensor:
    """``tf.ones_like``: ``Fill`` with the shape as a ``Const`` (or a ``Shape`` op)."""
    g = _graph_for(tensor)
    with g.as_default(), g.name_scope(name if name is not None else "ones_like") as scope:
        x = _convert(g, tensor, "tensor")
        dt = as_dtype(dtype).base_dtype if dtype is not None else x.dtype.base_dtype
        with g.name_scope("Shape") as shape_scope:
            if x.shape.is_fully_defined():
                dims = _constant(g, _index_array(x.shape.dims, "ones_like shape"),
                                 name="shape_as_tensor")
            else:
                dims = _make(g, "Shape", [x], int32, shape_scope, {"T": x.dtype.base_dtype,
                                                                   "out_type": int32})
        return _fill(g, dims, 1, dt, scope)


# ---- the Python operators of Tensor -----------------------------------------------------------
def _override_operator(name: str, fn) -> None:
    """Install ``fn`` as ``Tensor.<name>``, as TensorFlow's ``_override_operator`` does: the
    graph module defines the tensor, this module what its operators build."""
    setattr(Tensor, name, fn)


def _operators(kind: str):
    def forward(self, other):
        return _binary_operator(kind, self, other)

    def reflected(self, other):
        return _binary_operator(kind, self, other, reverse=True)
    forward.__name__, reflected.__name__ = f"__{kind}__", f"__r{kind}__"
    return forward, reflected


for _kind in ("add", "sub", "mul", "truediv", "matmul"):
    _forward, _reflected = _operators(_kind)
    _override_operator(f"__{_kind}__", _forward)
    _override_operator(f"__r{_kind}__", _reflected)
_override_operator("__neg__", lambda self: negative(self))
_override_operator("__getitem__", lambda self, index: _slice(self, index))
del _kind, _forward, _reflected
