"""Tensors: named owners of one flat, contiguous storage."""
from __future__ import annotations

from math import prod

import numpy as np

from .errors import AliasflowError
from .values import MAX_DIMS, check_dtype, check_nbytes, fit_array


def _is_int(x) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_shape(owner: str, shape) -> tuple[int, ...]:
    """Return ``shape`` as a tuple of non-negative ints or refuse it, naming ``owner``."""
    if _is_int(shape):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise AliasflowError(f"{owner}: shape must be a tuple of ints, got {shape!r}") from None
    for d in dims:
        if not _is_int(d):
            raise AliasflowError(f"{owner}: shape must be a tuple of ints, got {shape!r}")
        if d < 0:
            raise AliasflowError(f"{owner}: negative size {int(d)} in shape {dims}")
    if len(dims) > MAX_DIMS:
        raise AliasflowError(f"{owner}: {len(dims)} dims; NumPy supports at most {MAX_DIMS}")
    return tuple(int(d) for d in dims)


class Tensor:
    """A named tensor that owns its storage.

    The storage is ``data``: a C-contiguous NumPy array of ``shape`` and ``dtype``. Views
    (:class:`~aliasflow.TensorView`) address it as a flat sequence of elements.

    Parameters
    ----------
    name : str
        Name used in messages, tables and program files.
    shape : tuple of int
        Shape of the storage.
    dtype : str or numpy dtype, default "float32"
    data : array_like, optional
        Initial contents; copied (and cast) into new contiguous storage. Zeros when omitted.

    Examples
    --------
    >>> import aliasflow as af
    >>> a = af.Tensor("A", (4, 4))
    >>> a.size, a.get_storage_size()
    (16, 16)
    >>> a[1:3, ::2].footprint().tolist()
    [4, 6, 8, 10]
    """

    def __init__(self, name: str, shape, dtype="float32", data=None):
        if not isinstance(name, str) or not name:
            raise AliasflowError(f"tensor name must be a non-empty string, got {name!r}")
        self.name = name
        self.shape = _check_shape(f"tensor {name!r}", shape)
        self.dtype = check_dtype(dtype, f"tensor {name!r}")
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

    @classmethod
    def from_numpy(cls, name: str, array: np.ndarray) -> "Tensor":
        """Wrap a C-contiguous array without copying: the tensor's storage *is* ``array``."""
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise AliasflowError(f"tensor {name!r}: from_numpy needs a C-contiguous ndarray")
        t = cls(name, (0,), array.dtype)
        t.shape, t.data = array.shape, array
        return t

    @classmethod
    def virtual(cls, name: str, shape, dtype="float32") -> "Tensor":
        """A tensor with a shape but no memory, for analysing programs too big to run.

        Views, overlap and dependency analysis work as usual (a view of 10^12 elements costs
        what a view of 10 does); reading or writing its data is refused.
        """
        t = cls(name, (0,), dtype)
        t.shape = _check_shape(f"tensor {name!r}", shape)
        check_nbytes(t.shape, t.dtype, f"tensor {name!r}")
        t.data = np.broadcast_to(np.zeros((), t.dtype), t.shape)  # read-only, no memory
        t.is_virtual = True
        return t

    is_virtual = False

    @property
    def size(self) -> int:
        """Number of elements (``prod(shape)``)."""
        return prod(self.shape)

    def get_storage_size(self) -> int:
        """Number of elements in the storage (what views may address)."""
        return self.data.size

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def view(self, name: str | None = None):
        """The whole tensor as a :class:`TensorView`."""
        from .view import TensorView
        return TensorView(name or self.name, self, 0, self.shape)

    # Movement ops on the tensor start from its full view.
    def __getitem__(self, index):
        return self.view()[index]

    def transpose(self, *axes):
        return self.view().transpose(*axes)

    @property
    def T(self):
        return self.view().T

    def reshape(self, *shape):
        return self.view().reshape(*shape)

    def broadcast_to(self, shape):
        return self.view().broadcast_to(shape)

    def as_strided(self, shape, stride, offset: int = 0, name: str | None = None):
        return self.view().as_strided(shape, stride, offset, name=name)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, shape={self.shape}, dtype={self.dtype.name})"
