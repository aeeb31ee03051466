"""View-level overlap: do two views touch a common element, which ones, how many.

Views are duck-typed: any object with ``.name``, ``.tensor``, ``.offset``,
``.shape`` and ``.stride`` (in elements of the tensor's dtype) whose tensor has
``.data`` (a NumPy array) works.  Views are turned into byte layouts and then
into cell layouts (:func:`aliasflow.solver.to_cells`), so the exact solver in
:mod:`aliasflow.solver` does all the work.

Examples
--------
>>> from types import SimpleNamespace as NS
>>> import numpy as np
>>> A = NS(name="A", data=np.zeros((4, 4), dtype=np.float32))
>>> v1 = NS(name="v1", tensor=A, offset=0, shape=(3, 3), stride=(4, 1))
>>> v2 = NS(name="v2", tensor=A, offset=10, shape=(2, 2), stride=(4, 1))
>>> ov = overlap(v1, v2)
>>> bool(ov), ov.count, ov.elements().tolist(), ov.witness
(True, 1, [10], ((2, 2), (0, 0)))
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from aliasflow import solver as _solver
from aliasflow.solver import to_cells

__all__ = ["Overlap", "overlap", "check_memory_overlap", "has_internal_overlap", "same_storage",
           "storage_key"]


def storage_key(view):
    """A hashable name for the storage a view addresses: equal keys, same storage.

    Today: the tensor object's identity. This is the one place to change when storages
    can alias each other (e.g. DLPack imports compared by address); analyses that group
    accesses by storage use it too.
    """
    return id(view.tensor)


def same_storage(v1, v2) -> bool:
    """Do two views address the same storage?"""
    return storage_key(v1) == storage_key(v2)


@lru_cache(maxsize=65536)
def _layout(offset, shape, stride, itemsize):
    lay = to_cells(offset * itemsize, shape, tuple(s * itemsize for s in stride), itemsize,
                   itemsize)
    return lay.offset, lay.shape, lay.stride


def _cells(view):
    return _layout(view.offset, tuple(view.shape), tuple(view.stride),
                   view.tensor.data.dtype.itemsize)


_UNSET = object()


class Overlap:
    """Result of :func:`overlap`: truthy exactly when the two views share an element.

    Attributes
    ----------
    views : tuple
        The two views, in the order given.
    count : int
        Exact number of shared elements (computed on first use, then cached).
    witness : tuple or None
        ``(i1, i2)``: an index of the first view and one of the second that
        address the same element; ``None`` when they share none.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> import numpy as np
    >>> T = NS(name="T", data=np.zeros(16))
    >>> a = NS(name="a", tensor=T, offset=0, shape=(8,), stride=(2,))
    >>> b = NS(name="b", tensor=T, offset=1, shape=(8,), stride=(2,))
    >>> overlap(a, b)
    Overlap(a, b: none)
    """

    __slots__ = ("_views", "_hit", "_count", "_witness", "_la", "_lb")

    def __init__(self, v1, v2, _hit=None):
        set_ = object.__setattr__
        set_(self, "_views", (v1, v2))
        if same_storage(v1, v2):
            la, lb = _cells(v1), _cells(v2)
            hit = _solver.intersects(la, lb) if _hit is None else _hit
        else:
            la = lb = None
            hit = False
        set_(self, "_la", la)
        set_(self, "_lb", lb)
        set_(self, "_hit", hit)
        set_(self, "_count", _UNSET if hit else 0)
        set_(self, "_witness", _UNSET if hit else None)

    def __setattr__(self, name, value):
        raise AttributeError("Overlap objects are immutable")

    def __bool__(self) -> bool:
        return self._hit

    @property
    def views(self):
        return self._views

    @property
    def count(self) -> int:
        if self._count is _UNSET:
            object.__setattr__(self, "_count", _solver.count_shared(self._la, self._lb))
        return self._count

    def elements(self, limit=None) -> np.ndarray:
        """Sorted physical indices (elements of the tensor) in both views, as int64.

        Raises :class:`aliasflow.solver.TooLargeError` if there are more than
        ``limit`` (default: the solver's cap of 50 million).
        """
        if not self._hit:
            return np.empty(0, dtype=np.int64)
        # cells are in units of the itemsize, i.e. they are element indices
        return _solver.shared_cells(self._la, self._lb, limit)

    @property
    def witness(self):
        if self._witness is _UNSET:
            x, y = _solver.witness(self._la, self._lb)
            # drop the trailing byte-extent dimension added by to_cells
            object.__setattr__(self, "_witness", (x[:-1], y[:-1]))
        return self._witness

    def __eq__(self, other):
        if not isinstance(other, Overlap):
            return NotImplemented
        return self._views[0] is other._views[0] and self._views[1] is other._views[1]

    def __hash__(self):
        return hash((id(self._views[0]), id(self._views[1])))

    def __repr__(self) -> str:
        n1 = getattr(self._views[0], "name", "?")
        n2 = getattr(self._views[1], "name", "?")
        if not self._hit:
            return f"Overlap({n1}, {n2}: none)"
        if self._count is not _UNSET:
            return f"Overlap({n1}, {n2}: {self._count} shared, witness {self.witness})"
        return f"Overlap({n1}, {n2}: shared, witness {self.witness})"


def overlap(v1, v2) -> Overlap:
    """Exact overlap of two views as an :class:`Overlap`.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> import numpy as np
    >>> A = NS(name="A", data=np.zeros((4, 4)))
    >>> v1 = NS(name="v1", tensor=A, offset=0, shape=(2, 2), stride=(4, 1))
    >>> v2 = NS(name="v2", tensor=A, offset=5, shape=(2, 2), stride=(4, 1))
    >>> ov = overlap(v1, v2)
    >>> ov.count, ov.elements().tolist()
    (1, [5])
    """
    return Overlap(v1, v2)


def check_memory_overlap(v1, v2) -> bool:
    """Exactly: do two views share at least one element?

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> import numpy as np
    >>> A = NS(name="A", data=np.zeros((4, 4)))
    >>> v1 = NS(name="v1", tensor=A, offset=0, shape=(2, 2), stride=(4, 1))
    >>> v2 = NS(name="v2", tensor=A, offset=8, shape=(2, 2), stride=(4, 1))
    >>> check_memory_overlap(v1, v2)
    False
    """
    if not same_storage(v1, v2):
        return False
    return _solver.intersects(_cells(v1), _cells(v2))


def has_internal_overlap(view) -> bool:
    """Exactly: do two different indices of ``view`` address the same element?

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> import numpy as np
    >>> A = NS(name="A", data=np.zeros(8))
    >>> has_internal_overlap(NS(name="w", tensor=A, offset=0, shape=(4, 3), stride=(1, 1)))
    True
    """
    return _solver.has_internal_overlap(_cells(view))
