"""``tf.Variable`` as TensorFlow 1 graph mode makes it (``tf.compat.v1`` after
``disable_v2_behavior()``): a *reference* variable.

``tf.Variable([1., 2.])`` adds ``Variable/initial_value`` (Const), ``Variable`` (VariableV2,
output ``float32_ref``), ``Variable/Assign`` (the initializer) and ``Variable/read``
(Identity, the value other ops read). Updates (``Assign``, ``AssignAdd``, ``AssignSub``,
``StridedSliceAssign``) write the variable's memory in place; reads through ``Variable/read``
alias that memory, so *when* a reader runs decides what it sees. Resource variables
(``VarHandleOp``, TensorFlow 2's default) are not modelled.
"""
from __future__ import annotations

from ...core.errors import AliasflowError
from ...core.values import show_value
from .dtypes import TensorShape
from .graph import Operation, Tensor, _session_for, get_default_graph
from . import ops as _ops
from .shapes import _slice_shape


def _depends_on_variable(t: Tensor) -> bool:
    seen, todo = set(), [t.op]
    while todo:
        op = todo.pop()
        if op._id in seen:
            continue
        seen.add(op._id)
        if op.type == "VariableV2":
            return True
        todo.extend(i.op for i in op.inputs)
        todo.extend(op.control_inputs)
    return False


class Variable:
    """A TensorFlow 1 reference variable (``RefVariable``)."""

    def __init__(self, initial_value=None, trainable=None, name=None, dtype=None,
                 validate_shape=True):
        if initial_value is None:
            raise AliasflowError("Variable needs an initial_value")
        g = _ops._graph_for(initial_value)
        self.graph = g
        # TensorFlow makes variables under init_scope: no control dependencies apply
        with g._transaction(), g.as_default(), g.control_dependencies(None), \
                g.name_scope(name if name is not None else "Variable") as scope:
            init = _ops._convert(g, initial_value, "initial_value", dtype=dtype)
            if _depends_on_variable(init):
                raise AliasflowError(f"variable {scope[:-1]!r}: an initial value computed "
                                     f"from other variables is not supported")
            if not init.shape.is_fully_defined():
                raise AliasflowError(f"variable {scope[:-1]!r}: initial value shape "
                                     f"{init.shape} must be fully defined")
            dt = init.dtype.base_dtype
            self._variable = g._create_op(
                "VariableV2", [], [(dt.as_ref, init.shape)], scope,
                {"shape": init.shape, "dtype": dt, "container": "", "shared_name": ""}
            ).outputs[0]
            self._initial_value = init
            self._initializer_op = self._update("Assign", init, None, "value").op
            self._snapshot = _ops.identity(self._variable, name="read")
            g._variables.append(self)

    # ---- what TensorFlow exposes ------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def op(self) -> Operation:
        return self._variable.op

    @property
    def dtype(self):
        return self._variable.dtype

    @property
    def shape(self) -> TensorShape:
        return self._variable.shape

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def initializer(self) -> Operation:
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    def value(self) -> Tensor:
        """The ``Variable/read`` tensor (what arithmetic on the variable uses)."""
        return self._snapshot

    def read_value(self) -> Tensor:
        """A new ``read`` Identity of the variable."""
        with self.graph.as_default():
            return _ops.identity(self._variable, name="read")

    def eval(self, session=None):
        return _session_for(session, self.graph).run(self)

    # hooks the graph and ops use to see a variable as a tensor / op
    def _as_graph_tensor(self) -> Tensor:
        return self._variable

    def _value_tensor(self) -> Tensor:
        return self._snapshot

    def _as_graph_op(self) -> Operation:
        return self._variable.op

    # ---- updates ----------------------------------------------------------------------------
    def _update(self, op_type: str, value, name, value_name="value") -> Tensor:
        g = self.graph
        with g._transaction(), g.as_default(), g.name_scope(name if name is not None else op_type) as scope:
            v = _ops._convert(g, value, value_name, dtype=self.dtype.base_dtype)
            if v.shape.rank is not None and not (v.shape.rank == self.shape.rank
                                                 and v.shape.is_compatible_with(self.shape)):
                raise AliasflowError(f"{op_type} to {self.op.name!r}: shapes {self.shape} "
                                     f"and {v.shape} are incompatible")
            dt = self.dtype.base_dtype
            return g._create_op(op_type, [self._variable, v], [(dt.as_ref, self.shape)], scope,
                                {"T": dt}).outputs[0]

    def assign(self, value, use_locking=None, name=None, read_value=True) -> Tensor:
        """``Assign``: write ``value`` (same shape) over the whole variable."""
        return self._update("Assign", value, name)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True) -> Tensor:
        """``AssignAdd``: ``variable += delta`` in place."""
        return self._update("AssignAdd", delta, name)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True) -> Tensor:
        """``AssignSub``: ``variable -= delta`` in place."""
        return self._update("AssignSub", delta, name)

    def __getitem__(self, index) -> Tensor:
        """A ``StridedSlice`` of the value with ``.assign(x)`` writing just those elements."""
        return _ops._slice(self, index, var=self)

    def _strided_slice_assign(self, py_index, stacks, masks, value, name) -> Tensor:
        g = self.graph
        with g._transaction(), g.as_default(), g.name_scope(name) as scope:
            v = _ops._convert(g, value, "value", dtype=self.dtype.base_dtype)
            target = _slice_shape(scope[:-1], self.shape, py_index)
            if v.shape.rank is not None and not (
                    v.shape.rank == target.rank and v.shape.is_compatible_with(target)):
                raise AliasflowError(f"slice assignment {scope[:-1]!r}: value shape {v.shape} "
                                     f"does not match the slice shape {target}")
            dt = self.dtype.base_dtype
            return g._create_op("StridedSliceAssign", [self._variable, *stacks, v],
                                [(dt.as_ref, self.shape)], scope,
                                {"T": dt, "Index": stacks[0].dtype, **masks,
                                 "_index": py_index}).outputs[0]

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


def _delegate(op_name):
    def method(self, *args):
        return getattr(self._snapshot, op_name)(*args)
    method.__name__ = op_name
    return method


for _op_name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
                 "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__"):
    setattr(Variable, _op_name, _delegate(_op_name))


def global_variables() -> list[Variable]:
    """The default graph's variables, in creation order."""
    return list(get_default_graph()._variables)


def variables_initializer(var_list, name="init") -> Operation:
    """A ``NoOp`` whose control inputs are the variables' initializers."""
    var_list = list(var_list)
    if var_list:
        return _ops.group(*[v.initializer for v in var_list], name=name)
    return _ops.no_op(name=name)


def global_variables_initializer() -> Operation:
    """``tf.global_variables_initializer()``: ``init``, running every initializer."""
    return variables_initializer(global_variables())


def _as_variable(ref, what: str) -> Variable:
    if not isinstance(ref, Variable):
        raise AliasflowError(f"{what}: ref must be a tf.Variable, got {show_value(ref)}")
    return ref


def assign(ref, value, validate_shape=None, use_locking=None, name=None) -> Tensor:
    """``tf.assign(ref, value)``: the same op as ``ref.assign(value)``."""
    return _as_variable(ref, "assign").assign(value, name=name)


def assign_add(ref, value, use_locking=None, name=None) -> Tensor:
    """``tf.assign_add(ref, value)``."""
    return _as_variable(ref, "assign_add").assign_add(value, name=name)


def assign_sub(ref, value, use_locking=None, name=None) -> Tensor:
    """``tf.assign_sub(ref, value)``."""
    return _as_variable(ref, "assign_sub").assign_sub(value, name=name)
