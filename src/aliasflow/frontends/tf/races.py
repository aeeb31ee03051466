"""``tf.races``: the variable accesses a TensorFlow 1 graph leaves unordered."""
from __future__ import annotations

from ...analysis.races import find_races
from ...core.errors import AliasflowError
from ...core.record import Access, OpRecord
from ...core.view import Tensor as AfTensor
from .accesses import _UPDATES, _needed_ops, _read_tensors, _variable_of
from .graph import Graph, Operation, Tensor, get_default_graph
from .session import _feeds, _structure


def races(graph: Graph | None = None, fetches=None, feed_dict=None) -> list:
    """Variable accesses that the graph's data and control edges leave unordered.

    Each result is an :class:`aliasflow.Dependency` between two graph ops (``src`` made first):
    ``kind`` RAW/WAR/WAW, the variable views and the elements both touch. Neither op reaches
    the other through data inputs and control inputs, so when one ``Session.run`` runs both,
    TensorFlow may execute them in either order (or at once) and the result depends on timing:
    these are the missing ``tf.control_dependencies``. Reads are those of the ops that read a
    variable's memory when they run (through ``Variable/read``, ``tf.identity`` or an update's
    output; a ``StridedSlice`` reads only its slice); writes are the assign ops'.

    Parameters
    ----------
    graph : Graph, optional
        Default: the default graph.
    fetches : optional
        Consider only the ops a ``Session.run(fetches, feed_dict)`` would run. Without it, every
        op except the variables' initializers (which normally run in a ``Session.run`` of their
        own) and the unused ``StridedSlice`` that ``v[1:3].assign(x)`` makes on the way (it is
        only read if fetched; pass ``fetches`` to include it).

    >>> from aliasflow import tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     v = tf.Variable([1.0, 2.0, 3.0, 4.0])
    ...     inc = v.assign_add([1.0, 1.0, 1.0, 1.0])
    ...     head = v[0:2] * 2.0
    ...     tail = v[2:4] * 2.0
    ...     with tf.control_dependencies([inc]):
    ...         after = tf.identity(v[0:2])
    >>> [(r.src, r.dst, r.kind, r.dst_view) for r in tf.races(g)]
    [('AssignAdd', 'strided_slice', 'RAW', 'Variable[0:2]'), ('AssignAdd', 'strided_slice_1', 'RAW', 'Variable[2:4]')]
    """
    graph = graph if graph is not None else get_default_graph()
    if not isinstance(graph, Graph):
        raise AliasflowError(f"races: expected an aliasflow.tf.Graph, got {graph!r}")
    if fetches is None:
        skip = {v.initializer._id for v in graph._variables}
        used = {t.op._id for op in graph._ops for t in op.inputs} | {
            c._id for op in graph._ops for c in op.control_inputs}
        skip |= {op._id for op in graph._ops
                 if op._attrs.get("_assign_base") and op._id not in used}
        ops = [op for op in graph._ops if op._id not in skip]
        fed: dict = {}
    else:
        elements: list = []
        _structure(graph, fetches, elements)
        fed = _feeds(graph, feed_dict)
        ops = _needed_ops(graph, elements, fed)
    memory = {}

    def var_view(t: Tensor, op: Operation):
        var = _variable_of(t, fed)
        if var is None:
            return None
        if var._id not in memory:
            memory[var._id] = AfTensor.virtual(var.name, var._attrs["shape"].as_tuple(),
                                               var._attrs["dtype"].numpy)
        view = memory[var._id].view()
        if op.type in ("StridedSlice", "StridedSliceAssign") and t is op.inputs[0]:
            view = view[op._attrs["_index"]]
        return view

    present = {op._id for op in ops}
    accesses, edges = [], []
    for op in ops:
        # an op's variable accesses, for analysis only (its kind is its TensorFlow type)
        reads = [v for t in _read_tensors(op) if (v := var_view(t, op)) is not None]
        writes = [var_view(op.inputs[0], op)] if op.type in _UPDATES else []
        accesses.append(OpRecord(op.name, f"tf.{op.type}", [
            Access(k, "R", v) for k, v in enumerate(reads)] + [
            Access(len(reads) + k, "W", v) for k, v in enumerate(writes)]))
        edges += [(i.op.name, op.name) for i in op.inputs
                  if i.op._id in present and i not in fed]
        edges += [(c.name, op.name) for c in op.control_inputs if c._id in present]
    return find_races(accesses, edges=edges)
