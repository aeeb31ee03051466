"""Import and export without copies: NumPy arrays, DLPack, the buffer protocol.

An imported array becomes a view over a :class:`Storage` spanning exactly the bytes the
array can touch, at the array's real address, owned by the array (which keeps the memory
alive). Nothing is registered globally: two arrays over one buffer, imported separately and
in any order, alias because their address ranges intersect, and every analysis finds that
exactly. Importing costs O(ndim), never O(size).

Elements of an imported view are counted in cells of the largest size dividing the
itemsize and every byte stride: the array's own dtype in the usual case, smaller units for
arrays whose strides are not multiples of their itemsize (fields of packed records,
``as_strided`` byte windows).
"""
from __future__ import annotations

import itertools
from math import gcd

import numpy as np

from ..solver.native import load
from .errors import AliasflowError
from .storage import Storage, unit_dtype
from .tensor import Tensor
from .view import TensorView, _build

_DLPACK_CPU = 1
_numbers = itertools.count()


def _as_ndarray(obj, who: str) -> np.ndarray:
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, (TensorView, Tensor)):
        raise AliasflowError(f"{who}: {type(obj).__name__} {obj.name!r} is already aliasflow "
                             f"memory; use it directly")
    if not (hasattr(obj, "__array_interface__") or hasattr(obj, "__array_struct__")
            or _has_buffer(obj)):
        raise AliasflowError(f"{who}: needs an array (an ndarray, an object with "
                             f"__array_interface__ or the buffer protocol), got "
                             f"{type(obj).__name__}")
    try:
        return np.asarray(obj, copy=False)  # refuses instead of copying
    except (ValueError, TypeError, BufferError) as exc:
        raise AliasflowError(f"{who}: {type(obj).__name__} cannot be viewed without a "
                             f"copy: {exc}") from None


def _has_buffer(obj) -> bool:
    try:
        memoryview(obj).release()
    except TypeError:
        return False
    return True


_data_address = getattr(load("aliasflow.solver._native"), "data_address", None)


def _address(array: np.ndarray) -> int:
    """The address of ``array``'s first element. Asked of its buffer in compiled code when
    that is built (0.1 us): ``__array_interface__`` builds a dict for it (1-2 us, a third of
    importing an array)."""
    if _data_address is not None:
        address = _data_address(array)
        if address is not None:
            return address
    return array.__array_interface__["data"][0]


def _base_most(array: np.ndarray) -> np.ndarray | None:
    """The allocation an array is part of: its base-most ndarray, when it has one."""
    base = array
    while isinstance(base.base, np.ndarray):
        base = base.base
    return None if base is array else base


def array_storage(array: np.ndarray) -> Storage:
    """The storage of the bytes ``array`` can touch (what an imported array's root is)."""
    return _extent_storage(array, None, None)[0]


def _extent_storage(array: np.ndarray, name, root_of):
    """``(storage, byte offset of element 0, unit)`` for the bytes ``array`` can touch;
    the storage's root is that of ``root_of`` (an ndarray, worked out when first asked)."""
    address = _address(array)
    isz = array.itemsize
    low = high = 0
    unit = isz
    for n, s in zip(array.shape, array.strides):
        if n == 0:
            return Storage(address, 0, owner=array, name=name, _root_of=root_of,
                           readonly=not array.flags.writeable), 0, isz
        if n > 1:
            unit = gcd(unit, s)
            if s < 0:
                low += s * (n - 1)
            else:
                high += s * (n - 1)
    storage = Storage(address + low, high - low + isz, owner=array, name=name,
                      readonly=not array.flags.writeable, _root_of=root_of)
    return storage, -low, unit


def from_numpy(array, name: str | None = None) -> TensorView:
    """A view of an array's memory, without a copy: any strides (negative, zero,
    non-contiguous), any ``.base`` chain, any fixed-size dtype.

    Read-only arrays give read-only views (writing through them is refused before anything
    runs). Arrays that share memory alias exactly, however they were imported.

    Examples
    --------
    >>> import numpy as np, aliasflow as af
    >>> buf = np.arange(12.0)
    >>> rows = af.from_numpy(buf.reshape(3, 4)[:, ::2], "rows")
    >>> tail = af.from_numpy(buf[5:], "tail")
    >>> af.check_memory_overlap(rows, tail), af.overlap(rows, tail).count
    (True, 3)
    >>> bytes_ = af.from_numpy(buf.view(np.int8)[8:9], "byte8")   # a byte of element 1
    >>> af.check_memory_overlap(bytes_, af.from_numpy(buf[1:2]))
    True
    """
    if name is None:
        arr = array if type(array) is np.ndarray else _as_ndarray(array, "from_numpy")
        dtype = arr.dtype
        if dtype.hasobject or dtype.itemsize == 0:
            raise AliasflowError(f"from_numpy: dtype {dtype} has no fixed-size elements")
        name = f"array{next(_numbers)}"
    else:
        who = f"from_numpy({name!r})"
        arr = _as_ndarray(array, who)
        if not isinstance(name, str) or not name:
            raise AliasflowError(f"from_numpy: name must be a non-empty string, got {name!r}")
        dtype = arr.dtype
        if dtype.hasobject or dtype.itemsize == 0:
            raise AliasflowError(f"{who}: dtype {dtype} has no fixed-size elements")
    # The common case in one pass: a non-empty array whose strides are whole elements. The
    # storage spans exactly the bytes the array can touch, so the view (element 0 at
    # -low, extent from the storage's first element to its last) is in bounds as made.
    address = _address(arr)
    isz = dtype.itemsize
    shape, strides = arr.shape, arr.strides
    low = high = 0
    whole = dtype.subdtype is None
    for n, s in zip(shape, strides):
        if n > 1:
            if s % isz:
                whole = False
            elif s < 0:
                low += s * (n - 1)
            else:
                high += s * (n - 1)
        elif n == 0:
            whole = False
            break
    if whole:
        storage = Storage(address + low, high - low + isz, owner=arr, name=name,
                          readonly=not arr.flags.writeable, _root_of=_base_most(arr))
        last = (high - low) // isz
        tensor = Tensor._over_lazily(name, storage, dtype, (last + 1,))
        stride = tuple([s // isz if n > 1 else 0 for n, s in zip(shape, strides)])
        return _build(TensorView, name, tensor, -low // isz, shape, stride, dtype, (0, last))
    storage, start, unit = _extent_storage(arr, name, _base_most(arr))
    tensor = Tensor.on(storage, dtype if unit == dtype.itemsize else unit_dtype(unit),
                       (storage.nbytes // unit,), name)
    stride = tuple(s // unit if n > 1 else 0 for n, s in zip(arr.shape, arr.strides))
    return TensorView(name, tensor, start // unit, arr.shape, stride, dtype)


def from_dlpack(obj, name: str | None = None) -> TensorView:
    """A view of anything that exports DLPack (PyTorch, NumPy, JAX, ...), without a copy.

    Versioned capsules, byte offsets and strides are understood (NumPy's importer reads the
    capsule); the producer stays alive as long as the view. Only memory the host can read
    is imported (what NumPy's importer takes: CPU, and CUDA/ROCm host or managed memory);
    a producer on another device is refused naming it. Read-only exports give read-only
    views.

    Examples
    --------
    >>> import numpy as np, aliasflow as af
    >>> a = np.zeros(6, np.float32)
    >>> v = af.from_dlpack(a[1:4])
    >>> v.numpy()[:] = 7
    >>> a.tolist()
    [0.0, 7.0, 7.0, 7.0, 0.0, 0.0]
    """
    if not hasattr(obj, "__dlpack__"):
        raise AliasflowError(f"from_dlpack: {type(obj).__name__} does not export DLPack "
                             f"(no __dlpack__ method)")
    try:
        arr = np.from_dlpack(obj)  # refuses memory the host cannot read
    except (BufferError, TypeError, ValueError, RuntimeError) as exc:
        # the producer's device, asked only now (PyTorch's __dlpack_device__ costs 1.8 us,
        # as much as the import), names the usual reason
        _refuse_other_devices(obj)
        raise AliasflowError(f"from_dlpack: {type(obj).__name__} cannot be imported: "
                             f"{exc}") from None
    return from_numpy(arr, name)


def _refuse_other_devices(obj) -> None:
    device = getattr(obj, "__dlpack_device__", None)
    if device is None:
        return
    try:
        kind = int(device()[0])
    except Exception as exc:  # a producer's own failure, reported as such
        raise AliasflowError(f"from_dlpack: {type(obj).__name__}.__dlpack_device__() "
                             f"failed: {exc}") from None
    if kind != _DLPACK_CPU:
        raise AliasflowError(f"from_dlpack: {type(obj).__name__} lives on DLPack device "
                             f"type {kind}; only host (CPU, type 1) memory can be imported")


def export_view(view: TensorView, *, stream=None, max_version=None, dl_device=None,
                copy=None):
    """DLPack capsule for ``view`` (its ``__dlpack__``): the view's memory, no copy.

    Refused with :class:`BufferError` (what consumers expect) for views with no memory,
    other devices, and negative strides, which consumers such as PyTorch cannot take
    (``copy=True`` exports a contiguous copy instead). Read-only views (read-only storage,
    or indices sharing an element) export read-only, which needs a versioned capsule
    (``max_version >= (1, 0)``). The capsule keeps the memory alive.
    """
    if dl_device is not None and tuple(dl_device) != (_DLPACK_CPU, 0):
        raise BufferError(f"view {view.name!r} is host memory; cannot export it to DLPack "
                          f"device {tuple(dl_device)}")
    if not view.storage.has_memory:
        raise BufferError(f"view {view.name!r} has no memory to export (its storage "
                          f"{view.storage.name!r} is analysis only)")
    arr = view.numpy()
    if copy:
        arr = np.array(arr, order="C", copy=True)
    elif any(s < 0 for n, s in zip(view.shape, view.stride) if n > 1):
        raise BufferError(f"view {view.name!r} has negative strides {view.stride}; DLPack "
                          f"consumers such as PyTorch cannot take them (pass copy=True for a "
                          f"contiguous copy)")
    try:
        return arr.__dlpack__(stream=stream, max_version=max_version, copy=False)
    except BufferError as exc:
        raise BufferError(f"view {view.name!r}: {exc}") from None
