"""TVM's tensor expressions in aliasflow (seed 003), checked against real TVM: ``placeholder``,
``compute``, ``reduce_axis``, ``sum``/``max``/``min``, ``Tensor`` as ``(op, value_index)``,
``op.input_tensors`` as TVM's ``InputTensors``; :func:`lower` gives an aliasflow program whose
ops read the exact views their affine loads touch; :func:`build` runs a graph with NumPy on
DLPack arrays (seed 004's matmul on PyTorch tensors)."""
from .expr import (PrimExpr, Var, IntImm, FloatImm, Cast, BinaryOpExpr, Add, Sub, Mul, Div,
                   FloorDiv, FloorMod, Min, Max, CmpOpExpr, LT, LE, GT, GE, ProducerLoad, const,
                   floordiv, floormod, post_order_visit, EQ, NE, And, Or)
from .intrin import (Call, Select, exp, log, sqrt, tanh, sigmoid, abs, power, if_then_else,
                     select, all, any)
from .tensor import (Range, IterVar, CommReducer, Reduce, Operation, PlaceholderOp, ComputeOp,
                     Tensor, TensorSlice, Schedule, var, placeholder, compute, reduce_axis, sum,
                     max, min, create_schedule, convert, PrimFunc, create_prim_func)
from .build import BuiltFunction, build, compile
from .lower import NonAffineIndexError, LoweredProgram, affine_form, lower

__all__ = [
    "PrimExpr", "Var", "IntImm", "FloatImm", "Cast", "BinaryOpExpr", "Add", "Sub", "Mul", "Div",
    "FloorDiv", "FloorMod", "Min", "Max", "CmpOpExpr", "LT", "LE", "GT", "GE", "ProducerLoad",
    "const", "floordiv", "floormod", "post_order_visit", "Range", "IterVar", "CommReducer",
    "Reduce", "Operation", "PlaceholderOp", "ComputeOp", "Tensor", "TensorSlice", "Schedule",
    "var", "placeholder", "compute", "reduce_axis", "sum", "max", "min", "create_schedule",
    "convert", "BuiltFunction", "build",
    "NonAffineIndexError", "LoweredProgram", "affine_form", "lower",
    "EQ", "NE", "And", "Or", "Call", "Select", "exp", "log", "sqrt", "tanh", "sigmoid", "abs",
    "power", "if_then_else", "select", "all", "any", "PrimFunc", "create_prim_func", "compile",
]
