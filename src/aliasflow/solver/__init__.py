"""Exact memory-overlap engine: pure integer math on strided layouts.

A layout ``(offset, shape, stride)`` is the set of cells
``offset + sum(stride[j] * x[j])`` for ``0 <= x[j] < shape[j]``.  Everything
here is exact on every input: cheap checks, then a memoised depth-first search
that is polynomial for views sliced from one parent, then isl (``islpy``) for
adversarial ``as_strided`` layouts.  Nothing here imports the rest of aliasflow.
"""

from .api import (count_shared, covers, footprint, has_internal_overlap, internal_witness,
                  intersects, shared_cells, witness)
from .cells import DEFAULT_LIMIT, TooLargeError
from .layout import Layout, normalize, to_cells
from .search import (UndecidedError, UndecidedOverlapWarning, WorkBudget, solve,
                     work_budget)

__all__ = [
    "Layout",
    "normalize",
    "to_cells",
    "intersects",
    "witness",
    "count_shared",
    "shared_cells",
    "footprint",
    "internal_witness",
    "has_internal_overlap",
    "covers",
    "solve",
    "work_budget",
    "WorkBudget",
    "UndecidedError",
    "UndecidedOverlapWarning",
    "TooLargeError",
    "DEFAULT_LIMIT",
]
