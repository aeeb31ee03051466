"""TensorFlow 1 graphs: operations with unique names, tensors ``op:index``, name scopes and
control dependencies, made unique and attached exactly as ``tf.compat.v1`` does.

Names: ``Graph.unique_name`` is TensorFlow's algorithm (case-insensitive counters; a name like
``add_1`` given explicitly is marked used, so the next ``add`` skips it). Control dependencies:
an op made inside ``control_dependencies(c)`` gets ``c`` as control inputs unless one of its
inputs was itself made inside that block (then it is already ordered after ``c``) or ``c`` is one
of its data inputs; nested blocks add up, outermost first, without repeats.
"""
from __future__ import annotations

import re
import threading
from contextlib import contextmanager

from ...core.errors import AliasflowError
from ...core.values import show_value
from .dtypes import DType, TensorShape

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


# What this module needs from the rest of ``tf`` comes through hooks set by the modules that
# provide it, so the graph imports nothing of theirs (no import circle): ``ops.py`` installs
# the Python operators on Tensor (as TensorFlow's ``_override_operator`` does) and
# ``session.py`` the lookup of the session that ``eval``/``run`` use.
_hooks: dict = {}


def _session_for(session, graph: "Graph"):
    lookup = _hooks.get("session_for")
    if lookup is None:  # pragma: no cover - aliasflow.tf imports session.py
        raise AliasflowError("no session support: import aliasflow.tf")
    return lookup(session, graph)


class Tensor:
    """The symbolic output ``value_index`` of an operation (a graph-mode ``tf.Tensor``).

    Its Python operators (``+``, ``-``, ``*``, ``/``, ``@``, unary ``-``, ``[]``) are
    installed by :mod:`.ops`, with TensorFlow's op names and scopes."""

    def __init__(self, op: "Operation", value_index: int, dtype: DType, shape: TensorShape):
        self.op = op
        self.value_index = value_index
        self.dtype = dtype
        self._shape = shape

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self) -> "Graph":
        return self.op.graph

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def consumers(self) -> list["Operation"]:
        return [op for op in self.graph._ops if any(t is self for t in op.inputs)]

    def eval(self, feed_dict=None, session=None):
        return _session_for(session, self.graph).run(self, feed_dict)

    def __str__(self) -> str:
        shape = "" if self._shape.dims is None else f", shape={self._shape}"
        return f'Tensor("{self.name}"{shape}, dtype={self.dtype.name})'

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self.dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self):
        raise AliasflowError(f"using tensor {self.name!r} as a Python bool is not allowed "
                             f"in graph mode")

    def __iter__(self):
        raise AliasflowError(f"tensor {self.name!r} is symbolic and cannot be iterated "
                             f"in graph mode")

    def __len__(self):
        raise AliasflowError(f"tensor {self.name!r} is symbolic; use .shape")


class Operation:
    """A node of the graph: ``name``, ``type``, ``inputs``, ``outputs``, ``control_inputs``."""

    def __init__(self, graph: "Graph", name: str, op_type: str, inputs, control_inputs,
                 outputs, attrs: dict):
        self.graph = graph
        self.name = name
        self.type = op_type
        self._inputs = list(inputs)
        self._control_inputs = list(control_inputs)
        self._attrs = dict(attrs)
        self._id = len(graph._ops)
        self.outputs = [Tensor(self, i, dt, sh) for i, (dt, sh) in enumerate(outputs)]

    @property
    def inputs(self) -> list[Tensor]:
        return list(self._inputs)

    @property
    def control_inputs(self) -> list["Operation"]:
        return list(self._control_inputs)

    def get_attr(self, name: str):
        if name not in self._attrs:
            raise AliasflowError(f"operation {self.name!r} has no attr named {name!r}")
        return self._attrs[name]

    def run(self, feed_dict=None, session=None) -> None:
        _session_for(session, self.graph).run(self, feed_dict)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self.name}' type={self.type}>"

    def __hash__(self) -> int:
        return id(self)


class _ControlDependencies:
    """One ``control_dependencies`` block: its control ops and the ops made inside it."""

    def __init__(self, control_ops):
        self.control_ops = control_ops
        self.made_inside: set[int] = set()


class Graph:
    """A TensorFlow 1 dataflow graph (``tf.Graph``).

    >>> from aliasflow import tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     a = tf.constant(3.0); b = tf.constant(4.0); total = a + b
    >>> for t in (a, b, total): print(t)
    Tensor("Const:0", shape=(), dtype=float32)
    Tensor("Const_1:0", shape=(), dtype=float32)
    Tensor("add:0", shape=(), dtype=float32)
    >>> total
    <tf.Tensor 'add:0' shape=() dtype=float32>
    >>> [op.type for op in g.get_operations()]
    ['Const', 'Const', 'AddV2']
    """

    def __init__(self):
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._control_stack: list[_ControlDependencies] = []
        self._variables: list = []
        self._journal: list | None = None  # name counters to restore if a build fails

    @contextmanager
    def _transaction(self):
        """Undo every op, name and variable added inside if building fails, so bad input
        leaves the graph as it was (TensorFlow would keep the ops made before the error)."""
        if self._journal is not None:  # the outermost transaction decides
            yield
            return
        self._journal = []
        n_ops, n_vars = len(self._ops), len(self._variables)
        try:
            yield
        except BaseException:
            for key, old in reversed(self._journal):
                if old is None:
                    self._names_in_use.pop(key, None)
                else:
                    self._names_in_use[key] = old
            for op in self._ops[n_ops:]:
                del self._by_name[op.name]
                for block in self._control_stack:
                    block.made_inside.discard(op._id)
            del self._ops[n_ops:]
            del self._variables[n_vars:]
            raise
        finally:
            self._journal = None

    def _mark(self, key: str, value: int) -> None:
        if self._journal is not None:
            self._journal.append((key, self._names_in_use.get(key)))
        self._names_in_use[key] = value

    # ---- names ------------------------------------------------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """TensorFlow's ``Graph.unique_name``: the name, or ``name_N`` for the first free N."""
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()  # names are unique ignoring case (foo and Foo share a counter)
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._mark(key, i + 1)
        if i > 0:
            base = key
            while key in self._names_in_use:  # skip "add_1" if someone asked for it by name
                key = f"{base}_{i}"
                i += 1
            if mark_as_used:
                self._mark(key, 1)
            name = f"{name}_{i - 1}"
        return name

    def get_name_scope(self) -> str:
        return self._name_stack

    @contextmanager
    def name_scope(self, name):
        """Push a name scope; yields its name with a trailing ``/`` (``""`` resets to the root).

        A name ending in ``/`` is used as it is (re-entering a scope); others are made unique.
        """
        if name:
            if not isinstance(name, str):
                raise AliasflowError(f"name scope must be a string, got {name!r}")
            pattern = _VALID_SCOPE_NAME if self._name_stack else _VALID_OP_NAME
            if not pattern.match(name):
                raise AliasflowError(f"{name!r} is not a valid name scope (must match "
                                     f"{pattern.pattern})")
        old = self._name_stack
        if not name:
            new, scope = "", ""
        elif name[-1] == "/":
            new, scope = name[:-1], name
        else:
            new = self.unique_name(name)
            scope = new + "/"
        self._name_stack = new
        try:
            yield scope
        finally:
            self._name_stack = old

    # ---- control dependencies ---------------------------------------------------------------
    @contextmanager
    def control_dependencies(self, control_inputs):
        """Ops made inside run after ``control_inputs`` (ops, tensors or variables); ``None``
        clears the enclosing blocks."""
        if control_inputs is None:
            saved, self._control_stack = self._control_stack, []
            try:
                yield
            finally:
                self._control_stack = saved
            return
        # as TensorFlow: ops already controlling an enclosing block are not repeated
        current = [c for block in self._control_stack for c in block.control_ops]
        control_ops = []
        for c in control_inputs:
            op = self._as_operation(c, "control_dependencies")
            if op not in current:
                control_ops.append(op)
                current.append(op)
        block = _ControlDependencies(control_ops)
        self._control_stack.append(block)
        try:
            yield
        finally:
            self._control_stack.remove(block)

    def _as_operation(self, c, where: str) -> Operation:
        if hasattr(c, "_as_graph_op"):  # a Variable
            c = c._as_graph_op()
        if isinstance(c, Tensor):
            c = c.op
        if not isinstance(c, Operation):
            raise AliasflowError(f"{where}: expected an operation or tensor, got {show_value(c)}")
        if c.graph is not self:
            raise AliasflowError(f"{where}: operation {c.name!r} is from another graph")
        return c

    def _control_inputs_for(self, input_ops: list[Operation]) -> list[Operation]:
        found: list[Operation] = []
        for block in self._control_stack:
            if any(op._id in block.made_inside for op in input_ops):
                continue  # an input made inside the block already runs after its controls
            found.extend(c for c in block.control_ops if c not in input_ops)
        return found

    # ---- ops --------------------------------------------------------------------------------
    def _create_op(self, op_type: str, inputs, outputs, name: str | None = None,
                   attrs: dict | None = None) -> Operation:
        """Add an op. ``name`` ending in ``/`` (a scope) is used as is; others made unique."""
        for t in inputs:
            if not isinstance(t, Tensor):
                raise AliasflowError(f"{op_type}: input must be a Tensor, got {show_value(t)}")
            if t.graph is not self:
                raise AliasflowError(f"{op_type}: input {t.name!r} is from another graph")
        name = op_type if name is None else name
        if name and name[-1] == "/":
            name = name[:-1]
        else:
            name = self.unique_name(name)
        if not _VALID_OP_NAME.match(name):
            raise AliasflowError(f"{name!r} is not a valid op name (must match "
                                 f"{_VALID_OP_NAME.pattern})")
        if name in self._by_name:
            raise AliasflowError(f"duplicate op name {name!r} in the graph")
        input_ops = []
        for t in inputs:
            if t.op not in input_ops:
                input_ops.append(t.op)
        control = self._control_inputs_for(input_ops)
        op = Operation(self, name, op_type, inputs, control, outputs, attrs or {})
        self._ops.append(op)
        self._by_name[name] = op
        for block in self._control_stack:
            block.made_inside.add(op._id)
        return op

    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if name not in self._by_name:
            raise AliasflowError(f"the graph has no operation named {name!r}")
        return self._by_name[name]

    def get_tensor_by_name(self, name: str) -> Tensor:
        op_name, sep, index = str(name).rpartition(":")
        if not sep or not index.isdigit():
            raise AliasflowError(f"tensor names look like 'op:index', got {name!r}")
        op = self.get_operation_by_name(op_name)
        if int(index) >= len(op.outputs):
            raise AliasflowError(f"operation {op_name!r} has {len(op.outputs)} output(s), "
                                 f"no {name!r}")
        return op.outputs[int(index)]

    def as_graph_element(self, obj):
        """A tensor or operation of this graph from itself, a variable or a name."""
        if isinstance(obj, str):
            return self.get_tensor_by_name(obj) if ":" in obj else self.get_operation_by_name(obj)
        if hasattr(obj, "_as_graph_tensor"):
            obj = obj._as_graph_tensor()
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise AliasflowError(f"{obj.name!r} is not an element of this graph")
            return obj
        raise AliasflowError(f"cannot use {show_value(obj)} (a {type(obj).__name__}) as a tensor or "
                             f"operation of the graph")

    @contextmanager
    def as_default(self):
        """Make this graph the default inside the ``with`` block."""
        _stack().append(self)
        try:
            yield self
        finally:
            _stack().pop()

    def __repr__(self) -> str:
        return f"<aliasflow.tf.Graph with {len(self._ops)} ops>"


_state = threading.local()
_global_default = [Graph()]


def _stack() -> list[Graph]:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


def get_default_graph() -> Graph:
    """The graph new ops go to: the innermost ``as_default()`` graph, else the global one."""
    stack = _stack()
    return stack[-1] if stack else _global_default[0]


def reset_default_graph() -> None:
    """Replace the global default graph with a new empty one (not inside ``as_default``)."""
    if _stack():
        raise AliasflowError("reset_default_graph() cannot be used inside a "
                             "`with graph.as_default()` block")
    _global_default[0] = Graph()


def name_scope(name):
    """``tf.name_scope(name)`` on the default graph (yields the scope name ending in ``/``)."""
    return get_default_graph().name_scope(name)


def control_dependencies(control_inputs):
    """``tf.control_dependencies`` on the default graph."""
    return get_default_graph().control_dependencies(control_inputs)
