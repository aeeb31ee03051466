"""TensorFlow in aliasflow: graph mode in TensorFlow 1's names (seed 004) and the C++ tensor
memory model (seed 002, in :mod:`.memory`).

Graph mode (``from aliasflow import tf``) follows ``tf.compat.v1`` of TensorFlow 2 in graph mode
(with or without ``disable_v2_behavior()``, which here only makes shapes print unknown dims as
``?`` instead of ``None``, as it does in TensorFlow): op and tensor names, op types, shapes and
dtypes as TensorFlow makes them, reference variables (``VariableV2``), and ``Session.run``
executed by aliasflow with variables as aliasflow storages (:mod:`.session`); ``tf.races(graph)`` lists the
variable accesses the graph leaves unordered. ``make_tensor_proto``/``make_ndarray`` speak
TensorFlow's ``TensorProto`` wire format (:mod:`.proto`). ``tf.Tensor`` here is the graph-mode
symbolic tensor and ``tf.TensorShape`` the static shape graph tensors carry, as in TensorFlow;
the seed-002 C++ tensor is ``tf.memory.Tensor`` and its shape bytes ``tf.memory.TensorShapeRep``
(also ``tf.TensorShapeRep``). No two classes in this namespace share a name.
"""
import sys as _sys
import types as _types

from . import memory
from .memory import *  # noqa: F401,F403
from .memory import __all__ as _memory_all

from .dtypes import (DType, TensorShape, disable_v2_tensorshape, enable_v2_tensorshape,
                     as_dtype, float16, half, bfloat16, float32, float64, double, int8, int16,
                     int32, int64, uint8, uint16, uint32, uint64, complex64, complex128, string)
from .dtypes import bool_ as bool  # noqa: A001 - tf.bool
from .graph import (Graph, Operation, Tensor, get_default_graph, reset_default_graph,
                    name_scope, control_dependencies)
from .ops import (constant, placeholder, convert_to_tensor, add, subtract, multiply, truediv,
                  divide, matmul, negative, identity, cast, reduce_sum, no_op, group, zeros,
                  ones, zeros_like, ones_like)
from .variables import (Variable, global_variables, variables_initializer,
                        global_variables_initializer, assign, assign_add, assign_sub)
from .session import Session, get_default_session
from .races import races
from .proto import TensorProto, make_tensor_proto, make_ndarray

newaxis = None


def disable_v2_behavior() -> None:
    """As ``tf.compat.v1.disable_v2_behavior()`` where it shows here: shapes print unknown
    dims as ``?`` (:func:`disable_v2_tensorshape`). Graph mode and reference variables are
    aliasflow.tf's only behaviour, with or without this call."""
    disable_v2_tensorshape()


def disable_eager_execution() -> None:
    """No-op: aliasflow.tf is always in graph mode. Unlike TensorFlow after this call alone,
    ``tf.Variable`` stays a reference variable (``VariableV2``); resource variables
    (``VarHandleOp``) are not modelled."""


compat = _types.SimpleNamespace(v1=_sys.modules[__name__])  # so tf.compat.v1.X works too

_graph_all = [
    "DType", "TensorShape", "as_dtype", "float16", "half", "bfloat16", "float32", "float64",
    "double", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "complex64", "complex128", "string", "bool",
    "Graph", "Operation", "Tensor", "get_default_graph", "reset_default_graph", "name_scope",
    "control_dependencies", "constant", "placeholder", "convert_to_tensor", "add", "subtract",
    "multiply", "truediv", "divide", "matmul", "negative", "identity", "cast", "reduce_sum",
    "no_op", "group", "zeros", "ones", "zeros_like", "ones_like", "assign", "assign_add",
    "assign_sub", "Variable", "global_variables", "variables_initializer",
    "global_variables_initializer", "Session", "get_default_session", "races",
    "TensorProto", "make_tensor_proto", "make_ndarray", "newaxis", "disable_v2_behavior",
    "disable_v2_tensorshape", "enable_v2_tensorshape",
    "disable_eager_execution", "compat",
]
__all__ = ["memory", *[n for n in _memory_all if n not in _graph_all], *_graph_all]
