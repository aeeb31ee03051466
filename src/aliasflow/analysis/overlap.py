"""View-level overlap: do two views touch a common byte of memory, which elements, how many.

Views alias by address: two views overlap when their byte footprints intersect, whatever
tensors, imports or dtypes they come through. Both views are turned into cell layouts over
one base address (a cell being the largest unit dividing every byte offset, stride and
itemsize involved), so the exact solver in :mod:`aliasflow.solver` does all the work.

Examples
--------
>>> import aliasflow as af
>>> A = af.Tensor("A", (4, 4))
>>> v1 = af.TensorView("v1", A, offset=0, shape=(3, 3), stride=(4, 1))
>>> v2 = af.TensorView("v2", A, offset=10, shape=(2, 2), stride=(4, 1))
>>> ov = overlap(v1, v2)
>>> bool(ov), ov.count, ov.elements().tolist(), ov.witness
(True, 1, [10], ((2, 2), (0, 0)))
"""

from __future__ import annotations

from math import gcd

import numpy as np

from aliasflow import solver as _solver

from ..core.errors import AliasflowError
from ..core.exchange import from_numpy, has_buffer
from ..core.view import Tensor
from ..core.view import TensorView

__all__ = ["Overlap", "overlap", "check_memory_overlap", "has_internal_overlap",
           "memory_meets", "pair_cells"]


def _view(v, who: str):
    """A view, or a tensor as its full view; an array (an ndarray, anything with
    ``__array_interface__``, ``__array_struct__``, ``__array__`` or the buffer protocol, as
    ``np.shares_memory`` takes them) is imported by address as :func:`~aliasflow.from_numpy`
    does, without a copy (``__array__`` is asked for no copy, as NumPy's protocol allows);
    anything else is refused."""
    if isinstance(v, TensorView):
        return v
    if isinstance(v, Tensor):
        return v.view()
    if isinstance(v, np.ndarray) or hasattr(v, "__array_interface__") or \
            hasattr(v, "__array_struct__") or hasattr(v, "__array__") or has_buffer(v):
        try:
            if not isinstance(v, np.ndarray) and hasattr(v, "__array__") and not (
                    hasattr(v, "__array_interface__") or hasattr(v, "__array_struct__")):
                v = np.asarray(v, copy=False)
            return from_numpy(v)
        except AliasflowError as exc:
            raise AliasflowError(f"{who}: {exc}") from None
        except (ValueError, TypeError, BufferError) as exc:
            raise AliasflowError(f"{who}: {type(v).__name__} cannot be viewed without a "
                                 f"copy: {exc}") from None
    raise AliasflowError(f"{who}: expected a TensorView, a Tensor or an array, got "
                         f"{type(v).__name__}")


def memory_meets(v1, v2) -> bool:
    """Do the storages of two views share any byte (a precondition for overlap)?"""
    s1, s2 = v1.tensor.storage, v2.tensor.storage
    return s1 is s2 or (s1.address < s2.address + s2.nbytes and s2.address < s1.address + s1.nbytes)


def pair_cells(v1, v2):
    """Cell layouts ``(offset, shape, stride)`` of two views over one base address, and the
    cell size in bytes and the base. In the common case (same tensor element size, same
    storage start, views of the tensors' own dtype) cells are the tensor's elements."""
    t1, t2 = v1.tensor, v2.tensor
    s1, s2 = t1.storage, t2.storage
    u1, u2 = t1.dtype.itemsize, t2.dtype.itemsize
    if s1.address == s2.address and u1 == u2 == v1.dtype.itemsize == v2.dtype.itemsize:
        return ((v1.offset, v1.shape, v1.stride), (v2.offset, v2.shape, v2.stride), u1,
                s1.address)
    base = min(s1.address, s2.address)
    o1 = s1.address - base + v1.offset * u1
    o2 = s2.address - base + v2.offset * u2
    unit = gcd(o1, o2, v1.dtype.itemsize, v2.dtype.itemsize)
    for s in v1.stride:
        unit = gcd(unit, s * u1)
    for s in v2.stride:
        unit = gcd(unit, s * u2)
    return (_cells(o1, v1, u1, unit), _cells(o2, v2, u2, unit), unit, base)


def _cells(byte_offset, view, unit_bytes, cell):
    shape, stride = view.shape, tuple(s * unit_bytes // cell for s in view.stride)
    span = view.dtype.itemsize // cell
    if span > 1:
        shape, stride = shape + (span,), stride + (1,)
    return byte_offset // cell, shape, stride


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
    >>> import aliasflow as af
    >>> T = af.Tensor("T", (16,))
    >>> a, b = T[0::2].rename("a"), T[1::2].rename("b")
    >>> overlap(a, b)
    Overlap(a, b: none)
    """

    __slots__ = ("_views", "_hit", "_count", "_witness", "_la", "_lb", "_unit", "_base")

    def __init__(self, v1, v2, _hit=None):
        set_ = object.__setattr__
        set_(self, "_views", (v1, v2))
        if memory_meets(v1, v2):
            la, lb, unit, base = pair_cells(v1, v2)
            hit = _solver.intersects(la, lb) if _hit is None else _hit
        else:
            la = lb = unit = base = None
            hit = False
        set_(self, "_la", la)
        set_(self, "_lb", lb)
        set_(self, "_unit", unit)
        set_(self, "_base", base)
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

    def _in_elements(self) -> bool:
        """Are the cells the first view's tensor elements (the common case)?"""
        tensor = self._views[0].tensor
        return self._unit == tensor.dtype.itemsize and self._base == tensor.storage.address

    @property
    def count(self) -> int:
        """Shared elements (of the first view's tensor: those holding a shared byte)."""
        if self._count is _UNSET:
            count = (_solver.count_shared(self._la, self._lb) if self._in_elements()
                     else len(self.elements()))
            object.__setattr__(self, "_count", count)
        return self._count

    def elements(self, limit=None) -> np.ndarray:
        """Sorted shared elements, as indices into the first view's tensor (int64).

        When the views differ in dtype or storage, the elements of the first view's tensor
        that hold a shared byte. Raises :class:`aliasflow.solver.TooLargeError` if there are
        more than ``limit`` (default: the solver's cap of 50 million).
        """
        if not self._hit:
            return np.empty(0, dtype=np.int64)
        cells = _solver.shared_cells(self._la, self._lb, limit)
        if self._in_elements():
            return cells
        tensor = self._views[0].tensor
        first = cells * self._unit + (self._base - tensor.storage.address)
        return np.unique(first // tensor.dtype.itemsize)

    @property
    def witness(self):
        """``(i1, i2)``: indices of the two views touching one common byte, or None."""
        if self._witness is _UNSET:
            x, y = _solver.witness(self._la, self._lb)
            n1, n2 = self._views[0].ndim, self._views[1].ndim
            object.__setattr__(self, "_witness", (tuple(x[:n1]), tuple(y[:n2])))
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
    >>> import aliasflow as af
    >>> A = af.Tensor("A", (4, 4))
    >>> ov = overlap(A[:2, :2], A[1:3, 1:3])
    >>> ov.count, ov.elements().tolist()
    (1, [5])
    """
    return Overlap(_view(v1, "overlap"), _view(v2, "overlap"))


def check_memory_overlap(v1, v2) -> bool:
    """Exactly: do two views share at least one byte of memory?

    Examples
    --------
    >>> import aliasflow as af
    >>> A = af.Tensor("A", (4, 4))
    >>> check_memory_overlap(A[:2, :2], A[2:, :2])
    False
    """
    if type(v1) is TensorView and type(v2) is TensorView:
        # the common case, first: two views of one tensor in its own dtype, whose cells are
        # the tensor's elements; views keep their extents, so most disjoint pairs stop here
        t = v1.tensor
        if t is v2.tensor and v1.dtype is t.dtype and v2.dtype is t.dtype:
            e1, e2 = v1.extent, v2.extent
            if e1 is None or e2 is None or e1[1] < e2[0] or e2[1] < e1[0]:
                return False
            return _solver.intersects((v1.offset, v1.shape, v1.stride),
                                      (v2.offset, v2.shape, v2.stride))
    v1, v2 = _view(v1, "check_memory_overlap"), _view(v2, "check_memory_overlap")
    if not memory_meets(v1, v2):
        return False
    la, lb, _, _ = pair_cells(v1, v2)
    return _solver.intersects(la, lb)


def has_internal_overlap(view) -> bool:
    """Exactly: do two different indices of ``view`` touch a common byte?

    Examples
    --------
    >>> import aliasflow as af
    >>> has_internal_overlap(af.Tensor("A", (8,)).as_strided((4, 3), (1, 1)))
    True
    """
    return _view(view, "has_internal_overlap").has_internal_overlap()
