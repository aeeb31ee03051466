"""aliasflow: find the hidden data flow between operations on aliasing tensor views.

Tensors own flat storage; :class:`TensorView` windows ``(offset, shape, stride)`` address it;
operations read and write views. Two ops depend on each other whenever memory one writes
overlaps memory the other reads or writes, whether or not they share a view.

>>> import aliasflow as af
>>> A = af.Tensor("A", (4, 4))
>>> fill = af.FillOperation("fill", 1.0).set_outputs(A[:3, :3])
>>> read = af.TransformOperation("read").set_inputs(A[1:3, 1:3])
>>> af.analyze_dependencies([fill, read])
{'fill': [], 'read': ['fill']}
"""
from .core.errors import AliasflowError, ExecutionError
from .core.storage import Storage
from .core.view import Tensor
from .core.view import TensorView, row_major_strides
from .core.builders import (Operation, FillOperation, TransformOperation, ReduceOperation,
                            BinaryOperation)
from .core.program import Program
from .core.record import Access, OpRecord, Results, Value
from .core import primitives
from .core.primitives import PRIMITIVES, Primitive
from .core.exchange import from_numpy, from_dlpack
from .analysis.overlap import Overlap, overlap, check_memory_overlap, has_internal_overlap
from .analysis.dependencies import Dependency, analyze, analyze_dependencies
from .analysis.schedule import DependencyGraph
from .analysis.flow import Flow, value_flow
from .analysis.races import find_races
from .execution.runner import run
from .execution.interpreter import OpRefused
from .solver import UndecidedOverlapWarning, WorkBudget
from .analysis.budget import work_budget
from ._version import __version__


def compute_view_footprint(view: TensorView) -> list[int]:
    """Sorted storage elements that ``view`` touches (the seed's function; NumPy inside)."""
    return view.footprint().tolist()


def load_ipython_extension(ipython) -> None:
    """``%load_ext aliasflow`` in IPython or Jupyter: the ``%%aliasflow`` cell magic (see
    :mod:`aliasflow.notebook`)."""
    from .notebook import load_ipython_extension as load
    load(ipython)


def __getattr__(name: str):
    # Heavy parts load on first use, so ``import aliasflow`` imports neither torch nor Dask
    # nor Ray: ``af.trace`` (NumPy and PyTorch) and ``af.distributed`` (Dask, Ray backends).
    if name == "trace":
        from .interop.numpy_trace.joint import _torch_installed, trace
        if _torch_installed():   # PyTorch loads with af.trace, as it always did
            from .interop.torch_trace import tracer  # noqa: F401
        globals()["trace"] = trace   # later look-ups find it without this function
        return trace
    if name == "distributed":
        import importlib
        return importlib.import_module(".distributed", __name__)
    raise AttributeError(f"module 'aliasflow' has no attribute {name!r}")


__all__ = [
    "AliasflowError", "ExecutionError", "Storage", "Tensor", "from_numpy", "from_dlpack",
    "TensorView", "row_major_strides", "Operation", "FillOperation", "TransformOperation",
    "ReduceOperation", "BinaryOperation", "Program", "OpRecord", "Access", "Value",
    "Results", "PRIMITIVES", "Primitive", "primitives", "Overlap", "overlap", "check_memory_overlap",
    "has_internal_overlap",
    "compute_view_footprint", "Dependency", "analyze", "analyze_dependencies",
    "DependencyGraph", "Flow", "value_flow", "find_races", "run",
    "OpRefused", "work_budget", "WorkBudget", "UndecidedOverlapWarning",
]
