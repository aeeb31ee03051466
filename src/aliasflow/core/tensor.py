"""Tensors: a name, shape and dtype over one storage (a byte range of memory)."""
from __future__ import annotations

from math import prod

import numpy as np

from .errors import AliasflowError
from .storage import Storage
from .values import INT64, MAX_DIMS, check_dtype, check_ints, check_nbytes, fit_array

_INT64_MAX = INT64[1]


def _is_int(x) -> bool:
    """A Python or NumPy integer, not a bool."""
    return type(x) is int or (isinstance(x, (int, np.integer))
                              and not isinstance(x, (bool, np.bool_)))


def _check_shape(owner: str, shape) -> tuple[int, ...]:
    """Return ``shape`` as a tuple of non-negative ints or refuse it, naming ``owner``."""
    if type(shape) is tuple and len(shape) <= MAX_DIMS:
        # the common case, a tuple of plain ints in range, is returned as it is (the general
        # path below would build an equal tuple)
        for d in shape:
            if type(d) is not int or not 0 <= d <= _INT64_MAX:
                break
        else:
            return shape
    if _is_int(shape):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise AliasflowError(f"{owner}: shape must be a tuple of ints, got {shape!r}") from None
    check_ints(dims, owner)
    for d in dims:
        if not _is_int(d):
            raise AliasflowError(f"{owner}: shape must be a tuple of ints, got {shape!r}")
        if d < 0:
            raise AliasflowError(f"{owner}: negative size {int(d)} in shape {dims}")
    if len(dims) > MAX_DIMS:
        raise AliasflowError(f"{owner}: {len(dims)} dims; NumPy supports at most {MAX_DIMS}")
    return tuple(int(d) for d in dims)


class _DataWhenRead:
    """``Tensor.data`` of a tensor made by :meth:`Tensor._over_lazily`: the array over its
    storage, made (once) when first read, since most imported arrays are only analysed.
    Tensors made any other way set ``data`` themselves, which hides this."""

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


class Tensor:
    """A named tensor: a shape and dtype over one :class:`~aliasflow.Storage`.

    ``data`` is a NumPy array of ``shape`` and ``dtype`` over the storage's bytes; views
    (:class:`~aliasflow.TensorView`) address the storage as a flat sequence of elements of
    ``dtype``. The storage is what identifies the memory (by address), so two tensors over
    one buffer alias wherever their bytes meet.

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
    """

    is_virtual = False
    data = _DataWhenRead()
    _full = None  # what the whole tensor's view is made from: see _full_view()

    def __init__(self, name: str, shape, dtype="float32", data=None):
        self.name = _check_name(name)
        self.shape = _check_shape(f"tensor {name!r}", shape)
        self.dtype = _check_dtype(name, dtype)
        nbytes = check_nbytes(self.shape, self.dtype, f"tensor {name!r}")
        try:
            if data is None:
                self.data = np.zeros(self.shape, dtype=self.dtype)
            else:  # one rule for every value (see core.values): refuse what does not fit
                arr = fit_array(data, self.dtype, f"tensor {name!r}: data")
                if arr.shape != self.shape:
                    raise AliasflowError(
                        f"tensor {name!r}: data has shape {arr.shape}, expected {self.shape}")
                self.data = arr
        except MemoryError:
            raise AliasflowError(f"tensor {name!r}: cannot allocate {nbytes} bytes for shape "
                                 f"{self.shape} of {self.dtype}") from None
        self.storage = Storage.of_contiguous(self.data, name=name)

    @classmethod
    def _over(cls, name: str, storage: Storage, dtype: np.dtype, shape: tuple, data):
        t = cls.__new__(cls)
        t.name, t.storage, t.dtype, t.shape, t.data = name, storage, dtype, shape, data
        t.is_virtual = not storage.has_memory
        return t

    @classmethod
    def _over_lazily(cls, name: str, storage: Storage, dtype: np.dtype, shape: tuple):
        """A tensor over ``storage`` from fields known to be valid (``shape`` and ``dtype``
        fit in it); its ``data`` is made when first read."""
        t = cls.__new__(cls)
        t.name, t.storage, t.dtype, t.shape = name, storage, dtype, shape
        t.is_virtual = not storage.has_memory
        return t

    @classmethod
    def from_numpy(cls, name: str, array: np.ndarray) -> "Tensor":
        """Wrap a C-contiguous array without copying: the tensor's storage *is* ``array``'s
        memory. (:func:`aliasflow.from_numpy` takes any array and returns a view.)"""
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise AliasflowError(f"tensor {name!r}: Tensor.from_numpy needs a C-contiguous "
                                 f"ndarray (af.from_numpy takes any array)")
        _check_name(name)
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
        _check_name(name)
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
        name = _check_name(name if name is not None else storage.name)
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

    def __deepcopy__(self, memo):
        """A tensor over a copy of the storage (see :meth:`Storage.__deepcopy__`)."""
        from copy import deepcopy
        return Tensor.on(deepcopy(self.storage, memo), self.dtype, self.shape, self.name)

    @property
    def size(self) -> int:
        """Number of elements (``prod(shape)``)."""
        return prod(self.shape)

    def get_storage_size(self) -> int:
        """Number of elements in the storage (what views may address)."""
        return self.storage.nbytes // self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def view(self, name: str | None = None):
        """The whole tensor as a :class:`TensorView`.

        Movement ops on the tensor start from it, so without a name it is made from fields
        kept from the first time (its strides and extent, checked then), not checked again.
        """
        if name is None:
            return self._full_view()
        return _view_class()(name or self.name, self, 0, self.shape)

    def _full_view(self):
        full = self._full
        storage = self.storage
        # The fields are reused while they still describe this tensor (a copy.copy of it, or
        # fields assigned later, make them stale). Only fields are kept, never the view,
        # which refers to the tensor: a cycle would leave the tensor's memory to the cyclic
        # garbage collector instead of freeing it when the last reference goes.
        if full is not None and full[0] is storage and full[1] is self.name and \
                full[2] is self.shape and full[3] is self.dtype and full[4] == storage.nbytes:
            return _build_view(_TensorView, self.name, self, 0, self.shape, full[5], self.dtype,
                               full[6])
        view = _view_class()(self.name, self, 0, self.shape)
        self._full = (storage, self.name, self.shape, self.dtype, storage.nbytes, view.stride,
                      view.extent)
        return view

    # Movement ops on the tensor start from its full view.
    def __getitem__(self, index):
        full = self._full
        storage = self.storage
        if full is not None and full[0] is storage and full[1] is self.name and \
                full[2] is self.shape and full[3] is self.dtype and full[4] == storage.nbytes:
            # _full_view()[index] without making the full view (see TensorView.__getitem__)
            view = _indexed(self.name, self, 0, self.shape, full[5], self.dtype, full[6], index)
            if view is not None:
                return view
        return self._full_view()[index]

    def transpose(self, *axes):
        return self._full_view().transpose(*axes)

    @property
    def T(self):
        return self._full_view().T

    def reshape(self, *shape):
        return self._full_view().reshape(*shape)

    def broadcast_to(self, shape):
        return self._full_view().broadcast_to(shape)

    def as_strided(self, shape, stride, offset: int = 0, name: str | None = None):
        return self._full_view().as_strided(shape, stride, offset, name=name)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, shape={self.shape}, dtype={self.dtype.name})"


def _view_class():
    """:class:`TensorView` (its module imports this one, so it is looked up once, late)."""
    global _TensorView, _build_view, _indexed
    if _TensorView is None:
        from .view import TensorView, _build, _indexed
        _TensorView, _build_view = TensorView, _build
    return _TensorView


_TensorView = _build_view = _indexed = None


def _check_name(name) -> str:
    if not isinstance(name, str) or not name:
        raise AliasflowError(f"tensor name must be a non-empty string, got {name!r}")
    return name


def _check_dtype(name: str, dtype) -> np.dtype:
    return check_dtype(dtype, f"tensor {name!r}")  # fixed-size elements, no subarray dtype


def _no_data(name: str, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """A read-only stand-in of the right shape that costs no memory."""
    try:
        return np.broadcast_to(np.zeros((), dtype), shape)
    except (ValueError, MemoryError) as exc:
        raise AliasflowError(f"tensor {name!r}: shape {shape} is too large: {exc}") from None
