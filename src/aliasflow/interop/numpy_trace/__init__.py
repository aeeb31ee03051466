"""Trace NumPy programs, unmodified, and find where NumPy computes an overlapping write
wrongly.

The user's code is rewritten at import (:mod:`.hook`, :mod:`.rewrite`): subscript and
augmented assignment, ``.flat``/``.real``/``.imag`` assignment and calls of NumPy operations
that write report their operands to a small runtime (:mod:`.runtime`) around the operation
itself, which runs unchanged in the user's frame. Each is recorded with exact byte layouts
(:mod:`.records`); where NumPy may get the result wrong it is re-run on copies and compared
(:mod:`.checks`), and the findings (:mod:`.findings`) are the class both tracers share,
:class:`aliasflow.interop.findings.Finding`: ``wrong``, ``hazard``, ``stale-view``, ``order``.

>>> import numpy as np
>>> from aliasflow.interop.numpy_trace import trace
>>> a = np.arange(4)
>>> with trace() as t:
...     np.concatenate([a[2:], a[:2]], out=a)     # not rewritten here: a wrapped function
array([2, 3, 2, 3])
>>> [(f.severity, f.kind, f.differs, f.example) for f in t.findings()]
[('wrong', 'in-op-overlap', 2, ((2,), 2, 0))]
"""
from .trace import NumpyTrace, trace

__all__ = ["NumpyTrace", "trace"]
