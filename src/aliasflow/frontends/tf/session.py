"""``tf.Session.run`` on aliasflow.

How a run works. The ops the fetches need (through data inputs and control inputs, stopping at
fed tensors) become op records in graph creation order, which is a topological order.
Each variable is an aliasflow storage kept by the session; ``Const``, arithmetic and the other
value ops write fresh storage per run. ``Identity`` (so ``Variable/read``), the ``*_ref``
outputs of ``VariableV2`` and of the assign ops, a full slice (``v[:]``) and a ``Sum`` over
size-1 axes *are* the memory they come from, as in TensorFlow, whose kernels forward buffers:
an op reading ``Variable/read:0`` reads the variable when it runs, and a ``StridedSlice`` of it
reads only the sliced elements. ``Assign``/``AssignAdd``/``AssignSub`` write the whole
variable, ``StridedSliceAssign`` the slice. Every data and control edge is an ``after`` edge of
the op record (an ordering edge that is not data), so :func:`aliasflow.analyze` orders the run
by graph edges and memory conflicts alike, and :func:`aliasflow.run` executes it on ``workers``
threads (one worker runs creation order, which respects all of those edges).
``Session.program(fetches)`` returns these op records without running them.

Fetches are read after the run, as TensorFlow converts fetched buffers after its run: fetching
a variable (or an assign's output) gives its final value.

Where two accesses to a variable are unordered by the graph's edges (see
:func:`aliasflow.frontends.tf.races.races`), TensorFlow may run them either way round; a run
here then follows creation order, one of the orders TensorFlow may use. Results equal
TensorFlow's whenever the graph has no such race.
"""
from __future__ import annotations

import threading

import numpy as np

from ...analysis.dependencies import analyze
from ...core.errors import AliasflowError, ExecutionError
from ...core.primitives import PRIMITIVES, Primitive
from ...core.record import Access, OpRecord
from ...core.view import Tensor as AfTensor
from ...execution.runner import run as af_run
from .dtypes import TensorShape
from .graph import Graph, Operation, Tensor, get_default_graph
from .accesses import (_ALIASES, _UPDATES, _identity_slice, _needed_ops, _read_tensors,
                       _trivial_sum, _variable_of)
from .shapes import fill_dims, output_shapes


def _accessed(op: Operation, view_of, var_view):
    """``(reads, writes, kernel)`` of ``op``: the views it reads and writes and a function from
    the read values to the written values."""
    t, ins = op.type, op.inputs
    if t == "Const":
        value = op._attrs["value"]
        return [], [view_of(op.outputs[0])], lambda vals: [value]
    if t in ("AddV2", "Sub", "Mul", "RealDiv", "MatMul", "BatchMatMulV2"):
        fn = {"AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply,
              "RealDiv": np.true_divide, "MatMul": np.matmul, "BatchMatMulV2": np.matmul}[t]
        return [view_of(ins[0]), view_of(ins[1])], [view_of(op.outputs[0])], \
            lambda vals: [fn(vals[0], vals[1])]
    if t == "Range":
        return [view_of(i) for i in ins], [view_of(op.outputs[0])], \
            lambda vals: [np.arange(vals[0], vals[1], vals[2], dtype=np.int32)]
    if t == "Fill":
        shape = view_of(op.outputs[0]).shape
        return [view_of(ins[1])], [view_of(op.outputs[0])], \
            lambda vals: [np.full(shape, vals[0])]
    if t in ("ZerosLike", "Shape"):  # need only the input's shape, not its data
        shape, dt = view_of(ins[0]).shape, op.outputs[0].dtype.base_dtype.numpy
        value = np.zeros(shape, dt) if t == "ZerosLike" else np.asarray(shape, np.int32)
        return [], [view_of(op.outputs[0])], lambda vals: [value]
    if t == "Neg":
        return [view_of(ins[0])], [view_of(op.outputs[0])], lambda vals: [np.negative(vals[0])]
    if t == "Cast":
        dst = op._attrs["DstT"].numpy
        return [view_of(ins[0])], [view_of(op.outputs[0])], lambda vals: [vals[0].astype(dst)]
    if t == "Sum":
        x = ins[0]
        if _trivial_sum(op, view_of(x).shape):
            return [], [], None  # forwarded memory: nothing is read now
        rank = len(view_of(x).shape)
        axis = op._attrs["_axis"]
        axes = tuple(sorted({int(a) % rank for a in np.ravel(axis)})) if rank else ()
        keep = op._attrs["keep_dims"]
        dt = x.dtype.base_dtype.numpy
        acc = np.float32 if dt.itemsize < 4 and dt.kind == "f" else dt  # half sums in float

        def total(vals):
            return [np.sum(vals[0], axis=axes, keepdims=keep, dtype=acc).astype(dt)]
        return [view_of(x)], [view_of(op.outputs[0])], total
    if t == "StridedSlice":
        if _identity_slice(op, view_of(ins[0]).shape):
            return [], [], None  # forwarded memory: nothing is read now
        window = view_of(ins[0])[op._attrs["_index"]]
        return [window], [view_of(op.outputs[0])], lambda vals: [vals[0]]
    if t == "Assign":
        return [view_of(ins[1])], [var_view(op)], lambda vals: [vals[0]]
    if t in ("AssignAdd", "AssignSub"):
        fn = np.add if t == "AssignAdd" else np.subtract
        return [var_view(op), view_of(ins[1])], [var_view(op)], \
            lambda vals: [fn(vals[0], vals[1])]
    if t == "StridedSliceAssign":
        return [view_of(ins[-1])], [var_view(op)[op._attrs["_index"]]], lambda vals: [vals[0]]
    if t in ("Identity", "VariableV2", "NoOp"):
        return [], [], None
    raise AliasflowError(f"operation {op.name!r}: type {t!r} cannot run here")


def _kernel(params, inputs):
    return params["run"](inputs)


# A graph op of a session's run: params["run"] reads the values and gives the written ones
# (and keeps the session's record of initialized variables). Session-private: such records
# run, and are analysed, but hold a function, so a program file cannot hold them.
PRIMITIVES.register(Primitive("tf.kernel", _kernel, params={"type": "str", "run": "any"},
                              outputs="each", doc="One TensorFlow graph op in a session's run."),
                    replace=True)


def _kernel_record(name, type_, reads, writes, fn, checks, done, after) -> OpRecord:
    """One graph op as an op record: its data reads and writes, ordered after the ops its data
    and control edges name (``after``)."""
    def run(values):
        for check in checks:
            check()
        if fn is None:
            results = []
        else:
            with np.errstate(all="ignore"):
                results = [np.asarray(r) for r in fn(values)]  # all reads before any write
        for out, value in zip(writes, results):
            if value.shape != out.shape:
                raise AliasflowError(f"operation {name!r}: value of shape {value.shape} "
                                     f"does not match {out.name!r} of shape {out.shape}")
        if done is not None:
            done()
        return results
    n = len(reads)
    accesses = [Access(k, "R", v) for k, v in enumerate(reads)] + \
        [Access(n + k, "W", v) for k, v in enumerate(writes)]
    return OpRecord(name, "tf.kernel", accesses, {"type": type_, "run": run}, 0, after)


def _structure(graph: Graph, fetches, elements: list):
    """Replace each fetch by its index in ``elements``, keeping lists, tuples, dicts."""
    if isinstance(fetches, dict):
        return type(fetches)((k, _structure(graph, v, elements)) for k, v in fetches.items())
    if isinstance(fetches, (list, tuple)):
        items = [_structure(graph, v, elements) for v in fetches]
        if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):
            return type(fetches)(*items)
        return type(fetches)(items)
    if fetches is None:
        raise AliasflowError("cannot fetch None")
    elements.append(graph.as_graph_element(fetches))
    return _Slot(len(elements) - 1)


def _feeds(graph: Graph, feed_dict) -> dict:
    """``feed_dict`` as ``{tensor: array of its dtype}``, shapes checked."""
    fed = {}
    for key, value in (feed_dict or {}).items():
        try:
            t = graph.as_graph_element(key)
        except AliasflowError as exc:
            raise AliasflowError(f"cannot feed {key!r}: {exc}") from None
        if not isinstance(t, Tensor):
            raise AliasflowError(f"cannot feed {key!r}: only tensors can be fed")
        dt = t.dtype.base_dtype
        try:
            arr = np.array(value, dtype=dt.numpy)
        except (TypeError, ValueError, OverflowError) as exc:
            raise AliasflowError(f"cannot feed {value!r} to {t.name!r} "
                                 f"({dt.name}): {exc}") from None
        if arr.dtype.kind == "O":
            raise AliasflowError(f"cannot feed {value!r} to {t.name!r}")
        if t.shape.rank is not None and not (
                arr.ndim == t.shape.rank and t.shape.is_compatible_with(arr.shape)):
            raise AliasflowError(f"cannot feed value of shape {arr.shape} for tensor "
                                 f"{t.name!r}, which has shape {t.shape}")
        fed[t] = arr
    return fed


class Session:
    """``tf.Session``: runs a graph's ops on aliasflow; holds the variables' values.

    ``workers`` (not in TensorFlow) is the number of threads :func:`aliasflow.run` uses.

    >>> from aliasflow import tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     total = tf.constant(3.0) + tf.constant(4.0)
    >>> with tf.Session(graph=g) as sess:
    ...     sess.run(total)
    np.float32(7.0)
    """

    def __init__(self, target: str = "", graph: Graph | None = None, config=None, *,
                 workers: int = 1):
        if graph is not None and not isinstance(graph, Graph):
            raise AliasflowError(f"Session: graph must be an aliasflow.tf.Graph, got {graph!r}")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise AliasflowError(f"Session: workers must be a positive int, got {workers!r}")
        self.graph = graph if graph is not None else get_default_graph()
        self.workers = workers
        self._memory: dict[int, AfTensor] = {}
        self._initialized: set[int] = set()
        self._closed = False
        self._contexts: list = []

    # ---- context manager and default session ------------------------------------------------
    def __enter__(self) -> "Session":
        ctx = self.graph.as_default()
        ctx.__enter__()
        self._contexts.append(ctx)
        _sessions().append(self)
        return self

    def __exit__(self, *exc) -> None:
        _sessions().pop()
        self._contexts.pop().__exit__(*exc)
        self.close()

    def close(self) -> None:
        self._closed = True
        self._memory.clear()
        self._initialized.clear()

    # ---- run --------------------------------------------------------------------------------
    def _variable_memory(self, var_op: Operation) -> AfTensor:
        if var_op._id not in self._memory:
            shape = var_op._attrs["shape"].as_tuple()
            self._memory[var_op._id] = AfTensor(var_op.name, shape,
                                                var_op._attrs["dtype"].numpy)
        return self._memory[var_op._id]

    def _check_initialized(self, var_op: Operation):
        def check():
            if var_op._id not in self._initialized:
                raise AliasflowError(f"attempting to use uninitialized value {var_op.name}")
        return check

    def run(self, fetches, feed_dict=None):
        """Run what ``fetches`` need and return their values (NumPy; None for operations),
        in the structure of ``fetches`` (nested lists, tuples, dicts)."""
        structure, elements, fed, views, kernels, order = self._plan(fetches, feed_dict)
        self._check_variables(order, fed)
        # one worker: creation order, one of the orders the analysis allows; more: the
        # analysis' ordering edges on a thread pool
        graph = analyze(kernels) if self.workers > 1 else None
        try:
            af_run(kernels, workers=self.workers, graph=graph)
        except ExecutionError as exc:
            cause = exc.__cause__
            if isinstance(cause, AliasflowError):
                raise AliasflowError(str(cause)) from cause
            raise
        values = []
        for el in elements:
            if isinstance(el, Operation):
                values.append(None)
            elif el in fed:
                values.append(fed[el].copy())
            else:
                var = _variable_of(el, fed)
                if var is not None:
                    self._check_initialized(var)()
                arr = views[el].numpy().copy()
                values.append(arr[()] if arr.ndim == 0 else arr)
        return _fill(structure, values)

    def program(self, fetches, feed_dict=None) -> list:
        """The aliasflow operations ``run(fetches, feed_dict)`` would execute, in creation
        order, without running them: one op record per graph op, reading and writing views
        named after the tensors (variables after their ops), its data and control edges as
        ``after`` ordering edges. ``af.analyze(ops)`` shows what orders them.

        >>> import aliasflow as af
        >>> from aliasflow import tf
        >>> g = tf.Graph()
        >>> with g.as_default():
        ...     v = tf.Variable([1.0, 2.0, 3.0])
        ...     w = v[0:2].assign([5.0, 6.0])
        ...     r = tf.reduce_sum(v[1:3])
        >>> ops = tf.Session(graph=g).program([w, r])
        >>> [(op.name, op.output_views[0].name) for op in ops
        ...  if op.output_views and op.output_views[0].tensor.name == "Variable"]
        [('strided_slice/_assign', 'Variable[0:2]')]
        >>> [(op.name, op.input_views[0].name) for op in ops
        ...  if op.input_views and op.input_views[0].tensor.name == "Variable"]
        [('strided_slice_1', 'Variable[1:3]')]
        >>> [(d.src, d.dst, d.kind, d.elements) for d in af.analyze(ops).dependencies
        ...  if d.tensor == "Variable"]
        [('strided_slice/_assign', 'strided_slice_1', 'RAW', [1])]
        """
        return self._plan(fetches, feed_dict)[4]

    def _plan(self, fetches, feed_dict):
        if self._closed:
            raise AliasflowError("attempted to use a closed Session")
        elements: list = []
        structure = _structure(self.graph, fetches, elements)
        fed = _feeds(self.graph, feed_dict)
        order = _needed_ops(self.graph, elements, fed)
        for op in order:
            if op.type == "Placeholder":
                raise AliasflowError(f"you must feed a value for placeholder tensor "
                                     f"{op.outputs[0].name!r} with dtype "
                                     f"{op.outputs[0].dtype.name} and shape "
                                     f"{op.outputs[0].shape}")
        views = self._memory_views(order, fed)

        def view_of(t):
            return views[t]

        def var_view(op):
            var = _variable_of(op.inputs[0], fed)
            if var is None:
                raise AliasflowError(f"operation {op.name!r} updates a fed tensor, not a "
                                     f"variable")
            return views[var.outputs[0]]

        position = {op._id: k for k, op in enumerate(order)}
        kernels = []
        for k, op in enumerate(order):
            reads, writes, fn = _accessed(op, view_of, var_view)
            read_vars = {}
            for t in _read_tensors(op) + (op.inputs[:1] if op.type == "StridedSliceAssign" else []):
                var = _variable_of(t, fed)
                if var is not None:
                    read_vars[var._id] = var
            checks = [self._check_initialized(v) for v in read_vars.values()]
            after = None
            if op.type == "Assign":
                var = _variable_of(op.inputs[0], fed)
                after = (lambda i: lambda: self._initialized.add(i))(var._id)
            preds = {position[i.op._id] for i in op.inputs if i not in fed}
            preds |= {position[c._id] for c in op.control_inputs if c._id in position}
            kernels.append(_kernel_record(op.name, op.type, reads, writes, fn, checks, after,
                                          tuple(order[p].name for p in sorted(preds))))
        return structure, elements, fed, views, kernels, order

    def _check_variables(self, order: list[Operation], fed: dict) -> None:
        """Refuse, before anything runs, a variable read that is neither initialized nor
        assigned in this run (reads racing an assign are still checked as they run)."""
        assigned = set()
        for op in order:
            var = _variable_of(op.inputs[0], fed) if op.type == "Assign" else None
            if var is not None:
                assigned.add(var._id)
        for op in order:
            for t in _read_tensors(op) + (op.inputs[:1] if op.type in _UPDATES[1:] else []):
                var = _variable_of(t, fed)
                if var is not None and var._id not in self._initialized | assigned:
                    raise AliasflowError(f"attempting to use uninitialized value {var.name} "
                                         f"(in {op.name!r}); run its initializer first")

    def _memory_views(self, order: list[Operation], fed: dict) -> dict:
        """The aliasflow view each tensor of the run lives in, with shapes known at run time."""
        views: dict = {}
        for t, arr in fed.items():
            views[t] = AfTensor(f"{t.name} (fed)", arr.shape, arr.dtype, data=arr).view()
        for op in order:
            for out in op.outputs:
                if out in fed:
                    continue
                if op.type == "VariableV2":
                    views[out] = self._variable_memory(op).view()
                elif op.type in _ALIASES:
                    views[out] = views[op.inputs[0]]
                elif op.type == "StridedSlice" and _identity_slice(op, views[op.inputs[0]].shape):
                    views[out] = views[op.inputs[0]][op._attrs["_index"]]
                elif op.type == "Sum" and _trivial_sum(op, views[op.inputs[0]].shape):
                    shapes = [TensorShape(views[i].shape) for i in op.inputs]
                    views[out] = views[op.inputs[0]].reshape(
                        output_shapes(op, shapes)[0].as_tuple())
                elif op.type == "Const":
                    value = op._attrs["value"]
                    views[out] = AfTensor(out.name, value.shape, value.dtype).view()
                else:
                    shapes = [TensorShape(views[i].shape) for i in op.inputs]
                    shape = fill_dims(op, lambda t: views[t].shape) if op.type == "Fill" \
                        else output_shapes(op, shapes)[out.value_index]
                    views[out] = AfTensor(out.name, shape.as_tuple(),
                                          out.dtype.base_dtype.numpy).view()
            if op.type in ("Assign", "AssignAdd", "AssignSub"):
                target, value = views[op.outputs[0]].shape, views[op.inputs[1]].shape
                if target != value:
                    raise AliasflowError(f"{op.type} {op.name!r}: value of shape {value} does "
                                         f"not match variable of shape {target}")
            if op.type == "StridedSliceAssign":
                target = views[op.inputs[0]][op._attrs["_index"]].shape
                value = views[op.inputs[-1]].shape
                if target != value:
                    raise AliasflowError(f"StridedSliceAssign {op.name!r}: value of shape "
                                         f"{value} does not match the slice of shape {target}")
        return views


class _Slot:
    def __init__(self, index: int):
        self.index = index


def _fill(structure, values):
    if isinstance(structure, _Slot):
        return values[structure.index]
    if isinstance(structure, dict):
        return type(structure)((k, _fill(v, values)) for k, v in structure.items())
    if isinstance(structure, (list, tuple)):
        items = [_fill(v, values) for v in structure]
        if isinstance(structure, tuple) and hasattr(structure, "_fields"):
            return type(structure)(*items)
        return type(structure)(items)
    return structure


_state = threading.local()


def _sessions() -> list[Session]:
    if not hasattr(_state, "sessions"):
        _state.sessions = []
    return _state.sessions


def get_default_session() -> Session | None:
    """The innermost session entered with ``with``, or None."""
    return _sessions()[-1] if _sessions() else None


def _session_for(session, graph: Graph) -> Session:
    session = session if session is not None else get_default_session()
    if session is None:
        raise AliasflowError("no default session: pass session= or use `with tf.Session():`")
    if session.graph is not graph:
        raise AliasflowError("the session's graph is not the graph of this tensor")
    return session
