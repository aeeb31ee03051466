"""``tf.Session.run`` on aliasflow.

How a run works. The ops the fetches need (through data inputs and control inputs, stopping at
fed tensors) become op records in graph creation order, which is a topological order.
Each variable is an aliasflow storage kept by the session; ``Const``, arithmetic and the other
value ops write fresh storage per run. ``Identity`` (so ``Variable/read``), the ``*_ref``
outputs of ``VariableV2`` and of the assign ops, a full slice (``v[:]``) and a ``Sum`` over
size-1 axes *are* the memory they come from, as in TensorFlow, whose kernels forward buffers:
an op reading ``Variable/read:0`` reads the variable when it runs, and a ``StridedSlice`` of it
reads only the sliced elements. ``Assign``/``AssignAdd``/``AssignSub`` write the whole
variable, ``StridedSliceAssign`` the slice. Each graph op is a record of kind ``tf.<Type>``
(:mod:`.kinds`: parameters a program file holds, a NumPy kernel), so a run's program can be
saved with :mod:`aliasflow.io`. Every data and control edge is an ``after`` edge of
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
from ...core.record import Access, OpRecord
from ...core.values import fit_array, show_value
from ...core.view import Tensor as AfTensor
from ...execution.runner import run as af_run
from .dtypes import TensorShape
from .graph import Graph, Operation, Tensor, _hooks, get_default_graph
from .kinds import _BINARY, encode_value
from .accesses import (_ALIASES, _UPDATES, _identity_slice, _needed_ops, _read_tensors,
                       _trivial_sum, _variable_of)
from .shapes import fill_dims, output_shapes


def _accessed(op: Operation, view_of, var_view, const_value):
    """``(reads, writes, params)`` of ``op``: the views it reads and writes (in the slot
    order of its kind's kernel, :mod:`.kinds`) and its kind's parameters."""
    t, ins = op.type, op.inputs
    out = [view_of(op.outputs[0])] if op.outputs else []
    if t == "Const":
        return [], out, {"value": const_value(op)}
    if t in _BINARY:
        return [view_of(ins[0]), view_of(ins[1])], out, {}
    if t == "Range":
        return [view_of(i) for i in ins], out, {}
    if t == "Fill":
        return [view_of(ins[1])], out, {}
    if t == "ZerosLike":  # needs only the input's shape (the output view's), not its data
        return [], out, {"dtype": op.outputs[0].dtype.base_dtype.name}
    if t == "Shape":
        return [], out, {"shape": list(view_of(ins[0]).shape)}
    if t == "Neg":
        return [view_of(ins[0])], out, {}
    if t == "Cast":
        return [view_of(ins[0])], out, {"dtype": op._attrs["DstT"].base_dtype.name}
    if t == "Sum":
        x = view_of(ins[0])
        if _trivial_sum(op, x.shape):
            return [], [], {"axes": [], "keep_dims": False, "forward": True}  # forwarded memory: nothing is read now
        rank = len(x.shape)
        axes = sorted({int(a) % rank for a in np.ravel(op._attrs["_axis"])}) if rank else []
        return [x], out, {"axes": axes, "keep_dims": bool(op._attrs["keep_dims"]),
                          "forward": False}
    if t == "StridedSlice":
        if _identity_slice(op, view_of(ins[0]).shape):
            return [], [], {"forward": True}  # forwarded memory: nothing is read now
        return [view_of(ins[0])[op._attrs["_index"]]], out, {"forward": False}
    if t == "Assign":
        return [view_of(ins[1])], [var_view(op)], {}
    if t in ("AssignAdd", "AssignSub"):
        return [var_view(op), view_of(ins[1])], [var_view(op)], {}
    if t == "StridedSliceAssign":
        return [view_of(ins[-1])], [var_view(op)[op._attrs["_index"]]], {}
    if t in ("Identity", "VariableV2", "NoOp"):
        return [], [], {}
    raise AliasflowError(f"operation {op.name!r}: type {show_value(t)} cannot run here")


def _record(name, type_, reads, writes, params, after) -> OpRecord:
    """One graph op as an op record of kind ``tf.<type>``: its data reads and writes, ordered
    after the ops its data and control edges name (``after``)."""
    n = len(reads)
    accesses = [Access(k, "R", v) for k, v in enumerate(reads)] + \
        [Access(n + k, "W", v) for k, v in enumerate(writes)]
    return OpRecord(name, f"tf.{type_}", accesses, params, 0, after)


MAX_FETCH_DEPTH = 100  # lists, tuples and dicts of fetches nested deeper are refused


def _structure(graph: Graph, fetches, elements: list, _path: tuple = ()):
    """Replace each fetch by its index in ``elements``, keeping lists, tuples, dicts. A
    structure that contains itself, or nests deeper than MAX_FETCH_DEPTH, is refused."""
    if isinstance(fetches, (dict, list, tuple)):
        if id(fetches) in _path:
            raise AliasflowError(f"fetches: a {type(fetches).__name__} contains itself; "
                                 f"fetches must be a tree of tensors and operations")
        if len(_path) >= MAX_FETCH_DEPTH:
            raise AliasflowError(f"fetches nest more than {MAX_FETCH_DEPTH} levels deep")
        path = _path + (id(fetches),)
        if isinstance(fetches, dict):
            return type(fetches)((k, _structure(graph, v, elements, path))
                                 for k, v in fetches.items())
        items = [_structure(graph, v, elements, path) for v in fetches]
        if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):
            return type(fetches)(*items)
        return type(fetches)(items)
    if fetches is None:
        raise AliasflowError("cannot fetch None")
    elements.append(graph.as_graph_element(fetches))
    return _Slot(len(elements) - 1)


def _feeds(graph: Graph, feed_dict) -> dict:
    """``feed_dict`` as ``{tensor: array of its dtype}``, shapes checked; a value that does
    not fit the tensor's dtype is refused (the rule of :mod:`aliasflow.core.values`)."""
    if feed_dict is None:
        return {}
    if not isinstance(feed_dict, dict):
        raise AliasflowError(f"feed_dict must be a dict {{tensor: value}}, got a "
                             f"{type(feed_dict).__name__} ({show_value(feed_dict)})")
    fed = {}
    for key, value in feed_dict.items():
        try:
            t = graph.as_graph_element(key)
        except AliasflowError as exc:
            raise AliasflowError(f"cannot feed {show_value(key)}: {exc}") from None
        if not isinstance(t, Tensor):
            raise AliasflowError(f"cannot feed {show_value(key)}: only tensors can be fed")
        dt = t.dtype.base_dtype
        try:
            src = np.asarray(value)
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            raise AliasflowError(f"cannot feed {show_value(value)} to {t.name!r} "
                                 f"({dt.name}): {exc}") from None
        if src.dtype.kind in "SUV" and src.size:
            raise AliasflowError(f"cannot feed {show_value(value)} to {t.name!r} ({dt.name}): "
                                 f"not numbers")
        arr = fit_array(src, dt.numpy, f"feed for {t.name!r}")
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
        self._consts: dict[int, dict] = {}
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
        self._consts.clear()

    # ---- run --------------------------------------------------------------------------------
    def _variable_memory(self, var_op: Operation) -> AfTensor:
        if var_op._id not in self._memory:
            shape = var_op._attrs["shape"].as_tuple()
            self._memory[var_op._id] = AfTensor(var_op.name, shape,
                                                var_op._attrs["dtype"].numpy)
        return self._memory[var_op._id]

    def run(self, fetches, feed_dict=None):
        """Run what ``fetches`` need and return their values (NumPy; None for operations),
        in the structure of ``fetches`` (nested lists, tuples, dicts)."""
        structure, elements, fed, views, kernels, order = self._plan(fetches, feed_dict)
        assigned = self._check_variables(order, fed)
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
        # only a run that succeeds initializes the variables it assigns (after a failed
        # run, an assign that ran before the failing op has written its variable, which still
        # counts as uninitialized)
        self._initialized |= assigned
        values = []
        for el in elements:
            if isinstance(el, Operation):
                values.append(None)
            elif el in fed:
                values.append(fed[el].copy())
            else:
                var = _variable_of(el, fed)
                if var is not None and var._id not in self._initialized:
                    raise AliasflowError(f"attempting to use uninitialized value {var.name}")
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
        for op in order:
            reads, writes, params = _accessed(op, view_of, var_view, self._const_value)
            preds = {position[i.op._id] for i in op.inputs if i not in fed}
            preds |= {position[c._id] for c in op.control_inputs if c._id in position}
            kernels.append(_record(op.name, op.type, reads, writes, params,
                                   tuple(order[p].name for p in sorted(preds))))
        return structure, elements, fed, views, kernels, order

    def _check_variables(self, order: list[Operation], fed: dict) -> set[int]:
        """Refuse, before anything runs, a variable read that comes, in creation order,
        before any ``Assign`` has initialized the variable (in an earlier run or earlier in
        this one). Creation order is the order one worker runs; with more workers the
        analysis orders each such read after those assigns too, since an assign writes the
        whole variable. Returns the ids of the variables this run assigns."""
        ready, assigned = set(self._initialized), set()
        for op in order:
            for t in _read_tensors(op) + (op.inputs[:1] if op.type in _UPDATES[1:] else []):
                var = _variable_of(t, fed)
                if var is not None and var._id not in ready:
                    raise AliasflowError(f"attempting to use uninitialized value {var.name} "
                                         f"(in {op.name!r}); run its initializer first")
            var = _variable_of(op.inputs[0], fed) if op.type == "Assign" else None
            if var is not None:
                ready.add(var._id)
                assigned.add(var._id)
        return assigned

    def _const_value(self, op: Operation) -> dict:
        """The ``tf.Const`` value parameter of a ``Const`` op (encoded once per session)."""
        got = self._consts.get(op._id)
        if got is None:
            got = self._consts[op._id] = encode_value(op._attrs["value"])
        return got

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


_hooks["session_for"] = _session_for  # the graph's Tensor.eval and Operation.run use it
