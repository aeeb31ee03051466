"""Bounding the exact overlap solver's work (see :func:`aliasflow.solver.work_budget`)."""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from .. import solver
from ..core.errors import AliasflowError


@contextmanager
def work_budget(max_work, *, warn: bool = True):
    """Bound every exact overlap question asked inside the ``with`` block.

    A question the solver cannot settle within ``max_work`` (isl operations) counts as an
    overlap (extra dependency edges, never missing ones) and is listed in the yielded
    budget's ``undecided``; with ``warn``, an :class:`aliasflow.UndecidedOverlapWarning`
    says how many at the end. Without a budget every answer is exact.

    Examples
    --------
    >>> import aliasflow as af
    >>> with af.work_budget(10_000) as budget:
    ...     a = af.Tensor("A", (8,))
    ...     af.check_memory_overlap(a[::2], a[1::2])
    False
    >>> budget.undecided
    []
    """
    if isinstance(max_work, (bool, np.bool_)) or not isinstance(max_work, (int, np.integer)) \
            or max_work < 1:
        raise AliasflowError(f"max_work must be a positive int, got {max_work!r}")
    with solver.work_budget(int(max_work), warn=warn) as budget:
        yield budget
