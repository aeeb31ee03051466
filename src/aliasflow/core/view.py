"""TensorView: an immutable strided window ``(offset, shape, stride)`` on a tensor's storage."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod

import numpy as np

from .. import solver
from .errors import AliasflowError
from .indexing import apply_index, nocopy_reshape, row_major_strides
from .tensor import Tensor, _check_shape, _is_int


@dataclass(frozen=True)
class TensorView:
    """An immutable window on a tensor's storage.

    Element ``(i0, ..., ik-1)`` of the view is storage element
    ``offset + sum(stride[j] * i_j)``. Strides are in elements and may be negative or zero.
    A missing ``shape`` means the tensor's shape; a missing ``stride`` means row-major strides
    for ``shape``. A view reaching outside its storage is refused when it is made.

    Views compare equal when name, tensor, offset, shape and stride are equal; use
    :meth:`same_window` to ignore the name.

    Warnings
    --------
    A view may map two indices to one element (a zero stride, or overlapping ``as_strided``
    windows). Reading through it is fine; writing through it is ambiguous, so every op but
    Fill refuses to, and :meth:`numpy` returns such a view read-only.

    Examples
    --------
    >>> import aliasflow as af
    >>> A = af.Tensor("A", (4, 4))
    >>> v = af.TensorView("v", A, offset=5, shape=(2, 2), stride=(4, 1))
    >>> v.footprint().tolist()
    [5, 6, 9, 10]
    >>> A[1:3, 1:3].same_window(v)
    True
    >>> A.T.stride
    (1, 4)
    """

    name: str
    tensor: Tensor
    offset: int = 0
    shape: tuple[int, ...] | None = None
    stride: tuple[int, ...] | None = None

    def __post_init__(self):
        what = f"view {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise AliasflowError(f"view name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.tensor, Tensor):
            raise AliasflowError(f"{what}: tensor must be an aliasflow Tensor, got "
                                 f"{type(self.tensor).__name__}")
        if not _is_int(self.offset):
            raise AliasflowError(f"{what}: offset must be an int, got {self.offset!r}")
        shape = self.tensor.shape if self.shape is None else _check_shape(what, self.shape)
        if self.stride is None:
            stride = row_major_strides(shape)
        else:
            try:
                stride = tuple(self.stride)
            except TypeError:
                raise AliasflowError(f"{what}: stride must be a tuple of ints, "
                                     f"got {self.stride!r}") from None
            if not all(_is_int(s) for s in stride):
                raise AliasflowError(f"{what}: stride must be a tuple of ints, got {self.stride!r}")
            stride = tuple(int(s) for s in stride)
        if len(stride) != len(shape):
            raise AliasflowError(f"{what}: shape {shape} has {len(shape)} dims but stride "
                                 f"{stride} has {len(stride)}")
        offset = int(self.offset)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)
        if offset < 0:
            raise AliasflowError(f"{what}: negative offset {offset}")
        storage = self.tensor.get_storage_size()
        if 0 in shape:
            if offset > storage:
                raise AliasflowError(f"{what}: offset {offset} is past the end of "
                                     f"{self.tensor.name!r} (storage size {storage})")
            return
        low, high = self.extent
        if low < 0:
            raise AliasflowError(f"{what}: lowest element {low} is below 0 "
                                 f"(offset {offset}, shape {shape}, stride {stride})")
        if high >= storage:
            raise AliasflowError(f"{what}: highest element {high} is outside "
                                 f"{self.tensor.name!r} (storage size {storage}; "
                                 f"offset {offset}, shape {shape}, stride {stride})")

    # ---- basic properties -------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of view indices (elements counted with multiplicity)."""
        return prod(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.tensor.dtype

    @cached_property
    def extent(self) -> tuple[int, int] | None:
        """``(lowest, highest)`` storage element touched, or None for an empty view."""
        if 0 in self.shape:
            return None
        low = high = self.offset
        for n, s in zip(self.shape, self.stride):
            if s < 0:
                low += s * (n - 1)
            else:
                high += s * (n - 1)
        return low, high

    @cached_property
    def is_dense(self) -> bool:
        """True when the view touches every element of its extent exactly once.

        Contiguous slices, transposes and flips of them are dense; steps, broadcasts and
        windows are not. Overlap and covering between dense views are interval questions.
        """
        if 0 in self.shape:
            return False
        dims = sorted((abs(s), n) for n, s in zip(self.shape, self.stride) if n != 1)
        expected = 1
        for s, n in dims:
            if s != expected:
                return False
            expected *= n
        return True

    @cached_property
    def layout(self) -> "solver.Layout":
        """The view as a solver layout in elements of its storage."""
        return solver.Layout(self.offset, self.shape, self.stride)

    def same_window(self, other: "TensorView") -> bool:
        """True when both views address the same storage the same way (names aside)."""
        return (self is other or (self.tensor is other.tensor and self.offset == other.offset
                                  and self.shape == other.shape and self.stride == other.stride))

    def get_physical_index(self, indices) -> int:
        """Storage element of view index ``indices``; out-of-range indices are refused."""
        if _is_int(indices):
            indices = (indices,)
        indices = tuple(indices)
        if len(indices) != self.ndim:
            raise IndexError(f"view {self.name!r}: {len(indices)} indices for {self.ndim} dims")
        p = self.offset
        for axis, (i, n, s) in enumerate(zip(indices, self.shape, self.stride)):
            if not _is_int(i) or not 0 <= i < n:
                raise IndexError(f"view {self.name!r}: index {i!r} out of range 0..{n - 1} "
                                 f"on axis {axis}")
            p += int(i) * s
        return p

    def footprint(self, limit: int | None = None) -> np.ndarray:
        """Sorted distinct storage elements the view touches (computed with NumPy).

        Refuses (with an error naming the size) views larger than ``limit`` elements.
        """
        return solver.footprint(self.layout, limit=limit)

    def has_internal_overlap(self) -> bool:
        """True when two view indices map to one storage element."""
        return solver.has_internal_overlap(self.layout)

    def _ndarray(self) -> np.ndarray:
        if self.tensor.is_virtual:
            raise AliasflowError(f"view {self.name!r}: tensor {self.tensor.name!r} is virtual "
                                 f"(analysis only) and has no memory to read or write")
        flat = self.tensor.data.reshape(-1)
        isz = flat.itemsize
        # A size-1 (or empty) axis never moves, so its stride is free; NumPy needs it to fit
        # in a byte offset, so it is normalised here (the view's own stride is unchanged).
        empty = 0 in self.shape
        return np.ndarray(self.shape, flat.dtype, buffer=flat,
                          offset=0 if empty else self.offset * isz,
                          strides=tuple(0 if empty or n == 1 else s * isz
                                        for n, s in zip(self.shape, self.stride)))

    def numpy(self) -> np.ndarray:
        """An ndarray over the same memory: writes through either are seen by the other.

        Read-only when the view has internal overlap (writes through it would be ambiguous).
        """
        arr = self._ndarray()
        if arr.flags.writeable and self.has_internal_overlap():
            arr.flags.writeable = False
        return arr

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr.astype(dtype) if dtype is not None else arr

    def __repr__(self) -> str:
        return (f"TensorView({self.name!r}, tensor={self.tensor.name!r}, offset={self.offset}, "
                f"shape={self.shape}, stride={self.stride})")

    # ---- movement ops: each returns a new view of the same storage ---------------------------
    def _derive(self, suffix: str, offset: int, shape, stride, name: str | None = None):
        return TensorView(name or f"{self.name}{suffix}", self.tensor, offset,
                          tuple(shape), tuple(stride))

    def __getitem__(self, index) -> "TensorView":
        offset, shape, stride, text = apply_index(self, index)
        return self._derive(f"[{text}]", offset, shape, stride)

    def transpose(self, *axes) -> "TensorView":
        """Permute the axes (reverse them when none are given), like ``ndarray.transpose``."""
        if len(axes) == 1 and not _is_int(axes[0]):
            axes = tuple(axes[0])
        if not axes:
            perm, suffix = tuple(range(self.ndim))[::-1], ".T"
        else:
            perm = tuple(_axis(self, a) for a in axes)
            suffix = f".transpose{tuple(perm)}" if len(perm) != 1 else f".transpose({perm[0]})"
        if sorted(perm) != list(range(self.ndim)):
            raise AliasflowError(f"view {self.name!r}: axes {axes} are not a permutation of "
                                 f"{self.ndim} dims")
        return self._derive(suffix, self.offset, [self.shape[a] for a in perm],
                            [self.stride[a] for a in perm])

    @property
    def T(self) -> "TensorView":
        return self.transpose()

    def swapaxes(self, a: int, b: int) -> "TensorView":
        perm = list(range(self.ndim))
        a, b = _axis(self, a), _axis(self, b)
        perm[a], perm[b] = perm[b], perm[a]
        return self.transpose(*perm)

    def flip(self, axis: int = 0) -> "TensorView":
        """Reverse one axis (a negative stride)."""
        axis = _axis(self, axis)
        index = [slice(None)] * self.ndim
        index[axis] = slice(None, None, -1)
        return self[tuple(index)]

    def reshape(self, *shape) -> "TensorView":
        """Same elements in a new shape, without a copy; refused where NumPy would copy."""
        if len(shape) == 1 and not _is_int(shape[0]):
            shape = tuple(shape[0])
        new_shape, new_stride = nocopy_reshape(self, shape)
        return self._derive(f".reshape{tuple(new_shape)}", self.offset, new_shape, new_stride)

    def broadcast_to(self, shape) -> "TensorView":
        """Repeat size-1 (and new leading) axes with stride 0, like ``np.broadcast_to``.

        Warnings
        --------
        Repeated axes map many indices to one element: such a view can be read, and filled,
        but any other op refuses to write through it.

        Examples
        --------
        >>> import aliasflow as af
        >>> row = af.Tensor("A", (3, 4))[0]
        >>> b = row.broadcast_to((2, 4))
        >>> b.stride, b.has_internal_overlap()
        ((0, 1), True)
        """
        shape = _check_shape(f"view {self.name!r}: broadcast_to", shape)
        if len(shape) < self.ndim:
            raise AliasflowError(f"view {self.name!r}: cannot broadcast shape {self.shape} "
                                 f"to fewer dims {shape}")
        lead = len(shape) - self.ndim
        stride = [0] * lead
        for n_old, s_old, n_new in zip(self.shape, self.stride, shape[lead:]):
            if n_old == n_new:
                stride.append(s_old)
            elif n_old == 1:
                stride.append(0)
            else:
                raise AliasflowError(f"view {self.name!r}: cannot broadcast shape "
                                     f"{self.shape} to {shape}")
        return self._derive(f".broadcast_to({shape})", self.offset, shape, stride)

    def expand_dims(self, axis: int) -> "TensorView":
        """Insert a size-1 axis at ``axis``."""
        if not _is_int(axis) or not -self.ndim - 1 <= axis <= self.ndim:
            raise AliasflowError(f"view {self.name!r}: axis {axis!r} out of range for "
                                 f"{self.ndim + 1} dims")
        axis = axis % (self.ndim + 1)
        shape, stride = list(self.shape), list(self.stride)
        shape.insert(axis, 1)
        stride.insert(axis, 0)
        return self._derive(f".expand_dims({axis})", self.offset, shape, stride)

    def squeeze(self) -> "TensorView":
        """Drop every size-1 axis."""
        keep = [i for i, n in enumerate(self.shape) if n != 1]
        return self._derive(".squeeze()", self.offset, [self.shape[i] for i in keep],
                            [self.stride[i] for i in keep])

    def as_strided(self, shape, stride, offset: int | None = None,
                   name: str | None = None) -> "TensorView":
        """Any window on the same storage; ``offset`` is absolute (defaults to this view's).

        Warnings
        --------
        Nothing stops two indices from addressing one element (overlapping windows): reading
        is fine, but writes through such a view are ambiguous, so ops other than Fill refuse
        them and :meth:`numpy` returns it read-only. Bounds are still checked.

        Examples
        --------
        >>> import aliasflow as af
        >>> x = af.Tensor("x", (8,))
        >>> windows = x.as_strided((6, 3), (1, 1))   # six overlapping windows of three
        >>> windows.footprint().tolist(), windows.has_internal_overlap()
        ([0, 1, 2, 3, 4, 5, 6, 7], True)
        >>> x.as_strided((3,), (4,))
        Traceback (most recent call last):
        ...
        aliasflow.core.errors.AliasflowError: view 'x.as_strided((3,), (4,), 0)': highest element 8 is outside 'x' (storage size 8; offset 0, shape (3,), stride (4,))
        """
        offset = self.offset if offset is None else offset
        what = f"view {self.name!r}: as_strided"
        shape = _check_shape(what, shape)  # an int means a 1-d shape, as in NumPy
        if stride is None:
            stride = row_major_strides(shape)
        elif _is_int(stride):
            stride = (stride,)
        try:
            stride = tuple(stride)
        except TypeError:
            raise AliasflowError(f"{what}: stride must be a tuple of ints, got {stride!r}") \
                from None
        return self._derive(f".as_strided({shape}, {stride}, {offset})",
                            offset, shape, stride, name=name)

    def rename(self, name: str) -> "TensorView":
        return self._derive("", self.offset, self.shape, self.stride, name=name)


def _axis(view: TensorView, axis) -> int:
    if not _is_int(axis) or not -view.ndim <= axis < view.ndim:
        raise AliasflowError(f"view {view.name!r}: axis {axis!r} out of range for "
                             f"{view.ndim} dims")
    return int(axis) % view.ndim
