"""TensorView: an immutable strided window ``(offset, shape, stride)`` on a tensor's storage."""
from __future__ import annotations

from math import prod

import numpy as np

from .. import solver
from .errors import AliasflowError
from .indexing import _index_text, apply_index, fast_index, nocopy_reshape, row_major_strides
from .tensor import Tensor, _check_dtype, _check_shape, _is_int
from .values import INT64, MAX_DIMS, check_ints

_UNSET = object()


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


def _checked_extent(name, tensor, offset, shape, stride, dtype):
    """The extent of a view with these fields (already of the right types), or
    :class:`AliasflowError` when the view would reach outside its storage. ``name`` may be a
    recipe (see :func:`_render`), written out only for a message."""
    if offset < 0:
        raise AliasflowError(f"view {_label(name)!r}: negative offset {offset}")
    if len(shape) > MAX_DIMS:  # derived views come here directly
        raise AliasflowError(f"view {_label(name)!r}: {len(shape)} dims; NumPy supports at most "
                             f"{MAX_DIMS}")
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
    fast = fast_index(offset, shape, stride, index)
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
        return solver.has_internal_overlap(self.cells(_cell_unit(self)))

    def _ndarray(self) -> np.ndarray:
        storage = self.tensor.storage
        if not storage.has_memory:
            raise AliasflowError(f"view {self.name!r}: tensor {self.tensor.name!r} is virtual "
                                 f"(analysis only) and has no memory to read or write")
        # A size-1 (or empty) axis never moves, so its stride is free; NumPy needs it to fit
        # in a byte offset, so it is normalised here (the view's own stride is unchanged).
        empty = 0 in self.shape
        return np.ndarray(self.shape, self.dtype, buffer=storage.bytes,
                          offset=0 if empty else self.byte_offset,
                          strides=tuple(0 if empty or n == 1 else s
                                        for n, s in zip(self.shape, self.byte_strides)))

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
        """Export the view through DLPack without a copy (see
        :func:`aliasflow.core.exchange.export_view`)."""
        from .exchange import export_view
        return export_view(self, stream=stream, max_version=max_version, dl_device=dl_device,
                           copy=copy)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0: aliasflow memory is host memory

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
        no-copy reshapes, squeezes): same extent, so in bounds."""
        if len(shape) > MAX_DIMS:
            return self._derive("", self.offset, shape, stride, name)
        return _build(TensorView, name, self.tensor, self.offset, shape, stride, self.dtype,
                      self.extent)

    def _part(self, name: str, offset: int, shape: tuple, stride: tuple) -> "TensorView":
        """A view of some of this one's elements (basic indexing, broadcasts): a non-empty
        one is in bounds; an empty one (no element to vouch for its offset) is checked."""
        extent = _extent(offset, shape, stride)
        if extent is None or self.extent is None or len(shape) > MAX_DIMS:
            return self._derive("", offset, shape, stride, name)
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
                (name is None or type(name) is str) and \
                (stride is None or _plain_dims(stride, _I64_MIN)):
            # plain arguments, taken as they are (the general path below would convert and
            # check them to the same fields)
            full = _default_stride(shape, self.dtype, self.tensor.dtype) if stride is None \
                else stride
            if len(full) == len(shape) and _plain_dims(full, _I64_MIN):
                label = name or (self._name, [".as_strided(", shape, ", ", stride, ", ", offset,
                                              ")"])
                return _build(TensorView, label, self.tensor, offset, shape, full, self.dtype,
                              _checked_extent(label, self.tensor, offset, shape, full,
                                              self.dtype))
        what = f"view {self.name!r}: as_strided"
        shape = _check_shape(what, shape)  # an int means a 1-d shape, as in NumPy
        if _is_int(stride):
            stride = (stride,)
        try:
            stride = None if stride is None else tuple(stride)  # None: row-major, as in NumPy
        except TypeError:
            raise AliasflowError(f"{what}: stride must be a tuple of ints, got {stride!r}") \
                from None
        text = f".as_strided({shape}, {stride}, {offset})"
        return TensorView(name or f"{self.name}{text}", self.tensor, offset, shape, stride,
                          self.dtype)

    def rename(self, name: str) -> "TensorView":
        if not isinstance(name, str):
            raise AliasflowError(f"view {self.name!r}: a new name must be a string, got "
                                 f"{name!r}")
        return self._same_elements(name or self._name, self.shape, self.stride)


def _default_stride(shape, dtype, tensor_dtype):
    """Row-major strides for ``shape``, in elements of the tensor's dtype when the view's
    dtype is a whole number of them (else in elements of the view's own dtype)."""
    step, rest = divmod(dtype.itemsize, tensor_dtype.itemsize)
    if step and not rest:
        return tuple(s * step for s in row_major_strides(shape)) if step != 1 else \
            row_major_strides(shape)
    return row_major_strides(shape)


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
