"""The seed article's two examples, built exactly as the article builds them.

The article's prose gets the complex example wrong: it says ``transform_op_a`` and
``add_op_ab`` may run in parallel, but ``transform_op_a`` writes element 10 of Tensor_A
(through viewA3) and ``add_op_ab`` reads element 10 (through viewA1). The article's own code
finds that dependency, and so does aliasflow.
"""
from __future__ import annotations

from .core.builders import BinaryOperation, FillOperation, TransformOperation
from .core.program import Program
from .core.view import Tensor
from .core.view import TensorView

ERRATUM = ("The seed's prose says transform_op_a and add_op_ab may run in parallel; they may "
           "not: transform_op_a writes element 10 of Tensor_A (viewA3) and add_op_ab reads it "
           "(viewA1). The seed's own code finds this dependency.")


def simple_example() -> Program:
    """One tensor, two disjoint views, a pure reader and a pure writer: no dependency."""
    a = Tensor("Tensor_A", (4, 4))
    view_a1 = TensorView("viewA1", a, offset=0, shape=(2, 2), stride=(4, 1))
    view_a2 = TensorView("viewA2", a, offset=8, shape=(2, 2), stride=(4, 1))
    read_op = TransformOperation("read_op").set_inputs(view_a1)
    write_op = FillOperation("write_op", fill_value=2.0).set_outputs(view_a2)
    return Program([read_op, write_op], [a], [view_a1, view_a2])


def complex_example() -> Program:
    """Three tensors, five views, explicit and implicit data flow (see the module note)."""
    a = Tensor("Tensor_A", (4, 4))
    b = Tensor("Tensor_B", (3, 3))
    c = Tensor("Tensor_C", (2, 2))
    view_a1 = TensorView("viewA1", a, offset=0, shape=(3, 3), stride=(4, 1))
    view_a2 = TensorView("viewA2", a, offset=5, shape=(2, 2), stride=(4, 1))
    view_a3 = TensorView("viewA3", a, offset=10, shape=(2, 2), stride=(4, 1))
    view_b1 = TensorView("viewB1", b, offset=0, shape=(2, 2), stride=(3, 1))
    view_c1 = TensorView("viewC1", c, offset=0, shape=(2, 2), stride=(2, 1))
    ops = [
        FillOperation("fill_op_a", fill_value=1.0).set_outputs(view_a1),
        TransformOperation("transform_op_a").set_inputs(view_a2).set_outputs(view_a3),
        TransformOperation("transform2_op_a").set_inputs(view_a3),
        BinaryOperation("add_op_ab").set_inputs(view_a1, view_b1).set_outputs(view_c1),
    ]
    return Program(ops, [a, b, c], [view_a1, view_a2, view_a3, view_b1, view_c1])
