"""Views and tensors: the one strided-view type of aliasflow.

A :class:`TensorView` is an immutable window ``(offset, shape, stride)`` on a tensor's storage;
a :class:`Tensor` is a named full view over a :class:`~aliasflow.Storage` (its own tensor),
whose offset and strides count its own elements. Every other view of memory (the solver's
integer layouts, a trace's tensor references, a distributed plan's block views) converts to
and from this one."""
from __future__ import annotations

from math import prod

import numpy as np

from .. import solver
from .errors import AliasflowError, ExportRefused
from .indexing import _index_text, apply_index, fast_index, nocopy_reshape, row_major_strides
from .storage import Storage
from .values import (INT64, MAX_DIMS, check_dtype, check_ints, check_name, check_nbytes,
                     check_shape as _check_shape, fit_array, is_int as _is_int)

_UNSET = object()
_DLPACK_CPU = 1  # kDLCPU
# A kernel runs through every index of its views; over a view that repeats its elements
# (see TensorView.repeats) it may run through at most this many (a zero-stride view of
# 2**40 indices over one element would keep NumPy busy for hours).
MAX_REPEATED_INDICES = 2**30


class _ViewFields:
    """A view's fields as plain writable slots. A view is filled in as one of these and then
    made a :class:`TensorView` by assigning its class (the layouts are the same): a
    TensorView refuses every attribute write, and writing ten slots one by one through
    ``object.__setattr__`` would cost more than everything else in making a view.

    ``_name`` is the name, or for a derived view the recipe of its name (see
    :func:`_render`): the name is text for messages and tables, and writing it out (a few
    f-strings per index) would be a good part of the cost of a view nobody prints.
    """

    __slots__ = ("_name", "tensor", "offset", "shape", "stride", "dtype", "extent", "_dense",
                 "_layout", "_key")


_new = object.__new__
_I64_MIN, _I64_MAX = INT64


def _build(cls, name, tensor, offset, shape, stride, dtype, extent):
    """The view with these fields, all already checked (``extent`` included)."""
    view = _new(_ViewFields)
    view._name = name
    view.tensor = tensor
    view.offset = offset
    view.shape = shape
    view.stride = stride
    view.dtype = dtype
    view.extent = extent
    view._dense = _UNSET
    view._layout = None
    view._key = None
    if cls is TensorView:
        view.__class__ = TensorView
        return view
    made = _new(cls)  # a subclass may have another layout: copy the fields over
    for field in _ViewFields.__slots__:
        object.__setattr__(made, field, getattr(view, field))
    return made


def _render(recipe) -> str:
    """The name a recipe stands for. A recipe is ``(parent, step)``: ``parent`` a name or
    recipe, ``step`` a suffix string, a basic index (a tuple of ints, slices, None and
    ``...``), written as ``[...]`` the way :func:`apply_index` writes it, or a list of
    immutable values written one after the other as ``str`` writes them. A recipe may also be
    a function of no arguments that returns the name (see :meth:`TensorView._named_later`)."""
    steps = []
    while not isinstance(recipe, str):
        if type(recipe) is not tuple:
            recipe = recipe()
            continue
        recipe, step = recipe
        kind = type(step)
        steps.append(step if kind is str else
                     f"[{', '.join(_index_text(item) for item in step)}]" if kind is tuple else
                     "".join(str(piece) for piece in step))
    steps.append(recipe)
    return "".join(reversed(steps))


def _extent(offset, shape, stride):
    """``(lowest, highest)`` element touched, or None for an empty view."""
    low = high = offset
    for n, s in zip(shape, stride):
        if n == 0:
            return None
        if s < 0:
            low += s * (n - 1)
        else:
            high += s * (n - 1)
    return low, high


def _check_byte_strides(name, tensor, stride) -> None:
    """Refuse strides whose byte value does not fit in a signed 64-bit integer, on every
    dim (a size-1 dim's too): memory is addressed in 64-bit byte strides (NumPy, DLPack, the
    program file format), so such a view could be neither exported nor saved and loaded."""
    unit = tensor.dtype.itemsize
    limit = _I64_MAX // unit
    for s in stride:
        if s > limit or s < -limit:
            raise AliasflowError(f"view {_label(name)!r}: stride {s} is {s * unit} bytes "
                                 f"({tensor.dtype} elements), beyond the 64-bit byte strides "
                                 f"memory is addressed with (stride {stride})")


def _checked_extent(name, tensor, offset, shape, stride, dtype):
    """The extent of a view with these fields (already of the right types), or
    :class:`AliasflowError` when the view would reach outside its storage or its byte strides
    do not fit in 64 bits. ``name`` may be a recipe (see :func:`_render`), written out only
    for a message."""
    if offset < 0:
        raise AliasflowError(f"view {_label(name)!r}: negative offset {offset}")
    if len(shape) > MAX_DIMS:  # derived views come here directly
        raise AliasflowError(f"view {_label(name)!r}: {len(shape)} dims; NumPy supports at most "
                             f"{MAX_DIMS}")
    _check_byte_strides(name, tensor, stride)
    # extent: (lowest, highest) element touched, or None for an empty view (in elements
    # of the tensor's dtype); kept as a plain field since every analysis reads it
    extent = _extent(offset, shape, stride)
    storage = tensor.get_storage_size()
    if extent is None:
        if offset > storage:
            raise AliasflowError(f"view {_label(name)!r}: offset {offset} is past the end of "
                                 f"{tensor.name!r} (storage size {storage})")
        return None
    low, high = extent
    if low < 0:
        raise AliasflowError(f"view {_label(name)!r}: lowest element {low} is below 0 "
                             f"(offset {offset}, shape {shape}, stride {stride})")
    unit = tensor.dtype.itemsize
    if high >= storage or high * unit + dtype.itemsize > tensor.storage.nbytes:
        more = "" if dtype.itemsize == unit else \
            f", view dtype {dtype} of {dtype.itemsize} bytes"
        raise AliasflowError(f"view {_label(name)!r}: highest element {high} is outside "
                             f"{tensor.name!r} (storage size {storage}; "
                             f"offset {offset}, shape {shape}, stride {stride}{more})")
    return extent


def _label(name) -> str:
    return name if type(name) is str else _render(name)


def _indexed(name, tensor, offset, shape, stride, dtype, extent, index):
    """``view[index]`` for the view with these fields, when the index is of the common kind
    (see :func:`fast_index`); None otherwise. A non-empty result touches only elements the
    view touches, so it is in bounds; an empty one (no element to vouch for its offset) and
    one with too many dims are checked."""
    fast = fast_index(offset, shape, stride, index, _I64_MAX // tensor.dtype.itemsize)
    if fast is None:
        return None
    offset, shape, stride = fast
    shape, stride = tuple(shape), tuple(stride)
    name = (name, index if type(index) is tuple else (index,))
    part = _extent(offset, shape, stride)
    if part is None or extent is None or len(shape) > MAX_DIMS:
        part = _checked_extent(name, tensor, offset, shape, stride, dtype)
    return _build(TensorView, name, tensor, offset, shape, stride, dtype, part)


def _plain_dims(dims, low: int) -> bool:
    """True when ``dims`` is a tuple of at most MAX_DIMS plain ints in ``low..2**63-1``: what
    a view stores, so nothing needs converting or checking beyond the bounds."""
    if type(dims) is not tuple or len(dims) > MAX_DIMS:
        return False
    for d in dims:
        if type(d) is not int or not low <= d <= _I64_MAX:
            return False
    return True


class TensorView(_ViewFields):
    """An immutable window on a tensor's storage.

    Element ``(i0, ..., ik-1)`` of the view is storage element
    ``offset + sum(stride[j] * i_j)``. Offset and strides count elements of the *tensor's*
    dtype and may be negative or zero. A missing ``shape`` means the tensor's shape; a missing
    ``stride`` means row-major strides for ``shape``. ``dtype`` is the view's own element
    type (default: the tensor's): a ``uint8`` view of a ``float32`` tensor reads its bytes.
    A view reaching outside its storage is refused when it is made.

    A view is a value: two views are equal when they address the same bytes of memory the
    same way with the same dtype (same address of element 0, shape, byte strides); the name
    is a label and not part of equality.

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
    >>> A[1:3, 1:3] == v
    True
    >>> A.T.stride
    (1, 4)
    >>> B = af.Tensor.on(A.storage, "uint8")      # the same memory, counted in bytes
    >>> af.check_memory_overlap(B[4:8], A[0, 1]), af.check_memory_overlap(B[4:8], A[0, 2])
    (True, False)
    >>> af.TensorView("f", B, offset=4, shape=(2,), dtype="float32") == A[0, 1:3]
    True
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        """The view's name (a label, not part of equality): given, or made from the parent's
        name and the op, as ``A[1:, ::2].T``."""
        name = self._name
        if not isinstance(name, str):
            name = _render(name)
            object.__setattr__(self, "_name", name)
        return name

    def __new__(cls, name: str, tensor: Tensor, offset: int = 0, shape=None, stride=None,
                dtype=None):
        # The common case first: every argument already of the type a view stores (the
        # general path below would accept it unchanged); anything else, valid or not, goes
        # the general way, which converts or refuses it.
        if type(name) is str and name and isinstance(tensor, Tensor) and \
                type(offset) is int and 0 <= offset <= _I64_MAX:
            tdtype = tensor.dtype
            vdtype = tdtype if dtype is None or dtype is tdtype else dtype
            vshape = tensor.shape if shape is None else shape
            if (vdtype is tdtype or (isinstance(vdtype, np.dtype) and not vdtype.hasobject
                                     and vdtype.itemsize and vdtype.subdtype is None)) \
                    and _plain_dims(vshape, 0):
                vstride = _default_stride(vshape, vdtype, tdtype) if stride is None else stride
                if _plain_dims(vstride, _I64_MIN) and len(vstride) == len(vshape):
                    return _build(cls, name, tensor, offset, vshape, vstride, vdtype,
                                  _checked_extent(name, tensor, offset, vshape, vstride,
                                                  vdtype))
        return _build(cls, *_general_fields(name, tensor, offset, shape, stride, dtype))

    @classmethod
    def _named_later(cls, name_of, tensor: Tensor, offset: int, shape, stride) -> "TensorView":
        """``TensorView(name_of(), tensor, offset, shape, stride)``, with ``name_of`` (a
        function of no arguments returning a non-empty string) called only when the name is
        first asked for: a tracer names every view it makes and prints few of them."""
        if isinstance(tensor, Tensor) and type(offset) is int and 0 <= offset <= _I64_MAX \
                and _plain_dims(shape, 0) and _plain_dims(stride, _I64_MIN) \
                and len(shape) == len(stride):
            return _build(cls, name_of, tensor, offset, shape, stride, tensor.dtype,
                          _checked_extent(name_of, tensor, offset, shape, stride,
                                          tensor.dtype))
        return cls(name_of(), tensor, offset, shape, stride)

    @classmethod
    def _make(cls, name, tensor, offset, shape, stride, dtype) -> "TensorView":
        """A view from fields already known to be well-typed; bounds are checked."""
        return _build(cls, name, tensor, offset, shape, stride, dtype,
                      _checked_extent(name, tensor, offset, shape, stride, dtype))

    def __setattr__(self, name, value):
        raise AttributeError(f"views are immutable; cannot set {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"views are immutable; cannot delete {name!r}")

    def __deepcopy__(self, memo):
        from copy import deepcopy
        return TensorView._make(self.name, deepcopy(self.tensor, memo), self.offset, self.shape,
                                self.stride, self.dtype)

    def __copy__(self):
        return self  # a value: a shallow copy is the same view

    def __reduce__(self):
        return TensorView._make, (self.name, self.tensor, self.offset, self.shape, self.stride,
                                  self.dtype)

    def description(self) -> "TensorView":
        """The same view over a description of its memory: same address, layout, dtype and
        names, but no bytes and nothing that keeps the memory alive (small to pickle and send;
        :func:`aliasflow.Storage` with no owner). Views of one tensor share its description
        within one call of :func:`describe`."""
        return describe([self])[0]

    # ---- identity -----------------------------------------------------------------------------
    @property
    def key(self) -> tuple:
        """What the view is, as memory: ``(address of element 0, shape, byte strides, dtype)``."""
        if self._key is None:
            unit = self.tensor.dtype.itemsize
            object.__setattr__(self, "_key", (self.tensor.storage.address + self.offset * unit,
                                              self.shape, tuple(s * unit for s in self.stride),
                                              self.dtype))
        return self._key

    def __eq__(self, other):
        if not isinstance(other, TensorView):
            return NotImplemented
        return self is other or self.key == other.key

    def __hash__(self):
        return hash(self.key)

    # ---- basic properties -------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of view indices (elements counted with multiplicity)."""
        return prod(self.shape)

    @property
    def storage(self):
        """The :class:`~aliasflow.Storage` (memory) the view addresses."""
        return self.tensor.storage

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def byte_offset(self) -> int:
        """Byte of element 0, from the start of the storage."""
        return self.offset * self.tensor.dtype.itemsize

    @property
    def byte_strides(self) -> tuple[int, ...]:
        unit = self.tensor.dtype.itemsize
        return tuple(s * unit for s in self.stride)

    @property
    def is_dense(self) -> bool:
        """True when the view touches every byte of its extent exactly once.

        Contiguous slices, transposes and flips of them are dense; steps, broadcasts and
        windows are not. Overlap and covering between dense views are interval questions.
        """
        if self._dense is _UNSET:
            dense = False
            if 0 not in self.shape:
                unit = self.tensor.dtype.itemsize
                dims = sorted((abs(s) * unit, n) for n, s in zip(self.shape, self.stride)
                              if n != 1)
                expected = self.dtype.itemsize
                dense = True
                for s, n in dims:
                    if s != expected:
                        dense = False
                        break
                    expected *= n
            object.__setattr__(self, "_dense", dense)
        return self._dense

    @property
    def layout(self) -> "solver.Layout":
        """The view as a solver layout in elements of its tensor's dtype (views whose dtype
        is the tensor's; see :meth:`cells` for any view)."""
        if self._layout is None:
            object.__setattr__(self, "_layout", solver.Layout(self.offset, self.shape,
                                                              self.stride))
        return self._layout

    def cells(self, unit: int, base: int | None = None) -> tuple:
        """The bytes the view touches as a cell layout ``(offset, shape, stride)`` in cells of
        ``unit`` bytes counted from address ``base`` (default: the storage's start).

        A trailing dimension of ``itemsize // unit`` cells is added when an element spans
        several cells. ``unit`` must divide the byte offset, strides and itemsize.
        """
        start = self.tensor.storage.address if base is None else base
        start = self.tensor.storage.address - start + self.byte_offset
        lay = solver.to_cells(start, self.shape, self.byte_strides, self.dtype.itemsize, unit)
        if lay.shape[-1] == 1:
            return lay.offset, lay.shape[:-1], lay.stride[:-1]
        return lay.offset, lay.shape, lay.stride

    def same_window(self, other: "TensorView") -> bool:
        """True when both views address the same memory the same way (names aside)."""
        return self == other

    def get_physical_index(self, indices) -> int:
        """Storage element of view index ``indices``; out-of-range indices are refused."""
        check_ints(indices, f"view {self.name!r}: index")
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
        """Sorted distinct storage elements (of the tensor's dtype) the view touches.

        For a view whose dtype differs from its tensor's, the elements any of whose bytes
        it touches. Refuses (with an error naming the size) views larger than ``limit``.
        """
        if limit is not None and (not _is_int(limit) or limit < 0):
            raise AliasflowError(f"view {self.name!r}: footprint limit must be a "
                                 f"non-negative int or None, got {limit!r}")
        unit = self.tensor.dtype.itemsize
        if self.dtype.itemsize == unit:
            return solver.footprint(self.layout, limit=limit)
        return np.unique(solver.footprint(self.cells(1), limit=limit) // unit)

    def has_internal_overlap(self) -> bool:
        """True when two view indices share a byte of memory."""
        if self.size <= 1 or self.is_dense:  # every byte of a dense view is touched once
            return False
        return solver.has_internal_overlap(self.cells(_cell_unit(self)))

    def _ndarray(self) -> np.ndarray:
        tensor = self.tensor
        storage = tensor.storage
        buf = storage._bytes
        if buf is None:
            if not storage.has_memory:
                raise AliasflowError(f"view {self.name!r}: tensor {tensor.name!r} is virtual "
                                     f"(analysis only) and has no memory to read or write")
            buf = storage.bytes
        # A size-1 (or empty) axis never moves, so its stride is free; NumPy needs it to fit
        # in a byte offset, so it is normalised here (the view's own stride is unchanged).
        shape = self.shape
        if 0 in shape:
            try:
                return np.ndarray(shape, self.dtype, buf, 0, (0,) * len(shape))
            except ValueError:  # NumPy cannot hold it (its other axes overflow a byte count)
                raise AliasflowError(f"view {self.name!r}: NumPy cannot make an array of "
                                     f"shape {shape} and dtype {self.dtype}, empty as it is "
                                     f"(the product of its other axes' sizes overflows)"
                                     ) from None
        unit = tensor.dtype.itemsize
        return np.ndarray(shape, self.dtype, buf, self.offset * unit,
                          tuple([0 if n == 1 else s * unit for n, s in zip(shape, self.stride)]))

    @property
    def repeats(self) -> bool:
        """True when the view has more indices than bytes in the range it spans, so that
        some element is reached by several indices (zero strides, overlapping windows). Work
        proportional to its size would then not be bounded by its memory: a Fill writes
        through :meth:`uniform_view`, and a kernel running through more than
        ``MAX_REPEATED_INDICES`` indices of a view that repeats is refused."""
        if self.extent is None:
            return False
        low, high = self.extent
        return self.size > (high - low) * self.tensor.dtype.itemsize + self.dtype.itemsize

    def uniform_view(self) -> "TensorView":
        """A view of the same elements through as few indices as exactness allows, for
        writing one value to each (a Fill): axes of stride 0 are dropped (every index of such
        an axis reaches the same element), and, for a view of its tensor's own dtype, axes of
        equal stride are merged (``i*s + j*s`` over sizes ``m`` and ``n`` reaches what
        ``k*s`` over ``m + n - 1`` does) after negative strides are turned around. The view
        itself when it does not repeat (:attr:`repeats`). A 64-element tensor seen through
        2**62 overlapping indices (``as_strided((2,) * 62, (1,) * 62)``) becomes 63 indices."""
        if not self.repeats:
            return self
        offset, dims = self.offset, []
        for n, s in zip(self.shape, self.stride):
            if n > 1 and s != 0:
                dims.append((n, s))
        if self.dtype == self.tensor.dtype:  # whole elements: merging keeps every write's bytes
            steps: dict[int, int] = {}
            for n, s in dims:
                if s < 0:
                    offset += s * (n - 1)
                steps[abs(s)] = steps.get(abs(s), 0) + n - 1
            dims = [(k + 1, s) for s, k in sorted(steps.items(), reverse=True)]
        return _build(TensorView, self._name, self.tensor, offset, tuple(n for n, _ in dims),
                      tuple(s for _, s in dims), self.dtype, self.extent)

    def numpy(self) -> np.ndarray:
        """An ndarray over the same memory: writes through either are seen by the other.

        Read-only when the view has internal overlap (writes through it would be ambiguous)
        or its storage is read-only.
        """
        arr = self._ndarray()
        if arr.flags.writeable and self.has_internal_overlap():
            arr.flags.writeable = False
        return arr

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        if copy:
            arr = arr.copy()
        return arr.astype(dtype) if dtype is not None else arr

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the view through DLPack without a copy.

        Refused with :class:`~aliasflow.core.errors.ExportRefused` (a ``BufferError``, what
        consumers expect, and an :class:`AliasflowError`) for views with no memory, other
        devices, and negative strides, which consumers such as PyTorch cannot take
        (``copy=True`` exports a contiguous copy instead), and for arguments the protocol does
        not allow (``dl_device`` not a ``(type, id)`` pair of ints, ``max_version`` not a
        ``(major, minor)`` pair, a ``stream`` other than None for host memory, ``copy`` not a
        bool or None). Read-only views (read-only storage, or indices sharing an element)
        export read-only, which needs a versioned capsule (``max_version >= (1, 0)``). The
        capsule keeps the memory alive.
        """
        _check_dlpack_args(self.name, stream, max_version, dl_device, copy)
        if dl_device is not None and tuple(dl_device) != (_DLPACK_CPU, 0):
            raise ExportRefused(f"view {self.name!r} is host memory; cannot export it to "
                                f"DLPack device {tuple(dl_device)}")
        if not self.storage.has_memory:
            raise ExportRefused(f"view {self.name!r} has no memory to export (its storage "
                                f"{self.storage.name!r} is analysis only)")
        arr = self.numpy()
        if copy:
            arr = np.array(arr, order="C", copy=True)
        elif any(s < 0 for n, s in zip(self.shape, self.stride) if n > 1):
            raise ExportRefused(f"view {self.name!r} has negative strides {self.stride}; "
                                f"DLPack consumers such as PyTorch cannot take them (pass "
                                f"copy=True for a contiguous copy)")
        try:
            return arr.__dlpack__(stream=None, copy=False, max_version=None if max_version is None
                                  else (int(max_version[0]), int(max_version[1])))
        except BufferError as exc:
            raise ExportRefused(f"view {self.name!r}: {exc}") from None

    def __dlpack_device__(self):
        return (_DLPACK_CPU, 0)  # device 0: aliasflow memory is host memory

    def __repr__(self) -> str:
        dtype = "" if self.dtype == self.tensor.dtype else f", dtype={self.dtype.name}"
        return (f"TensorView({self.name!r}, tensor={self.tensor.name!r}, offset={self.offset}, "
                f"shape={self.shape}, stride={self.stride}{dtype})")

    # ---- movement ops: each returns a new view of the same storage ---------------------------
    # A derived view is in bounds whenever its elements are among this (checked) view's, so
    # only its extent is worked out; anything else goes through the full checks.
    def _derive(self, suffix: str, offset: int, shape, stride, name: str | None = None):
        """Any view of this one's tensor and dtype, bounds checked."""
        name = name or f"{self.name}{suffix}"
        if type(name) is not str:
            name = _render(name)
        shape, stride = tuple(shape), tuple(stride)
        return _build(TensorView, name, self.tensor, offset, shape, stride, self.dtype,
                      _checked_extent(name, self.tensor, offset, shape, stride, self.dtype))

    def _same_elements(self, name: str, shape: tuple, stride: tuple) -> "TensorView":
        """A view of exactly this one's elements from this one's offset (transposes,
        no-copy reshapes, squeezes): same extent, so in bounds (a reshape's new strides are
        checked to fit in 64 bits)."""
        if len(shape) > MAX_DIMS:
            return self._derive("", self.offset, shape, stride, name)
        _check_byte_strides(name, self.tensor, stride)
        return _build(TensorView, name, self.tensor, self.offset, shape, stride, self.dtype,
                      self.extent)

    def _part(self, name: str, offset: int, shape: tuple, stride: tuple) -> "TensorView":
        """A view of some of this one's elements (basic indexing, broadcasts): a non-empty
        one is in bounds; an empty one (no element to vouch for its offset) is checked."""
        extent = _extent(offset, shape, stride)
        if extent is None or self.extent is None or len(shape) > MAX_DIMS:
            return self._derive("", offset, shape, stride, name)
        _check_byte_strides(name, self.tensor, stride)  # a slice's step multiplies strides
        return _build(TensorView, name, self.tensor, offset, shape, stride, self.dtype, extent)

    def __getitem__(self, index) -> "TensorView":
        view = _indexed(self._name, self.tensor, self.offset, self.shape, self.stride,
                        self.dtype, self.extent, index)
        if view is None:  # anything unusual, valid or not: the general path
            check_ints(index, f"view {self.name!r}: index")
            offset, shape, stride, text = apply_index(self, index)
            return self._part(f"{self.name}[{text}]", offset, tuple(shape), tuple(stride))
        return view

    def transpose(self, *axes) -> "TensorView":
        """Permute the axes (reverse them when none are given), like ``ndarray.transpose``."""
        if not axes:
            return self._same_elements((self._name, ".T"), self.shape[::-1], self.stride[::-1])
        if len(axes) == 1 and not _is_int(axes[0]):
            axes = _ints_tuple(self, "transpose axes", axes[0])
        if not axes:
            perm, suffix = tuple(range(self.ndim))[::-1], ".T"
        else:
            perm = tuple(_axis(self, a) for a in axes)
            suffix = f".transpose{tuple(perm)}" if len(perm) != 1 else f".transpose({perm[0]})"
        if sorted(perm) != list(range(self.ndim)):
            raise AliasflowError(f"view {self.name!r}: axes {axes} are not a permutation of "
                                 f"{self.ndim} dims")
        return self._same_elements(f"{self.name}{suffix}",
                                   tuple([self.shape[a] for a in perm]),
                                   tuple([self.stride[a] for a in perm]))

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
            shape = _ints_tuple(self, "reshape", shape[0])
        if not _plain_dims(shape, -1):  # plain ints in range need no 64-bit check
            check_ints(shape, f"view {self.name!r}: reshape")
        new_shape, new_stride = nocopy_reshape(self, shape)
        return self._same_elements((self._name, [".reshape", new_shape]), new_shape,
                                   new_stride)

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
        return self._part(f"{self.name}.broadcast_to({shape})", self.offset, shape,
                          tuple(stride))

    def expand_dims(self, axis: int) -> "TensorView":
        """Insert a size-1 axis at ``axis``."""
        if not _is_int(axis) or not -self.ndim - 1 <= axis <= self.ndim:
            raise AliasflowError(f"view {self.name!r}: axis {axis!r} out of range for "
                                 f"{self.ndim + 1} dims")
        axis = axis % (self.ndim + 1)
        shape, stride = list(self.shape), list(self.stride)
        shape.insert(axis, 1)
        stride.insert(axis, 0)
        return self._same_elements(f"{self.name}.expand_dims({axis})", tuple(shape),
                                   tuple(stride))

    def squeeze(self) -> "TensorView":
        """Drop every size-1 axis."""
        keep = [i for i, n in enumerate(self.shape) if n != 1]
        return self._same_elements(f"{self.name}.squeeze()",
                                   tuple([self.shape[i] for i in keep]),
                                   tuple([self.stride[i] for i in keep]))

    def as_strided(self, shape, stride, offset: int | None = None,
                   name: str | None = None) -> "TensorView":
        """Any window on the same storage; ``offset`` is absolute (defaults to this view's).

        ``shape`` and ``stride`` are sequences of ints of the same length, both given (as
        ``torch.as_strided(size, stride)`` takes them). A bare int or a missing stride is
        refused: NumPy's ``as_strided`` reads ``strides=None`` as the array's own strides, not
        row-major ones, so either reading would surprise someone.

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
        if type(offset) is int and 0 <= offset <= _I64_MAX and _plain_dims(shape, 0) and \
                (name is None or type(name) is str) and _plain_dims(stride, _I64_MIN) and \
                len(stride) == len(shape):
            # plain arguments, taken as they are (the general path below would convert and
            # check them to the same fields)
            label = name or (self._name, [".as_strided(", shape, ", ", stride, ", ", offset,
                                          ")"])
            return _build(TensorView, label, self.tensor, offset, shape, stride, self.dtype,
                          _checked_extent(label, self.tensor, offset, shape, stride,
                                          self.dtype))
        what = f"view {self.name!r}: as_strided"
        for arg, value in (("shape", shape), ("stride", stride)):
            if not isinstance(value, (tuple, list)):
                raise AliasflowError(f"{what}: {arg} must be a tuple of ints, got {value!r} "
                                     f"(give both shape and stride as tuples, e.g. "
                                     f"as_strided((2,), (1,)))")
        shape = _check_shape(what, shape)
        if not all(_is_int(s) for s in stride):
            raise AliasflowError(f"{what}: stride must be a tuple of ints, got {stride!r}")
        stride = tuple(stride)
        text = f".as_strided({shape}, {tuple(int(s) for s in stride)}, {offset})"
        return TensorView(name or f"{self.name}{text}", self.tensor, offset, shape, stride,
                          self.dtype)

    def rename(self, name: str) -> "TensorView":
        """The same view under another name (a non-empty string)."""
        if not isinstance(name, str) or not name:
            raise AliasflowError(f"view {self.name!r}: a new name must be a non-empty string, "
                                 f"got {name!r}")
        return _build(TensorView, name, self.tensor, self.offset, self.shape, self.stride,
                      self.dtype, self.extent)


def _dlpack_pair(value) -> bool:
    return isinstance(value, (tuple, list)) and len(value) == 2 and \
        all(_is_int(x) and 0 <= x <= _I64_MAX for x in value)


def _check_dlpack_args(name, stream, max_version, dl_device, copy) -> None:
    """The arguments of ``__dlpack__`` as the DLPack protocol allows them for host memory."""
    bad = None
    if dl_device is not None and not _dlpack_pair(dl_device):
        bad = f"dl_device must be a (device type, device id) pair of ints, got {dl_device!r}"
    elif max_version is not None and not _dlpack_pair(max_version):
        bad = f"max_version must be a (major, minor) pair of ints, got {max_version!r}"
    elif stream is not None:
        bad = f"stream must be None for host memory, got {stream!r}"
    elif copy is not None and not isinstance(copy, (bool, np.bool_)):
        bad = f"copy must be True, False or None, got {copy!r}"
    if bad:
        raise ExportRefused(f"view {name!r}: __dlpack__: {bad}")


def _default_stride(shape, dtype, tensor_dtype):
    """Row-major strides for ``shape``, in elements of the tensor's dtype when the view's
    dtype is a whole number of them (else in elements of the view's own dtype)."""
    step, rest = divmod(dtype.itemsize, tensor_dtype.itemsize)
    if step and not rest:
        return tuple(s * step for s in row_major_strides(shape)) if step != 1 else \
            row_major_strides(shape)
    return row_major_strides(shape)


def _check_dtype(name, dtype) -> np.dtype:
    return check_dtype(dtype, f"tensor {name!r}")  # fixed-size elements, no subarray dtype


def _general_fields(name, tensor, offset, shape, stride, dtype):
    """Any constructor arguments checked and converted to the fields of a view (with its
    extent), or :class:`AliasflowError` naming what is wrong."""
    what = f"view {name!r}"
    if not isinstance(name, str) or not name:
        raise AliasflowError(f"view name must be a non-empty string, got {name!r}")
    if not isinstance(tensor, Tensor):
        raise AliasflowError(f"{what}: tensor must be an aliasflow Tensor, got "
                             f"{type(tensor).__name__}")
    if not _is_int(offset):
        raise AliasflowError(f"{what}: offset must be an int, got {offset!r}")
    check_ints((offset, stride if isinstance(stride, (tuple, list)) else ()), what)
    shape = tensor.shape if shape is None else _check_shape(what, shape)
    dtype = tensor.dtype if dtype is None else _check_dtype(name, dtype)
    if stride is None:
        stride = _default_stride(shape, dtype, tensor.dtype)
    else:
        try:
            items = tuple(stride)
        except TypeError:
            raise AliasflowError(f"{what}: stride must be a tuple of ints, "
                                 f"got {stride!r}") from None
        if not all(_is_int(s) for s in items):
            raise AliasflowError(f"{what}: stride must be a tuple of ints, got {stride!r}")
        stride = tuple(int(s) for s in items)
    if len(stride) != len(shape):
        raise AliasflowError(f"{what}: shape {shape} has {len(shape)} dims but stride "
                             f"{stride} has {len(stride)}")
    offset = int(offset)
    return (name, tensor, offset, shape, stride, dtype,
            _checked_extent(name, tensor, offset, shape, stride, dtype))


def _ints_tuple(view: TensorView, what: str, value) -> tuple:
    try:
        return tuple(value)
    except TypeError:
        raise AliasflowError(f"view {view.name!r}: {what} needs a tuple of ints, got "
                             f"{value!r}") from None


def _axis(view: TensorView, axis) -> int:
    if not _is_int(axis) or not -view.ndim <= axis < view.ndim:
        raise AliasflowError(f"view {view.name!r}: axis {axis!r} out of range for "
                             f"{view.ndim} dims")
    return int(axis) % view.ndim


def _cell_unit(view: TensorView) -> int:
    """The largest cell that divides the view's byte offset, strides and itemsize."""
    from math import gcd
    g = gcd(view.byte_offset, view.dtype.itemsize)
    for s in view.byte_strides:
        g = gcd(g, s)
    return g


# ---- tensors ------------------------------------------------------------------------------------
class _DataWhenRead:
    """``Tensor.data`` of a tensor made without an array: the array over its storage, made
    (once) when first read, since most imported arrays are only analysed. Tensors made with
    an array keep it, which hides this."""

    def __get__(self, tensor, owner=None):
        if tensor is None:
            return self
        if tensor.storage.has_memory:
            need = prod(tensor.shape) * tensor.dtype.itemsize
            data = tensor.storage.bytes[:need].view(tensor.dtype).reshape(tensor.shape)
        else:
            data = _no_data(tensor.name, tensor.dtype, tensor.shape)
        tensor.__dict__["data"] = data
        return data


_set = object.__setattr__


class Tensor(TensorView):
    """A named tensor: the full view of a shape and dtype over one :class:`~aliasflow.Storage`.

    A tensor is a :class:`TensorView` (offset 0, row-major strides, its own ``tensor``), so
    it goes wherever a view goes; its views address the storage as a flat sequence of
    elements of its ``dtype``. ``data`` is a NumPy array of ``shape`` and ``dtype`` over the
    storage's bytes. The storage is what identifies the memory (by address), so two tensors
    over one buffer alias wherever their bytes meet.

    Parameters
    ----------
    name : str
        Name used in messages, tables and program files.
    shape : tuple of int
        Shape of the storage.
    dtype : str or numpy dtype, default "float32"
    data : array_like, optional
        Initial contents; copied (and cast) into new contiguous memory. Zeros when omitted.

    Examples
    --------
    >>> import aliasflow as af
    >>> a = af.Tensor("A", (4, 4))
    >>> a.size, a.get_storage_size(), a.storage.nbytes
    (16, 16, 64)
    >>> a[1:3, ::2].footprint().tolist()
    [4, 6, 8, 10]
    >>> isinstance(a, af.TensorView), a.tensor is a, a.stride
    (True, True, (4, 1))
    """

    __slots__ = ("storage", "__dict__", "__weakref__")
    data = _DataWhenRead()

    def __new__(cls, name: str, shape, dtype="float32", data=None):
        check_name(name, "tensor")
        shape = _check_shape(f"tensor {name!r}", shape)
        dtype = _check_dtype(name, dtype)
        nbytes = check_nbytes(shape, dtype, f"tensor {name!r}")
        try:
            if data is None:
                arr = np.zeros(shape, dtype=dtype)
            else:  # one rule for every value (see core.values): refuse what does not fit
                arr = fit_array(data, dtype, f"tensor {name!r}: data")
                if arr.shape != shape:
                    raise AliasflowError(
                        f"tensor {name!r}: data has shape {arr.shape}, expected {shape}")
        except MemoryError:
            raise AliasflowError(f"tensor {name!r}: cannot allocate {nbytes} bytes for shape "
                                 f"{shape} of {dtype}") from None
        return cls._over(name, Storage.of_contiguous(arr, name=name), dtype, shape, arr)

    @classmethod
    def _over(cls, name: str, storage: Storage, dtype: np.dtype, shape: tuple, data=None):
        """A tensor over ``storage`` from fields known to be valid (``shape`` and ``dtype``
        fit in it); without ``data``, the array is made when first read."""
        t = _new(cls)
        _set(t, "_name", name)
        _set(t, "storage", storage)
        _set(t, "offset", 0)
        _set(t, "shape", shape)
        _set(t, "stride", row_major_strides(shape))
        _set(t, "dtype", dtype)
        _set(t, "extent", _extent(0, shape, t.stride))
        _set(t, "_dense", _UNSET)
        _set(t, "_layout", None)
        _set(t, "_key", None)
        if data is not None:
            t.__dict__["data"] = data
        return t

    @property
    def tensor(self) -> "Tensor":
        """A tensor is its own tensor (the full view)."""
        return self

    @property
    def is_virtual(self) -> bool:
        """True when the tensor has no memory aliasflow can read or write (analysis only)."""
        return not self.storage.has_memory

    @classmethod
    def from_numpy(cls, name: str, array: np.ndarray) -> "Tensor":
        """Wrap a C-contiguous array without copying: the tensor's storage *is* ``array``'s
        memory. (:func:`aliasflow.from_numpy` takes any array and returns a view.)"""
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise AliasflowError(f"tensor {name!r}: Tensor.from_numpy needs a C-contiguous "
                                 f"ndarray (af.from_numpy takes any array)")
        check_name(name, "tensor")
        dtype = _check_dtype(name, array.dtype)
        return cls._over(name, Storage.of_contiguous(array, name=name), dtype, array.shape,
                         array)

    @classmethod
    def virtual(cls, name: str, shape, dtype="float32") -> "Tensor":
        """A tensor with a shape but no memory, for analysing programs too big to run.

        Its storage is an address range no real memory occupies. Views, overlap and
        dependency analysis work as usual (a view of 10^12 elements costs what a view of 10
        does); reading or writing its data is refused.
        """
        check_name(name, "tensor")
        shape = _check_shape(f"tensor {name!r}", shape)
        dtype = _check_dtype(name, dtype)
        check_nbytes(shape, dtype, f"tensor {name!r}")
        storage = Storage.reserve(prod(shape) * dtype.itemsize, name=name)
        return cls._over(name, storage, dtype, shape, _no_data(name, dtype, shape))

    @classmethod
    def on(cls, storage: Storage, dtype="uint8", shape=None, name: str | None = None
           ) -> "Tensor":
        """A tensor over an existing storage's bytes (no copy).

        ``shape`` defaults to as many elements of ``dtype`` as fit in the storage.

        Examples
        --------
        >>> import aliasflow as af
        >>> s = af.Storage(0x10000, 64, name="s")        # memory someone else owns
        >>> t = af.Tensor.on(s, "float32")
        >>> t.shape, t.is_virtual
        ((16,), True)
        """
        if not isinstance(storage, Storage):
            raise AliasflowError(f"Tensor.on needs a Storage, got {type(storage).__name__}")
        name = check_name(name if name is not None else storage.name, "tensor")
        dtype = _check_dtype(name, dtype)
        if shape is None:
            shape = (storage.nbytes // dtype.itemsize,)
        shape = _check_shape(f"tensor {name!r}", shape)
        need = prod(shape) * dtype.itemsize
        if need > storage.nbytes:
            raise AliasflowError(f"tensor {name!r}: shape {shape} of {dtype} needs {need} "
                                 f"bytes; storage {storage.name!r} has {storage.nbytes}")
        if storage.has_memory:
            data = storage.bytes[:need].view(dtype).reshape(shape)
        else:
            data = _no_data(name, dtype, shape)
        return cls._over(name, storage, dtype, shape, data)

    def __reduce__(self):
        return Tensor._over, (self.name, self.storage, self.dtype, self.shape)

    def __deepcopy__(self, memo):
        """A tensor over a copy of the storage (see :meth:`Storage.__deepcopy__`)."""
        from copy import deepcopy
        return Tensor.on(deepcopy(self.storage, memo), self.dtype, self.shape, self.name)

    def get_storage_size(self) -> int:
        """Number of elements in the storage (what views may address)."""
        return self.storage.nbytes // self.dtype.itemsize

    def view(self, name: str | None = None) -> TensorView:
        """The whole tensor as a plain :class:`TensorView` (named like the tensor unless
        ``name`` is given)."""
        if name is not None and not isinstance(name, str):
            check_name(name, "view")
        return _build(TensorView, name or self._name, self, 0, self.shape, self.stride,
                      self.dtype, self.extent)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, shape={self.shape}, dtype={self.dtype.name})"


def describe(views) -> list[TensorView]:
    """Each view over a description of its memory (see :meth:`TensorView.description`); views
    of one tensor get one description tensor."""
    tensors: dict[int, Tensor] = {}
    out = []
    for v in views:
        t = v.tensor
        d = tensors.get(id(t))
        if d is None:
            st = t.storage
            d = tensors[id(t)] = Tensor._over(t.name, Storage(
                st.address, st.nbytes, name=st.name, readonly=st.readonly,
                _virtual=st.virtual), t.dtype, t.shape)
        out.append(_build(TensorView, v.name, d, v.offset, v.shape, v.stride, v.dtype,
                          v.extent))
    return out


def _no_data(name: str, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """A read-only stand-in of the right shape that costs no memory."""
    try:
        return np.broadcast_to(np.zeros((), dtype), shape)
    except (ValueError, MemoryError) as exc:
        raise AliasflowError(f"tensor {name!r}: shape {shape} is too large: {exc}") from None
